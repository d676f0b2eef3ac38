"""Only ragsift's own lines reach stderr (issue 23): no `WARN lance::…` from Lance's Rust log
on a Lance index, in any command, unless --debug or LANCE_LOG asks for them."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

pytest.importorskip("lance", reason="the Lance backend is part of [test]")


def test_every_stderr_line_is_ragsifts_on_a_lance_index(tmp_path):
    idx = str(tmp_path / "idx.lance")
    runs = [run_cli("embed", "fixtures", "--index", idx)]
    for args in (["query", "when do honey bees swarm"], ["query", "zq7x nothing"],
                 ["explain", "when do honey bees swarm"], ["ls"], ["info", "--check"]):
        runs.append(run_cli(*args, "--index", idx))
    for proc in runs:
        assert proc.returncode in (0, 1, 3), proc.stderr
        for line in proc.stderr.splitlines():
            assert line.startswith(("ragsift: ", "  ")), line
