"""How retrieval records read on a terminal: the narrow ``explain`` layout, the hint sentences,
the rule behind a rejection, and the one-line-per-hit ``grep`` format.

Presentation only: every number here comes from a ``Retrieval`` record (or an attribution);
nothing is ranked or decided again, except "what would another ``-k`` admit", which reruns the
pure ``admission`` arithmetic of ``retrieval/topk.py`` over the candidates already in the record.

Narrow layout (terminals under ``NARROW`` columns): one block per candidate instead of tables,
so nothing is cut at the right edge and a ``k 3`` / reject-window-10 explanation fits in about
60 lines at 80 columns::

      1  0.509  +0.11  ████████┃███████     admitted · lexical 3.20 #1 · fused #1
         fixtures/beekeeping/handbook.md:42-64 p.2  A Small Beekeeping Handbook › Inspections
         …Swarming is how colonies reproduce: the old queen leaves with about half the bees.
         To keep the bees, split the colony before it swarms. The simplest method is…
         0.655 19%  Swarming is how colonies reproduce: the old queen leaves with about…
      4  0.667  +0.27  ████████┃███████████ over-k (rank 4 > k 3) · lexical 0.61 #9 · fused #4
         fixtures/beekeeping/handbook.md:1-22 p.1  # A Small Beekeeping Handbook This…

The bar replaces the separate score picture of the wide layout: the same scale for every
candidate, ``┃`` marks the threshold.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ragsift.api import Attribution, Candidate, Retrieval

# A line break inside a prose paragraph (not before a list item, quote, table row or heading):
# the source's hard wrap, joined for display so the terminal can wrap the text to its width.
SOFT_BREAK = re.compile(r"(?<=[^\n\r])\n(?![\n\s]|[-*+>|#]|\d{1,3}[.)]\s)")

NARROW = 100  # below this many columns explain uses one block per candidate
BAR = 10  # cells of a score bar in the narrow layout
INDENT = 6  # where a block's second and later lines start
PREVIEW_LINES = 3  # lines of chunk text shown per admitted hit (narrow)
GREP_PREVIEW = 160  # characters of text after ``path:line:`` in --format grep


# -- words ------------------------------------------------------------------------------------

def rule(c: Candidate, r: Retrieval) -> str:
    """The rule that turned ``c`` away, in numbers (``rank 5 > k 3``), or "" when the gap
    already says it (below the threshold) or it was admitted."""
    from ragsift.api import OVER_CHAR_BUDGET, OVER_K

    if c.reason == OVER_K:
        return f"rank {c.rank} > k {r.k}"
    if c.reason == OVER_CHAR_BUDGET and r.max_chars is not None:
        return f"--max-chars {r.max_chars}"
    return ""


def reason_label(c: Candidate, r: Retrieval) -> str:
    """The rejection reason with the rule that bit, e.g. ``over-k (rank 5 > k 3)``; the JSON
    ``reason`` field keeps the bare name."""
    if c.reason is None:
        return "admitted"
    why = rule(c, r)
    return f"{c.reason} ({why})" if why else c.reason


def truncation_warning(max_length: int, dropped: int, query: str | None = None) -> str:
    prefix = f"{query!r}: " if query is not None else ""
    return (f"warning: {prefix}query truncated to {max_length} model tokens; {dropped} tokens "
            "ignored")


# -- grep format ------------------------------------------------------------------------------

def grep_line(c: Candidate) -> str:
    """``path:line: preview`` (the format of ``grep -n``, editors' quickfix lists and fzf): one
    line, the chunk text with its whitespace flattened, cut at ``GREP_PREVIEW`` characters.
    Chunks without line numbers (some PDF pages) point at line 1."""
    return f"{flat(c.path)}:{c.line_start or 1}: {flat(c.text, GREP_PREVIEW)}"


def shown(text: str) -> str:
    """Text from a document or a file name as it may reach a terminal: terminal control
    characters made visible by ``cli/_common.printable`` (the rich consoles do it for strings;
    these ``Text`` objects bypass that). One character for one, so offsets still hold."""
    from ragsift.cli._common import printable

    return printable(text)


def flat(text: str, limit: int | None = None) -> str:
    """``text`` on one line (whitespace runs become one space), made safe to show."""
    out = " ".join(shown(text).split())
    if limit is not None and len(out) > limit:
        out = out[: limit - 1].rstrip() + "…"
    return out


# -- narrow explain ---------------------------------------------------------------------------

def signed(value: float | None) -> str:
    if value is None:
        return "-"
    return f"+{value:.2f}" if value >= 0 else f"−{abs(value):.2f}"


class Scale:
    """One score scale for every bar of an explanation (scores and threshold, padded)."""

    def __init__(self, r: Retrieval, width: int = BAR) -> None:
        points = [c.score for c in r.candidates] + (
            [r.threshold] if r.threshold is not None else [])
        lo, hi = (min(points), max(points)) if points else (0.0, 1.0)
        pad = max((hi - lo) * 0.05, 0.01)
        self.lo, self.hi, self.width = lo - pad, hi + pad, width
        self.col = (None if r.threshold is None else
                    round((r.threshold - self.lo) / (self.hi - self.lo) * width))

    def bar(self, score: float) -> str:
        filled = max(0, min(self.width, round((score - self.lo) / (self.hi - self.lo) *
                                              self.width)))
        cells = ["█" if i < filled else " " for i in range(self.width + 1)]
        if self.col is not None and 0 <= self.col <= self.width:
            cells[self.col] = "┃"
        return "".join(cells)


def _colour(c: Candidate) -> str:
    from ragsift.api import BELOW_THRESHOLD

    if c.admitted:
        return "green"
    return "red" if c.reason == BELOW_THRESHOLD else "yellow"


def evidence_cells(c: Candidate, r: Retrieval) -> tuple[str, ...]:
    """The evidence behind a candidate's score, one cell per side: ``unit 0.62 · cos 0.41 #3``
    (its best unit's cosine where its units were read, the chunk's aggregate cosine and its
    rank in the dense list), ``lex 0.58 #1`` (the BM25 share of the query's ceiling and
    its rank in the lexical list; ``-`` where that side did not return it). Dense mode shows
    the cosine only, lexical mode the lexical side only; hybrid both, and which side brought
    in a candidate only one of them found."""
    cells = []
    if r.mode != "lexical":
        rank = c.dense_rank if c.dense_rank is not None else (c.rank if r.mode == "dense"
                                                             else None)
        cos = "-" if c.dense_score is None else f"cos {c.dense_score:.2f}"
        if c.unit_score is not None:
            cos = f"unit {c.unit_score:.2f} · {cos}"
        cells.append(cos + (f" #{rank}" if rank is not None else ""))
    if r.mode != "dense":
        cells.append("-" if c.lexical_rank is None or c.lexical_share is None else
                     f"lex {c.lexical_share:.2f} #{c.lexical_rank}")
    return tuple(cells)


def side_info(c: Candidate, r: Retrieval) -> str:
    """The evidence of a candidate's score, in words (``evidence_cells``)."""
    parts = list(evidence_cells(c, r))
    if r.mode == "hybrid" and c.source in ("dense", "lexical"):
        parts.append(f"{c.source} only")
    return ", ".join(p for p in parts if p != "-")


