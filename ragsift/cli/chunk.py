"""``ragsift chunk``: parse files and print their chunks (JSON lines, a table, or plain text).

No ``from __future__ import annotations`` here: typer reads the options' annotations with
``typing.get_type_hints``, which compiles every string annotation (~60 of them) on every
start; real annotations cost nothing (issue 40, item 7)."""

import functools
import os
from collections.abc import Callable
from enum import Enum
from typing import Any

import typer

from ragsift.api import FORMATS
from ragsift.cli._common import flag_name, handle_errors, plural, warn, write_jsonl
from ragsift.errors import EXIT_NOTHING, EXIT_OK, EXIT_SKIPPED, worded


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


def max_file_size_bytes(value: str | None) -> int | None:
    """``--max-file-size`` (``64M``, ``1G``, ``500k``, bytes) → bytes; None: the default cap."""
    if value is None:
        return None
    from ragsift.api import parse_size

    try:
        return parse_size(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a size (e.g. 64M, 1G, 500k)", param_hint="--max-file-size"
        ) from None


def summary_parts(skipped: int, ignored: dict[str, int]) -> str:
    """``3 skipped, 4 ignored: not a document type``; with several reasons
    ``5 ignored: 4 not a document type, 1 symlink ...``."""
    line = f"{skipped} skipped"
    # a reason may name a parameter (``--follow-links``): worded as this command's flag
    reasons = sorted(
        ((worded(reason, flag_name), n) for reason, n in ignored.items()),
        key=lambda kv: (-kv[1], kv[0]),
    )
    if len(reasons) == 1:
        line += f", {reasons[0][1]} ignored: {reasons[0][0]}"
    elif reasons:
        line += f", {sum(ignored.values())} ignored: " + ", ".join(
            f"{n} {reason}" for reason, n in reasons
        )
    return line


# What a walked folder contributes, for --help (README: "Which files are indexed").
FILES_HELP = (
    "Which files: a folder contributes its documents: "
    + " ".join(sorted(FORMATS, key=lambda x: (FORMATS[x], x)))
    + " (.pdf with the pdf extra). Other files (images, CSS, JS, SVG, ...) are ignored: "
    "counted in the summary, not an error. --include GLOB replaces that default set (e.g. "
    "--include '*.md' --include '*.svg'); a file named on the command line is always read. "
    "Symlinks leading out of the folder need --follow-links. Files over --max-file-size "
    "(default 64M) are skipped."
)

EPILOG = (
    """
Examples:

  ragsift chunk docs/ | jq -r .text

  ragsift chunk docs/ --include '*.md' --include '*.css'

  ragsift chunk notes.md --strategy markdown --size 256 --format table

  ragsift chunk book.txt --strategy sentence --size 128 --overlap 16

  ragsift chunk docs/ --strategy heading --max-chars 1500 --min-chars 300

  cat page.md | ragsift chunk - --strategy recursive --rules markdown

Defaults are embed's (recursive, the model's own tokens, the model's max length), so `ragsift chunk docs/` prints exactly the chunks `ragsift embed docs/` would index with the same flags. Use --tokenizer cl100k --size 512 for the former chunk defaults.

"""
    + FILES_HELP
    + """

Exit codes: 0 ok, 1 nothing produced, 2 usage error (e.g. a PATH that does not exist), 3 done but some files were skipped (0 with --skips-ok).
"""
)


