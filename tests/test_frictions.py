"""Frictions of issue 23's new-user run: `ls` to a pipe is one document per line (a path
never broken), and no `--help` loses an extra's `[name]` to markup."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.test_query_cli import fixture_index


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


def test_ls_to_a_pipe_is_one_tab_separated_line_per_document(index):
    proc = run_cli("ls", "-i", index, env={"COLUMNS": "40"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    listed = [r["path"] for r in map(__import__("json").loads, run_cli(
        "ls", "-i", index, "--json").stdout.splitlines())]
    assert [line.split("\t")[0] for line in lines] == listed
    assert all(len(line.split("\t")) == 5 for line in lines)


@pytest.mark.parametrize("command", ["embed", "mcp", "chunk", "query"])
def test_help_keeps_the_extras_brackets(command):
    out = run_cli(command, "--help", env={"COLUMNS": "200"}).stdout
    assert "'ragsift'" not in out  # "pip install 'ragsift[ray]'" with the [ray] eaten
