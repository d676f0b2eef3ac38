"""How retrieval records read on a terminal: the building blocks of ``explain``'s layout (its
composition is ``cli/explain.py``), the hint sentences, the rule behind a rejection, and the
one-line-per-hit ``grep`` format.

Presentation only: every number here comes from a ``Retrieval`` record (or an attribution);
nothing is ranked or decided again, except "what would another ``-k`` admit", which reruns the
pure ``admission`` arithmetic of ``retrieval/topk.py`` over the candidates already in the record.

Terminal rules every block keeps: nothing is wider than the console (a line that cannot fit
is cut with "…", never left to wrap); a path is never wrapped: ``fit_location`` cuts its
folders in the middle; a score bar is on the score's own 0–1 scale (``bar``, ``axis``), so bars
of different queries compare.
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

NARROW = 100  # below this many columns explain labels each number in place, not in a header
INDENT = 6  # where a candidate's second and later lines start
TEXT_LINES = 3  # lines of chunk text shown per admitted hit
PREVIEW_MIN = 20  # cells a rejected row's one-line preview keeps beside a long path
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
    return (
        f"warning: {prefix}query truncated to {max_length} model tokens; {dropped} tokens ignored"
    )


def dense_view_line(
    view: Any, max_length: int | None, dropped: int, query: str | None = None
) -> str:
    """The stderr line of a query longer than the model reads (``Search.dense_views``): the
    truncation line of any long query, then what the dense side was given instead of the
    query's head and what it left out; the lexical side reads the query as given."""
    return (
        f"{truncation_warning(max_length or 0, dropped, query)}: the dense side was given "
        f"{view.summary()}; the lexical side reads the query as given"
    )


# -- grep format ------------------------------------------------------------------------------


def grep_line(c: Candidate, path: str | None = None) -> str:
    """``path:line: preview`` (the format of ``grep -n``, editors' quickfix lists and fzf): one
    line, the chunk text with its whitespace flattened, cut at ``GREP_PREVIEW`` characters.
    ``path``: the path to print (``query`` gives one openable from where it runs), else the
    stored one. Chunks without line numbers (some PDF pages) point at line 1. A PDF's lines
    count within each page (``sources/pdf_reader.py``), so its page leads the preview
    (``libtasn1.pdf:1: p.3 ...``); other paged documents (markdown page breaks) number the
    file's own lines."""
    paged = c.page is not None and c.path.lower().endswith(".pdf")
    page = f"p.{c.page} " if paged else ""
    shown_path = flat(c.path if path is None else path)
    return f"{shown_path}:{c.line_start or 1}: {page}{flat(c.text, GREP_PREVIEW)}"


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


# -- explain's building blocks (the layout itself: cli/explain.py) -----------------------------


def signed(value: float | None) -> str:
    if value is None:
        return "-"
    return f"+{value:.2f}" if value >= 0 else f"\u2212{abs(value):.2f}"


