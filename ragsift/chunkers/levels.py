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

    def __init__(self, pattern: str | re.Pattern[str], at: str = "start",
                 reach: int = 16) -> None:
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
