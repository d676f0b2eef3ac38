"""``--help`` of every subcommand reads plainly (issue 10 §3): no ``<bool>`` beside flags, no
``{TEXT}``/``{paths}...`` placeholders, ``--index FILE`` wherever there is an index, and command
summaries that are sentences, not lines broken where the docstring happened to wrap.

The commands are taken from the app itself, so a subcommand added later is checked too."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from ragsift.cli import app
from ragsift.cli._help import reflow, usage_piece

GROUP = typer.main.get_command(app)
COMMANDS = sorted(GROUP.commands)
WIDE = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}


def help_text(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_subcommand_is_checked():
    assert {"query", "explain", "embed", "chunk", "info", "tune", "eval"} <= set(COMMANDS)


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_help_has_no_type_noise_or_brace_placeholders(name):
    text = help_text(*([name] if name else []))
    assert "<bool>" not in text
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert "{" not in usage and "}" not in usage, usage
    assert not re.search(r"\{[A-Za-z_]+\}", text)  # {TEXT}, {paths}: JSON examples may stay
    command = GROUP.commands.get(name)
    if command is not None and any("--index" in getattr(p, "opts", ()) for p in command.params):
        assert re.search(r"--index\s+-i\s+FILE\b", text), text


def test_usage_reads_query_and_path():
    assert "Usage: ragsift query [OPTIONS] QUERY" in help_text("query")
    assert "Usage: ragsift explain [OPTIONS] QUERY" in help_text("explain")
    assert "Usage: ragsift embed [OPTIONS] [PATH]..." in help_text("embed")  # project paths
    assert "Usage: ragsift chunk [OPTIONS] PATH..." in help_text("chunk")


def test_command_summaries_are_not_broken_mid_sentence():
    for name in COMMANDS:
        summary = GROUP.commands[name].short_help or ""
        assert summary and "\n" not in summary, (name, summary)
    # The explain summary was three broken lines before; now the list wraps it as prose.
    text = help_text()
    row = next(line for line in text.splitlines() if "explain" in line)
    assert "margin over the threshold" in row


def test_reflow_joins_prose_and_keeps_examples():
    epilog = "\nExamples:\n\n  ragsift query x\n  ragsift query y\n\nExit status: 0 when\nsomething matched.\n"
    out = reflow(epilog, docstring=False)
    assert "  ragsift query x\n  ragsift query y" in out
    assert "Exit status: 0 when something matched." in out
    assert out.startswith("\nExamples:")  # click dedents all but the first line of an epilog
    doc = "Search an index.\n\n    One sentence that\n    goes on.\n"
    assert reflow(doc) == "Search an index.\n\nOne sentence that goes on."


def test_usage_piece_forms():
    class P:
        def __init__(self, name, metavar=None, required=True, nargs=1):
            self.name, self.metavar, self.required, self.nargs = name, metavar, required, nargs

    assert usage_piece(P("text", "QUERY")) == "QUERY"
    assert usage_piece(P("paths", "PATH...", nargs=-1)) == "PATH..."
    assert usage_piece(P("configs", required=False, nargs=-1)) == "[CONFIGS]..."
    assert usage_piece(P("globs", "[GLOB]...", required=False, nargs=-1)) == "[GLOB]..."
