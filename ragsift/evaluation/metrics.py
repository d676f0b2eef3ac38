"""Retrieval metrics: character-span metrics (Chroma's chunking evaluation) and BEIR ranking
metrics. Pure arithmetic over spans, ids and rankings; no I/O, no model.

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


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    """nDCG@k of one ranked list of document ids against graded relevance judgements."""
    gains = [max(float(qrels.get(d, 0.0)), 0.0) for d in ranking[:k]]
    ideal = sorted((max(float(g), 0.0) for g in qrels.values()), reverse=True)[:k]
    best = dcg(ideal)
    return dcg(gains) / best if best else 0.0


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
    """How a cosine floor would act on the top-k candidates of each query.

    ``judged`` holds, per query, ``(cosine, relevant)`` of its top-k candidates. For each
    threshold t (candidates with cosine ≥ t are admitted), micro-averaged over queries:
    precision = relevant admitted / admitted; recall = relevant admitted / relevant in the top k
    (what the ranking found, so 1.0 at t = 0); F1; ``empty`` = share of queries admitting
    nothing; ``answered`` = share of queries with a relevant candidate that keep at least one.
    Values are fractions in [0, 1]."""
    relevant_total = sum(1 for q in judged for _, rel in q if rel)
    with_relevant = [q for q in judged if any(rel for _, rel in q)]
    rows = []
    for t in thresholds:
        admitted = sum(1 for q in judged for cos, _ in q if cos >= t)
        hits = sum(1 for q in judged for cos, rel in q if rel and cos >= t)
        precision = hits / admitted if admitted else 0.0
        recall = hits / relevant_total if relevant_total else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        empty = sum(1 for q in judged if not any(cos >= t for cos, _ in q))
        answered = sum(1 for q in with_relevant if any(rel and cos >= t for cos, rel in q))
        rows.append(
            {
                "threshold": t,
                "precision": round(precision, 4),
                "recall": round(recall, 4),
                "f1": round(f1, 4),
                "empty": round(empty / len(judged), 4) if judged else 0.0,
                "answered": round(answered / len(with_relevant), 4) if with_relevant else 0.0,
            }
        )
    return rows


def best_threshold(sweep: Sequence[dict[str, float]]) -> dict[str, float] | None:
    """The sweep row with the highest F1 (the lowest threshold among ties)."""
    if not sweep:
        return None
    return max(sweep, key=lambda r: (r["f1"], -r["threshold"]))