def _take(text: str, cells: int, *, from_end: bool = False) -> str:
    """The longest start (or end) of ``text`` that fits in ``cells`` terminal cells."""
    from rich.cells import get_character_cell_size

    chars = reversed(text) if from_end else iter(text)
    out, used = [], 0
    for ch in chars:
        size = get_character_cell_size(ch)
        if used + size > cells:
            break
        out.append(ch)
        used += size
    return "".join(reversed(out) if from_end else out)


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: whole, or its start and end around one "…" (the end
    gets two thirds: it holds the file name and the line numbers)."""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = _take(text, (width - 1) // 3)
    return head + "…" + _take(text, width - 1 - cell_len(head), from_end=True)


def fit_location(location: str, width: int) -> str:
    """``path:line`` in at most ``width`` cells, never wrapped: whole when it fits, else the
    folders are cut in the middle ("docs/pat…/javascript.rst:12-40") so the file name and its
    lines stay whole; a file name too long for that is itself cut in the middle."""
    from rich.cells import cell_len

    if cell_len(location) <= width:
        return location
    slash = location.rfind("/", 0, location.rfind(":") if ":" in location else len(location))
    tail = location[slash:] if slash > 0 else ""
    room = width - cell_len(tail) - 1
    if tail and room >= 4:
        return _take(location[:slash], room) + "…" + tail
    return cut_middle(location, width)


def cut_left(text: str, width: int) -> str:
    """The end of ``text`` in at most ``width`` cells, "…" in front when its start is cut (a
    heading trail keeps its innermost heading)."""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    return "…" + _take(text, max(0, width - 1), from_end=True)


def fit_trail(headings: tuple[str, ...] | list[str], width: int) -> str:
    """A heading trail (``Guide › Setup › Proxies``) in at most ``width`` cells: whole, else
    without its outer headings (``… › Proxies``), else its innermost heading cut at the front."""
    from rich.cells import cell_len

    for i in range(len(headings)):
        trail = ("… › " if i else "") + " › ".join(headings[i:])
        if cell_len(trail) <= width:
            return trail
    return cut_left(" › ".join(headings[-1:]), width)


EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(score: float, threshold: float | None, cells: int, style: str = "") -> Text:
    """``score`` (0–1) as a bar of ``cells`` cells on the fixed 0–1 scale, in eighths of a
    cell; ``┃`` marks the cell where the threshold lies."""
    from rich.text import Text

    eighths = max(0, min(cells * 8, round(score * cells * 8)))
    chars = "█" * (eighths // 8) + (EIGHTHS[eighths % 8] if eighths % 8 else "")
    chars += " " * (cells - len(chars))
    text = "".join(chars)
    if threshold is None:
        return Text(text, style=style)
    mark = max(0, min(cells - 1, int(threshold * cells)))
    return Text.assemble((text[:mark], style), ("┃", "bold"), (text[mark + 1 :], style))


def axis(cells: int) -> str:
    """The header over a bar column: the 0–1 scale, ``0`` and ``1`` at its ends."""
    return "0" + "─" * (cells - 2) + "1" if cells >= 2 else "0"


def colour(c: Candidate) -> str:
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
        rank = c.dense_rank if c.dense_rank is not None else (c.rank if r.mode == "dense" else None)
        cos = "-" if c.dense_score is None else f"cos {c.dense_score:.2f}"
        if c.unit_score is not None:
            cos = f"unit {c.unit_score:.2f} · {cos}"
        cells.append(cos + (f" #{rank}" if rank is not None else ""))
    if r.mode != "dense":
        cells.append(
            "-"
            if c.lexical_rank is None or c.lexical_share is None
            else f"lex {c.lexical_share:.2f} #{c.lexical_rank}"
        )
    return tuple(cells)


def title_cell(c: Candidate, r: Retrieval) -> str:
    """The page-title evidence of a candidate's score: ``title 2/3`` (2 of the query's 3 words,
    ``Candidate.title_words``); "" where its title holds fewer than half of them
    (``relevance.TITLE_MIN_SHARE``: it adds nothing to the score) or was not read."""
    got = c.title_words(r.query)
    return f"title {got[0]}/{got[1]}" if got and got[0] else ""


def side_info(c: Candidate, r: Retrieval) -> str:
    """The evidence of a candidate's score, in words (``evidence_cells``, ``title_cell``)."""
    parts = [*evidence_cells(c, r), title_cell(c, r) or "-"]
    if r.mode == "hybrid" and c.source in ("dense", "lexical"):
        parts.append(f"{c.source} only")
    return ", ".join(p for p in parts if p != "-")


def join_fitting(parts: list[Text], width: int, indent: int) -> list[Text]:
    """Lay ``parts`` out left to right, two spaces apart, starting a new line (indented) when
    the next part does not fit; a part wider than a line is wrapped by rich later."""
    from rich.text import Text

    lines: list[Text] = []
    line = Text()
    for part in parts:
        if not part.plain:
            continue
        gap = 2 if line.plain.strip() else 0
        if line.plain.strip() and line.cell_len + gap + part.cell_len > width:
            lines.append(line)
            line = Text(" " * indent)
            gap = 0
        line.append(" " * gap)
        line.append_text(part)
    if line.plain.strip():
        lines.append(line)
    return lines


def counts_line(r: Retrieval) -> str:
    """What the candidate counts mean, so the reject window and the rejected count agree:
    ``13 candidates = k 3 + reject window 10 · 1 admitted · 12 rejected``."""
    n, want = len(r.candidates), r.k + r.reject_window
    shown = f"{n} candidates = k {r.k} + reject window {r.reject_window}"
    if n < want:
        shown = (
            f"{n} candidate{'s' * (n != 1)}: all there are (k {r.k} + reject window "
            f"{r.reject_window} allow {want})"
        )
    return f"{shown} · {len(r.admitted)} admitted · {len(r.rejected)} rejected"


def rejected_title(r: Retrieval) -> str:
    """``rejected (12) = 2 of the top 3 + 10 past k``: the rejected count split into the
    first k (turned away by the threshold or the budget) and the reject window."""
    rejected = r.rejected
    top = sum(1 for c in rejected if c.rank <= r.k)
    past = len(rejected) - top
    parts = ([f"{top} of the top {r.k}"] if top else []) + ([f"{past} past k"] if past else [])
    return f"rejected ({len(rejected)}) = " + " + ".join(parts)


