"""Hybrid retrieval settings, and the two historical fusions kept for ``eval`` comparisons.

Since 0.2 hybrid mode orders candidates by the relevance score
(``ragsift.retrieval.relevance``): one calibrated number per candidate from both sides'
evidence, which is also what the threshold applies to. ``Fusion`` holds the hybrid settings:
``fusion="relevance"`` (the default, and the only one ``query``/``explain``/``tune`` use) and
``depth``, the candidates taken from each side.

The two fusions hybrid mode used before are kept as pure functions so that ``ragsift eval``
(a config's ``fusion = "convex"`` or ``"rrf"``) and the benchmarks can compare their rankings
with the relevance order. Under them the order is the fused one while the score (and any
gate) stays the relevance score, so they are for ranking comparisons only:

- **RRF** (reciprocal rank fusion, Cormack et al. 2009): ``fused = Σ_side w / (rrf_k + rank)``,
  rank 1-based within each side's candidate list; a side that did not return the candidate adds 0.
- **Convex combination** (Bruch et al. 2023): ``fused = α·norm(cosine) + (1−α)·norm(bm25)``.
  ``norm="minmax"`` scales each side over the candidate set to [0, 1]; ``norm="tmm"`` uses the
  theoretical minimum (−1 for the cosine, 0 for BM25) and the observed maximum. A candidate the
  lexical side did not match gets lexical 0.

Both are relative to one query's candidate set (RRF is a rank statistic, min-max puts the best
candidate at 1.0 for every query): they carry no absolute meaning and cannot hold a threshold,
which is why the relevance score replaced them (issue 21; bench/RESULTS.md "One relevance
score").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

FUSIONS = ("relevance", "convex", "rrf")
NORMS = ("minmax", "tmm")
DENSE_MIN = -1.0  # theoretical minimum of a cosine
LEXICAL_MIN = 0.0  # theoretical minimum of a (sign-flipped) BM25 score


@dataclass(frozen=True)
class Fusion:
    """How hybrid mode orders candidates: the one home of these settings and defaults.

    ``fusion="relevance"`` (default): by the relevance score (``retrieval/relevance.py``).
    ``"convex"``/``"rrf"``: the fusions of ragsift < 0.2, for ``eval`` comparisons (``alpha``,
    ``norm``, ``rrf_k`` are theirs; α 0.6 min-max was the default then: RESULTS.md "Fusion at
    one depth"). ``depth``: candidates taken from each side (at least the ``n`` asked for),
    1,000 everywhere, so ``query``/``explain``/``tune`` rank exactly as ``eval`` scores SciFact
    (it needs 1,000 for Recall@100)."""

    fusion: str = "relevance"
    alpha: float = 0.6
    norm: str = "minmax"
    rrf_k: int = 60
    depth: int = 1000

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}")
        if not 0.0 <= self.alpha <= 1.0 or self.depth < 1 or self.rrf_k < 0:
            raise ValueError("need 0 ≤ alpha ≤ 1, depth ≥ 1, rrf_k ≥ 0")


@dataclass(frozen=True, slots=True)
class FusedCandidate:
    """One candidate of a fused ranking, with both sides' evidence.

    ``dense_rank``/``lexical_rank`` are 1-based positions in each side's candidate list
    (``None`` when that side did not return it); ``dense_score`` is the cosine (looked up for a
    candidate only the lexical side brought in); ``sources`` names the lists that brought it."""

    rowid: Hashable
    fused_score: float
    fused_rank: int
    dense_score: float | None
    dense_rank: int | None
    lexical_score: float | None
    lexical_rank: int | None
    sources: tuple[str, ...]

    @property
    def source(self) -> str:
        """``"both"``, ``"dense"`` or ``"lexical"``: which side brought this candidate in."""
        if len(self.sources) == 2:
            return "both"
        return self.sources[0] if self.sources else "none"

    @property
    def lexical_only(self) -> bool:
        return self.sources == ("lexical",)

    def as_dict(self) -> dict:
        return {
            "rowid": self.rowid,
            "fused_score": self.fused_score,
            "fused_rank": self.fused_rank,
            "dense_score": self.dense_score,
            "dense_rank": self.dense_rank,
            "lexical_score": self.lexical_score,
            "lexical_rank": self.lexical_rank,
            "source": self.source,
        }


def rrf_scores(
    rankings: Sequence[Sequence[Hashable]],
    rrf_k: int = Fusion.rrf_k,
    weights: Sequence[float] | None = None,
) -> dict[Hashable, float]:
    """Reciprocal rank fusion of best-first id lists: ``Σ w_i / (rrf_k + rank_i)``."""
    weights = weights if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    fused: dict[Hashable, float] = {}
    for ranking, w in zip(rankings, weights):
        for rank, rid in enumerate(ranking, start=1):
            fused[rid] = fused.get(rid, 0.0) + w / (rrf_k + rank)
    return fused


def normalize(
    scores: Mapping[Hashable, float], norm: str = Fusion.norm, theoretical_min: float = 0.0
) -> dict[Hashable, float]:
    """Scale scores to [0, 1]: ``minmax`` over the observed range; ``tmm`` from the theoretical
    minimum to the observed maximum. A constant set maps to 1.0."""
    if not scores:
        return {}
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}")
    hi = max(scores.values())
    lo = min(scores.values()) if norm == "minmax" else min(theoretical_min, min(scores.values()))
    if hi <= lo:
        return {rid: 1.0 for rid in scores}
    return {rid: (s - lo) / (hi - lo) for rid, s in scores.items()}


def convex_scores(
    dense: Mapping[Hashable, float],
    lexical: Mapping[Hashable, float],
    alpha: float = Fusion.alpha,
    norm: str = Fusion.norm,
) -> dict[Hashable, float]:
    """``α·norm(dense) + (1−α)·norm(lexical)`` over the union of ids; a missing side counts 0."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be in [0, 1]")
    nd = normalize(dense, norm, DENSE_MIN)
    nl = normalize(lexical, norm, LEXICAL_MIN)
    ids = list(dict.fromkeys([*dense, *lexical]))
    return {rid: alpha * nd.get(rid, 0.0) + (1.0 - alpha) * nl.get(rid, 0.0) for rid in ids}


