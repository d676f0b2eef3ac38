"""Approximate dense candidates for a large Lance index: an IVF-PQ index on the vector column
proposes candidates, ragsift re-scores them by exact cosine (refine).

Why refine here and not in Lance: the threshold, the reject window and ``explain`` must see
the same cosine on every path, so the proposed rows' float32 vectors are read back and scored
with ``ragsift.index.dense.dot_rows`` (the exact path's kernel) and ordered with ``top_order``
(score descending, rowid ascending). ANN can miss a row (recall < 1), it never changes a score.

When: ``ANN_MIN_ROWS`` chunks or more (the writer builds the index in ``compact``; below that,
and until it exists, the exact in-memory scan answers). Measured in bench/RESULTS.md ("ANN"):
at 100k the ANN path is no faster than the exact scan (15.9 vs 15.7 ms, recall@10 0.93); at
1M it is 4.1x faster (36.6 vs 148.3 ms, recall@10 0.993) and a reader no longer holds the
1.5 GB matrix. 500k lies between the two measured sizes (the crossover itself was not
measured).

Parameters: ``num_partitions`` = sqrt(rows), ``num_sub_vectors`` = dim / 8 (48 for 384),
cosine metric; queries probe ``NPROBES`` partitions and fetch ``REFINE`` × n proposals (at
least ``MIN_FETCH``) before the exact re-score: chosen by a sweep on 1M clustered synthetic
vectors (nprobes 32 / refine 4: recall@10 0.52; 64 / 10: 0.835; 64 / 30: 0.965; 64 / 50:
0.985 at 13.6 ms; 128 / 50: 0.98), see bench/RESULTS.md. A deep list (hybrid fuses 1,000 per
side) gets proposals for its first ``REFINE_DEPTH`` ranks only, ``max(min(n, REFINE_DEPTH) ×
REFINE, n)``: its tail only sets the min-max floor, and 50,000 proposals per query took 5–6×
as long as 5,000 at 1M (bench/RESULTS.md, "Fusion at one depth"). Rows written after the index was
built are searched flat by Lance (so a fresh write is found) until ``compact`` folds them in
(``optimize_indices``); past ``REBUILD_FRACTION`` unindexed rows the index is retrained.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

ANN_MIN_ROWS = 500_000
NPROBES = 64
REFINE = 50
MIN_FETCH = 100
REFINE_DEPTH = 100  # ranks that get REFINE proposals each; deeper ranks share them
REBUILD_FRACTION = 0.5


def sql_str(values) -> str:
    """``values`` as a Lance SQL filter's quoted string list: ``'a', 'b''s'``."""
    return ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)


class AnnIndex(Protocol):
    """What this module uses of an open Lance index (``LanceIndex``), and nothing else."""

    @property
    def dataset(self) -> Any:
        """The snapshot's chunks dataset (None: nothing written yet)."""

    def count(self) -> int:
        """The chunks it holds."""

    def has_index(self, column: str) -> bool:
        """Whether the dataset has an index on ``column``."""

    def keys_of_paths(self, paths: Collection[str]) -> list[str]:
        """The keys of the documents at ``paths``."""


def _has_vector_index(index: AnnIndex) -> bool:
    return index.dataset is not None and index.has_index("vector")


def use_ann(index: AnnIndex, paths: Collection[str] | None) -> bool:
    """Whether ``index`` answers dense candidates through its ANN index: it has one and
    holds ``ANN_MIN_ROWS`` chunks or more (a path filter is applied as a Lance prefilter).
    ``LanceIndex`` asks once per snapshot."""
    return bool(_has_vector_index(index) and index.count() >= ANN_MIN_ROWS)


