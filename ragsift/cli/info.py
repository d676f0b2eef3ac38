"""``ragsift info``: what an index holds (documents, chunks, model, chunker, vectors, size)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ragsift.cli._common import handle_errors, warn
from ragsift.errors import EXIT_OK, EXIT_USAGE
from ragsift.cli.query import DEFAULT_INDEX

EPILOG = """
Examples:

  ragsift info --index docs.db

  ragsift info --json | jq .chunks

  ragsift info --check   # also verify vectors, chunks and documents agree
"""


def info_command(
    index: Annotated[str, typer.Option("--index", "-i", envvar="RAGSIFT_INDEX", metavar="FILE", help="Index file.")] = DEFAULT_INDEX,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Verify that vectors, chunks and documents agree (exit 2 if not).")] = False,
) -> None:
    """Show what an index holds. Reading never blocks a running `ragsift embed`."""
    from ragsift.api import open_index

    from ragsift.cli._common import STATE, setting_sources

    with open_index(index) as ix:
        info = ix.info(check=check)
    project = STATE.get("project")
    info["index_from"] = setting_sources(project).get("index", "default")
    info["project"] = None if project is None else {
        "file": project.file, "root": project.root, "settings": dict(project.written)}
    problems = info.get("problems")
    if as_json:
        sys.stdout.write(json.dumps(info) + "\n")
    else:
        _print_table(info)
    if problems:
        for p in problems:
            warn(f"index {index}: {p}")
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_OK)


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _print_table(info: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ragsift.cli._common import stdout_console

    table = Table(title=f"index {escape(info['path'])}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    opts = info.get("chunker_options")
    rows = [
        ("documents", f"{info['documents']:,}"),
        ("chunks", f"{info['chunks']:,} ({info['tokens']:,} chunker tokens)"),
        ("vectors", f"{info['vectors']:,} × {info.get('dimensions') or '?'} float32"),
        ("truncated chunks", f"{info['truncated']:,}"),
        ("model", str(info.get("model") or "-")),
        ("model fingerprint", str(info.get("model_fingerprint") or "-")),
        ("embedder options", json.dumps(info.get("embedder_options") or {}, sort_keys=True)),
        ("threshold", "-" if info.get("threshold") is None else
         f"{info['threshold']:.2f} ({info.get('threshold_origin')})"),
        ("chunker", str(info.get("chunker") or "-")
         + (f" {json.dumps(opts, sort_keys=True)}" if opts else "")),
        ("size on disk", _human(info["size_bytes"])),
        ("schema version", str(info["schema_version"])),
    ]
    project = info.get("project")
    rows.append(("index from", str(info.get("index_from") or "default")))
    if project:
        rows.append(("project file", project["file"]))
        rows.extend((f"  {k}", json.dumps(v) if not isinstance(v, str) else v)
                    for k, v in project["settings"].items())
    if info.get("writer_pid"):
        rows.append(("being written by", f"PID {info['writer_pid']}"))
    if info.get("problems") is not None:
        rows.append(("check", "; ".join(info["problems"]) or "ok"))
    for k, v in rows:
        table.add_row(k, escape(v))  # paths, model names, options: literal text
    stdout_console().print(table)


def register(app: typer.Typer) -> None:
    app.command("info", epilog=EPILOG, help=info_command.__doc__)(handle_errors(info_command))