def fuse(
    dense: Sequence[tuple[Hashable, float]],
    lexical: Sequence[tuple[Hashable, float]],
    fusion: Fusion = Fusion(),
    *,
    dense_score_of: Callable[[Hashable], float | None] | None = None,
    limit: int | None = None,
) -> list[FusedCandidate]:
    """Fuse two best-first candidate lists of ``(id, score)``, both larger-is-better.

    ``dense_score_of`` looks up the cosine of candidates the dense list did not bring in (so a
    lexical-only candidate still shows, and is fused with, its real cosine). Ties in the fused
    score are broken by the cosine, then by the id. With an empty dense list and RRF the
    order is the lexical list's own (lexical mode). ``limit``: only the best ``limit`` are
    returned (the same as ``fuse(...)[:limit]``; every candidate is still scored, since the
    normalisation spans both whole lists, but only those returned are built)."""
    dense_map = dict(dense)
    lex_map = dict(lexical)
    dense_pos = {rid: r for r, (rid, _) in enumerate(dense, start=1)}
    lex_pos = {rid: r for r, (rid, _) in enumerate(lexical, start=1)}
    ids = list(dict.fromkeys([*dense_map, *lex_map]))

    cos: dict[Hashable, float | None] = {}
    for rid in ids:
        if rid in dense_map:
            cos[rid] = float(dense_map[rid])
        else:
            cos[rid] = dense_score_of(rid) if dense_score_of else None

    if fusion.fusion == "rrf":
        fused = rrf_scores([list(dense_map), list(lex_map)], rrf_k=fusion.rrf_k)
    else:
        known = {rid: c for rid, c in cos.items() if c is not None}
        fused = convex_scores(known, lex_map, alpha=fusion.alpha, norm=fusion.norm)
        for rid in ids:
            fused.setdefault(rid, 0.0)

    def order(rid: Hashable) -> tuple:
        c = cos[rid]
        return (-fused[rid], -(c if c is not None else float("-inf")), str(rid))

    if limit is not None and limit < len(ids):
        # = sorted(ids, key=order)[:limit]: only ids whose fused score reaches the limit-th
        # best can be among them, so only those are ordered by the full key
        if limit <= 0:
            best = []
        else:
            cut = sorted(fused.values(), reverse=True)[limit - 1]
            best = sorted((rid for rid in ids if fused[rid] >= cut), key=order)[:limit]
    else:
        best = sorted(ids, key=order)
    out = []
    for rank, rid in enumerate(best, start=1):
        sources = tuple(s for s, m in (("dense", dense_pos), ("lexical", lex_pos)) if rid in m)
        out.append(
            FusedCandidate(
                rowid=rid,
                fused_score=float(fused[rid]),
                fused_rank=rank,
                dense_score=cos[rid],
                dense_rank=dense_pos.get(rid),
                lexical_score=float(lex_map[rid]) if rid in lex_map else None,
                lexical_rank=lex_pos.get(rid),
                sources=sources,
            )
        )
    return out
