"""``ragsift rm``: remove documents from an index (chunks, lexical entries and vectors)."""

from __future__ import annotations

from typing import Annotated

import typer

from ragsift.cli._common import handle_errors, plural, warn, write_jsonl
from ragsift.cli.query import INDEX_OPTION
from ragsift.errors import EXIT_NOTHING, EXIT_OK

EPILOG = """
Examples:

  ragsift rm docs/old-guide.md --index docs.db

  ragsift rm 'drafts/*' -i docs.db --dry-run

  ragsift rm 'assets/*' --json | jq -r .path

PATH|GLOB matches the document paths `ragsift ls` shows (`*` also matches `/`). All matching
documents are removed in one transaction: their chunks, full-text entries and vectors go
together, and an interrupted rm leaves the index as it was. A file still on disk comes back
on the next `ragsift embed` over its folder (use --exclude there to keep it out).

Exit status: 0 when documents were removed (or would be, with --dry-run), 1 when nothing
matched, 2 on errors (no index, or another process is writing it: retry or pass --wait).
"""


def rm_command(
    patterns: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH|GLOB...", help="Document paths or globs (as `ragsift ls` shows them)."
        ),
    ],
    index: str = INDEX_OPTION,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show what would be removed; change nothing."
    ),
    wait: bool = typer.Option(
        False, "--wait", help="Wait for another writer to finish instead of failing."
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="JSON lines: one removed document per line (the fields of `ragsift ls --json`).",
    ),
) -> None:
    """Remove documents from an index: their chunks, full-text entries and vectors, in one
    atomic step. Refused while another process writes the index (unless --wait)."""
    from ragsift.api import open_index, remove, stored_path
    from ragsift.cli.ls import document_row
    from ragsift.cli.query import project_root

    with open_index(index) as idx:  # each PATH as the user typed it (one rule: stored_path)
        stored = idx.paths()
    known = set(stored)
    named = [stored_path(p, known, root=project_root()) for p in patterns]
    docs = remove(index, named, dry_run=dry_run, wait=wait)
    if as_json:
        write_jsonl(document_row(d) for d in docs)
    else:
        from ragsift.cli._common import printable

        for d in docs:  # a stored path may hold terminal controls: shown, not obeyed
            typer.echo(printable(d.path, one_line=True))
    verb = "would remove" if dry_run else "removed"
    if docs:
        chunks = sum(d.chunks for d in docs)
        warn(f"{verb} {plural(len(docs), 'document')} ({plural(chunks, 'chunk')})")
    else:
        from ragsift.api import path_hint

        warn(str(path_hint(" ".join(patterns), stored, param=None)))
    raise typer.Exit(EXIT_OK if docs else EXIT_NOTHING)


def register(app: typer.Typer) -> None:
    app.command("rm", epilog=EPILOG, help=rm_command.__doc__)(handle_errors(rm_command))
