"""``ragsift explain``: one query, shown in full: what was admitted, what was rejected and
by how much, the score picture against the threshold, and which unit of each hit lies
closest to the query (an embedding-similarity proxy, not a causal explanation)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import typer

from ragsift.cli._common import handle_errors, warn
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
from ragsift.errors import EXIT_NOTHING, EXIT_OK, RagsiftError

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

The layout follows the terminal's width: tables from 100 columns, one block per candidate
below that (COLUMNS=80 ragsift explain ... shows it on any terminal).

Exit status: 0 when something was admitted, 1 when nothing cleared the threshold, 2 on errors.
"""

PREVIEW = 80
WINDOW = 600


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
    units: int = typer.Option(3, "--units", min=0, max=12,
                              help="Closest citable units to show per hit."),
    as_json: bool = typer.Option(False, "--json", help="Print the full retrieval record plus "
                                 "attributions as one JSON object."),
) -> None:
    """Show why a query found what it found: admitted hits with their margin over the
    threshold, rejected candidates with their gap and reason, a score picture, and the
    closest unit of each hit (an embedding-similarity proxy, not a causal explanation)."""
    from ragsift.api import explain_record, hints, outcome_hint

    if not text.strip():
        raise RagsiftError("the query is empty")
    with open_index(index, model) as ix:
        found = ix.search(text, k=k, threshold=threshold_arg(threshold),
                          reject_window=reject_window, max_chars=max_chars, path=path,
                          mode=mode, span=span, units=units)
    warn_search(found)
    r, floor, cut = found.results[0], found.threshold, found.truncated[0]
    if as_json:
        record = explain_record(r, floor, attributions=found.attributions[0],
                                query_truncated=cut, paths=found.paths)
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    else:
        from ragsift.cli._common import stdout_console

        render(stdout_console(), r, found.attributions[0],
               hints(r, outcome_hint(r), found.paths), found.model, floor.label,
               query_truncated=cut, max_length=found.max_length)
    raise typer.Exit(EXIT_OK if r.admitted else EXIT_NOTHING)


