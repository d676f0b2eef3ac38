"""``ragsift explain``: one query, shown in full: what was admitted, what was rejected and
by how much, the score picture against the threshold, and which unit of each hit lies
closest to the query (an embedding-similarity proxy, not a causal explanation)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import typer

from ragsift.cli._common import flag_name, handle_errors
from ragsift.cli.query import (
    INDEX_OPTION,
    K_OPTION,
    MAX_CHARS_OPTION,
    MODE_OPTION,
    MODEL_OPTION,
    PATH_OPTION,
    REJECT_WINDOW_OPTION,
    SPAN_OPTION,
    THRESHOLD_OPTION,
    fmt_threshold,
    open_index,
    threshold_arg,
    warn_search,
)
from ragsift.cli.render import SOFT_BREAK as _SOFT_BREAK
from ragsift.errors import EXIT_NOTHING, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ragsift.api import Attribution, Candidate, Retrieval

EPILOG = """
Examples:

  ragsift explain "when do bees swarm" --index idx.db

  ragsift explain "when do bees swarm" -i idx.db --threshold 0.3 --reject-window 20

  ragsift explain "oven temperature" -i idx.db --json | jq '.candidates[] | [.rank, .score, .reason]'

Attribution ranks each hit's citable units (sentences, lines, JSON key: value units) by the
cosine of their own embedding to the query. That is an embedding-similarity proxy: it shows
which unit lies closest to the query, not why the whole chunk scored what it did.

One block per candidate: rank, score, margin over the threshold, a bar on the score's 0-1
scale (┃ marks the threshold) and the evidence; path:line (a long path is cut in the middle
with "…", never wrapped); for a hit, a few lines of its text with its best unit highlighted
(»…« when the output has no colours) and its closest units; for a rejection, a one-line
preview under the rule that turned it away. From 100 columns the numbers sit under a column
header; below it they carry their labels (COLUMNS=80 ragsift explain ... shows it anywhere).

