"""``ragsift ls``: the documents an index holds (path, chunks, tokens, size, when indexed)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ragsift.cli._common import handle_errors, write_jsonl
from ragsift.cli.query import INDEX_OPTION
from ragsift.errors import EXIT_NOTHING, EXIT_OK

EPILOG = """
Examples:

  ragsift ls --index docs.db

  ragsift ls 'guide/*' -i docs.db

  ragsift ls --json | jq -r 'select(.chunks > 20) | .path'

GLOB matches the document paths as stored (as `ragsift query --path`: `*` also matches `/`).
JSON lines: path, chunks, tokens, size (bytes), mtime and indexed_at (ISO 8601, UTC), format,
chunker, sha256, key (the source the document was read from).

Exit status: 0 when something was listed, 1 when no document matches (or the index holds
none), 2 on errors.
"""


def ls_command(
    patterns: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[GLOB]...",
            help="Only documents whose path matches one of these globs.",
            show_default=False,
        ),
    ] = None,
    index: str = INDEX_OPTION,
    as_json: bool = typer.Option(False, "--json", help="JSON lines: one document per line."),
) -> None:
    """List the documents an index holds: path, chunks, tokens, size and when it was indexed.
    Reading never blocks a running `ragsift embed`."""
    from ragsift.cli.query import open_index

    with open_index(index) as idx:  # GLOBs as the user typed them (api.stored_path)
        docs = idx.documents(patterns)
        if patterns and not docs:  # say what the stored paths look like
            from ragsift.api import path_hint
            from ragsift.cli._common import warn

            warn(str(path_hint(" ".join(patterns), idx.paths(), param=None)))
    if as_json:
        write_jsonl(document_row(d) for d in docs)
    else:
        _print_table(docs)
    raise typer.Exit(EXIT_OK if docs else EXIT_NOTHING)


def document_row(d) -> dict:
    """A ``DocumentInfo`` as its JSON line (``ragsift.api.document_row``)."""
    from ragsift.api import document_row as row

    return row(d)


def _print_table(docs) -> None:
    """A table on a terminal wide enough for every path on one line; otherwise (a pipe, a
    file, a narrow terminal) one document per line, tab-separated like ``ls -l``: path,
    chunks, tokens, size, indexed. A path is never broken across lines."""
    from rich.markup import escape
    from rich.table import Table

    from ragsift.api import document_row
    from ragsift.cli._common import printable, stdout_console

    console = stdout_console()
    rows = [
        (
            printable(d.path, one_line=True),
            str(d.chunks),
            str(d.tokens),
            _size(d.size),
            (document_row(d)["indexed_at"] or "")[:19].replace("T", " "),
        )
        for d in docs
    ]
    widest = max((len(r[0]) for r in rows), default=0)
    if not console.is_terminal or widest + 45 > console.width:
        sys.stdout.writelines("\t".join(r) + "\n" for r in rows)
        sys.stdout.flush()
        return
    table = Table(box=None, pad_edge=False)
    table.add_column("path", no_wrap=True)
    for col in ("chunks", "tokens", "size"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("indexed (UTC)", no_wrap=True)
    for r in rows:
        table.add_row(escape(r[0]), *r[1:])
    console.print(table)
    console.print(
        f"[dim]{len(docs)} document{'s' if len(docs) != 1 else ''}, "
        f"{sum(d.chunks for d in docs)} chunks[/]",
        highlight=False,
    )


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def register(app: typer.Typer) -> None:
    app.command("ls", epilog=EPILOG, help=ls_command.__doc__)(handle_errors(ls_command))
