"""Evidence spans: the contiguous part of a hit's chunk that carries the evidence for a query.

A hit returns its whole chunk, most of which is usually not the evidence (chroma-dev: a
reference averages ~270 characters, a default chunk ~1,100). ``best_span`` picks a contiguous
run of the chunk's units instead, with offsets into the document text, so
``document.text[span.start:span.end] == span.text`` always holds (a chunk's text is
``document.text[chunk.start:chunk.end]``, and a span is a slice of it).

Units: the chunk's lines, cut into sentences (``ragsift.sources.units.split_sentences``, the
cutter attribution uses: a JSON document's text is already its citable units, one per line),
located in the chunk text in order, so every unit is a verbatim slice.

Rule (lexical, measured; bench/RESULTS.md "Evidence spans"):

1. Query terms: the words of the query (letters/digits runs, lower-cased, the lexical side's
   function words dropped), each reduced to its first ``STEM`` characters (truncation
   stemming: cheap, and close to the index's Porter stemmer for English). A unit's score is
   the sum over the distinct query terms it contains of the term's weight
   ``log(1 + U / u_t)`` (``U`` units across the query's hits, ``u_t`` of them containing the
   term: a term found everywhere says little about where the evidence is).
2. Seed: the window of units (≤ ``min_chars`` wide, at least one unit) with the highest
   score, earliest on ties.
3. Grow while it gains: a neighbouring unit joins when it contains a query term the window
   does not yet cover (its new weight > 0); then the window is widened, toward the
   higher-scoring neighbour, until it holds ``min_chars`` characters (context around the
   evidence, the setting that holds recall: see the measurement).
4. A chunk where no unit matches any query term gets its whole chunk as the span (nothing
   says where the evidence is, so nothing is cut away).

Scores are summed with ``math.fsum`` (exact, so independent of set order: the same query
gives the same span in every process). The rule reads only the texts, no model: it costs well under a millisecond per hit (measured
in ``bench/bench_spans.py``), so ``query --span best`` adds nothing noticeable to a query.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

SPAN_MODES = ("chunk", "best")
DEFAULT_SPAN = "chunk"  # measured: see bench/RESULTS.md "Evidence spans"
MIN_CHARS = 400  # the window's minimum width in characters (measured, ibid.)
STEM = 6  # truncation stemming: a term is its first STEM characters

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def check_span(span: str) -> str:
    from ragsift.errors import RagsiftError

    if span not in SPAN_MODES:
        raise RagsiftError(f"--span must be {' or '.join(SPAN_MODES)}, not {span!r}")
    return span


@dataclass(frozen=True, slots=True)
class Span:
    """A contiguous evidence span: ``start``/``end`` are offsets into the document text
    (``document.text[start:end] == text``); ``score`` is the summed weight of the query terms
    it covers (0 when no unit matched and the span is the whole chunk)."""

    start: int
    end: int
    text: str
    score: float
    units: int

    def as_dict(self) -> dict[str, Any]:
        return {"span_start": self.start, "span_end": self.end, "span_text": self.text}


@lru_cache(maxsize=65536)
def _fold(word: str) -> str:
    if word.isascii():
        return word.lower()[:STEM]
    word = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in word if not unicodedata.combining(ch))[:STEM]


def query_terms(query: str) -> list[str]:
    """The query's distinct stemmed terms, function words dropped (unless nothing is left)."""
    from ragsift.index.store import _STOPWORDS  # the lexical side's list, defined once

    words = [w.lower() for w in _WORD.findall(query or "")]
    kept = [w for w in words if w not in _STOPWORDS] or words
    return list(dict.fromkeys(_fold(w) for w in kept if _fold(w)))


