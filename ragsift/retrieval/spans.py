"""Evidence spans: the contiguous part of a hit's chunk that carries the evidence for a query.

A hit returns its whole chunk, most of which is usually not the evidence (chroma-dev: a
reference averages ~270 characters, a default chunk ~1,100). ``best_span`` picks a contiguous
run of the chunk's units instead, with offsets into the document text, so
``document.text[span.start:span.end] == span.text`` always holds (a chunk's text is
``document.text[chunk.start:chunk.end]``, and a span is a slice of it).

Units: the chunk's lines, cut into sentences (``ragsift.sources.units.split_sentences``, the
cutter attribution uses: a JSON document's text is already its citable units, one per line),
located in the chunk text in order, so every unit is a verbatim slice.

Rule (measured; bench/RESULTS.md "Evidence spans"). The evidence of a query is rarely in one
hit only (chroma-dev k 5: whole chunks give recall@1..5 of 72 / 83 / 92 / 96 / 97), so a rule
that trims every hit loses recall; most hits hold none of it (~1 in 4.5 does), so a rule that
keeps every hit pays for them. The span therefore depends on how strongly the hit holds the
evidence, compared with the other hits of the same query:

1. Query terms: the words the lexical side asks for (``index.terms.query_words``: letter/digit
   runs, lower-cased, function words dropped; a CJK run as its overlapping bigrams, one CJK
   character as itself), each reduced to its first ``STEM`` characters (truncation
   stemming: cheap, and close to the index's Porter stemmer for English). A unit's words are
   its runs plus, for CJK text, the n-grams the index holds for it (``index.terms.cjk_terms``),
   so a CJK query word matches a unit that holds it verbatim; text without CJK is read as
   before.
2. Evidence strength of a hit, in [0, 1]: the mean of (a) its BM25 for the query terms over
   the hits' texts (k1 1.2, b 0.75, document frequencies and average length over the hits),
   divided by the best hit's, and (b) its cosine to the query, min-max scaled over the hits
   (every candidate carries its cosine, in every retrieval mode). A strong hit
   (strength ≥ ``STRONG``) keeps its whole chunk: the evidence is spread over it.
3. Any other hit is cut to the window of units around the query's words: a unit's score is
   the sum over the distinct query terms it contains of ``log(1 + U / u_t)`` (``U`` units
   across the query's hits, ``u_t`` of them containing the term); the seed is the best
   window of units at most ``min_chars`` wide (at least one unit, earliest on ties); it grows
   over a neighbouring unit while that unit adds a query term the window lacks, then widens
   (toward the higher-scoring neighbour) to ``min_chars`` characters. A weak hit with no
   query term at all gets its first unit (nothing says where evidence would be, and little
   says there is any).

Scores are summed with ``math.fsum`` over a fixed order (exact: the same query gives the same
span in every process). The rule reads only the texts and the cosines the engine already has,
no model: about a millisecond per query at k 5 (measured in ``bench/bench_spans.py``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ragsift.index.terms import cjk_terms, query_words  # the lexical side's one word rule

SPAN_MODES = ("chunk", "best")
DEFAULT_SPAN = "chunk"  # measured: see bench/RESULTS.md "Evidence spans"
MIN_CHARS = 0  # a cut hit's window: its best unit(s), grown over query terms (measured, ibid.)
STRONG = 0.45  # the evidence strength at which a hit keeps its whole chunk: on the relevance
# order, the value with the best mean of recall and IoU over chroma-dev's three corpora;
# leave-one-corpus-out chose 0.45-0.5 on the held-out corpora (bench/bench_spans.py relevance;
# bench/RESULTS.md, "One relevance score": spans)
STEM = 6  # truncation stemming: a term is its first STEM characters
SEED_UNIT = True  # a cut hit's window starts from its best unit (issue 28; measured, ibid.)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def check_span(span: str) -> str:
    from ragsift.errors import RagsiftError

    if span not in SPAN_MODES:
        raise RagsiftError(
            "{span} must be {choices}, not {got}",
            param="span",
            values={"choices": " or ".join(SPAN_MODES), "got": repr(span)},
        )
    return span


@dataclass(frozen=True, slots=True)
class Span:
    """A contiguous evidence span: ``start``/``end`` are offsets into the document text
    (``document.text[start:end] == text``); ``score`` is the summed weight of the query terms
    it covers; ``strength``: the hit's evidence strength (rule step 2), ``units`` how many
    units the span holds."""

    start: int
    end: int
    text: str
    score: float
    units: int
    strength: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"span_start": self.start, "span_end": self.end, "span_text": self.text}


@lru_cache(maxsize=65536)
def _fold(word: str) -> str:
    if word.isascii():
        return word.lower()[:STEM]
    word = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in word if not unicodedata.combining(ch))[:STEM]


def query_terms(query: str) -> list[str]:
    """The query's distinct stemmed terms: the lexical side's words (function words dropped
    unless nothing is left; CJK by its bigrams), each stemmed."""
    return list(dict.fromkeys(f for w in query_words(query or "") if (f := _fold(w))))


def text_words(text: str) -> list[str]:
    """The words of ``text`` a query term can match, in order: its letter/digit runs, then
    (CJK text only) the n-grams the index holds for it (``index.terms.cjk_terms``)."""
    return _WORD.findall(text) + list(cjk_terms(text))


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


def _words(text: str, wanted: set[str]) -> tuple[set[str], list[str], int]:
    """The query terms in ``text`` (distinct), every occurrence of them, and its word count."""
    folded = [_fold(w) for w in text_words(text)]
    hits = [t for t in folded if t in wanted]
    return set(hits), hits, len(folded)


def _bm25(tf: Sequence[dict[str, int]], lengths: Sequence[int]) -> list[float]:
    """BM25 (k1 1.2, b 0.75) of each text for the query terms, with document frequencies and
    the average length taken over these texts (the hits of one query)."""
    n = len(tf)
    avg = (sum(lengths) / n) if n else 0.0
    df: dict[str, int] = {}
    for counts in tf:
        for t in counts:
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    out = []
    for counts, length in zip(tf, lengths):
        norm = 1.2 * (0.25 + 0.75 * (length / avg if avg else 1.0))
        out.append(math.fsum(idf[t] * f * 2.2 / (f + norm) for t, f in sorted(counts.items())))
    return out


def _scaled(values: Sequence[float], minmax: bool) -> list[float]:
    """``values`` scaled into [0, 1]: divided by the largest, or min-max (``minmax``). When
    nothing tells them apart (all equal; or no positive value to divide by): 1.0 each under
    min-max (no evidence against any), 0.0 each otherwise (no evidence for any)."""
    top = max(values, default=0.0)
    bottom = min(values, default=0.0) if minmax else 0.0
    if not top - bottom > 0.0:
        return [1.0 if minmax else 0.0] * len(values)
    return [(v - bottom) / (top - bottom) for v in values]


def evidence_strengths(
    tf: Sequence[dict[str, int]], lengths: Sequence[int], scores: Sequence[float | None] | None
) -> list[float]:
    """How strongly each hit holds the evidence, relative to the other hits of its query, in
    [0, 1]: the mean of its lexical score (BM25 over the hits' texts, divided by the best) and
    its cosine (min-max over the hits); the lexical part alone when there are no cosines (or
    one is missing or not a number)."""
    lexical = _scaled(_bm25(tf, lengths), minmax=False)
    if (
        scores is None
        or len(scores) != len(lexical)
        or not all(s is not None and math.isfinite(s) for s in scores)
    ):
        return lexical
    dense = _scaled([float(s) for s in scores if s is not None], minmax=True)
    return [0.5 * x + 0.5 * y for x, y in zip(lexical, dense)]


def best_spans(
    query: str,
    texts: Sequence[str],
    offsets: Sequence[int | None] | None = None,
    min_chars: int = MIN_CHARS,
    scores: Sequence[float | None] | None = None,
    strong: float | None = None,
    seeds: Sequence[tuple[int, int] | None] | None = None,
) -> list[Span]:
    """The evidence span of each hit text (the hits of one query, in rank order, so weights
    and strengths are comparable across them); ``offsets``: where each text starts in its
    document (chunk ``start``; None or missing: 0); ``scores``: each hit's cosine to the query
    (None: the strength is the lexical part alone); ``strong``: the strength at which a hit
    keeps its whole chunk (above 1: every hit is cut to its window); ``seeds``: each hit's
    best unit (offsets into its text, ``ragsift.retrieval.units``; None: not known), the
    window's seed when given."""
    strong = STRONG if strong is None else strong
    terms = set(query_terms(query))
    per_hit = [unit_bounds(t) for t in texts]
    matched, tf, lengths = [], [], []
    for text, bounds in zip(texts, per_hit):
        units, counts, length = [], {}, 0
        for s, e in bounds:
            found, occurrences, words = _words(text[s:e], terms)
            units.append(found)
            length += words
            for t in occurrences:
                counts[t] = counts.get(t, 0) + 1
        matched.append(units)
        tf.append(counts)
        lengths.append(length)
    total = sum(len(b) for b in per_hit)
    df: dict[str, int] = {}
    for units in matched:
        for found in units:
            for t in found:
                df[t] = df.get(t, 0) + 1
    weight = {t: math.log(1.0 + total / n) for t, n in df.items()}
    strength = evidence_strengths(tf, lengths, scores)
    out = []
    for i, (text, bounds, units) in enumerate(zip(texts, per_hit, matched)):
        base = (offsets[i] if offsets is not None and i < len(offsets) else None) or 0
        if strength[i] >= strong or not bounds:
            s, e, n = 0, len(text), len(bounds)
            score = math.fsum(weight[t] for t in set().union(*units))
        else:
            seed = seeds[i] if seeds is not None and i < len(seeds) else None
            s, e, score, n = _window(text, bounds, units, weight, min_chars, seed)
        out.append(Span(base + s, base + e, text[s:e], score, n, strength[i]))
    return out


def _window(
    text: str,
    bounds: list[tuple[int, int]],
    units: list[set[str]],
    weight: dict[str, float],
    min_chars: int,
    seed: tuple[int, int] | None = None,
) -> tuple[int, int, float, int]:
    scores = [math.fsum(weight[t] for t in u) for u in units]
    n = len(bounds)
    at = [i for i, (s, e) in enumerate(bounds) if seed and s < seed[1] and e > seed[0]]
    if max(scores, default=0.0) <= 0.0:  # no query term anywhere: the best unit, else unit one
        lo, hi = (at[0], at[-1]) if at else (0, 0)
        return bounds[lo][0], bounds[hi][1], 0.0, hi - lo + 1

    def width(lo: int, hi: int) -> int:
        return bounds[hi][1] - bounds[lo][0]

    def covered(lo: int, hi: int) -> set[str]:
        return set().union(*units[lo : hi + 1])

    # 1. seed: the hit's best unit (what the dense evidence found), else the best-scoring
    # window no wider than min_chars (distinct terms count once)
    best = (-1.0, 0, 0)
    for lo in range(n):
        hi = lo
        while hi + 1 < n and width(lo, hi + 1) <= min_chars:
            hi += 1
        score = math.fsum(weight[t] for t in covered(lo, hi))
        if score > best[0]:
            best = (score, lo, hi)
    _, lo, hi = best
    if at and SEED_UNIT:
        lo, hi = at[0], at[-1]
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


def dense_of(score: float, dense_score: float | None, unit_score: float | None) -> float:
    """A hit's dense evidence for its strength: ``relevance.dense_evidence`` of its aggregate
    cosine and best unit (the aggregate alone where no unit was read; the score where no
    cosine)."""
    from ragsift.retrieval.relevance import UNIT_WEIGHT

    if dense_score is None:
        return score
    if unit_score is None:
        return dense_score
    return UNIT_WEIGHT * unit_score + (1 - UNIT_WEIGHT) * dense_score


def spans_of_ranked(
    query: str,
    texts: Sequence[str],
    starts: Sequence[int | None],
    ranked: Sequence[Any],
    min_chars: int = MIN_CHARS,
) -> list[Span]:
    """``best_spans`` of the engine's ``Ranked`` hits (``texts``/``starts``: their chunks):
    the one rule ``query --span best`` and ``eval`` apply (their dense evidence, their best
    unit as the seed; a ``Ranked``'s unit offsets are into its chunk's text)."""
    return best_spans(
        query,
        texts,
        starts,
        min_chars,
        [dense_of(c.score, c.dense_score, c.unit_score) for c in ranked],
        seeds=[None if c.unit_start is None else (c.unit_start, c.unit_end) for c in ranked],
    )


def spans_for(query: str, candidates: Sequence[Any], min_chars: int = MIN_CHARS) -> list[Span]:
    """``spans_of_ranked`` for ``Candidate`` records (their unit offsets are into the
    document: taken back to the chunk's text here)."""
    from types import SimpleNamespace

    def rel(c: Any) -> Any:
        base = c.start or 0
        return SimpleNamespace(
            score=c.score,
            dense_score=c.dense_score,
            unit_score=c.unit_score,
            unit_start=None if c.unit_start is None else c.unit_start - base,
            unit_end=None if c.unit_end is None else c.unit_end - base,
        )

    return spans_of_ranked(
        query,
        [c.text for c in candidates],
        [c.start for c in candidates],
        [rel(c) for c in candidates],
        min_chars,
    )


def with_spans(r: Any) -> Any:
    """A ``Retrieval`` whose admitted candidates carry their evidence span (``span_start``,
    ``span_end``, ``span_text``); rejected candidates are left as they are."""
    from dataclasses import replace

    admitted = [c for c in r.candidates if c.admitted]
    spans = iter(spans_for(r.query, admitted))
    return replace(
        r,
        candidates=tuple(
            replace(c, span_start=sp.start, span_end=sp.end, span_text=sp.text)
            if c.admitted and (sp := next(spans))
            else c
            for c in r.candidates
        ),
    )