Exit status: 0 when something was admitted, 1 when nothing cleared the threshold, 2 on errors.
"""

WINDOW = 600  # characters of a long chunk around its best unit that the display starts from


def explain_command(
    text: str = typer.Argument(..., metavar="QUERY", help="The query."),
    index: str = INDEX_OPTION,
    k: int = K_OPTION,
    threshold: str | None = THRESHOLD_OPTION,
    reject_window: int = REJECT_WINDOW_OPTION,
    max_chars: int | None = MAX_CHARS_OPTION,
    path: str | None = PATH_OPTION,
    model: str | None = MODEL_OPTION,
    mode: str = MODE_OPTION,
    span: str = SPAN_OPTION,
    units: int = typer.Option(
        3, "--units", min=0, max=12, help="Closest citable units to show per hit."
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the full retrieval record plus attributions as one JSON object.",
    ),
) -> None:
    """Show why a query found what it found: admitted hits with their margin over the
    threshold, rejected candidates with their gap and reason, a score picture, and the
    closest unit of each hit (an embedding-similarity proxy, not a causal explanation)."""
    from ragsift.api import ExplainRecord, SearchRequest, check_query

    check_query(text)  # before the index is opened: a blank query is the error to report
    with open_index(index, model) as ix:
        request = SearchRequest(
            k=k,
            threshold=threshold_arg(threshold),
            reject_window=reject_window,
            max_chars=max_chars,
            path=path,
            mode=mode,
            span=span,
            units=units,
        )
        found = ix.search(text, request)
    warn_search(found)
    r = found.results[0]
    record = ExplainRecord.of(
        r,
        found.threshold,
        attributions=found.attributions[0],
        query_truncated=found.truncated[0],
        paths=found.paths,
        setting=flag_name,  # hints in this command's flags, naming commands to run
        commands=True,
    )
    if as_json:
        sys.stdout.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
    else:
        from ragsift.cli._common import stdout_console

        render(
            stdout_console(),
            r,
            found.attributions[0],
            list(record.hints),
            found.model,
            record.threshold_origin,
            query_truncated=record.query_truncated,
            max_length=found.max_length,
        )
    raise typer.Exit(EXIT_OK if r.admitted else EXIT_NOTHING)


def packed(parts: list[str], width: int, sep: str = " · ") -> list[str]:
    """``parts`` joined by ``sep`` into as few lines of at most ``width`` characters as they
    fit, a part never cut between lines (one longer than ``width`` is a line of its own)."""
    rows: list[str] = []
    for part in parts:
        if rows and len(rows[-1]) + len(sep) + len(part) <= width:
            rows[-1] += sep + part
        else:
            rows.append(part)
    return rows


def render(
    console: Console,
    r: Retrieval,
    attributions: list[Attribution],
    hint_lines: list[str],
    model: str,
    origin: str,
    *,
    query_truncated: int = 0,
    max_length: int | None = None,
) -> None:
    """``explain`` for reading, at any width (80 and 120 columns are tested).

    A header (the query; model, mode, threshold, chunks searched; what the candidate counts
    mean; the legend), then one block per candidate in rank order, admitted first: a line of
    numbers (rank, score, margin over the threshold, a bar on the 0–1 score scale with the
    threshold ``┃``, the evidence), ``path:line`` (never wrapped: cut in the middle when too
    long), and for a hit a few lines of its text around its best unit (reverse video, or
    ``»…«`` where the output has no styles) and its closest units; for a rejection a one-line
    preview, under a heading that names the rule that turned it away. From ``NARROW`` columns
    the numbers are labelled once, in a column header; below it each evidence number carries its
    own label. Document text is shown literally (``Text``, never markup)."""
    from rich.text import Text

    from ragsift.cli.render import NARROW, shown

    width = console.width
    columns = _Columns(r, width >= NARROW, width)
    _print_header(console, width, r, model, origin, columns, query_truncated, max_length)
    _print_admitted(console, width, r, attributions, columns)
    _print_rejected(console, width, r, columns)
    for hint in hint_lines:
        console.print(Text.assemble(("hint: ", "bold yellow"), shown(hint)))


def _line(console: Console, text: Text) -> None:
    """One terminal line, cut rather than wrapped."""
    console.print(text, no_wrap=True, overflow="ellipsis", crop=True)


def _print_header(
    console: Console,
    width: int,
    r: Retrieval,
    model: str,
    origin: str,
    columns: _Columns,
    query_truncated: int,
    max_length: int | None,
) -> None:
    """The query; model, mode, threshold, chunks searched; the candidate counts; a truncated
    query's warning; and, when there are candidates, the legend and the column header."""
    from rich.text import Text

    from ragsift.cli.render import counts_line, flat, shown

    out = console.print
    out(
        Text.assemble(
            ("query  ", "bold"),
            shown(r.query) if len(r.query) <= 3 * width else flat(r.query, 3 * width),
        )
    )
    details = [
        f"model {model}",
        f"mode {r.mode}",
        f"threshold {fmt_threshold(r.threshold)}" + (f" ({origin})" if origin else ""),
        f"{r.searched:,} chunks searched",
    ]
    if r.max_chars is not None:
        details.append(f"max chars {r.max_chars}")
    if r.path_filter:
        details.append(f"--path {r.path_filter}")
    for row in packed(details, width):  # the threshold and its origin never split
        out(Text(shown(row), style="dim"))
    for row in packed(counts_line(r).split(" · "), width):  # wrapped between its phrases
        out(Text(shown(row), style="dim"))
    if query_truncated:
        out(
            Text(
                f"⚠ query truncated to {max_length} model tokens; {query_truncated} tokens ignored",
                style="yellow",
            )
        )
    if r.candidates:
        out(Text(_legend(r, width), style="dim"))
        _line(console, columns.header())


def _print_admitted(
    console: Console,
    width: int,
    r: Retrieval,
    attributions: list[Attribution],
    columns: _Columns,
) -> None:
    """Each hit: its numbers, ``path:line``, a few lines of its text with the best unit marked,
    and its closest units (with the note on what they are); or "nothing admitted"."""
    from rich.text import Text

    from ragsift.api import ATTRIBUTION_NOTE as NOTE
    from ragsift.cli.render import INDENT, MARKS, flat

    marks = console.color_system is None  # no styles reach the reader: mark the unit
    if not r.admitted:
        console.print(Text("nothing admitted", style="bold red"))
        return
    by_id = {a.id: a for a in attributions}
    unit = f"best unit {MARKS[0]}marked{MARKS[1]}" if marks else "best unit highlighted"
    console.print(
        Text.assemble(
            (f"admitted ({len(r.admitted)})", "bold green"), (f" · each hit's {unit}", "dim")
        )
    )
    for c in r.admitted:
        a = by_id.get(c.id)
        for row in columns.head(c):
            _line(console, row)
        for row in _where(c, width, INDENT):
            _line(console, row)
        for row in _text(console, c, a, width - INDENT, marks):
            _line(console, Text(" " * INDENT).append_text(row))
        for u in a.units if a is not None else ():
            label = f"unit {u.score:.3f} share {u.share:.0%}  "
            row = Text(" " * INDENT).append(label, style="magenta")
            row.append(flat(u.text))
            _line(console, row)
    if any(by_id.get(c.id) and by_id[c.id].units for c in r.admitted):
        console.print(Text("closest units: " + NOTE, style="dim"))


