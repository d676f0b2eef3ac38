"""``ragsift tune``: sweep the similarity threshold over labelled queries and recommend one."""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING

import typer

from ragsift.cli._common import flag_name, handle_errors, warn
from ragsift.cli.query import (
    INDEX_OPTION,
    K_OPTION,
    MAX_CHARS_OPTION,
    MODE_OPTION,
    MODEL_OPTION,
    PATH_OPTION,
    REJECT_WINDOW_OPTION,
    THRESHOLD_OPTION,
    fmt_threshold,
    open_index,
    threshold_arg,
)
from ragsift.errors import EXIT_NOTHING, EXIT_USAGE

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ragsift.api import SweepRow, TuneReport

EPILOG = """
The queries file is JSON lines: {"query": "...", "relevant": [...]}, where a relevant item is a
document path or chunk id (string), {"path": P}, {"id": I}, or a character span
{"path": P, "start": S, "end": E} (end exclusive; matches every chunk of P that overlaps it).
"relevant": [] marks a query the index cannot answer (ideally nothing is admitted).

Examples:

  ragsift tune --index idx.db --queries labelled.jsonl

  ragsift tune -i idx.db --queries labelled.jsonl -k 5 --optimize recall@precision=0.8

  ragsift tune -i idx.db --queries labelled.jsonl --json | jq .recommended

  ragsift tune -i idx.db --queries labelled.jsonl --save   # query/explain now use it

Precision, recall and F1 are pooled over queries (micro averages) for the admitted sets at the
chosen k; recall@k and nDCG@k rank the first k candidates regardless of the threshold.

Exit status: 0 with a recommendation; 1 without one (no labelled item names an indexed
document, no threshold admits a relevant hit, or none meets --optimize); 2 on errors.
"""


def _no_short_q(value: bool) -> None:
    """``tune -q FILE``: ``-q`` is ``--quiet`` wherever ragsift has it (``embed``), so the
    queries file has no short flag. Typed out of habit, it gets one line naming ``--queries``
    (exit 2) instead of click's "No such option" box or a file taken for something else."""
    if value:
        warn(
            "tune has no -q (it means --quiet in other commands); give the labelled queries "
            "file as --queries FILE"
        )
        raise typer.Exit(EXIT_USAGE)


def tune_command(
    index: str = INDEX_OPTION,
    queries: str = typer.Option(
        ..., "--queries", metavar="FILE", help="Labelled queries, JSON lines (see below)."
    ),
    _q: bool = typer.Option(
        False,
        "-q",
        hidden=True,
        is_eager=True,
        callback=_no_short_q,
        help="Not an option of tune (-q is --quiet elsewhere).",
    ),
    k: int = K_OPTION,
    threshold: str | None = THRESHOLD_OPTION,
    reject_window: int = REJECT_WINDOW_OPTION,
    max_chars: int | None = MAX_CHARS_OPTION,
    path: str | None = PATH_OPTION,
    model: str | None = MODEL_OPTION,
    mode: str = MODE_OPTION,
    optimize: str = typer.Option(
        "f1", "--optimize", metavar="TARGET", help="f1, recall@precision=P or precision@recall=R."
    ),
    step: float = typer.Option(0.01, "--step", min=0.001, max=0.5, help="Threshold sweep step."),
    rows: int = typer.Option(
        20, "--rows", min=1, help="Table rows to show (the full sweep is in --json)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
    save: bool = typer.Option(
        False,
        "--save",
        help="Store the recommended threshold in the "
        "index: query and explain then use it by default (shown as "
        '"tuned on N queries"). Takes the writer lock.',
    ),
) -> None:
    """Measure precision, recall and F1 of the admitted sets across thresholds, and recommend
    the threshold that maximises F1 (or another --optimize target).

    --threshold here is the floor to compare against (default: the one in force, if any);
    --save stores the recommendation in the index."""
    from ragsift.api import Objective, SearchRequest, load_queries

    objective = Objective.parse(optimize)
    labelled = load_queries(queries)
    with open_index(index, model) as ix:
        request = SearchRequest(
            k=k,
            threshold=threshold_arg(threshold),
            reject_window=reject_window,
            max_chars=max_chars,
            path=path,
            mode=mode,
        )
        request = ix.prepare(request)  # the floor to compare against (if any), once
        if request.floor.notice:
            warn(request.floor.notice.worded(flag_name))
        report = ix.tune(labelled, request, objective=objective, step=step)
    if report.unmatched_line():
        warn("warning: " + report.unmatched_line())
    if save:
        from ragsift.api import save_threshold

        save_threshold(index, report, mode=mode)
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), ensure_ascii=False) + "\n")
    else:
        from ragsift.cli._common import stdout_console

        render(stdout_console(), report, rows)
    if report.recommended is None:  # nothing measured or nothing met: no recommendation
        raise typer.Exit(EXIT_NOTHING)


