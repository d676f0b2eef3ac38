"""Boundary finders: where a chunk may end, at one level of preference.

A level answers two questions about a window of the text, without scanning the whole
document: ``last_in(text, s, lo, hi)``, the largest boundary ``b`` with ``lo < b <= hi``
(or -1), and ``first_in(text, s, lo, hi)``, the smallest one. ``s`` is the start of the
chunk being built (levels that count sentences from it use it). Windows are at most a
chunk long, so these are a few C-level ``rfind``/regex calls per chunk.

A boundary is a cut position: the chunk ends at ``b`` and the next one starts at the first
non-whitespace character at or after ``b``. ``include_delim`` says on which side of the cut a
delimiter goes: ``prev`` (the cut is after it), ``next`` (before it) or ``none`` (before it,
and the next chunk starts after it).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Protocol


class Level(Protocol):
    skip: int  # characters after a boundary that belong to no chunk (include_delim none)

    def last_in(self, text: str, s: int, lo: int, hi: int) -> int: ...

    def first_in(self, text: str, s: int, lo: int, hi: int) -> int: ...


class DelimLevel:
    """Literal delimiters (``rfind``/``find`` per delimiter, C speed)."""

    def __init__(self, delimiters: Sequence[str], include_delim: str = "prev") -> None:
        self.delimiters = tuple(d for d in dict.fromkeys(delimiters) if d)
        self.mode = include_delim
        self.skip = 0

    def last_in(self, text: str, s: int, lo: int, hi: int) -> int:
        best = -1
        prev = self.mode == "prev"
        for d in self.delimiters:
            k = len(d)
            if prev:
                p = text.rfind(d, max(0, lo - k + 1, best - k + 1), hi)
                if p >= 0:
                    best = p + k
            else:
                p = text.rfind(d, max(lo + 1, best + 1), hi + k)
                if p >= 0 and p <= hi:
                    best = p
        return best

    def first_in(self, text: str, s: int, lo: int, hi: int) -> int:
        best = -1
        prev = self.mode == "prev"
        for d in self.delimiters:
            k = len(d)
            end = (best if best >= 0 else hi) + (0 if prev else k)
            if prev:
                p = text.find(d, max(0, lo - k + 1), end)
                if p >= 0:
                    best = p + k
            else:
                p = text.find(d, lo + 1, end)
                if 0 <= p <= hi:
                    best = p
        return best


class SkippingDelimLevel(DelimLevel):
    """``include_delim="none"``: cut before the delimiter; the next chunk starts after it.

    The packer asks ``skip_at(text, b)`` how many characters to leave out after a cut.
    """

    def __init__(self, delimiters: Sequence[str]) -> None:
        super().__init__(delimiters, "next")

    def skip_at(self, text: str, b: int) -> int:
        for d in sorted(self.delimiters, key=len, reverse=True):
            if text.startswith(d, b):
                return len(d)
        return 0


class WhitespaceLevel:
    """Any whitespace character; ``lookback`` limits how far back from ``hi`` to look."""

    _LAST = re.compile(r"\s(?=\S*\Z)")
    _FIRST = re.compile(r"\s")

    def __init__(self, include_delim: str = "prev", lookback: int | None = None) -> None:
        self.mode = include_delim
        self.lookback = lookback
        self.skip = 0

    def last_in(self, text: str, s: int, lo: int, hi: int) -> int:
        if self.lookback is not None:
            lo = max(lo, hi - self.lookback)
        if self.mode == "prev":
            m = self._LAST.search(text, lo, hi)
            return m.start() + 1 if m else -1
        m = self._LAST.search(text, lo + 1, hi + 1)
        return m.start() if m else -1

    def first_in(self, text: str, s: int, lo: int, hi: int) -> int:
        if self.mode == "prev":
            m = self._FIRST.search(text, lo, hi)
            return m.start() + 1 if m else -1
        m = self._FIRST.search(text, lo + 1, hi + 1)
        return m.start() if m else -1


class SortedLevel:
    """Precomputed boundaries (ascending), searched by bisection.

    ``min_count``: a chunk must contain at least this many pieces of this level (the
    sentence chunker's ``min_sentences``), so boundaries before the ``min_count``-th one
    after ``s`` are not offered.
    """

    def __init__(self, boundaries: Sequence[int], end: int, min_count: int = 1) -> None:
        self.b = boundaries if isinstance(boundaries, list) else list(boundaries)
        self.end = end
        self.min_count = max(1, min_count)
        self.skip = 0

    def required_end(self, s: int) -> int:
        """The ``min_count``-th boundary after ``s`` (the text end if there are fewer)."""
        i = bisect_right(self.b, s) + self.min_count - 1
        return self.b[i] if i < len(self.b) else self.end

    def last_in(self, text: str, s: int, lo: int, hi: int) -> int:
        if self.min_count > 1:
            lo = max(lo, self.required_end(s) - 1)
        i = bisect_right(self.b, hi) - 1
        return self.b[i] if i >= 0 and self.b[i] > lo else -1

    def first_in(self, text: str, s: int, lo: int, hi: int) -> int:
        i = bisect_right(self.b, lo)
        return self.b[i] if i < len(self.b) and self.b[i] <= hi else -1

    def relaxed(self) -> SortedLevel:
        """The same boundaries without the ``min_count`` requirement."""
        return SortedLevel(self.b, self.end, 1)

    def count_between(self, s: int, e: int) -> int:
        return bisect_left(self.b, e) - bisect_right(self.b, s)


class RegexLevel:
    """Boundaries at ``m.start()`` (``at="start"``) or ``m.end()`` of a regex's matches."""

    def __init__(self, pattern: str | re.Pattern[str], at: str = "start", reach: int = 16) -> None:
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.at_end = at == "end"
        self.reach = reach  # how far past ``hi`` a match may need to look
        self.skip = 0

    def _bounds(self, text: str, lo: int, hi: int) -> list[int]:
        if self.at_end:
            ms = self.pattern.finditer(text, max(0, lo - self.reach), hi)
            return [m.end() for m in ms if lo < m.end() <= hi]
        ms = self.pattern.finditer(text, lo + 1, min(len(text), hi + self.reach))
        return [m.start() for m in ms if lo < m.start() <= hi]

    def last_in(self, text: str, s: int, lo: int, hi: int) -> int:
        found = self._bounds(text, lo, hi)
        return found[-1] if found else -1

    def first_in(self, text: str, s: int, lo: int, hi: int) -> int:
        found = self._bounds(text, lo, hi)
        return found[0] if found else -1


# -- line breaks inside prose ---------------------------------------------------------------

# A line that starts a block of its own (checked on the line after a break, after its indent):
# a list item, heading, quote, table row, fence, rule or setext underline, rst directive.
_BLOCK_START = re.compile(
    r"[ \t]*(?:[-*+\u2022\u2023\u25e6](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|#{1,6}(?:[ \t]|$)"
    r"|>|\||`{3,}|~{3,}|\.\.[ \t]|(?:[-=*_][ \t]*){3,}$)"
)
# A line that is a block of its own (the line before a break): a heading, table row, fence, rule.
_ONE_LINE_BLOCK = re.compile(r"[ \t]*(?:#{1,6}(?:[ \t]|$)|\||`{3,}|~{3,}|(?:[-=*_][ \t]*){3,}$)")
_QUOTE = re.compile(r"[ \t]*(?:>[ \t]?)+")


# The longest line a hard-wrapped paragraph has (editors and Sphinx wrap at 72-100 columns):
# a longer line before a break is a paragraph of its own written on one line (WikiText, most
# markdown), and the break after it ends that paragraph. Measured on chroma-dev's wikitexts
# (a paragraph per line, no blank lines): bench/RESULTS.md, "Index what a reader reads".
WRAP_MAX = 100


def soft_break(before: str, after: str) -> bool:
    """Whether a line break between the lines ``before`` and ``after`` (without their line
    breaks) is a soft break: both lines are text of one prose paragraph (hard-wrapped), so the
    break reads as a space. Not soft: ``before`` longer than ``WRAP_MAX`` characters (a
    paragraph written on one line), a blank line on either side, ``after`` starting a block
    (a list item, heading, quote, table row, fence, rule), ``before`` being a block of its
    own (a heading, table row, fence, rule) or ending in a markdown hard break (two spaces or
    a backslash), table rows (`` | `` in both lines). Quoted lines are read without their
    ``>`` markers when both are quoted."""
    head, first = after.lstrip(" \t")[:1], before.lstrip(" \t")[:1]
    if head == ">" and first == ">":
        before, after = _QUOTE.sub("", before, 1), _QUOTE.sub("", after, 1)
        head, first = after.lstrip(" \t")[:1], before.lstrip(" \t")[:1]
    if (
        not head
        or not first
        or head.isspace()
        or first.isspace()
        or not after.strip()
        or not before.strip()
        or len(before.rstrip()) > WRAP_MAX
    ):
        return False
    if before.endswith(("  ", "\\")):
        return False
    if head in _BLOCK_CHARS and _BLOCK_START.match(after):
        return False
    if first in _BLOCK_CHARS and _ONE_LINE_BLOCK.match(before):
        return False
    return not (" | " in before and " | " in after)


# the characters a block start can begin with (a cheap test before the patterns)
_BLOCK_CHARS = frozenset("-*+\u2022\u2023\u25e6#>|`~._=0123456789")


class ProseBreakLevel(DelimLevel):
    """Line-break delimiters, less the soft breaks of prose paragraphs (``soft_break``) and
    any break inside a fenced code block (there every line counts).

    A recursive rule level with ``"soft_breaks": false``: hard-wrapped prose is then cut at
    the paragraph or sentence levels below it before its line breaks are tried (a later level
    holds the line breaks). A level's boundaries that are no line break (another delimiter in
    the same level) are kept as they are."""

    def __init__(self, delimiters: Sequence[str], include_delim: str = "prev") -> None:
        super().__init__(delimiters, include_delim)
        self._cached: tuple[str | None, tuple[bool, list[int]]] = (None, (False, []))
        # the same level for a text without a carriage return (its delimiters with one would
        # scan the whole window at every step)
        self._lf = DelimLevel([d for d in self.delimiters if "\r" not in d], include_delim)

    def last_in(self, text: str, s: int, lo: int, hi: int) -> int:
        if not self._facts(text)[0] and self.mode == "prev" and "\n" in self.delimiters:
            return self._last_lf(text, lo, hi)
        return self._last_any(text, s, lo, hi)

    def _last_any(self, text: str, s: int, lo: int, hi: int) -> int:
        level = self if self._facts(text)[0] else self._lf
        while True:
            b = DelimLevel.last_in(level, text, s, lo, hi)
            if b <= lo:
                return b
            brk = self._break_at(text, b)
            if brk is None or not self._soft(text, *brk):
                return b
            hi = brk[0] if self.mode == "prev" else brk[0] - 1

    def first_in(self, text: str, s: int, lo: int, hi: int) -> int:
        level = self if self._facts(text)[0] else self._lf
        while True:
            b = DelimLevel.first_in(level, text, s, lo, hi)
            if b < 0:
                return b
            brk = self._break_at(text, b)
            if brk is None or not self._soft(text, *brk):
                return b
            lo = brk[1] if self.mode == "prev" else brk[1] - 1

    def _last_lf(self, text: str, lo: int, hi: int) -> int:
        """``last_in`` for a text without a carriage return when every ``\\n`` is a boundary
        (cut after it): a walk back over the window's line breaks, each line read once."""
        p = text.rfind("\n", lo, hi)
        if p < 0:
            return -1
        stop = text.find("\n", p + 1, p + 1 + _REACH)
        after = text[p + 1 : stop if stop >= 0 else p + 1 + _REACH]
        fences = self._facts(text)[1]
        while True:
            reach = max(0, p - _REACH)
            q = text.rfind("\n", reach, p)
            if q >= 0 or reach == 0:
                before = text[q + 1 : p]
            else:  # a longer line: where it starts is not read, it is prose ("x" stands for that)
                before = "x" + text[reach:p]
            if not soft_break(before, after) or bisect_right(fences, p) % 2:
                return p + 1
            if q < 0 and reach > lo:  # the line before p is longer than _REACH
                q = text.rfind("\n", lo, reach)
                after = text[q + 1 : q + 1 + _REACH]
            else:
                after = before
            if q < lo:
                return -1
            p = q

    def _break_at(self, text: str, b: int) -> tuple[int, int] | None:
        """The line break ``(start, end)`` a boundary ``b`` cuts after (``prev``) or before."""
        k = b - 1 if self.mode == "prev" else b
        if not 0 <= k < len(text):
            return None
        c = text[k]
        if c == "\n":
            start = k - 1 if k > 0 and text[k - 1] == "\r" else k
            return start, k + 1
        if c == "\r":
            return k, k + 2 if text.startswith("\n", k + 1) else k + 1
        return None

    def _soft(self, text: str, start: int, end: int) -> bool:
        has_cr, fences = self._facts(text)
        lo = max(0, start - _REACH)  # a line is read up to _REACH characters from the break
        line = max(text.rfind("\n", lo, start), text.rfind("\r", lo, start) if has_cr else -1)
        if line >= 0 or lo == 0:
            before = text[line + 1 : start]
        else:  # a longer line: where it starts is not read, it is prose ("x" stands for that)
            before = "x" + text[lo:start]
        stop = min(len(text), end + _REACH)
        nl = text.find("\n", end, stop)
        cr = text.find("\r", end, stop) if has_cr else -1
        stop = min(p for p in (nl, cr, stop) if p >= 0)
        if not soft_break(before, text[end:stop]):
            return False
        return bisect_right(fences, start) % 2 == 0  # an odd count of fence edges: inside one

    def _facts(self, text: str) -> tuple[bool, list[int]]:
        """Whether the text has a carriage return, and the start and end offsets of its fenced
        code blocks, flattened and sorted; computed once per text."""
        cached, facts = self._cached
        if cached is not text:
            edges: list[int] = []
            if "```" in text or "~~~" in text:
                from ragsift.chunkers.outline import scan

                edges = [p for fence in scan(text).fences for p in fence]
            facts = ("\r" in text, edges)
            self._cached = (text, facts)
        return facts


# how far from a line break its two lines are read
_REACH = 1000