def unit_bounds(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every unit of ``text`` (offsets into ``text``), in order; units
    cover every non-blank part of the text (lines, cut into sentences)."""
    from ragsift.sources.units import split_sentences

    out = []
    cursor = 0
    for piece in split_sentences(text):
        at = text.find(piece, cursor)
        if at < 0:  # split_sentences only strips, so every piece is found; be safe anyway
            continue
        out.append((at, at + len(piece)))
        cursor = at + len(piece)
    return out


def _terms_of(text: str, wanted: set[str]) -> set[str]:
    return {t for t in (_fold(w) for w in _WORD.findall(text)) if t in wanted}


def best_spans(query: str, texts: Sequence[str], offsets: Sequence[int | None] | None = None,
               min_chars: int = MIN_CHARS) -> list[Span]:
    """The evidence span of each hit text (the hits of one query, so term weights are
    comparable across them); ``offsets``: where each text starts in its document (chunk
    ``start``; None or missing: 0)."""
    terms = set(query_terms(query))
    per_hit = [unit_bounds(t) for t in texts]
    matched = [[_terms_of(t[s:e], terms) for s, e in bounds]
               for t, bounds in zip(texts, per_hit)]
    total = sum(len(b) for b in per_hit)
    df: dict[str, int] = {}
    for units in matched:
        for found in units:
            for t in found:
                df[t] = df.get(t, 0) + 1
    weight = {t: math.log(1.0 + total / n) for t, n in df.items()}
    out = []
    for i, (text, bounds, units) in enumerate(zip(texts, per_hit, matched)):
        base = (offsets[i] if offsets is not None and i < len(offsets) else None) or 0
        s, e, score, n = _window(text, bounds, units, weight, min_chars)
        out.append(Span(base + s, base + e, text[s:e], score, n))
    return out


def _window(text: str, bounds: list[tuple[int, int]], units: list[set[str]],
            weight: dict[str, float], min_chars: int) -> tuple[int, int, float, int]:
    scores = [math.fsum(weight[t] for t in u) for u in units]
    if not bounds or max(scores, default=0.0) <= 0.0:
        return 0, len(text), 0.0, len(bounds)
    n = len(bounds)

    def width(lo: int, hi: int) -> int:
        return bounds[hi][1] - bounds[lo][0]

    def covered(lo: int, hi: int) -> set[str]:
        return set().union(*units[lo:hi + 1])

    # 1. seed: the best-scoring window no wider than min_chars (distinct terms count once)
    best = (-1.0, 0, 0)
    for lo in range(n):
        hi = lo
        while hi + 1 < n and width(lo, hi + 1) <= min_chars:
            hi += 1
        score = math.fsum(weight[t] for t in covered(lo, hi))
        if score > best[0]:
            best = (score, lo, hi)
    _, lo, hi = best
    have = covered(lo, hi)

    # 2. grow while a neighbour brings a query term the window lacks
    def gain(j: int) -> float:
        return math.fsum(weight[t] for t in units[j] - have)

    while True:
        left = gain(lo - 1) if lo > 0 else 0.0
        right = gain(hi + 1) if hi + 1 < n else 0.0
        if max(left, right) <= 0.0:
            break
        if right > left:
            hi += 1
            have |= units[hi]
        else:
            lo -= 1
            have |= units[lo]
    # 3. widen to min_chars, toward the higher-scoring neighbour
    while width(lo, hi) < min_chars and (lo > 0 or hi + 1 < n):
        left = scores[lo - 1] if lo > 0 else -1.0
        right = scores[hi + 1] if hi + 1 < n else -1.0
        if right > left:
            hi += 1
        else:
            lo -= 1
    score = math.fsum(weight[t] for t in covered(lo, hi))
    return bounds[lo][0], bounds[hi][1], score, hi - lo + 1


def spans_for(query: str, candidates: Sequence[Any], min_chars: int = MIN_CHARS
              ) -> list[Span]:
    """``best_spans`` for ``Candidate`` records (their ``text`` and ``start``)."""
    return best_spans(query, [c.text for c in candidates], [c.start for c in candidates],
                      min_chars)


def with_spans(r: Any) -> Any:
    """A ``Retrieval`` whose admitted candidates carry their evidence span (``span_start``,
    ``span_end``, ``span_text``); rejected candidates are left as they are."""
    from dataclasses import replace

    admitted = [c for c in r.candidates if c.admitted]
    spans = iter(spans_for(r.query, admitted))
    return replace(r, candidates=tuple(
        replace(c, span_start=sp.start, span_end=sp.end, span_text=sp.text)
        if c.admitted and (sp := next(spans)) else c for c in r.candidates))
