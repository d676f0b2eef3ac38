"""Hybrid retrieval: fuse a dense (cosine) ranking with a lexical (FTS5 BM25) ranking.

Role: decides the ORDER of candidates in hybrid mode. It does not admit or reject anything;
the top-K strategy does that, with its threshold on the dense cosine (see below).

Two fusions, both pure functions over candidate lists:

- **RRF** (reciprocal rank fusion, Cormack et al. 2009): ``fused = Σ_side w / (rrf_k + rank)``,
  rank 1-based within each side's candidate list; a side that did not return the candidate adds 0.
  Uses ranks only, so BM25's unbounded scale and the cosine's compressed one never meet.
- **Convex combination** (Bruch et al. 2023): ``fused = α·norm(cosine) + (1−α)·norm(bm25)``.
  ``norm="minmax"`` scales each side over the candidate set to [0, 1]; ``norm="tmm"`` uses the
  theoretical minimum (−1 for the cosine, 0 for BM25) and the observed maximum. A candidate the
  lexical side did not match gets lexical 0. Every candidate has a cosine (it is looked up in the
  dense score array), so a lexical-only candidate is scored by its real cosine, not by 0.

Lexical scores are reported larger-is-better: SQLite's ``bm25()`` is negative with smaller
meaning better, and a store that passes it through raw is detected (its best-first list is
ascending) and sign-flipped.

Threshold semantics: the fused score is relative to one query's candidate set (RRF is a rank
statistic, min-max puts the best candidate at 1.0 for every query), so it carries no absolute
meaning and cannot hold a threshold. The threshold stays on the dense cosine in every mode: each
``FusedCandidate`` carries ``dense_score`` (its cosine) even when it came in only through the
lexical side, and a lexical-only hit with a low cosine is rejected as ``below-threshold`` in the
fused order, visibly, rather than silently admitted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    import numpy as np

FUSIONS = ("rrf", "convex")
NORMS = ("minmax", "tmm")
DENSE_MIN = -1.0  # theoretical minimum of a cosine
LEXICAL_MIN = 0.0  # theoretical minimum of a (sign-flipped) BM25 score


@dataclass(frozen=True, slots=True)
class FusedCandidate:
    """One candidate of a hybrid search, with both sides' evidence.

    ``dense_rank`` is the rank by cosine among all searched chunks (``None`` only when no dense
    scores were given for it); ``lexical_rank``/``lexical_score`` are ``None`` when the lexical
    side did not return the chunk. ``sources`` names the candidate lists that brought it in."""

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
    rrf_k: int = 60,
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
    scores: Mapping[Hashable, float], norm: str = "minmax", theoretical_min: float = 0.0
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
    alpha: float = 0.5,
    norm: str = "minmax",
) -> dict[Hashable, float]:
    """``α·norm(dense) + (1−α)·norm(lexical)`` over the union of ids; a missing side counts 0."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be in [0, 1]")
    nd = normalize(dense, norm, DENSE_MIN)
    nl = normalize(lexical, norm, LEXICAL_MIN)
    ids = list(dict.fromkeys([*dense, *lexical]))
    return {rid: alpha * nd.get(rid, 0.0) + (1.0 - alpha) * nl.get(rid, 0.0) for rid in ids}


def larger_is_better(ranked: Sequence[tuple[Hashable, float]]) -> list[tuple[Hashable, float]]:
    """Return a best-first lexical list with scores where larger is better.

    FTS5's ``bm25()`` is smaller-is-better; a best-first list whose scores ascend is flipped."""
    if len(ranked) >= 2 and ranked[0][1] < ranked[-1][1]:
        return [(rid, -s) for rid, s in ranked]
    if len(ranked) == 1 and ranked[0][1] < 0:
        return [(ranked[0][0], -ranked[0][1])]
    return list(ranked)


