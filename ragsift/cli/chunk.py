"""``ragsift chunk``: parse files and print their chunks (JSON lines, a table, or plain text)."""

from __future__ import annotations

from enum import Enum

import typer

from ragsift.cli._common import handle_errors, warn, write_jsonl
from ragsift.errors import EXIT_NOTHING, EXIT_OK, EXIT_SKIPPED


class Strategy(str, Enum):
    recursive = "recursive"
    sentence = "sentence"
    markdown = "markdown"
    heading = "heading"
    paragraph = "paragraph"
    chars = "chars"
    tokens = "tokens"
    whole = "whole"


class Unit(str, Enum):
    tokens = "tokens"
    chars = "chars"


class Tokenizer(str, Enum):
    cl100k = "cl100k"
    model = "model"
    chars = "chars"


class Format(str, Enum):
    jsonl = "jsonl"
    table = "table"
    text = "text"


class Delim(str, Enum):
    prev = "prev"
    next = "next"
    none = "none"


EPILOG = """
Examples:

  ragsift chunk docs/ | jq -r .text

  ragsift chunk notes.md --strategy markdown --size 256 --format table

  ragsift chunk book.txt --strategy sentence --size 128 --overlap 16

  ragsift chunk docs/ --strategy heading --max-chars 1500 --min-chars 300

  cat page.md | ragsift chunk - --strategy recursive --rules markdown
"""


def chunk_command(
    paths: list[str] = typer.Argument(..., metavar="PATH...", help="Files, folders (walked recursively) or - for stdin."),
    strategy: Strategy = typer.Option(Strategy.recursive, "--strategy", "-s", help="Chunking strategy."),
    size: int | None = typer.Option(None, "--size", "-n", min=1, help="Chunk budget in units of --tokenizer [512]. heading/paragraph/chars are capped by --max-chars; --size adds a token cap (with --unit chars it is the character cap)."),
    overlap: int | None = typer.Option(None, "--overlap", min=0, help="Overlap between chunks (recursive, sentence, tokens, chars) [0; chars: 150]."),
    unit: Unit = typer.Option(Unit.tokens, "--unit", help="Count sizes in tokens (of --tokenizer) or characters."),
    tokenizer: Tokenizer = typer.Option(Tokenizer.cl100k, "--tokenizer", help="Token counter: cl100k (tiktoken), model (the embedder's WordPiece), chars."),
    fmt: Format = typer.Option(Format.jsonl, "--format", "-f", help="Output: jsonl (one chunk per line), table (for people), text."),
    include: list[str] = typer.Option([], "--include", help="Only files matching this glob (repeatable)."),
    exclude: list[str] = typer.Option([], "--exclude", help="Skip files matching this glob (repeatable)."),
    rules: str | None = typer.Option(None, "--rules", help="recursive: rule levels from a TOML/JSON file, or a shipped set name (default, markdown)."),
    min_chars: int | None = typer.Option(None, "--min-chars", min=0, help="recursive [24] / heading, paragraph [min(250, max_chars/4)]: smaller pieces merge with a neighbour."),
    max_chars: int | None = typer.Option(None, "--max-chars", min=1, help="heading, paragraph, chars: maximum characters per chunk [1000]."),
    max_level: int | None = typer.Option(None, "--max-level", min=1, max=6, help="heading: split at ATX headings up to this level [6]."),
    prefix: str | None = typer.Option(None, "--prefix", help="recursive, markdown: text put in every chunk's context (its tokens count against the budget)."),
    retain_headers: bool = typer.Option(False, "--retain-headers", help="recursive: put the heading trail in context (counted against the budget)."),
    page_break_tags: bool = typer.Option(False, "--page-break-tags", help="markdown: honour <page_break page=N> tags for page numbers."),
    min_sentences: int | None = typer.Option(None, "--min-sentences", min=1, help="sentence: minimum sentences per chunk [1]."),
    min_chars_per_sentence: int | None = typer.Option(None, "--min-chars-per-sentence", min=0, help="sentence: shorter fragments merge with a neighbour [12]."),
    delimiters: list[str] | None = typer.Option(None, "--delimiter", help="sentence: a sentence delimiter (repeatable) [\". \", \"! \", \"? \", \"\\n\"]."),
    include_delim: Delim | None = typer.Option(None, "--include-delim", help="sentence/recursive: delimiter goes with the previous piece, the next, or neither [prev]."),
    allow_oversize: bool = typer.Option(False, "--allow-oversize", help="sentence: let --min-sentences push a chunk past the budget."),
) -> None:
    """Split documents into chunks with exact offsets.

    Every chunk satisfies document.text[start:end] == text; what is added for embedding
    (heading trail, prefix) is in `context`, and `tokens` counts context + text.
    """
    from ragsift.chunkers import make_chunker
    from ragsift.pipeline import ChunkSummary, iter_chunks

    counter = "chars" if unit is Unit.chars else tokenizer.value
    options = {
        "size": size,
        "overlap": overlap,
        "rules": rules,
        "min_chars": min_chars,
        "max_chars": max_chars,
        "max_level": max_level,
        "prefix": prefix,
        "retain_headers": retain_headers or None,
        "page_break_tags": page_break_tags or None,
        "min_sentences": min_sentences,
        "min_chars_per_sentence": min_chars_per_sentence,
        "delimiters": delimiters or None,
        "include_delim": include_delim.value if include_delim else None,
        "allow_oversize": allow_oversize or None,
    }
    chunker = make_chunker(
        strategy.value, tokenizer=counter, **{k: v for k, v in options.items() if v is not None}
    )
    summary = ChunkSummary()
    records = iter_chunks(
        paths,
        chunker,
        include=include,
        exclude=exclude,
        on_skip=lambda s: warn(f"skipped {s.path}: {s.reason}"),
        on_warning=lambda path, message: warn(f"warning: {path}: {message}"),
        summary=summary,
        budget=getattr(chunker, "budget", None),
    )
    if fmt is Format.jsonl:
        write_jsonl(records)
    elif fmt is Format.text:
        import sys

        for r in records:
            sys.stdout.write(f"--- {r['id']} ({r['tokens']} tokens)\n{r['text']}\n")
    else:
        _print_table(list(records))
    _print_summary(summary, counter)
    stats = getattr(getattr(chunker, "stats", None), "as_dict", dict)()
    if stats.get("short"):
        warn(f"{stats['short']} chunks hold fewer than --min-sentences sentences because the "
             "budget won (--allow-oversize lets them grow past it)")
    if summary.chunks == 0 and not summary.skipped:
        raise typer.Exit(EXIT_NOTHING)
    raise typer.Exit(EXIT_SKIPPED if summary.skipped else EXIT_OK)


