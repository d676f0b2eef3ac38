"""Retrieval metrics, defined once for ``tune`` and ``eval``: character-span metrics (Chroma's
chunking evaluation), BEIR ranking metrics, and what a similarity floor does to labelled
candidate lists (precision/recall/F1 of the admitted sets, recall@k, nDCG@k). Pure arithmetic
over spans, ids, scores and rankings; no I/O, no model.

One tie rule: a candidate is admitted at threshold t when ``score >= t`` (a score equal to the
threshold is admitted; NaN never is), through ``ragsift.retrieval.topk.admission`` (only the
first k positions can be admitted; a character budget stops admission). Rankings arrive in
the engine's total order (score descending, rowid ascending), so equal scores never reorder.

Span metrics, as ``../shared/eval/README.md`` defines them (Smith & Troynikov, 2024), counted in
characters. For one question let R be the reference spans and C the retrieved chunk spans:

- recall    = |union(C ∩ R)| / |R|
- precision = |union(C ∩ R)| / Σ|c|                   (Σ over all k retrieved chunks, with multiplicity)
- IoU       = |union(C ∩ R)| / (Σ|c| + |R not covered|)

Only chunks of the question's own corpus can intersect R; chunks of other corpora still count in
Σ|c|. |R| is the size of the union of the reference spans (they never overlap in chroma-dev, so
this equals their summed length there).

BEIR metrics (binary or graded qrels): nDCG@k with gain = relevance and discount
log2(rank + 1), the ideal ranking built from the qrels; Recall@k = relevant found in the top k
/ all relevant; MRR@k = 1 / rank of the first relevant document in the top k (0 if none).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Span = tuple[int, int]  # [start, end), end exclusive


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Union of half-open intervals as a sorted list of disjoint, non-touching intervals."""
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def spans_length(spans: Iterable[Span]) -> int:
    """Number of characters covered by ``spans`` (overlaps counted once)."""
    return sum(e - s for s, e in merge_spans(spans))


def intersect_spans(a: Iterable[Span], b: Iterable[Span]) -> list[Span]:
    """Characters covered by both ``a`` and ``b``, as disjoint sorted intervals."""
    x, y = merge_spans(a), merge_spans(b)
    out: list[Span] = []
    i = j = 0
    while i < len(x) and j < len(y):
        s, e = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if s < e:
            out.append((s, e))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


@dataclass(frozen=True, slots=True)
class SpanScores:
    recall: float
    precision: float
    iou: float