def chunk_command(
    paths: list[str] = typer.Argument(
        ..., metavar="PATH...", help="Files, folders (walked recursively) or - for stdin."
    ),
    strategy: Strategy = typer.Option(
        Strategy.recursive, "--strategy", "-s", help="Chunking strategy."
    ),
    size: int | None = typer.Option(
        None,
        "--size",
        "-n",
        min=1,
        help="Chunk budget in units of --tokenizer [as embed: the model's max length (256) with --tokenizer model, else 512]. heading/paragraph/chars are capped by --max-chars; --size adds a token cap (with --unit chars it is the character cap).",
    ),
    overlap: int | None = typer.Option(
        None,
        "--overlap",
        min=0,
        help="Overlap between chunks (recursive, sentence, tokens, chars) [0; chars: 150].",
    ),
    unit: Unit = typer.Option(
        Unit.tokens, "--unit", help="Count sizes in tokens (of --tokenizer) or characters."
    ),
    tokenizer: Tokenizer = typer.Option(
        Tokenizer.model,
        "--tokenizer",
        help="Token counter: model (the embedder's WordPiece, as embed) [default], cl100k (tiktoken), chars.",
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="As for embed: the model folder (or multilingual, or an endpoint URL: cl100k, 256 a chunk) whose tokens and max length set the defaults.",
    ),
    max_length: int | None = typer.Option(
        None,
        "--max-length",
        min=2,
        max=512,
        help="As for embed: the model's max length, which sets the default --size.",
    ),
    passage_prefix: str | None = typer.Option(
        None,
        "--passage-prefix",
        metavar="TEXT",
        help="As for embed: its tokens are left out of the default --size.",
    ),
    fmt: Format = typer.Option(
        Format.jsonl,
        "--format",
        "-f",
        help="Output: jsonl (one chunk per line), table (for people), text.",
    ),
    include: list[str] = typer.Option(
        [], "--include", help="Only files matching this glob (repeatable)."
    ),
    exclude: list[str] = typer.Option(
        [], "--exclude", help="Skip files matching this glob (repeatable)."
    ),
    follow_links: bool = typer.Option(
        False,
        "--follow-links",
        help="Follow symlinks that lead out of the walked folder (links inside it are always followed).",
    ),
    max_file_size: str | None = typer.Option(
        None,
        "--max-file-size",
        metavar="SIZE",
        help="Skip input files larger than this (e.g. 64M, 1G) [64M].",
    ),
    skips_ok: bool = typer.Option(
        False,
        "--skips-ok",
        help="Exit 0 even if some files were skipped (each is still named on stderr).",
    ),
    rules: str | None = typer.Option(
        None,
        "--rules",
        help="recursive: rule levels from a TOML/JSON file, or a shipped set name (default, markdown).",
    ),
    min_chars: int | None = typer.Option(
        None,
        "--min-chars",
        min=0,
        help="recursive [24] / heading, paragraph [min(250, max_chars/4)]: smaller pieces merge with a neighbour.",
    ),
    max_chars: int | None = typer.Option(
        None,
        "--max-chars",
        min=1,
        help="heading, paragraph, chars: maximum characters per chunk [1000].",
    ),
    max_level: int | None = typer.Option(
        None,
        "--max-level",
        min=1,
        max=6,
        help="heading: split at ATX headings up to this level [6].",
    ),
    prefix: str | None = typer.Option(
        None,
        "--prefix",
        help="recursive, markdown: text put in every chunk's context (its tokens count against the budget).",
    ),
    retain_headers: bool = typer.Option(
        False,
        "--retain-headers",
        help="recursive: put the heading trail in context (counted against the budget).",
    ),
    page_break_tags: bool = typer.Option(
        False,
        "--page-break-tags",
        help="markdown: honour <page_break page=N> tags for page numbers.",
    ),
    min_sentences: int | None = typer.Option(
        None, "--min-sentences", min=1, help="sentence: minimum sentences per chunk [1]."
    ),
    min_chars_per_sentence: int | None = typer.Option(
        None,
        "--min-chars-per-sentence",
        min=0,
        help="sentence: shorter fragments merge with a neighbour [12].",
    ),
    delimiters: list[str] | None = typer.Option(
        None,
        "--delimiter",
        help='sentence: a sentence delimiter (repeatable) [". ", "! ", "? ", "\\n"].',
    ),
    include_delim: Delim | None = typer.Option(
        None,
        "--include-delim",
        help="sentence/recursive: delimiter goes with the previous piece, the next, or neither [prev].",
    ),
    allow_oversize: bool = typer.Option(
        False,
        "--allow-oversize",
        help="sentence: let --min-sentences push a chunk past the budget.",
    ),
) -> None:
    """Split documents into chunks with exact offsets.

    Every chunk satisfies document.text[start:end] == text; what is added for embedding
    (heading trail, prefix) is in `context`, and `tokens` counts context + text.
    """
    from ragsift.api import ChunkSummary, chunk_files, embed_chunker

    cap = max_file_size_bytes(max_file_size)
    counter = "chars" if unit is Unit.chars else tokenizer.value
    options = {
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
    # the chunker embed would use with these flags: chunk previews embed
    chunker = embed_chunker(
        model,
        strategy=strategy.value,
        size=size,
        overlap=overlap,
        tokenizer=counter,
        max_length=max_length,
        passage_prefix=passage_prefix,
        **options,
    )
    summary = ChunkSummary()
    records = chunk_files(
        paths,
        chunker,
        include=include,
        exclude=exclude,
        on_skip=lambda s: warn(f"skipped {s.path}: {worded(s.reason, flag_name)}"),
        on_warning=lambda path, message: warn(f"warning: {path}: {message}"),
        summary=summary,
        budget=getattr(chunker, "budget", None),
        max_file_size=cap,
        follow_links=follow_links,
    )
    if fmt is Format.jsonl:
        write_jsonl(records)
    elif fmt is Format.text:
        import sys

        from ragsift.cli._common import printable

        show = printable if sys.stdout.isatty() else str  # raw bytes of text only into pipes
        for r in records:
            sys.stdout.write(show(f"--- {r['id']} ({r['tokens']} tokens)\n{r['text']}\n"))
    else:
        _print_table(list(records))
    _print_summary(summary, counter)
    stats = getattr(getattr(chunker, "stats", None), "as_dict", dict)()
    if stats.get("short"):
        warn(
            f"{plural(stats['short'], 'chunk')} {'holds' if stats['short'] == 1 else 'hold'} fewer "
            "than --min-sentences sentences because the "
            "budget won (--allow-oversize lets them grow past it)"
        )
    if summary.chunks == 0 and not summary.skipped:
        raise typer.Exit(EXIT_NOTHING)
    raise typer.Exit(EXIT_SKIPPED if summary.skipped and not skips_ok else EXIT_OK)


def _print_table(records: list[dict]) -> None:
    from rich.table import Table

    from ragsift.cli._common import safe_markup, stdout_console
    from ragsift.cli.render import NARROW

    console = stdout_console()
    if console.width < NARROW:
        _print_blocks(console, records)
        return
    table = Table(title="chunks", show_lines=False)
    for col, kw in (
        ("id", {}),
        ("lines", {"justify": "right"}),
        ("tokens", {"justify": "right"}),
        ("lvl", {"justify": "right"}),
        ("headings", {}),
        ("text", {"overflow": "ellipsis"}),
    ):
        table.add_column(col, **kw)
    for r in records:
        lines = f"{r['line_start']}-{r['line_end']}" if r["line_start"] is not None else ""
        if r["page"] is not None:
            lines += f" p{r['page']}"
        preview = " ".join(r["text"].split())
        table.add_row(
            safe_markup(r["id"]),
            lines,
            str(r["tokens"]),
            str(r["level"]),
            safe_markup(" › ".join(r["headings"])),
            safe_markup(preview[:80] + ("…" if len(preview) > 80 else "")),
        )
    console.print(table)


def _print_blocks(console, records: list[dict]) -> None:
    """``--format table`` under ``NARROW`` columns (as ``explain`` does): one block per chunk,
    every line cut to the terminal's width: the id with its lines, tokens and level, the heading
    trail, then the start of the text; a long id keeps its end (file name, chunk number).
    Document text is shown literally (``Text``, no markup)."""
    from rich.text import Text

    from ragsift.cli.render import flat

    width = max(console.width, 20)
    console.print(Text("chunks", style="bold"))
    for r in records:
        where = f"lines {r['line_start']}-{r['line_end']}" if r["line_start"] is not None else ""
        if r["page"] is not None:
            where += f" p{r['page']}"
        meta = " · ".join(x for x in (where, f"{r['tokens']} tokens", f"lvl {r['level']}") if x)
        head = flat(r["id"])
        room = max(width - len(meta) - 2, 12)
        if len(head) > room:  # keep the end: the file name and the chunk number
            head = "…" + head[len(head) - room + 1 :]
        console.print(
            Text.assemble((head, "bold"), "  ", (meta, "dim")), no_wrap=True, overflow="ellipsis"
        )
        if r["headings"]:
            console.print(
                Text("  " + flat(" › ".join(r["headings"]), width - 2), style="dim"),
                no_wrap=True,
                overflow="ellipsis",
            )
        console.print(Text("  " + flat(r["text"], width - 2)), no_wrap=True, overflow="ellipsis")


def _print_summary(summary, counter: str) -> None:
    d = summary.as_dict()
    unit = "chars" if counter == "chars" else f"{counter} tokens"
    line = (
        f"{plural(d['files'], 'file')}, {d['parsed']} parsed, "
        f"{summary_parts(len(d['skipped']), summary.ignored)}; "
        f"{plural(d['chunks'], 'chunk')}, {d['tokens']} {unit} "
        f"(min {d['min_tokens']}, median {d['median_tokens']:g}, max {d['max_tokens']})"
    )
    if d["over_budget"]:
        line += f"; {plural(d['over_budget'], 'chunk')} over the budget"
    warn(line)


# numpy (the token indexes) loads OpenBLAS, which starts a thread per core at import; no
# chunking step multiplies matrices, so the pool is pure start-up cost: ~20 ms of CPU on 2
# cores, more on more (issue 40, item 7). A value the user set is kept.
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def without_blas_threads(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` run with ``OPENBLAS_NUM_THREADS=1`` unless it is set: it takes effect when
    numpy is first imported in the run; the environment is restored afterwards (an
    in-process caller, its later child processes, keep theirs)."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        if _BLAS_THREADS in os.environ:
            return func(*args, **kwargs)
        os.environ[_BLAS_THREADS] = "1"
        try:
            return func(*args, **kwargs)
        finally:
            os.environ.pop(_BLAS_THREADS, None)

    return run


def register(app: typer.Typer) -> None:
    app.command(
        "chunk",
        epilog=EPILOG,
        help=chunk_command.__doc__,
    )(handle_errors(without_blas_threads(chunk_command)))