def _print_rejected(console: Console, width: int, r: Retrieval, columns: _Columns) -> None:
    """The rejected candidates, grouped under the rule that turned each away, one line of
    numbers and a one-line preview each."""
    from rich.text import Text

    from ragsift.cli.render import INDENT, colour, group_label, rejected_title

    rejected = r.rejected
    if not rejected:
        return
    console.print(Text(rejected_title(r), style="bold"))
    group = None
    for c in rejected:
        if c.reason != group:
            group = c.reason
            console.print(Text("  " + group_label(c, r), style=colour(c)))
        for row in columns.head(c):
            _line(console, row)
        _line(console, _where_preview(c, width, INDENT))


def _legend(r: Retrieval, width: int) -> str:
    """What the bars and ``#n`` mean, in one line where the width allows."""
    from rich.cells import cell_len

    floor = "no threshold" if r.threshold is None else f"┃ = threshold {r.threshold:.2f}"
    rank = "#n: rank in the dense or lexical list"
    long = f"score picture: bars on the 0–1 scale, {floor} · {rank}"
    return long if cell_len(long) <= width else f"bars: score 0–1, {floor} · {rank}"


class _Columns:
    """The numbers of a candidate's first line, aligned under one header: rank, score, margin
    (score − threshold), the bar; then the evidence: in columns of their own from ``NARROW``
    columns (``unit · cos``, ``lexical``, ``title`` where a candidate's page title holds at
    least half of the query's words, ``via``), below it in words (``render.side_info``)."""

    def __init__(self, r: Retrieval, wide: bool, width: int) -> None:
        from ragsift.cli.render import evidence_cells, title_cell

        self.r, self.wide, self.width = r, wide, width
        self.cells = 20 if wide else 10
        self.rank_w = max([3, *(len(str(c.rank)) for c in r.candidates)])
        self.sides: list[tuple[str, int]] = []
        if wide:
            names = ([] if r.mode == "lexical" else ["unit · cos"]) + (
                [] if r.mode == "dense" else ["lexical"]
            )
            rows = [_side_cells(c, r, evidence_cells) for c in r.candidates]
            for i, name in enumerate(names):
                self.sides.append((name, max([len(name), *(len(row[i]) for row in rows)])))
            self.titles = {c.rowid: _title_value(c, r, title_cell) for c in r.candidates}
            if any(t != "-" for t in self.titles.values()):
                self.sides.append(("title", max([5, *map(len, self.titles.values())])))
            if r.mode == "hybrid":
                self.sides.append(("via", max([3, *(len(_via(c)) for c in r.candidates)])))

    def header(self) -> Text:
        from rich.text import Text

        from ragsift.cli.render import axis

        head = f"{'#':>{self.rank_w}} {'score':>5} {'margin':>6} {axis(self.cells)}"
        if self.wide:
            head += "".join(f"  {name:<{w}}" for name, w in self.sides).rstrip()
        else:
            head += "  evidence"
        return Text(head, style="dim")

    def head(self, c: Candidate) -> list[Text]:
        from rich.text import Text

        from ragsift.cli.render import (
            INDENT,
            bar,
            colour,
            evidence_cells,
            join_fitting,
            side_info,
            signed,
        )

        style = colour(c)
        numbers = Text(f"{c.rank:>{self.rank_w}} ")
        numbers.append(f"{c.score:.3f}", style="bold " + style if c.admitted else "")
        numbers.append(f" {signed(c.margin(self.r.threshold)):>6} ")
        numbers.append_text(bar(c.score, self.r.threshold, self.cells, style))
        if self.wide:
            values = list(_side_cells(c, self.r, evidence_cells))
            if any(name == "title" for name, _ in self.sides):
                values.append(self.titles[c.rowid])
            if self.r.mode == "hybrid":
                values.append(_via(c))
            for (_, w), value in zip(self.sides, values):
                numbers.append("  " + f"{value:<{w}}", style="dim" if value == "-" else "")
            return [numbers.rstrip() or numbers]
        return join_fitting([numbers, Text(side_info(c, self.r))], self.width, INDENT)


def _side_cells(c: Candidate, r: Retrieval, evidence_cells) -> tuple[str, ...]:
    """The wide layout's evidence cells: ``render.evidence_cells`` without the words the
    column header says (``0.61 · 0.58 #3`` under ``unit · cos``, ``0.70 #1`` under ``lexical``)."""
    return tuple(
        x.replace("unit ", "").replace("cos ", "").replace("lex ", "") for x in evidence_cells(c, r)
    )


def _title_value(c: Candidate, r: Retrieval, title_cell) -> str:
    """The wide layout's ``title`` cell: ``2/3`` (``render.title_cell`` under its header), "-"
    where the page title holds fewer than half of the query's words or was not read."""
    return title_cell(c, r).replace("title ", "") or "-"


def _via(c: Candidate) -> str:
    return {"lexical": "lexical only", "dense": "dense only"}.get(c.source or "", "both")