def span_scores(
    retrieved: Sequence[tuple[str, int, int]],
    references: Sequence[Span],
    corpus: str,
) -> SpanScores:
    """Scores of one question: ``retrieved`` are (corpus_id, start, end) of the top-k chunks in
    rank order, ``references`` the question's spans in ``corpus``. Fractions in [0, 1]."""
    own = [(s, e) for c, s, e in retrieved if c == corpus]
    covered = spans_length(intersect_spans(own, references))
    ref_len = spans_length(references)
    retrieved_len = sum(e - s for _, s, e in retrieved)  # with multiplicity
    recall = covered / ref_len if ref_len else 0.0
    precision = covered / retrieved_len if retrieved_len else 0.0
    iou_den = retrieved_len + (ref_len - covered)
    iou = covered / iou_den if iou_den else 0.0
    return SpanScores(recall, precision, iou)


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain, rank r (1-based) discounted by log2(r + 1)."""
    return sum(g / math.log2(r + 1) for r, g in enumerate(gains, start=1) if g)


def ndcg(gains: Sequence[float], ideal: Iterable[float], k: int) -> float:
    """nDCG@k: ``dcg`` of the first k gains over that of the best possible order of
    ``ideal`` (every gain there is to find); 0 when there is nothing to find."""
    best = dcg(sorted((max(float(g), 0.0) for g in ideal), reverse=True)[:k])
    return dcg(list(gains)[:k]) / best if best else 0.0


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    """nDCG@k of one ranked list of document ids against graded relevance judgements."""
    gains = [max(float(qrels.get(d, 0.0)), 0.0) for d in ranking[:k]]
    return ndcg(gains, qrels.values(), k)


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    for r, d in enumerate(ranking[:k], start=1):
        if qrels.get(d, 0) > 0:
            return 1.0 / r
    return 0.0


def mean_std(values: Sequence[float], scale: float = 100.0) -> tuple[float, float]:
    """Mean and population standard deviation (ddof = 0), times ``scale``."""
    n = len(values)
    if not n:
        return 0.0, 0.0
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / n
    return mean * scale, math.sqrt(var) * scale


def best_chunk_ranking(
    scored_chunks: Iterable[tuple[str, float]], limit: int | None = None
) -> list[str]:
    """Rank documents by their best chunk: ``scored_chunks`` are (doc_id, score), any order.

    Ties keep the order in which the documents were first seen (the chunk ranking's order)."""
    best: dict[str, float] = {}
    for doc, score in scored_chunks:
        if doc not in best or score > best[doc]:
            best[doc] = score
    order = {d: i for i, d in enumerate(best)}
    ranked = sorted(best, key=lambda d: (-best[d], order[d]))
    return ranked[:limit] if limit is not None else ranked


def threshold_sweep(
    judged: Sequence[Sequence[tuple[float, bool]]], thresholds: Sequence[float]
) -> list[dict[str, float]]:
    """``eval``'s threshold table: how a cosine floor would act on each query's top-k.

    ``judged`` holds, per query, ``(cosine, relevant)`` of its top-k candidates. Each relevant
    candidate is one relevant item (what the ranking found), and the rows are ``metrics_at``
    (the same definitions as ``tune``): precision = relevant admitted / admitted; recall =
    relevant admitted / relevant in the top k (so 1.0 at t = 0); F1; ``empty`` = share of
    queries admitting nothing; ``answered`` = share of queries with a relevant candidate that
    keep one. Fractions in [0, 1], rounded to 4 places."""
    js = []
    for q in judged:
        rel = [i for i, (_, r) in enumerate(q) if r]
        js.append(
            Judged(
                query="",
                scores=tuple(c for c, _ in q),
                chars=(0,) * len(q),
                matched=tuple(frozenset({i}) if r else frozenset() for i, (_, r) in enumerate(q)),
                n_relevant=len(rel),
            )
        )
    k = max((len(q) for q in judged), default=1) or 1
    rows = []
    for t in thresholds:
        row = metrics_at(js, t, k)
        rows.append(
            {
                "threshold": t,
                "precision": round(row.precision, 4),
                "recall": round(row.recall, 4),
                "f1": round(row.f1, 4),
                "empty": round(row.empty, 4),
                "answered": round(row.answered, 4),
            }
        )
    return rows


def best_threshold(sweep: Sequence[dict[str, float]]) -> dict[str, float] | None:
    """The sweep row with the highest F1 (the lowest threshold among ties)."""
    if not sweep:
        return None
    return max(sweep, key=lambda r: (r["f1"], -r["threshold"]))


# -- thresholds and rankings of labelled candidate lists (tune and eval) ---------------


@dataclass(frozen=True)
class Judged:
    """One query's candidates (score order) with the relevant items each one matches."""

    query: str
    scores: tuple[float, ...]
    chars: tuple[int, ...]
    matched: tuple[frozenset[int], ...]
    n_relevant: int

    @property
    def relevant_flags(self) -> list[bool]:
        return [bool(m) for m in self.matched]


@dataclass(frozen=True)
class SweepRow:
    threshold: float | None  # None: no floor
    precision: float
    recall: float
    f1: float
    empty: float  # share of all queries that admit nothing
    empty_answerable: float  # share of queries with relevant items that admit nothing
    admitted_per_query: float
    answered: float = 0.0  # share of queries with relevant items that admit a relevant one

    def as_dict(self) -> dict[str, float | None]:
        return {k: None if v is None else round(v, 6) for k, v in self.__dict__.items()}


def metrics_at(
    judged: Sequence[Judged], threshold: float | None, k: int, max_chars: int | None = None
) -> SweepRow:
    admitted = hits = covered = items = empty = answerable = empty_ans = answered = 0
    for j in judged:
        from ragsift.retrieval.topk import admission  # the one admission rule (and tie rule)

        reasons = admission(j.scores, j.chars, k=k, threshold=threshold, max_chars=max_chars)
        got: set[int] = set()
        n_adm = 0
        for reason, m in zip(reasons, j.matched):
            if reason is None:
                n_adm += 1
                hits += bool(m)
                got |= m
        admitted += n_adm
        covered += len(got)
        items += j.n_relevant
        empty += n_adm == 0
        if j.n_relevant:
            answerable += 1
            empty_ans += n_adm == 0
            answered += bool(got)
    p = hits / admitted if admitted else 0.0
    r = covered / items if items else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return SweepRow(
        threshold=threshold,
        precision=p,
        recall=r,
        f1=f1,
        empty=empty / len(judged) if judged else 0.0,
        empty_answerable=empty_ans / answerable if answerable else 0.0,
        admitted_per_query=admitted / len(judged) if judged else 0.0,
        answered=answered / answerable if answerable else 0.0,
    )


def ranking_metrics(judged: Sequence[Judged], k: int) -> dict[str, float]:
    """recall@k and nDCG@k of the first k candidates, mean over answerable queries."""
    recalls, ndcgs = [], []
    for j in judged:
        if not j.n_relevant:
            continue
        seen: set[int] = set()
        gains = []
        for m in j.matched[:k]:  # a candidate gains 1 only for items no earlier one matched
            new = m - seen
            gains.append(1.0 if new else 0.0)
            seen |= new
        recalls.append(len(seen) / j.n_relevant)
        ndcgs.append(ndcg(gains, [1.0] * j.n_relevant, k))
    n = len(recalls)
    return {
        f"recall@{k}": sum(recalls) / n if n else 0.0,
        f"ndcg@{k}": sum(ndcgs) / n if n else 0.0,
        "answerable_queries": n,
    }


def threshold_grid(judged: Sequence[Judged], k: int, step: float = 0.01) -> list[float]:
    """Thresholds from just below the lowest to just above the highest top-k score."""
    scores = [s for j in judged for s in j.scores[:k] if math.isfinite(s)]
    if not scores:
        return [0.0]
    lo = math.floor(min(scores) / step) * step
    hi = math.ceil(max(scores) / step) * step + step
    lo, hi = max(lo, -1.0), min(hi, 1.0 + step)
    n = round((hi - lo) / step)
    return [round(lo + i * step, 6) for i in range(n + 1)]


def histogram(values: Iterable[float], lo: float, hi: float, bins: int) -> list[int]:
    counts = [0] * bins
    width = (hi - lo) / bins if hi > lo else 1.0
    for v in values:
        if not math.isfinite(v):
            continue
        i = int((v - lo) / width)
        counts[min(max(i, 0), bins - 1)] += 1
    return counts


def median(values: Sequence[float]) -> float | None:
    v = sorted(values)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