def render(console: Console, r: Retrieval, attributions: list[Attribution],
           hint_lines: list[str], model: str, origin: str, *,
           query_truncated: int = 0, max_length: int | None = None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ragsift.cli.render import NARROW, reason_label, render_narrow

    note = f" ({origin})" if origin else ""
    if console.width < NARROW:
        render_narrow(console, r, attributions, hint_lines, model, note,
                      query_truncated=query_truncated, max_length=max_length)
        return
    floor = fmt_threshold(r.threshold) + note
    console.print(f"[bold]query[/]  {escape(r.query)}", highlight=False)
    details = (f"model {model} · mode {r.mode} · k {r.k} · threshold {floor} · reject window "
               f"{r.reject_window} · max chars {r.max_chars or '-'} · {r.searched} chunks "
               "searched")
    if r.path_filter:
        details += f" (--path {r.path_filter})"
    console.print(f"[dim]{escape(details)}[/]", highlight=False)
    if query_truncated:
        console.print(f"[yellow]⚠ query truncated to {max_length} model tokens; "
                      f"{query_truncated} tokens ignored[/]", highlight=False)

    by_id = {a.id: a for a in attributions}
    if r.admitted:
        table = Table(title=f"admitted ({len(r.admitted)})", title_justify="left",
                      show_lines=True, expand=False)
        table.add_column("rank", justify="right", no_wrap=True, min_width=4)
        table.add_column("score", justify="right", no_wrap=True, min_width=5)
        table.add_column("margin", justify="right", no_wrap=True, min_width=6)
        fused = _add_side_columns(table, r)
        table.add_column("where", overflow="fold", min_width=16, max_width=40)
        table.add_column("chunk (closest unit highlighted)", overflow="fold", ratio=1)
        for c in r.admitted:
            where = escape(c.location)
            if c.headings:
                where += "\n[dim]" + escape(" › ".join(c.headings)) + "[/]"
            if c.truncated:
                where += f"\n[yellow]⚠ truncated: {c.truncated} tokens the model never saw[/]"
            table.add_row(str(c.rank), f"{c.score:.3f}", _signed(c.margin(r.threshold)),
                          *(_side_cells(c, r) if fused else ()), where,
                          highlighted(c, by_id.get(c.id)))
        console.print(table)
        _print_units(console, r, by_id)
    else:
        console.print("[bold red]nothing admitted[/]")

    rejected = r.rejected
    if rejected:
        table = Table(title=f"rejected ({len(rejected)})", title_justify="left")
        table.add_column("rank", justify="right", no_wrap=True, min_width=4)
        table.add_column("score", justify="right", no_wrap=True, min_width=5)
        table.add_column("gap", justify="right", no_wrap=True, min_width=5)
        table.add_column("reason", no_wrap=True, min_width=21)
        fused = _add_side_columns(table, r)
        table.add_column("where", overflow="fold", min_width=16, max_width=40)
        # The numbers matter more than the preview: it gets what the other columns leave
        # (bounded, so rich never squeezes rank/score/gap/where to nothing), or nothing.
        room = console.width - (120 if r.mode == "hybrid" else 105)
        preview = room >= 12
        if preview:
            table.add_column("preview", overflow="ellipsis", no_wrap=True, max_width=room)
        for c in rejected:
            where = escape(c.location) + (f" [yellow]⚠{c.truncated}[/]" if c.truncated else "")
            table.add_row(str(c.rank), f"{c.score:.3f}", _signed(c.margin(r.threshold)),
                          escape(reason_label(c, r)), *(_side_cells(c, r) if fused else ()), where,
                          *((escape(_preview(c.text)),) if preview else ()))
        console.print(table)

    if r.candidates:
        console.print("[bold]score picture[/] [dim](candidates by rank; ┃ = threshold)[/]")
        for line in score_picture(r):
            console.print(line, highlight=False, soft_wrap=True)
    for hint in hint_lines:
        console.print(f"[bold yellow]hint:[/] {escape(hint)}", highlight=False)


def _print_units(console: Console, r: Retrieval, by_id: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ragsift.api import ATTRIBUTION_NOTE as NOTE

    rows = [(c, u) for c in r.admitted if c.id in by_id for u in by_id[c.id].units]
    if not rows:
        return
    table = Table(title="closest units", title_justify="left", caption=NOTE,
                  caption_justify="left")
    table.add_column("hit", justify="right", no_wrap=True)
    table.add_column("unit score", justify="right", no_wrap=True)
    table.add_column("share", justify="right", no_wrap=True)
    table.add_column("unit", overflow="fold", ratio=1)
    for c, u in rows:
        table.add_row(str(c.rank), f"{u.score:.3f}", f"{u.share:.0%}", escape(u.text))
    console.print(table)



def highlighted(c: Candidate, a: Attribution | None) -> Text:
    """The chunk text (a window of it when long) with the closest unit in bold reverse and the
    evidence span (``--span best``) underlined. Hard-wrapped prose lines are joined for
    display, one character for one, so the unit's offsets still hold."""
    from rich.text import Text

    text = _SOFT_BREAK.sub(" ", c.text)
    best = a.best if a is not None else None
    lo, hi = 0, len(text)
    if len(text) > WINDOW:
        center = best.start if best is not None and best.start is not None else 0
        if c.span_start is not None and c.start is not None:
            center = c.span_start - c.start
        lo = max(0, min(center - WINDOW // 4, len(text) - WINDOW))
        hi = lo + WINDOW
    from ragsift.cli._common import printable  # one for one: the unit offsets still hold

    out = Text(printable(("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")))
    if best is not None and best.start is not None and best.end is not None:
        s, e = max(best.start, lo), min(best.end, hi)
        if s < e:
            shift = 1 if lo else 0
            out.stylize("bold reverse", s - lo + shift, e - lo + shift)
    if c.span_start is not None and c.span_end is not None and c.start is not None:
        s, e = max(c.span_start - c.start, lo), min(c.span_end - c.start, hi)
        if s < e:
            shift = 1 if lo else 0
            out.stylize("underline", s - lo + shift, e - lo + shift)
    return out


def score_picture(r: Retrieval, width: int = 40) -> list[str]:
    """One bar per candidate, scaled between the lowest and highest of the scores and the
    threshold, with the threshold column marked (rich markup)."""
    scores = [c.score for c in r.candidates]
    points = scores + ([r.threshold] if r.threshold is not None else [])
    lo, hi = min(points), max(points)
    pad = max((hi - lo) * 0.05, 0.01)
    lo, hi = lo - pad, hi + pad
    col = None if r.threshold is None else round((r.threshold - lo) / (hi - lo) * width)
    lines = []
    for c in r.candidates:
        filled = max(0, min(width, round((c.score - lo) / (hi - lo) * width)))
        cells = ["█" if i < filled else " " for i in range(width + 1)]
        if col is not None and 0 <= col <= width:
            cells[col] = "┃"
        colour = "green" if c.admitted else ("yellow" if c.reason != "below-threshold" else
                                             "red")
        mark = "✓" if c.admitted else "·"
        lines.append(f"{c.rank:>3} {c.score:6.3f} {mark} [{colour}]{''.join(cells)}[/]")
    axis = f"           {lo:.2f}{' ' * max(1, width - 8)}{hi:.2f}"
    lines.append(f"[dim]{axis}[/]")
    if r.threshold is not None:
        lines.append(f"[dim]{' ' * (13 + (col or 0))}┃ threshold {r.threshold:.2f}[/]")
    return lines


def _add_side_columns(table, r: Retrieval) -> bool:
    """The evidence columns (``render.evidence_cells``): what the score was computed from."""
    if r.mode != "lexical":
        table.add_column("unit · cos", justify="right", no_wrap=True, min_width=7)
    if r.mode != "dense":
        table.add_column("lexical", justify="right", no_wrap=True, min_width=7)
    if r.mode == "hybrid":
        table.add_column("via", no_wrap=True, min_width=4)
    return True


def _side_cells(c: Candidate, r: Retrieval) -> tuple[str, ...]:
    from ragsift.cli.render import evidence_cells

    cells = tuple(x.replace("unit ", "").replace("cos ", "").replace("lex ", "")
                  for x in evidence_cells(c, r))
    if r.mode == "hybrid":
        cells += ({"lexical": "[magenta]lexical only[/]", "dense": "dense only"}.get(
            c.source or "", "both"),)
    return cells


def _signed(value: float | None) -> str:
    if value is None:
        return "-"
    return f"+{value:.2f}" if value >= 0 else f"−{abs(value):.2f}"


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat[:PREVIEW] + ("…" if len(flat) > PREVIEW else "")


def register(app: typer.Typer) -> None:
    app.command("explain", epilog=EPILOG, help=explain_command.__doc__)(
        handle_errors(explain_command))