def group_label(c: Candidate, r: Retrieval) -> str:
    """The heading over a run of rejected candidates with one reason: the reason as the JSON
    names it and its rule in numbers (``over-k (rank > k 3)``)."""
    from ragsift.api import BELOW_THRESHOLD, OVER_CHAR_BUDGET, OVER_K

    rules = {
        BELOW_THRESHOLD: "" if r.threshold is None else f"score < {r.threshold:.2f}",
        OVER_K: f"rank > k {r.k}",
        OVER_CHAR_BUDGET: "" if r.max_chars is None else f"--max-chars {r.max_chars}",
    }
    why = rules.get(c.reason or "", "")
    return f"{c.reason} ({why})" if why else str(c.reason)


def best_unit(c: Candidate, a: Attribution | None) -> tuple[int, int] | None:
    """The best unit of ``c`` as offsets into its chunk text: the candidate's own
    (``unit_start``/``unit_end`` are document offsets; the chunk's ``start`` is their base),
    else the first unit of its attribution."""
    if c.unit_start is not None and c.unit_end is not None:
        base = c.start or 0
        s, e = c.unit_start - base, c.unit_end - base
        if 0 <= s < e <= len(c.text):
            return s, e
    best = a.best if a is not None else None
    if (
        best is not None
        and best.start is not None
        and best.end is not None
        and 0 <= best.start < best.end <= len(c.text)
    ):
        return best.start, best.end
    return None


def flatten(text: Text) -> Text:
    """``text`` on one line, each run of whitespace one space, its styles kept on the
    characters they covered."""
    from rich.text import Text

    plain = text.plain
    chars: list[str] = []
    where = [0] * (len(plain) + 1)  # old offset -> new offset
    for i, ch in enumerate(plain):
        where[i] = len(chars)
        if ch.isspace():
            if chars and chars[-1] != " ":
                chars.append(" ")
        else:
            chars.append(ch)
    where[len(plain)] = len(chars)
    out = Text("".join(chars))
    for span in text.spans:
        s, e = where[span.start], where[span.end]
        if s < e:
            out.stylize(span.style, s, e)
    return out


UNIT_STYLE = "bold reverse"
MARKS = ("»", "«")  # around the best unit where the terminal shows no styles


def window(
    console: Console, styled: Text, room: int, max_lines: int, marks: bool = False
) -> list[Text]:
    """At most ``max_lines`` lines of ``room`` cells from ``styled`` (a chunk's text with its
    best unit in ``UNIT_STYLE``), whitespace flattened, starting shortly before the best unit;
    "…" where text was left out. ``marks``: the unit also between ``»`` and ``«`` (for output
    without styles: a pipe, a file, ``NO_COLOR``)."""
    from rich.text import Text

    text = flatten(styled)
    unit = next(((s.start, s.end) for s in text.spans if str(s.style) == UNIT_STYLE), None)
    if marks and unit is not None:
        s, e = unit
        marked = text[:s]
        marked.append(MARKS[0])
        marked.append_text(text[s:e])
        marked.append(MARKS[1])
        marked.append_text(text[e:])
        text, unit = marked, (s + 1, e + 1)
    text.rstrip()
    budget = room * max_lines
    lo = 0
    if unit is not None and unit[0] > 0:
        lead = max(0, (budget - (unit[1] - unit[0])) // 4)
        first = unit[0] - (1 if marks else 0)  # the unit, or its mark
        if first > lead:
            lo = first - lead
            space = text.plain.find(" ", lo, first)  # start at a word
            lo = space + 1 if space != -1 else lo
    shown = Text("…" if lo else "").append_text(text[lo : lo + budget + room])
    wrapped = list(shown.wrap(console, room))
    lines = wrapped[:max_lines]
    if lines and (len(wrapped) > max_lines or lo + budget + room < len(text)):
        last = lines[-1]
        last.rstrip()
        if last.cell_len + 1 > room:
            last.right_crop(last.cell_len + 1 - room)
        last.append("…")
    return [line.rstrip() or line for line in lines]


def one_line(text: str, width: int, style: str = "") -> Text:
    from rich.text import Text

    out = Text(text, style=style)
    out.truncate(max(0, width), overflow="ellipsis")
    return out


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
    for line in join_fitting(parts, console.width, 4):
        console.print(line)
    text = c.span_text if c.span_text is not None else c.text
    body = Text(shown(SOFT_BREAK.sub(" ", text.strip("\n"))))
    for line in body.wrap(console, max(20, console.width - 4)):
        console.print(
            Text("    ").append_text(line.rstrip() or line) if line.plain.strip() else Text()
        )
    console.print()
