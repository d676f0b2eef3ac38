"""The one packing engine every chunker shares.

Role: turn boundary levels (see ``levels``) into chunks with exact offsets under a size cap.
Chunkers differ only in the levels they pass in; the cap, the floor, overlap, trimming and
offsets live here.

Algorithm (greedy, one pass, no candidate string is ever re-encoded):

1. The document is tokenized once (``counters.index_for``). From the chunk start ``s`` the
   index gives ``e_max``, the furthest end whose range fits the budget left after the
   chunk's context (prefix, heading trail); ``max_chars`` caps it too.
2. The chunk ends at the largest boundary in ``(s + floor, e_max]`` of the *coarsest* level
   that has one there (paragraph before sentence before word...); when no level has one
   the cut is a hard cut at ``e_max`` (a token boundary). A ``mandatory`` level (headings
   for the heading chunker) ends a chunk at its first boundary past the floor, however
   small the chunk. ``Chunk.level`` is the level of the cut *before* the chunk.
3. Whitespace is trimmed from both ends, so no chunk is empty or whitespace-only and the
   text between chunks is whitespace only (every non-whitespace character is covered,
   except delimiters a chunker was told to drop).
4. The chunk is counted exactly (``index.exact``: ``context + text`` as a fresh encode
   counts it). In the rare case tokenization across the cut makes it exceed the cap, the
   window shrinks by the excess and step 2 repeats, so the cap always holds — except for a
   single character that alone exceeds it (then that character is the chunk).
5. Overlap (sentence, tokens, chars): the next chunk starts at the earliest allowed
   boundary after ``s`` whose tail up to the previous end fits in ``overlap`` units, and
   must end past the previous end; when keeping the overlap would force a finer cut than
   the top level, that chunk is packed without overlap.
6. A last chunk shorter than ``tail_min`` characters merges into the one before when the
   merged chunk still fits the cap.

Guarantees: ``text[start:end] == chunk.text``; chunks are in order and, without overlap,
disjoint; ``tokens`` equals a fresh count of ``context + text``; ``tokens <= budget``
(unless a single character exceeds it, or the caller allowed oversize).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsift.chunkers.base import Chunk
from ragsift.chunkers.levels import Level

_NONWS = re.compile(r"\S")


def first_nonspace(text: str, p: int) -> int:
    m = _NONWS.search(text, p)
    return m.start() if m else len(text)


@dataclass
class PackStats:
    """What a packing run had to compromise on (summed over documents)."""

    hard_cuts: int = 0  # chunks ended inside a word (no boundary of any level fitted)
    oversize: int = 0  # chunks over the budget (allow_oversize, or a single huge character)
    short: int = 0  # chunks with fewer pieces than the top level asked for (min_sentences)

    def as_dict(self) -> dict:
        return {"hard_cuts": self.hard_cuts, "oversize": self.oversize, "short": self.short}


@dataclass
class Packer:
    """Greedy packing of boundary levels under a token and/or character cap."""

    levels: Sequence[Level]
    budget: int | None = None  # counter units for context + text
    max_chars: int | None = None  # characters of text
    min_chars: int = 0  # floor: no cut leaves a chunk shorter than this (chars)
    overlap: int = 0
    overlap_in_chars: bool = False
    overlap_level: Level | None = None  # where overlapped chunks may start (None: tokens)
    mandatory: Level | None = None
    heading_floor: bool = False  # a chunk starting with a heading line needs body text
    trim: bool = True
    tail_min: int = 0
    tail_ignores_max_chars: bool = False
    allow_oversize: bool = False
    stats: PackStats = field(default_factory=PackStats)
    _headings: Collection[int] = ()

    def pack(
        self,
        text: str,
        index: Any,
        *,
        context: Callable[[int], str] | None = None,
        protected: Sequence[tuple[int, int]] = (),
        headings: Collection[int] = (),
    ) -> list[Chunk]:
        """Chunks of ``text``; ``context(start)`` gives the context of a chunk starting there.

        ``protected`` ranges (sorted, disjoint) are never cut inside by a level boundary.
        ``headings``: offsets where a heading line starts; with ``heading_floor`` a chunk that
        starts there must take at least one character of the body below the heading
        (``min_chars`` of it, when the floor can be met within the budget).
        """
        if (
            not self.levels
            and not self.trim
            and context is None
            and self.budget
            and self.max_chars is None
            and hasattr(index, "starts")
        ):
            return self._token_windows(text, index)
        n = len(text)
        out: list[Chunk] = []
        ctx_units: dict[str, int] = {}
        s = first_nonspace(text, 0) if self.trim else 0
        prev_end = -1  # with overlap: the next chunk must end past this
        cut_level = 0
        self._headings = headings
        while s < n:
            plain = prev_end < 0 or s >= prev_end
            picked = self._one(
                text, index, s, n, prev_end if not plain else -1, context, ctx_units, protected
            )
            if picked is None:  # overlap would force a finer cut: start after prev_end
                s = first_nonspace(text, prev_end) if self.trim else prev_end
                prev_end = -1
                continue
            chunk, end, level = picked
            if chunk is not None:
                out.append(Chunk(chunk[0], chunk[1], chunk[2], chunk[3], cut_level, chunk[4]))
            cut_level = level
            nxt = end
            skip_of = (
                getattr(self.levels[level], "skip_at", None) if level < len(self.levels) else None
            )
            if skip_of is not None:
                nxt += skip_of(text, end)
            if first_nonspace(text, nxt) >= n:
                break
            if self.overlap > 0 and chunk is not None:
                ov = self._overlap_start(text, index, chunk[1], chunk[2])
                if ov is not None:
                    prev_end = first_nonspace(text, chunk[2])
                    nxt = ov
            s = first_nonspace(text, nxt) if self.trim else nxt
        if self.tail_min and len(out) >= 2:
            self._merge_tail(text, index, out, context)
        return out

    def _token_windows(self, text: str, index: Any) -> list[Chunk]:
        """Fixed windows of ``budget`` tokens, stepping ``budget - overlap``: the same cuts the
        general loop makes without levels and trimming, without its per-chunk search."""
        starts, ntok, n = index.starts, index.ntok, len(text)
        size, overlap = self.budget or 1, self.overlap
        out: list[Chunk] = []

        def window(i: int) -> tuple[int, int, int]:
            s = starts[i]
            j = min(i + size, ntok)
            while True:
                while j < ntok and starts[j] <= s:  # tokens inside one character
                    j += 1
                e = starts[j] if j < ntok else n
                tokens = index.exact("", s, e)
                if tokens <= size or j <= i + 1:
                    return j, e, tokens
                j = max(i + 1, j - (tokens - size))

        i, prev_e, prev_j = 0, -1, 0
        while i < ntok:
            j, e, tokens = window(i)
            if e <= prev_e:  # the overlap leaves no room for new text: no overlap here
                i = prev_j
                j, e, tokens = window(i)
            s = starts[i]
            if first_nonspace(text, s) < e:
                out.append(Chunk(text[s:e], s, e, tokens, 0, ""))
                if tokens > size:
                    self.stats.oversize += 1
            self.stats.hard_cuts += 1
            if j >= ntok:
                break
            k = j - overlap
            prev_e, prev_j = e, j
            i = k if overlap and k > i and starts[k] > s else j
        return out

    # -- one chunk ------------------------------------------------------------------------

    def _one(
        self,
        text: str,
        index: Any,
        s: int,
        n: int,
        prev_end: int,
        context: Callable[[int], str] | None,
        ctx_units: dict[str, int],
        protected: Sequence[tuple[int, int]],
    ) -> Any:
        ctx = context(s) if context is not None else ""
        avail = None
        if self.budget is not None:
            units = ctx_units.get(ctx)
            if units is None:
                units = ctx_units[ctx] = index.count(ctx) if ctx else 0
            avail = self.budget - units
        shrink = 0
        while True:
            e_max = n if avail is None else index.limit(s, avail - shrink)
            if self.max_chars is not None:
                e_max = min(e_max, s + self.max_chars)
            if e_max <= s:
                e_max = s + 1
            if 0 <= prev_end and e_max <= prev_end:
                return None
            end, level, forced = self._choose_end(text, s, n, e_max, prev_end, protected)
            if prev_end >= 0 and level > 0:
                return None
            if self.trim:
                e = s + len(text[s:end].rstrip()) or end
            else:
                e = end
                if first_nonspace(text, s) >= e:  # a whitespace-only window: skip it
                    return None if prev_end >= 0 else (None, end, level)
            tokens = index.exact(ctx, s, e)
            if self.budget is None or tokens <= self.budget or e - s <= 1 or forced:
                break
            shrink += tokens - self.budget
        if self.budget is not None and tokens > self.budget:
            self.stats.oversize += 1
        if level == len(self.levels) + (self.mandatory is not None):
            self.stats.hard_cuts += 1
        return (text[s:e], s, e, tokens, ctx), end, level

    def _choose_end(
        self,
        text: str,
        s: int,
        n: int,
        e_max: int,
        prev_end: int,
        protected: Sequence[tuple[int, int]],
    ) -> tuple[int, int, bool]:
        lo = s + self.min_chars
        lo_min = s
        if self.heading_floor and s in self._headings:
            eol = text.find("\n", s)
            body = first_nonspace(text, eol) if eol >= 0 else n
            lo_min = min(body, n - 1)  # the cut must leave at least one body character
            lo = max(lo, body + self.min_chars)
        if prev_end >= 0:
            lo = max(lo, prev_end)
        offset = 0
        if self.mandatory is not None:
            offset = 1
            m = self.mandatory.first_in(text, s, lo, min(e_max, n))
            if m > s:
                return m, 0, False
        if e_max >= n:
            return n, 0, False
        levels = list(self.levels)
        required_end = getattr(levels[0], "required_end", None) if levels else None
        if required_end is not None and levels[0].min_count > 1:
            need = required_end(s)
            if need > e_max:  # min_count pieces do not fit: the budget wins unless told not to
                if self.allow_oversize:
                    return need, offset, True
                self.stats.short += 1
                levels[0] = levels[0].relaxed()
        if lo < e_max:
            for depth, level in enumerate(levels):
                b = self._last_allowed(level, text, s, lo, e_max, protected)
                if b > s:
                    return b, depth + offset, False
        if lo >= e_max and prev_end < 0 and self.levels:
            # the floor is beyond the window: take the best boundary below it instead
            for depth, level in enumerate(levels):
                b = self._last_allowed(level, text, s, lo_min, e_max, protected)
                if b > s:
                    return b, depth + offset, False
        return e_max, len(self.levels) + offset, False

    @staticmethod
    def _last_allowed(
        level: Level, text: str, s: int, lo: int, hi: int, protected: Sequence[tuple[int, int]]
    ) -> int:
        b = level.last_in(text, s, lo, hi)
        if not protected:
            return b
        from bisect import bisect_right

        starts = [p[0] for p in protected]
        while b > lo:
            k = bisect_right(starts, b - 1) - 1
            if k < 0 or not (protected[k][0] < b < protected[k][1]):
                return b
            hi = protected[k][0]
            if hi <= lo:
                return -1
            b = level.last_in(text, s, lo, hi)
        return -1

    def _overlap_start(self, text: str, index: Any, s: int, e: int) -> int | None:
        if self.overlap_in_chars:
            p = max(s + 1, e - self.overlap)
        else:
            p = max(s + 1, index.overlap_start(e, self.overlap))
        if p >= e:
            return None
        if self.overlap_level is not None:
            b = self.overlap_level.first_in(text, s, p - 1, e - 1)
            if b < 0:
                return None
            p = b
        return p if s < p < e else None

    def _merge_tail(
        self, text: str, index: Any, out: list[Chunk], context: Callable[[int], str] | None
    ) -> None:
        last, prev = out[-1], out[-2]
        fragment = last.end - max(prev.end, last.start)
        if fragment >= self.tail_min:
            return
        start, end = prev.start, last.end
        if (
            self.max_chars is not None
            and not self.tail_ignores_max_chars
            and end - start > self.max_chars
        ):
            return
        ctx = context(start) if context is not None else prev.context
        tokens = index.exact(ctx, start, end)
        if self.budget is not None and tokens > self.budget:
            return
        out[-2:] = [Chunk(text[start:end], start, end, tokens, prev.level, ctx)]