def _where(c: Candidate, width: int, indent: int) -> list[Text]:
    """A hit's ``path:line`` (whole, or cut in the middle; never wrapped) and its heading
    trail (beside it when there is room, else on a line of its own, cut at the front)."""
    from rich.cells import cell_len
    from rich.text import Text

    from ragsift.cli.render import fit_location, fit_trail, shown

    room = width - indent
    where = fit_location(shown(c.location), room)
    first = Text(" " * indent).append(where, style="cyan")
    lines = [first]
    if c.headings:
        headings = [shown(h) for h in c.headings]
        left = room - cell_len(where) - 2
        if left >= min(cell_len(" › ".join(headings)), 16):
            first.append("  ").append(fit_trail(headings, left), style="dim")
        else:
            lines.append(Text(" " * indent).append(fit_trail(headings, room), style="dim"))
    if c.truncated:
        lines.append(
            Text(" " * indent).append(
                f"⚠ truncated: {c.truncated} tokens the model never saw", style="yellow"
            )
        )
    return lines


def _where_preview(c: Candidate, width: int, indent: int) -> Text:
    """A rejected candidate's ``path:line`` and a one-line preview of its text; a long path is
    cut in the middle so that the preview keeps ``PREVIEW_MIN`` cells."""
    from rich.cells import cell_len
    from rich.text import Text

    from ragsift.cli.render import PREVIEW_MIN, fit_location, flat, one_line, shown

    mark = f" ⚠{c.truncated}" if c.truncated else ""
    room = width - indent - len(mark)
    where = fit_location(shown(c.location), max(12, room - 2 - PREVIEW_MIN))
    row = Text(" " * indent).append(where, style="cyan")
    if mark:
        row.append(mark, style="yellow")
    left = room - cell_len(where) - 2
    if left >= 8:
        row.append("  ").append_text(one_line(flat(c.text), left, style="dim"))
    return row


def _text(
    console: Console, c: Candidate, a: Attribution | None, room: int, marks: bool
) -> list[Text]:
    from ragsift.cli.render import TEXT_LINES, window

    return window(console, highlighted(c, a), max(20, room), TEXT_LINES, marks=marks)


def highlighted(c: Candidate, a: Attribution | None) -> Text:
    """The chunk text (a window of it when long) with its best unit in bold reverse (the
    candidate's own ``unit_start``/``unit_end``, else its attribution's first unit) and the
    evidence span (``--span best``) underlined. Hard-wrapped prose lines are joined for
    display, one character for one, so the offsets still hold."""
    from rich.text import Text

    from ragsift.cli._common import printable  # one for one: the unit offsets still hold
    from ragsift.cli.render import UNIT_STYLE, best_unit

    text = _SOFT_BREAK.sub(" ", c.text)
    unit = best_unit(c, a)
    lo, hi = 0, len(text)
    if len(text) > WINDOW:
        center = unit[0] if unit is not None else 0
        if c.span_start is not None and c.start is not None:
            center = c.span_start - c.start
        lo = max(0, min(center - WINDOW // 4, len(text) - WINDOW))
        hi = lo + WINDOW
    out = Text(printable(("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")))
    shift = 1 if lo else 0
    if unit is not None:
        s, e = max(unit[0], lo), min(unit[1], hi)
        if s < e:
            out.stylize(UNIT_STYLE, s - lo + shift, e - lo + shift)
    if c.span_start is not None and c.span_end is not None and c.start is not None:
        s, e = max(c.span_start - c.start, lo), min(c.span_end - c.start, hi)
        if s < e:
            out.stylize("underline", s - lo + shift, e - lo + shift)
    return out


def score_picture(r: Retrieval, width: int = 40) -> list[str]:
    """One bar per candidate on the score's 0–1 scale (the bars of ``explain``'s rows, drawn
    wider), the threshold column marked (rich markup), then the axis."""
    from ragsift.cli.render import axis, bar, colour

    lines = []
    for c in r.candidates:
        mark = "✓" if c.admitted else "·"
        cells = bar(c.score, r.threshold, width).plain
        lines.append(f"{c.rank:>3} {c.score:6.3f} {mark} [{colour(c)}]{cells}[/]")
    lines.append(f"[dim]{' ' * 13}{axis(width)}[/]")
    if r.threshold is not None:
        col = max(0, min(width - 1, int(r.threshold * width)))
        lines.append(f"[dim]{' ' * (13 + col)}┃ threshold {r.threshold:.2f}[/]")
    return lines


def register(app: typer.Typer) -> None:
    from ragsift.cli.query import QueryCommand  # an unknown option's line names the -- form

    app.command("explain", cls=QueryCommand, epilog=EPILOG, help=explain_command.__doc__)(
        handle_errors(explain_command)
    )