def _join_fitting(parts: list[Text], width: int, indent: int) -> list[Text]:
    """Lay ``parts`` out left to right, two spaces apart, starting a new line (indented) when
    the next part does not fit; a part wider than a line is wrapped by rich later."""
    from rich.text import Text

    lines: list[Text] = []
    line = Text()
    for part in parts:
        if not part.plain:
            continue
        gap = 2 if line.plain.strip() else 0
        if line.plain.strip() and len(line.plain) + gap + len(part.plain) > width:
            lines.append(line)
            line = Text(" " * indent)
            gap = 0
        line.append(" " * gap)
        line.append_text(part)
    if line.plain.strip():
        lines.append(line)
    return lines


def head_lines(c: Candidate, r: Retrieval, scale: Scale, width: int) -> list[Text]:
    from rich.text import Text

    numbers = Text(f"{c.rank:>3} {c.score:.3f} {signed(c.margin(r.threshold)):>6} ")
    numbers.append(scale.bar(c.score), style=_colour(c))
    label = Text(reason_label(c, r), style="bold green" if c.admitted else _colour(c))
    side = side_info(c, r)
    parts = [numbers, label] + ([Text(side, style="dim")] if side else [])
    return _join_fitting(parts, width, INDENT)


def where_lines(c: Candidate, width: int, with_headings: bool) -> list[Text]:
    from rich.text import Text

    parts = [Text(" " * INDENT), Text(shown(c.location), style="cyan")]
    lines = [Text(" " * INDENT).append(shown(c.location), style="cyan")]
    if with_headings and c.headings:
        trail = " › ".join(c.headings)
        lines = _join_fitting([*parts[1:], Text(shown(trail), style="dim")], width - INDENT, 0)
        lines = [Text(" " * INDENT).append_text(line) for line in lines]
    if c.truncated:
        lines.append(Text(" " * INDENT).append(
            f"⚠ truncated: {c.truncated} tokens the model never saw", style="yellow"))
    return lines