def render(console: Console, report: TuneReport, max_rows: int) -> None:
    """``tune`` for reading: the run and the ranking's scores, the sweep table, the
    precision-recall plot and score distributions, then the verdict."""
    _print_heading(console, report)
    console.print(_sweep_table(report, max_rows))
    for line in pr_plot(report.rows, report.recommended):
        console.print(line, highlight=False)
    for line in distribution_lines(report):
        console.print(line, highlight=False)
    _print_verdict(console, report)


def _print_heading(console: Console, report: TuneReport) -> None:
    """The run (queries, model, k, objective) and the ranking's own scores, any threshold."""
    console.print(
        f"[bold]tune[/] {report.queries} queries · model {report.model} · k "
        f"{report.k} · objective {report.objective}",
        highlight=False,
    )
    from ragsift.cli.explain import packed

    ranking = [
        f"{name} {value:.3f}"
        for name, value in report.ranking.items()
        if name != "answerable_queries"
    ]
    parts = [
        "ranking of the first k (any threshold):",
        *ranking,
        f"over {int(report.ranking['answerable_queries'])} answerable queries",
    ]
    for row in packed(parts, console.width, sep="  "):  # wrapped between its phrases
        console.print(f"[dim]{row}[/]", highlight=False)


def _sweep_table(report: TuneReport, max_rows: int) -> Table:
    """The threshold sweep, at most ``max_rows`` rows, the recommended one in bold green."""
    from rich.table import Table

    rec = report.recommended
    table = Table(title="threshold sweep", title_justify="left")
    # two-line headers: the table fits 80 columns with every header whole (#41)
    for col in (
        "threshold",
        "precision",
        "recall",
        "F1",
        "nothing",
        "nothing\n(answerable)",
        "admitted\nper query",
    ):
        table.add_column(col, justify="right")
    for row in _pick_rows(report.rows, rec, max_rows):
        style = "bold green" if row is rec else None
        table.add_row(
            fmt_threshold(row.threshold),
            f"{row.precision:.3f}",
            f"{row.recall:.3f}",
            f"{row.f1:.3f}",
            f"{row.empty:.0%}",
            f"{row.empty_answerable:.0%}",
            f"{row.admitted_per_query:.2f}",
            style=style,
        )
    return table