def fuse(
    dense: Sequence[tuple[Hashable, float]],
    lexical: Sequence[tuple[Hashable, float]],
    *,
    fusion: str = "rrf",
    rrf_k: int = 60,
    alpha: float = 0.5,
    norm: str = "minmax",
    dense_score_of: Callable[[Hashable], float | None] | None = None,
    dense_rank_of: Callable[[Hashable], int | None] | None = None,
) -> list[FusedCandidate]:
    """Fuse two best-first candidate lists of ``(id, score)``.

    ``dense_score_of``/``dense_rank_of`` look up the cosine and global dense rank of candidates the
    dense list did not bring in (so a lexical-only candidate still shows its cosine). Ties in the
    fused score are broken by the cosine, then by the id."""
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {FUSIONS}")
    lexical = larger_is_better(lexical)
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

    if fusion == "rrf":
        fused = rrf_scores([list(dense_map), list(lex_map)], rrf_k=rrf_k)
    else:
        known = {rid: c for rid, c in cos.items() if c is not None}
        fused = convex_scores(known, lex_map, alpha=alpha, norm=norm)
        for rid in ids:
            fused.setdefault(rid, 0.0)

    def order(rid: Hashable) -> tuple:
        c = cos[rid]
        return (-fused[rid], -(c if c is not None else float("-inf")), str(rid))

    out = []
    for rank, rid in enumerate(sorted(ids, key=order), start=1):
        sources = tuple(s for s, m in (("dense", dense_pos), ("lexical", lex_pos)) if rid in m)
        d_rank = dense_rank_of(rid) if dense_rank_of else dense_pos.get(rid)
        out.append(
            FusedCandidate(
                rowid=rid,
                fused_score=float(fused[rid]),
                fused_rank=rank,
                dense_score=cos[rid],
                dense_rank=d_rank,
                lexical_score=float(lex_map[rid]) if rid in lex_map else None,
                lexical_rank=lex_pos.get(rid),
                sources=sources,
            )
        )
    return out