def maintain(index: AnnIndex) -> None:
    """Writer, from ``compact``: build the IVF-PQ index once the index is large enough,
    retrain it when most rows were written after it, fold new rows in otherwise."""
    n = index.count()
    if n < ANN_MIN_ROWS:
        return
    ds = index.dataset
    if _has_vector_index(index):
        stats = ds.stats.index_stats("vector_idx") if hasattr(ds, "stats") else {}
        unindexed = int(stats.get("num_unindexed_rows", 0) or 0)
        if unindexed < REBUILD_FRACTION * n:
            return  # optimize_indices (called by compact) folds the new rows in
    dim = ds.schema.field("vector").type.list_size
    ds.create_index(
        "vector",
        index_type="IVF_PQ",
        metric="cosine",
        name="vector_idx",
        num_partitions=max(1, int(n**0.5)),
        num_sub_vectors=max(1, dim // 8),
        replace=True,
    )


def _exact(
    index: AnnIndex, qvec: Any, rowids: Any, vectors: Any, n: int
) -> list[tuple[int, float]]:
    import numpy as np

    from ragsift.index.dense import dot_rows, top_order

    if rowids.shape[0] == 0:
        return []
    scores = dot_rows(vectors, np.asarray(qvec, np.float32).reshape(-1))
    pos = top_order(scores, n, rowids)
    return list(zip(rowids[pos].tolist(), scores[pos].tolist()))


def _vectors_of(table: Any) -> tuple[Any, Any]:
    import numpy as np

    rowids = table.column("rowid").to_numpy().astype(np.int64, copy=False)
    vec = table.column("vector").combine_chunks()
    dim = vec.type.list_size
    flat = vec.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return rowids, np.ascontiguousarray(flat.reshape(len(rowids), dim))


def candidates(
    index: AnnIndex, qvecs: Any, n: int, paths: Collection[str] | None
) -> list[list[tuple[int, float]]]:
    import numpy as np
    import pyarrow.compute as pc

    qvecs = np.atleast_2d(np.asarray(qvecs, dtype=np.float32))
    # Without a path filter no prefilter: document rows carry no vector, so the index never
    # proposes them (they are dropped below if a flat search of unindexed rows does); a
    # prefilter would evaluate the filter on every row (measured at 1M: 41.5 ms vs 4.2 ms).
    where = None
    if paths is not None:
        keys = index.keys_of_paths(paths)
        if not keys:
            return [[] for _ in range(qvecs.shape[0])]
        where = f"kind = 'chunk' AND doc_key IN ({sql_str(keys)})"
    if n <= 0:
        return [[] for _ in range(qvecs.shape[0])]
    fetch = max(min(n, REFINE_DEPTH) * REFINE, n, MIN_FETCH)
    out = []
    for q in qvecs:
        t = index.dataset.to_table(
            columns=["kind", "rowid", "vector"],
            filter=where,
            prefilter=where is not None,
            nearest={
                "column": "vector",
                "q": q,
                "k": fetch,
                "nprobes": NPROBES,
                "metric": "cosine",
            },
        )
        t = t.filter(pc.and_(pc.equal(t.column("kind"), "chunk"), pc.is_valid(t.column("vector"))))
        rowids, vectors = _vectors_of(t)
        out.append(_exact(index, q, rowids, vectors, n))
    return out


def cosines(index: AnnIndex, qvec: Any, rowids: Sequence[int]) -> list[float | None]:
    """Exact cosines of ``rowids`` (read by id; the matrix is never loaded)."""
    import numpy as np

    from ragsift.index.dense import dot_rows

    ids = [int(r) for r in rowids]
    if not ids:
        return []
    t = index.dataset.to_table(
        columns=["rowid", "vector"],
        filter=f"kind = 'chunk' AND rowid IN ({', '.join(map(str, set(ids)))})",
    )
    have, vectors = _vectors_of(t)
    if have.shape[0] == 0:
        return [None] * len(ids)
    scores = dot_rows(vectors, np.asarray(qvec, np.float32).reshape(-1)).tolist()
    by_id = dict(zip(have.tolist(), scores))
    return [by_id.get(i) for i in ids]
