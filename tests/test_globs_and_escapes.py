"""Two fault classes of issue 23: an invalid glob is a usage error (exit 2, one line) in every
command that takes one, and `rm` prints stored paths with terminal controls made visible."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.test_query_cli import fixture_index


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


@pytest.mark.parametrize(
    "args",
    [
        ["ls", "[z-a]"],
        ["rm", "[z-a]"],
        ["rm", "--dry-run", "[z-a]"],
        ["query", "bees", "--path", "[z-a]"],
        ["explain", "bees", "--path", "[z-a]"],
    ],
)
def test_an_invalid_glob_is_a_usage_error(index, args):
    proc = run_cli(*args, "-i", index)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["ragsift: invalid glob '[z-a]': bad character range z-a"]


def test_rm_dry_run_shows_controls_in_stored_paths(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a\x1b[31mred\u009b.md").write_text("# Red\n\nA file with a hostile name.\n")
    idx = str(tmp_path / "idx.db")
    assert run_cli("embed", str(folder), "--index", idx).returncode == 0
    proc = run_cli("rm", "--dry-run", "*red*", "--index", idx)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\u009b" not in proc.stdout
    assert "␛[31mred" in proc.stdout