def _print_verdict(console: Console, report: TuneReport) -> None:
    """The current threshold's scores, the recommendation (or why there is none), and what
    ``--save`` stored."""
    rec = report.recommended
    if report.current is not None:
        cur = report.current
        console.print(
            f"current threshold {fmt_threshold(report.current_threshold)}: precision "
            f"{cur.precision:.3f} recall {cur.recall:.3f} F1 {cur.f1:.3f} nothing "
            f"{cur.empty:.0%}",
            highlight=False,
        )
    if rec is None:
        console.print(
            f"[bold red]no threshold recommended: "
            f"{report.no_recommendation or 'no threshold meets ' + report.objective}[/]",
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(
            f"[bold green]recommended threshold {fmt_threshold(rec.threshold)}[/] "
            f"({report.objective}): precision {rec.precision:.3f} recall "
            f"{rec.recall:.3f} F1 {rec.f1:.3f}; {rec.empty:.0%} of queries get "
            f"nothing. Use: --threshold {fmt_threshold(rec.threshold)}",
            highlight=False,
            soft_wrap=True,
        )
    if report.saved is not None:
        console.print(
            f"saved in the index: query and explain now use threshold "
            f"{fmt_threshold(report.saved['value'])} (tuned on {report.queries} "
            "queries)",
            highlight=False,
            soft_wrap=True,
        )


def _pick_rows(rows: list[SweepRow], rec: SweepRow | None, n: int) -> list[SweepRow]:
    if len(rows) <= n:
        return rows
    stride = math.ceil(len(rows) / n)
    picked = rows[::stride]
    if rec is not None and rec not in picked:
        picked.append(rec)
        picked.sort(key=lambda r: r.threshold if r.threshold is not None else -math.inf)
    return picked


def pr_plot(
    rows: list[SweepRow], rec: SweepRow | None, height: int = 10, width: int = 60
) -> list[str]:
    """Precision (P), recall (R) and F1 (F) against the threshold; ┃ marks the recommendation."""
    if not rows:
        return []
    stride = max(1, math.ceil(len(rows) / width))
    cols = rows[::stride]
    grid = [[" "] * len(cols) for _ in range(height + 1)]
    rec_col = None
    for x, row in enumerate(cols):
        if (
            rec is not None
            and rec.threshold is not None
            and row.threshold is not None
            and abs(row.threshold - rec.threshold) < stride * 0.0100001
        ):
            rec_col = x if rec_col is None else rec_col
        for mark, value in (("F", row.f1), ("R", row.recall), ("P", row.precision)):
            y = height - round(value * height)
            grid[y][x] = "*" if grid[y][x] not in (" ", mark) else mark
    if rec_col is not None:
        for y in range(height + 1):
            if grid[y][rec_col] == " ":
                grid[y][rec_col] = "┃"
    lines = [
        (
            "[bold]precision (P), recall (R), F1 (F) vs threshold[/]  [dim]* = overlap, "
            "┃ = recommended[/]"
        )
    ]
    for y, cells in enumerate(grid):
        label = f"{1 - y / height:4.1f} │" if y % 5 == 0 else "     │"
        lines.append(label + "".join(cells))
    lo, hi = cols[0].threshold, cols[-1].threshold
    lines.append("     └" + "─" * len(cols))
    lines.append(f"      {fmt_threshold(lo)}{' ' * max(1, len(cols) - 8)}{fmt_threshold(hi)}")
    return lines


def distribution_lines(report: TuneReport, width: int = 30) -> list[str]:
    """Histograms of relevant vs irrelevant candidate scores, side by side."""
    d = report.distributions(bins=16)
    rel, irr = d["relevant"], d["irrelevant"]
    top = max(rel + irr + [1])
    step = (d["hi"] - d["lo"]) / d["bins"]
    lines = [
        (
            "[bold]candidate scores[/]: [green]relevant[/] (median "
            f"{_num(d['relevant_median'])}) vs [red]irrelevant[/] (median "
            f"{_num(d['irrelevant_median'])})"
        )
    ]
    for i in range(d["bins"] - 1, -1, -1):
        lo = d["lo"] + i * step
        r_bar = "█" * round(rel[i] / top * width)
        i_bar = "█" * round(irr[i] / top * width)
        lines.append(
            f"{lo:5.2f} [green]{r_bar:>{width}}[/]│[red]{i_bar:<{width}}[/] "
            f"[dim]{rel[i]}/{irr[i]}[/]"
        )
    return lines


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def register(app: typer.Typer) -> None:
    app.command("tune", epilog=EPILOG, help=tune_command.__doc__)(handle_errors(tune_command))
