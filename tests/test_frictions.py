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


def test_tune_says_when_labels_name_no_document_and_refuses_to_save_nothing(index, tmp_path):
    import json
    import shutil

    copy = tmp_path / "copy.db"
    shutil.copy(index, copy)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(x) for x in [
        {"query": "when do honey bees swarm", "relevant": ["beekeeping/handbook.md"]},
        {"query": "feeding a sourdough starter", "relevant": ["sourdough.rst"]},
        {"query": "kubernetes ingress", "relevant": []}]) + "\n")
    proc = run_cli("tune", "-i", str(copy), "--queries", str(labels), "--save", "--json")
    assert proc.returncode == 2
    assert "none of the 2 labelled relevant items matches an indexed document" in proc.stderr
    assert "stored paths look like 'fixtures/" in proc.stderr
    record = json.loads(run_cli("explain", "bees", "-i", str(copy), "--json").stdout)
    assert record["threshold_source"] == "model default"  # nothing was saved
    labels.write_text(labels.read_text().replace('"sourdough.rst"', '"fixtures/sourdough.rst"'))
    proc = run_cli("tune", "-i", str(copy), "--queries", str(labels), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "1 of 2 labelled relevant items match no indexed document" in proc.stderr
    report = json.loads(proc.stdout)
    assert (report["labelled_items"], report["unmatched_items"]) == (2, 1)