def _print_table(records: list[dict]) -> None:
    from rich.markup import escape  # document text is shown literally: `[red]` is text
    from rich.table import Table

    from ragsift.cli._common import stdout_console

    table = Table(title="chunks", show_lines=False)
    for col, kw in (("id", {}), ("lines", {"justify": "right"}), ("tokens", {"justify": "right"}),
                    ("lvl", {"justify": "right"}), ("headings", {}), ("text", {"overflow": "ellipsis"})):
        table.add_column(col, **kw)
    for r in records:
        lines = f"{r['line_start']}-{r['line_end']}" if r["line_start"] is not None else ""
        if r["page"] is not None:
            lines += f" p{r['page']}"
        preview = " ".join(r["text"].split())
        table.add_row(escape(r["id"]), lines, str(r["tokens"]), str(r["level"]),
                      escape(" › ".join(r["headings"])),
                      escape(preview[:80] + ("…" if len(preview) > 80 else "")))
    stdout_console().print(table)


def _print_summary(summary, counter: str) -> None:
    d = summary.as_dict()
    unit = "chars" if counter == "chars" else f"{counter} tokens"
    line = (f"{d['files']} files, {d['parsed']} parsed, {len(d['skipped'])} skipped; "
            f"{d['chunks']} chunks, {d['tokens']} {unit} "
            f"(min {d['min_tokens']}, median {d['median_tokens']:g}, max {d['max_tokens']})")
    if d["over_budget"]:
        line += f"; {d['over_budget']} chunks over the budget"
    warn(line)


def register(app: typer.Typer) -> None:
    app.command(
        "chunk",
        epilog=EPILOG,
        help=chunk_command.__doc__,
    )(handle_errors(chunk_command))
