"""Only ragsift's own lines reach stderr (issue 23): no `WARN lance::…` from Lance's Rust log
on a Lance index, and no onnxruntime warning (its telemetry line, in raw colour codes, when
the cache dir under `$HOME` cannot be written), in any command, unless --debug (or LANCE_LOG)
asks for them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_cli


def test_every_stderr_line_is_ragsifts_on_a_lance_index(tmp_path):
    pytest.importorskip("lance", reason="the Lance backend is part of [test]")
    idx = str(tmp_path / "idx.lance")
    runs = [run_cli("embed", "fixtures", "--index", idx)]
    for args in (
        ["query", "when do honey bees swarm"],
        ["query", "zq7x nothing"],
        ["explain", "when do honey bees swarm"],
        ["ls"],
        ["info", "--check"],
    ):
        runs.append(run_cli(*args, "--index", idx))
    for proc in runs:
        assert proc.returncode in (0, 1, 3), proc.stderr
        for line in proc.stderr.splitlines():
            assert line.startswith(("ragsift: ", "  ")), line


def _run_homeless(home: str | None, *args: str) -> subprocess.CompletedProcess:
    """``python -m ragsift ARGS`` with ``$HOME`` unset (None) or pointing at ``home``, and no
    ``$XDG_CACHE_HOME`` (onnxruntime's telemetry then wants ``$HOME/.cache``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HOME", "XDG_CACHE_HOME", "RAGSIFT_DEBUG", "ORT_DISABLE_TELEMETRY")
    }
    if home is not None:
        env["HOME"] = home
    return subprocess.run(
        [sys.executable, "-m", "ragsift", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("home", ["unset", "a file"])
def test_onnxruntime_says_nothing_on_stderr_without_a_usable_home(tmp_path, home):
    if home == "unset":
        home_dir = None
    else:  # a $HOME no one can create a cache dir under (ENOTDIR, root included)
        (tmp_path / "home").write_text("not a folder\n")
        home_dir = str(tmp_path / "home")
    index = str(tmp_path / "i.db")
    runs = [
        _run_homeless(home_dir, "embed", "fixtures", "--index", index),
        _run_homeless(home_dir, "query", "when do honey bees swarm", "--index", index),
    ]
    for proc in runs:
        assert proc.returncode in (0, 3), proc.stderr
        for line in proc.stderr.splitlines():
            assert line.startswith("ragsift: "), repr(line)


def test_onnxruntime_sessions_log_errors_only_unless_debug(monkeypatch):
    from ragsift.embedders.onnx import log_severity

    monkeypatch.delenv("RAGSIFT_DEBUG", raising=False)
    assert log_severity() == 3  # ERROR: onnxruntime's warnings stay off stderr
    monkeypatch.setenv("RAGSIFT_DEBUG", "1")
    assert log_severity() == 2  # --debug: onnxruntime's own default (WARNING)