def preview_lines(console: Console, c: Candidate, a: Attribution | None, width: int,
                  max_lines: int = PREVIEW_LINES) -> list[Text]:
    """A few lines of the chunk around its closest unit (bold reverse), whitespace flattened,
    wrapped to the width; "…" where text was left out."""
    from rich.text import Text

    room = max(20, width - INDENT)
    budget = room * max_lines
    text = c.text
    best = a.best if a is not None else None
    s = best.start if best is not None and best.start is not None else None
    e = best.end if best is not None and best.end is not None else None
    if s is None or e is None or not 0 <= s < e <= len(text):
        before, unit, after = "", "", text
    else:
        before, unit, after = text[:s], text[s:e], text[e:]
    before, unit, after = flat(before), flat(unit), flat(after)
    keep_before = min(len(before), max(0, (budget - len(unit)) // 4))
    lead = before[len(before) - keep_before:] if keep_before else ""
    out = Text("…" if len(lead) < len(before) else "")
    out.append(lead + (" " if lead and unit else ""))
    out.append(unit, style="bold reverse")
    out.append((" " if unit and after else "") + after)
    wrapped = out.wrap(console, room)
    lines = list(wrapped)[:max_lines]
    if len(wrapped) > max_lines and lines:
        last = lines[-1].rstrip() or lines[-1]
        lines[-1] = last
        if len(last.plain) + 1 > room:
            last.right_crop(len(last.plain) + 1 - room)
        last.append("…")
    return [Text(" " * INDENT).append_text(line.rstrip() or line) for line in lines]


def one_line(text: str, width: int, style: str = "") -> Text:
    from rich.text import Text

    out = Text(text, style=style)
    out.truncate(width, overflow="ellipsis")
    return out


def render_narrow(console: Console, r: Retrieval, attributions: list[Attribution],
                  hint_lines: list[str], model: str, threshold_note: str,
                  query_truncated: int = 0, max_length: int | None = None) -> None:
    """``explain`` as one block per candidate (see the module docstring). Document text is
    shown literally: it goes into ``Text`` objects, never through rich markup."""
    from rich.text import Text

    from ragsift.api import ATTRIBUTION_NOTE as NOTE

    width = console.width
    out = console.print
    out(Text.assemble(("query  ", "bold"), shown(r.query) if len(r.query) <= 3 * width else
                      flat(r.query, 3 * width)))
    details = (f"model {model} · mode {r.mode} · k {r.k} · threshold "
               f"{_fmt(r.threshold)}{threshold_note} · reject window {r.reject_window} · "
               f"max chars {r.max_chars or '-'} · {r.searched} chunks searched")
    if r.path_filter:
        details += f" (--path {r.path_filter})"
    out(Text(shown(details), style="dim"))
    if query_truncated:
        out(Text(f"⚠ query truncated to {max_length} model tokens; {query_truncated} tokens "
                 "ignored", style="yellow"))
    scale = Scale(r)
    if r.candidates:
        legend = f"bars: {scale.lo:.2f} to {scale.hi:.2f}"
        legend += "" if r.threshold is None else f", ┃ = threshold {r.threshold:.2f}"
        out(Text(legend, style="dim"))
    by_id = {a.id: a for a in attributions}
    if r.admitted:
        out(Text(f"admitted ({len(r.admitted)})", style="bold"))
        for c in r.admitted:
            for line in head_lines(c, r, scale, width):
                out(line)
            for line in where_lines(c, width, with_headings=True):
                out(line)
            a = by_id.get(c.id)
            for line in preview_lines(console, c, a, width):
                out(line)
            for u in (a.units if a is not None else ()):
                line = Text(" " * INDENT)
                line.append(f"{u.score:.3f} {u.share:>4.0%}  ", style="magenta")
                line.append_text(one_line(flat(u.text), width - INDENT - 12))
                out(line)
        if any(by_id.get(c.id) and by_id[c.id].units for c in r.admitted):
            out(Text("units: " + NOTE, style="dim"))
    else:
        out(Text("nothing admitted", style="bold red"))
    rejected = r.rejected
    if rejected:
        out(Text(f"rejected ({len(rejected)})", style="bold"))
        for c in rejected:
            for line in head_lines(c, r, scale, width):
                out(line)
            room = width - INDENT - len(c.location) - 2
            line = Text(" " * INDENT).append(shown(c.location), style="cyan")
            if c.truncated:
                line.append(f" ⚠{c.truncated}", style="yellow")
                room -= len(f" ⚠{c.truncated}")
            if room >= 12:
                line.append("  ").append_text(one_line(flat(c.text), room, style="dim"))
            out(line)
    for hint in hint_lines:
        out(Text.assemble(("hint: ", "bold yellow"), hint))


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.2f}"


def print_hit(console: Console, c: Candidate) -> None:
    """One ``query`` hit for reading: ``score  path:line  headings`` (the headings and a
    truncation note move to their own lines when the line would pass the terminal's width),
    then the chunk (its evidence span with ``--span best``), wrapped with a four-space indent,
    then a blank line. Text is literal."""
    from rich.text import Text

    parts = [Text(f"{c.score:.3f}", style="bold green"), Text(shown(c.location), style="cyan")]
    if c.headings:
        parts.append(Text(shown(" › ".join(c.headings)), style="dim"))
    if c.truncated:
        parts.append(Text(f"⚠ {c.truncated} tokens not embedded", style="yellow"))
    for line in _join_fitting(parts, console.width, 4):
        console.print(line)
    text = c.span_text if c.span_text is not None else c.text
    body = Text(shown(SOFT_BREAK.sub(" ", text.strip("\n"))))
    for line in body.wrap(console, max(20, console.width - 4)):
        console.print(Text("    ").append_text(line.rstrip() or line) if line.plain.strip()
                      else Text())
    console.print()
