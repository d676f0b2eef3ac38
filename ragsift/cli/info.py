"""``ragsift info``: what an index holds (documents, chunks, model, chunker, vectors, size)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ragsift.cli._common import handle_errors, warn
from ragsift.cli.query import DEFAULT_INDEX
from ragsift.errors import EXIT_OK, EXIT_USAGE

EPILOG = """
Examples:

  ragsift info --index docs.db

  ragsift info --json | jq .chunks

  ragsift info --check   # also verify vectors, chunks and documents agree
"""


def info_command(
    index: Annotated[
        str,
        typer.Option("--index", "-i", envvar="RAGSIFT_INDEX", metavar="FILE", help="Index file."),
    ] = DEFAULT_INDEX,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object on stdout.")
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check", help="Verify that vectors, chunks and documents agree (exit 2 if not)."
        ),
    ] = False,
) -> None:
    """Show what an index holds. Reading never blocks a running `ragsift embed`."""
    from ragsift.api import open_index
    from ragsift.cli._common import STATE, setting_sources

    with open_index(index) as ix:
        info = ix.info(check=check)
    project = STATE.get("project")
    info["index_from"] = setting_sources(project).get("index", "default")
    info["project"] = (
        None
        if project is None
        else {"file": project.file, "root": project.root, "settings": dict(project.written)}
    )
    if info.get("problems"):  # a problem that names a way out (--rebuild) in the CLI's words
        from ragsift.cli._common import flag_name
        from ragsift.errors import worded

        info["problems"] = [worded(p, flag_name) for p in info["problems"]]
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


CHUNKER_FIRST = ("size", "tokenizer", "overlap", "min_chars")  # the options people set


def readable(value: object) -> str:
    """A setting's value in words: ``-`` for none, yes/no, lists joined by commas, a rule set
    by its name and size (``default (5 levels)``), other mappings as ``key value`` pairs."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value if value else "(empty)"
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(v) for v in value) if value else "-"
    if isinstance(value, dict):
        if "name" in value and "levels" in value:
            return f"{value['name']} ({len(value['levels'])} levels)"
        return ", ".join(f"{k} {readable(v)}" for k, v in value.items()) if value else "-"
    return str(value)


def _rows(info: dict) -> list[tuple[str, str]]:
    """What ``info`` prints, as (key, value) rows; sub-settings have indented keys."""
    rows = [
        ("index", info["path"]),
        ("documents", f"{info['documents']:,}"),
        ("chunks", f"{info['chunks']:,} ({info['tokens']:,} chunker tokens)"),
        ("vectors", f"{info['vectors']:,} × {info.get('dimensions') or '?'} float32"),
        ("truncated chunks", f"{info['truncated']:,}"),
        ("model", str(info.get("model") or "-")),
        ("model source", _source(info)),
        ("model fingerprint", str(info.get("model_fingerprint") or "-")),
        ("embedder options", readable(info.get("embedder_options") or None)),
        (
            "threshold",
            "-"
            if info.get("threshold") is None
            else f"{info['threshold']:.2f} ({info.get('threshold_origin')})",
        ),
        ("chunker", str(info.get("chunker") or "-")),
    ]
    opts = dict(info.get("chunker_options") or {})
    if opts.get("strategy") == info.get("chunker"):
        opts.pop("strategy")
    for key in [
        *(k for k in CHUNKER_FIRST if k in opts),
        *(k for k in opts if k not in CHUNKER_FIRST),
    ]:
        rows.append((f"  {key.replace('_', ' ')}", readable(opts[key])))
    rows.append(("size on disk", _human(info["size_bytes"])))
    if info.get("free_bytes") is not None:  # SQLite: freed pages, reused by later writes
        rows.append(("  free pages", _human(info["free_bytes"])))
    if info.get("fragments") is not None:  # Lance: the data files and the versions on disk
        rows.append(("  fragments", f"{info['fragments']:,}"))
        rows.append(
            ("  versions kept", f"{info['versions']:,} (reading version {info['version']})")
        )
    rows += [
        ("schema version", str(info["schema_version"])),
        ("written by", f"ragsift {info['written_by']}" if info.get("written_by") else "-"),
        ("index from", str(info.get("index_from") or "default")),
    ]
    project = info.get("project")
    if project:
        rows.append(("project file", project["file"]))
        rows.extend((f"  {k}", readable(v)) for k, v in project["settings"].items())
    if info.get("writer_pid"):
        rows.append(("being written by", f"PID {info['writer_pid']}"))
    if info.get("problems") is not None:
        rows.append(("check", "; ".join(info["problems"]) or "ok"))
    return rows


def _source(info: dict) -> str:
    """``bundled``, ``folder PATH`` or ``endpoint URL`` (the URL as recorded: never a key)."""
    kind, source = info.get("model_source_kind"), info.get("model_source")
    if not kind:
        return "-"
    return kind if kind == "bundled" else f"{kind} {source}"


def _print_table(info: dict) -> None:
    """Aligned ``key  value`` lines (``--json`` has the same facts as one object). A long value
    runs on rather than being cut: paths and fingerprints are there to be copied."""
    from rich.text import Text

    from ragsift.cli._common import printable, stdout_console

    rows = _rows(info)
    width = max(len(k) for k, _ in rows) + 2
    console = stdout_console()
    for key, value in rows:  # paths, model names, options: literal text
        console.print(
            Text.assemble((key.ljust(width), "bold"), printable(value, one_line=True)),
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    app.command("info", epilog=EPILOG, help=info_command.__doc__)(handle_errors(info_command))
