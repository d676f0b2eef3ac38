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
    listed = [
        r["path"]
        for r in map(
            __import__("json").loads, run_cli("ls", "-i", index, "--json").stdout.splitlines()
        )
    ]
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
    labels.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"query": "when do honey bees swarm", "relevant": ["beekeeping/handbook.md"]},
                {"query": "feeding a sourdough starter", "relevant": ["sourdough.rst"]},
                {"query": "kubernetes ingress", "relevant": []},
            ]
        )
        + "\n"
    )
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


def _short_flags() -> dict[str, set[tuple[str, str]]]:
    """Every visible short flag of every subcommand -> {(command, long flag)}."""
    import typer.main

    from ragsift.cli import app

    group = typer.main.get_command(app)
    seen: dict[str, set[tuple[str, str]]] = {}
    for name, command in group.commands.items():
        for param in command.params:
            if getattr(param, "hidden", False) or param.param_type_name != "option":
                continue
            names = [*param.opts, *param.secondary_opts]
            longs = sorted(n for n in names if n.startswith("--"))
            for short in (n for n in names if len(n) == 2):
                seen.setdefault(short, set()).add((name, longs[0] if longs else short))
    return seen


def test_each_short_flag_means_one_long_flag_in_every_subcommand():
    meanings = {short: {long for _, long in uses} for short, uses in _short_flags().items()}
    assert {s: m for s, m in meanings.items() if len(m) > 1} == {}
    assert meanings["-q"] == {"--quiet"}


@pytest.mark.parametrize("args", [["-q", "labels.jsonl"], ["-q"], ["--queries", "x", "-q"]])
def test_tune_dash_q_is_a_one_line_usage_error_naming_queries(args):
    proc = run_cli("tune", *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("ragsift: ")
    assert "--queries FILE" in proc.stderr and "Traceback" not in proc.stderr


def test_batch_grep_numbers_each_line_with_its_query_and_one_query_keeps_grep_format(index):
    queries = ["when do honey bees swarm", "zq7x qqxv nothing", "feeding a sourdough starter"]
    singles = [run_cli("query", q, "-i", index, "--format", "grep") for q in queries]
    assert [p.returncode for p in singles] == [0, 1, 0], [p.stderr for p in singles]
    for proc in singles:  # one query: grep -n's `path:line: preview`, nothing in front
        for line in proc.stdout.splitlines():
            path, lineno, rest = line.split(":", 2)
            assert path.startswith("fixtures/") and lineno.isdigit() and rest.startswith(" ")
    batch = run_cli("query", "-", "-i", index, "--format", "grep", input="\n".join(queries) + "\n")
    assert batch.returncode == 0, batch.stderr
    assert batch.stdout == "".join(
        f"{n}:{line}\n" for n, proc in enumerate(singles, 1) for line in proc.stdout.splitlines()
    )
    # what a shell user does with it: the query number is field 1, the rest the grep line
    assert {line.split(":", 1)[0] for line in batch.stdout.splitlines()} == {"1", "3"}


def test_embedding_by_another_path_spelling_says_so_and_keeps_the_documents(tmp_path):
    """Issue 23: a folder embedded by its absolute path after a relative one re-keyed every
    stored path silently. The documents stay the same (keyed by absolute path: nothing is
    re-embedded), and embed says in one warning line that their listed path changed."""
    import shutil

    from tests.conftest import FIXTURES

    shutil.copytree(FIXTURES / "beekeeping", tmp_path / "docs")
    first = run_cli("embed", "docs", "--index", "i.db", cwd=tmp_path)
    assert first.returncode == 0 and "now listed under" not in first.stderr
    absolute = str(tmp_path / "docs")
    again = run_cli("embed", absolute, "--index", "i.db", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    lines = [ln for ln in again.stderr.splitlines() if "now listed under" in ln]
    assert len(lines) == 1 and "was docs/handbook.md" in lines[0], again.stderr
    import json

    summary = json.loads(again.stdout)
    assert summary["embedded"] == 0 and summary["unchanged"] == summary["discovered"] == 1
    listed = run_cli("ls", "--index", "i.db", cwd=tmp_path).stdout
    assert listed.startswith(absolute + "/handbook.md\t")
    third = run_cli("embed", absolute, "--index", "i.db", cwd=tmp_path)
    assert third.returncode == 0 and "now listed under" not in third.stderr
