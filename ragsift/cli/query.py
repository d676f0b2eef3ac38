"""``ragsift query``: search an index; print the admitted hits (or JSON lines); exit like grep.

Also home of the retrieval options shared by ``query``, ``explain`` and ``tune`` (``-k``,
``--threshold``, ``--reject-window``, ``--max-chars``, ``--index``, ``--model``, ``--path``),
defined once here so the three commands cannot drift apart.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import typer

import ragsift.api as api
from ragsift.cli._common import flag_name, handle_errors, warn, write_jsonl
from ragsift.cli._help import HelpCommand
from ragsift.errors import EXIT_NOTHING, EXIT_OK, RagsiftError

if TYPE_CHECKING:
    from ragsift.api import Hit, Retrieval, Search

DEFAULT_INDEX, DEFAULT_MODE, MODES = api.DEFAULT_INDEX, api.DEFAULT_MODE, api.MODES

# -- shared options (query, explain, tune) ----------------------------------------------------

INDEX_OPTION = typer.Option(
    DEFAULT_INDEX,
    "--index",
    "-i",
    envvar="RAGSIFT_INDEX",
    metavar="FILE",
    help="Index file built by `ragsift embed`.",
)
K_OPTION = typer.Option(3, "-k", "--k", min=1, help="Admit at most K hits.")
THRESHOLD_OPTION = typer.Option(
    None,
    "--threshold",
    "-t",
    metavar="FLOAT|none|auto",
    help="Floor on the relevance score (0-1, an estimate of the probability that a hit is "
    "relevant): nothing below it is admitted, even if that leaves no hit. Default ('auto'): "
    "the threshold stored by `ragsift tune --save`, else the index's calibration for its "
    "model (`ragsift calibrate`), else the bundled all-MiniLM-L6-v2's measured default ("
    + ", ".join(f"{v:.2f} {m}" for m, v in api.DEFAULT_THRESHOLDS.items())
    + "); 'none' disables the floor.",
)
REJECT_WINDOW_OPTION = typer.Option(
    10,
    "--reject-window",
    min=0,
    help="Also fetch this many candidates after the first K, to report near-misses. Never "
    "changes which hits are admitted.",
)
MAX_CHARS_OPTION = typer.Option(
    None,
    "--max-chars",
    min=1,
    help="Character budget for the admitted text: admission stops at the first hit that does "
    "not fit.",
)
PATH_OPTION = typer.Option(
    None,
    "--path",
    metavar="GLOB",
    help="Only search chunks of documents whose path matches GLOB (`*` also matches `/`).",
)
MODE_OPTION = typer.Option(
    DEFAULT_MODE,
    "--mode",
    metavar="|".join(MODES),
    help="Evidence the relevance score is computed from: dense (cosine), lexical (BM25) or "
    "hybrid (both). Candidates are ordered by that score and the threshold applies to it.",
)
SPAN_OPTION = typer.Option(
    "chunk",
    "--span",
    metavar="chunk|best",
    help="chunk: return whole chunks; best: also the evidence span of each hit (JSON fields "
    "span_start, span_end, span_text: offsets into the document text).",
)
MODEL_OPTION = typer.Option(
    None,
    "--model",
    metavar="DIR|URL",
    help="ONNX model folder the index was built with (default: the bundled "
    "all-MiniLM-L6-v2, or multilingual or the endpoint URL for an index "
    "built with it; a URL for an endpoint that moved).",
)


def open_index(index: str, model: str | None = None) -> api.Index:
    """The index, open read-only for searching; ``--path`` and document globs are read as
    the user typed them (``ragsift.api.stored_path``: from the current folder, inside a
    project relative to its root)."""
    return api.open_index(index, model=model, typed_paths=True, root=project_root())


def project_root() -> str | None:
    """The root of the project file governing the current folder (documents are stored
    relative to it), or None."""
    from ragsift.cli._common import STATE

    project = STATE.get("project")
    return project.root if project is not None else None


def threshold_arg(text: str | None) -> float | str | None:
    """``--threshold``'s text as the API's threshold: absent or ``auto`` -> ``"auto"`` (as the
    project file's ``threshold = "auto"``); ``none`` (``off``, ``no``) -> None; else a number
    (the API checks its range)."""
    if text is None:
        return "auto"
    word = text.strip().lower()
    if word == "auto":
        return "auto"
    if word in ("none", "off", "no"):
        return None
    try:
        return float(word)
    except ValueError:
        raise RagsiftError(
            f"--threshold must be a number, 'none' or 'auto', not {text!r}"
        ) from None


def fmt_threshold(value: float | None) -> str:
    return "none" if value is None else f"{value:.2f}"


def read_queries(text: str) -> tuple[list[str], bool]:
    """(queries, batch?): ``-`` reads one query per non-empty stdin line."""
    if text != "-":
        from ragsift.api import check_query

        check_query(text)
        return [text], False
    from ragsift.cli._common import read_stdin_text

    queries = [line.strip() for line in read_stdin_text("stdin").splitlines() if line.strip()]
    if not queries:
        raise RagsiftError("no queries on stdin (one per line)")
    return queries, True


# -- query ------------------------------------------------------------------------------------

EPILOG = """
Examples:

  ragsift query "how do I rotate the logs" --index docs.db

  ragsift query "sourdough starter" -i idx.db --json | jq -r .text

  ragsift query "bee swarm" -i idx.db --threshold none -k 5 --path 'beekeeping/*'

  ragsift query "queen cells" -i idx.db --format grep | fzf

  printf 'first question\\nsecond question\\n' | ragsift query - -i idx.db --json

  ragsift query "bee swarm" -i idx.db --span best --json | jq -r .span_text

  ragsift query -i idx.db -- --dry-run

A query that starts with a dash goes after --, which ends the options (as in the last
example); a query longer than the model reads gives the model its last line, its error lines
and its identifiers (stderr says what was left out).

Exit status: 0 when something was admitted (for any query of a batch), 1 when nothing
cleared the threshold (or the index holds no chunks), 2 on errors (also: a model with no
measured threshold and none given or tuned).
"""


def query_command(
    text: str = typer.Argument(
        ..., metavar="QUERY", help="The query, or - to read one query per line from stdin."
    ),
    index: str = INDEX_OPTION,
    k: int = K_OPTION,
    threshold: str | None = THRESHOLD_OPTION,
    reject_window: int = REJECT_WINDOW_OPTION,
    max_chars: int | None = MAX_CHARS_OPTION,
    path: str | None = PATH_OPTION,
    model: str | None = MODEL_OPTION,
    mode: str = MODE_OPTION,
    span: str = SPAN_OPTION,
    as_json: bool = typer.Option(
        False, "--json", help="JSON lines: one hit per line (the same as --format json)."
    ),
    fmt: str = typer.Option(
        "text",
        "--format",
        metavar="text|grep|json",
        help="text: score, path:line and the chunk, for reading; grep: one "
        "line per hit, `path:line: preview`, for editors' quickfix lists "
        "and fzf (QUERY - adds the query's number first: "
        "`N:path:line: preview`); json: JSON lines, like --json.",
    ),
    rejected: bool = typer.Option(
        False,
        "--rejected",
        help="Also print the rejected candidates with their reason (--json: admitted: false).",
    ),
) -> None:
    """Search an index and print the hits that clear the similarity threshold.

    Top-K with a floor: at most K hits, each with score >= threshold; when nothing clears the
    floor nothing is printed (no fallback to a weak match) and the exit status is 1.
    """
    from ragsift.api import SearchRequest, nothing_hint, outcome_hint

    fmt = fmt.strip().lower()
    if fmt not in ("text", "grep", "json"):
        raise RagsiftError(f"--format must be text, grep or json, not {fmt!r}")
    if fmt == "grep" and rejected:
        raise RagsiftError("--rejected needs --format text or json (grep lists the hits)")
    queries, batch = read_queries(text)
    with open_index(index, model) as ix:
        request = SearchRequest(
            k=k,
            threshold=threshold_arg(threshold),
            reject_window=reject_window,
            max_chars=max_chars,
            path=path,
            mode=mode,
            span=span,
        )
        found = ix.search(queries, request)
    warn_search(found, queries if batch else None)
    results, paths, hits = found.results, found.paths, found.hits
    any_admitted = False
    if as_json or fmt == "json":
        write_jsonl(h.to_json(with_query=batch) for h in _shown(hits, rejected))
    elif fmt == "grep":
        from ragsift.api import openable_path
        from ragsift.cli.render import grep_line

        root = project_root()  # paths for an editor: openable from where the command runs

        # A batch (QUERY is -) numbers its lines: `N:path:line: preview`, N the query's
        # position among the queries read (1 = the first; blank lines are not queries).
        # A number holds no colon, so `cut -d: -f1` is the query and `cut -d: -f2-` the
        # single-query line, whatever the path holds; one query keeps grep's own format.
        sys.stdout.writelines(
            (f"{n}:" if batch else "") + grep_line(h, openable_path(h.path, root)) + "\n"
            for n, of_query in enumerate(hits, 1)
            for h in of_query
            if h.admitted
        )
        sys.stdout.flush()
    else:
        _print_hits(results, hits, batch, rejected)
    for r in results:
        if r.admitted:
            any_admitted = True
        else:
            prefix = f"{r.query!r}: " if batch else ""
            # the hint names parameters and commands: worded as this command's flags
            hint = nothing_hint(
                r, outcome_hint(r, flag_name), paths, flag_name, found.threshold.source
            )
            warn(prefix + (hint or "nothing admitted"))
    raise typer.Exit(EXIT_OK if any_admitted else EXIT_NOTHING)


def warn_search(found: Search, queries: list[str] | None = None) -> None:
    """The stderr lines of a search: a saved threshold that was ignored, each query the
    model cut (``queries``: a batch's texts, to name which), and one line when the queries
    are mostly in a script the index's model cannot read (its dense side is noise then)."""
    from ragsift.cli.render import dense_view_line, truncation_warning

    if found.threshold.notice:
        warn(found.threshold.notice.worded(flag_name))
    views = found.dense_views or [None] * len(found.truncated)
    for i, (dropped, view) in enumerate(zip(found.truncated, views)):
        name = queries[i] if queries else None
        if view is not None:
            warn(dense_view_line(view, found.max_length, dropped, name))
        elif dropped:
            warn(truncation_warning(found.max_length, dropped, name))
    dense = [r.query for r in found.results if r.mode != "lexical"]
    script = api.unread_script(found.model, " ".join(dense)) if dense else None
    if script:
        warn(
            f"warning: the query is in {script} script, which this index's model "
            f"({found.model}, English) cannot read: its dense side is noise; --mode lexical "
            "matches its words, or embed with --model multilingual --rebuild"
        )


def _shown(hits: list[tuple[Hit, ...]], rejected: bool) -> Iterator[Hit]:
    """The hits ``query --json`` prints: each query's admitted ones, in rank order, and with
    ``--rejected`` the rejected ones in their places."""
    for of_query in hits:
        for h in of_query:
            if h.admitted or rejected:
                yield h


def _print_hits(
    results: list[Retrieval], hits: list[tuple[Hit, ...]], batch: bool, rejected: bool
) -> None:
    from rich.markup import escape

    from ragsift.cli._common import stdout_console
    from ragsift.cli.render import print_hit, rule

    console = stdout_console()
    for r, of_query in zip(results, hits):
        if batch:
            console.print(f"[bold]== {escape(r.query)}[/bold]", highlight=False, soft_wrap=True)
        for h in of_query:
            if h.admitted:
                print_hit(console, h)
        if rejected:
            for h in of_query:
                if h.admitted:
                    continue
                preview = " ".join(h.text.split())[:70]
                why = rule(h, r)
                console.print(
                    f"[dim]{h.score:.3f}  {escape(h.location)}  rejected ({h.reason})"
                    f"{', ' + escape(why) if why else ''}: {escape(preview)}[/]",
                    highlight=False,
                    soft_wrap=True,
                )


class QueryCommand(HelpCommand):
    """A command whose argument is a QUERY (``query``, ``explain``). A word that starts with a
    dash is read as an option, as everywhere on the command line, so an unknown one stays an
    error (a mistyped ``--treshold`` must not silently become the search); the error line
    says how to search for it: after ``--``, which ends the options (issue 41)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)  # click's parser consumes the list it is given
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:
            name = getattr(exc, "option_name", None)
            if not name or type(exc).__name__ != "NoSuchOption":
                raise
            message = dash_hint(exc.format_message(), name, given, ctx)
            raise type(exc)(name, message=message, ctx=ctx) from None


def dash_hint(message: str, name: str, args: list[str], ctx: Any) -> str:
    """click's "No such option" line with the form that searches for the word: ``ragsift
    query -- '--show-default'`` (the whole argument it came in, quoted for a shell)."""
    import shlex

    word = next((a for a in args if a == name or a.startswith(name)), name)
    return (
        f"{message}. To search for text that starts with a dash, put it after --: "
        f"{ctx.command_path} -- {shlex.quote(word)}"
    )


def register(app: typer.Typer) -> None:
    app.command("query", cls=QueryCommand, epilog=EPILOG, help=query_command.__doc__)(
        handle_errors(query_command)
    )