def top_dense(
    scores: np.ndarray, rowids: np.ndarray, n: int, mask: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """The ``n`` best ``(rowid, cosine)`` pairs, best first (exact: a full scan of ``scores``)."""
    import numpy as np

    s = scores if mask is None else np.where(mask, scores, -np.inf)
    n = min(n, int(s.shape[0]) if mask is None else int(mask.sum()))
    if n <= 0:
        return []
    idx = np.argpartition(-s, n - 1)[:n] if n < s.shape[0] else np.arange(s.shape[0])
    idx = idx[np.lexsort((rowids[idx], -s[idx]))]
    return [(int(rowids[i]), float(s[i])) for i in idx[:n]]


def hybrid_candidates(
    store,
    query: str,
    dense_scores: np.ndarray,
    rowids: np.ndarray,
    *,
    limit: int,
    depth: int = 100,
    fusion: str = "rrf",
    rrf_k: int = 60,
    alpha: float = 0.5,
    norm: str = "minmax",
    mask: np.ndarray | None = None,
) -> list[FusedCandidate]:
    """Hybrid candidates for one query, best first, at most ``limit``.

    ``dense_scores`` are the query's cosines against every chunk, aligned with ``rowids`` (as
    ``store.load_matrix()`` returns them); ``mask`` (same length, bool) restricts the search to
    some chunks (e.g. a ``--path`` filter) on both sides. The dense side contributes its top
    ``depth`` chunks, the lexical side ``store.lexical_search(query, depth)``."""
    import numpy as np

    rowids = np.asarray(rowids)
    scores = np.asarray(dense_scores, dtype=np.float32)
    lexical_filter = None
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        rowids, scores = rowids[mask], scores[mask]
        lexical_filter = rowids.tolist()
    return mode_candidates(
        store,
        query,
        scores,
        rowids,
        mode="hybrid",
        limit=limit,
        fusion=Fusion(fusion=fusion, alpha=alpha, norm=norm, rrf_k=rrf_k, depth=depth),
        lexical_filter=lexical_filter,
    )


def _rows_of(rowids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row index of each wanted rowid in ``rowids`` (−1 where absent)."""
    import numpy as np

    if rowids.size == 0:
        return np.full(wanted.shape, -1)
    if rowids.size > 1 and bool(np.all(rowids[1:] > rowids[:-1])):
        order = None
        sorted_ids = rowids
    else:
        order = np.argsort(rowids, kind="stable")
        sorted_ids = rowids[order]
    pos = np.clip(np.searchsorted(sorted_ids, wanted), 0, sorted_ids.size - 1)
    found = sorted_ids[pos] == wanted
    rows = pos if order is None else order[pos]
    return np.where(found, rows, -1)


# -- the retrieval record in lexical and hybrid modes --------------------------------------------

MODES = ("dense", "lexical", "hybrid")
# The default for query/explain/tune and the Python API, chosen by measurement (see Fusion):
# hybrid beat dense on both labelled sets (chroma-dev recall@5 96.7 vs 89.0; SciFact nDCG@10
# 72.6 vs 67.1). The threshold still applies to the cosine in every mode.
DEFAULT_MODE = "hybrid"


@dataclass(frozen=True)
class Fusion:
    """How hybrid mode fuses the two sides. Defaults chosen with ``ragsift eval`` on
    chroma-dev and SciFact (bench/RESULTS.md): the convex combination with α = 0.5 and
    min-max normalisation beat RRF on both sets (recall@5 96.7 vs 93.9; nDCG@10 72.6 vs 71.0)."""

    fusion: str = "convex"
    alpha: float = 0.5
    norm: str = "minmax"
    rrf_k: int = 60
    depth: int = 100  # candidates taken from each side before fusing

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}")
        if not 0.0 <= self.alpha <= 1.0 or self.depth < 1 or self.rrf_k < 0:
            raise ValueError("need 0 ≤ alpha ≤ 1, depth ≥ 1, rrf_k ≥ 0")


def mode_candidates(
    store,
    query: str,
    dense_scores: np.ndarray,
    rowids: np.ndarray,
    *,
    mode: str,
    limit: int,
    fusion: Fusion = Fusion(),
    lexical_filter: Sequence[int] | None = None,
) -> list[FusedCandidate]:
    """Candidates of one query in ``mode`` ("lexical": BM25 order; "hybrid": fused order), each
    with its cosine looked up in ``dense_scores`` (aligned with ``rowids``, the searchable rows).
    Lexical hits outside ``rowids`` are dropped; ``lexical_filter`` restricts the FTS query."""
    if mode not in ("lexical", "hybrid"):
        raise ValueError("mode must be lexical or hybrid here (dense is the plain scan)")
    import numpy as np

    rowids = np.asarray(rowids)
    scores = np.asarray(dense_scores, dtype=np.float32)
    depth = fusion.depth
    dense = top_dense(scores, rowids, depth) if mode == "hybrid" else []
    lexical = store.lexical_search(query, depth, lexical_filter) if query.strip() else []
    found = _rows_of(rowids, np.asarray([int(r) for r, _ in lexical], dtype=np.int64))
    cos_of = {int(r): float(scores[i]) for (r, _), i in zip(lexical, found.tolist()) if i >= 0}
    lexical = [(r, s) for r, s in lexical if int(r) in cos_of]
    fused = fuse(
        dense,
        lexical,
        fusion=fusion.fusion if mode == "hybrid" else "rrf",
        rrf_k=fusion.rrf_k,
        alpha=fusion.alpha,
        norm=fusion.norm,
        dense_score_of=lambda rid: cos_of.get(int(rid)),  # type: ignore[arg-type]
    )[:limit]
    out = []
    for c in fused:
        if c.dense_rank is None and c.dense_score is not None:
            c = dataclasses.replace(c, dense_rank=int((scores > c.dense_score).sum()) + 1)
        out.append(c)
    return out


def retrieve_fused(
    searcher,
    queries: Sequence[str],
    strategy,
    *,
    mode: str = "hybrid",
    fusion: Fusion = Fusion(),
    path_glob: str | None = None,
    qvecs: np.ndarray | None = None,
) -> list:
    """``Searcher.retrieve_many`` for lexical and hybrid modes: the same ``Retrieval`` record,
    candidates in lexical/fused order, the threshold applied to each candidate's dense cosine.

    Every candidate record carries ``dense_score``, ``lexical_score`` (BM25, larger is better;
    ``None`` when the lexical side did not match it), ``lexical_rank``, ``fused_rank`` and
    ``source`` ("both", "dense" or "lexical": a lexical-only hit is visible as such)."""
    from ragsift.retrieval.topk import build_retrieval

    if not queries:
        return []
    empty = searcher.matrix.shape[0] == 0
    if qvecs is None and not empty:
        qvecs = searcher.embed_queries(list(queries))
    out = []
    for i, query in enumerate(queries):
        rowids, scores = (
            (searcher.rowids[:0], searcher.matrix[:0, 0])
            if empty
            else searcher.dense_scores(qvecs[i], glob=path_glob)
        )
        cands = []
        if rowids.shape[0]:
            wide = dataclasses.replace(fusion, depth=max(fusion.depth, strategy.fetch))
            cands = mode_candidates(
                searcher.store,
                query,
                scores,
                rowids,
                mode=mode,
                limit=strategy.fetch,
                fusion=wide,
                lexical_filter=rowids.tolist() if path_glob else None,
            )
        recs = {int(r["rowid"]): r for r in searcher.store.chunks([c.rowid for c in cands])}
        records = []
        for c in cands:
            rec = recs.get(int(c.rowid))
            if rec is None:
                raise RagsiftError(
                    f"index is inconsistent: chunk {c.rowid} has no record; rebuild it"
                )
            records.append(
                dict(
                    rec,
                    dense_score=c.dense_score,
                    lexical_score=c.lexical_score,
                    lexical_rank=c.lexical_rank,
                    fused_rank=c.fused_rank,
                    source=c.source,
                )
            )
        out.append(
            build_retrieval(
                strategy,
                query=query,
                scores=[c.dense_score for c in cands],
                records=records,
                dimensions=searcher.dimensions,
                model=searcher.model,
                searched=int(rowids.shape[0]),
                mode=mode,
                path_filter=path_glob,
                corpus_empty=empty,
            )
        )
    return out
