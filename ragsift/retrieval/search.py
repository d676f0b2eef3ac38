"""Exact dense search over an index, and the glue that turns scores into a ``Retrieval``.

Pattern: load the whole matrix once (``IndexStore.load_matrix``: contiguous float32, one row
per chunk, L2-normalised), score a query with one matrix-vector product (cosine = dot product
of unit vectors), take the best ``n`` with ``np.argpartition`` and sort only those.

The single-query product is ``np.vecdot`` (one BLAS ``sdot`` per row, numpy >= 2; ``einsum``
on older numpy), not ``matrix @ q`` (BLAS ``gemv``), by measurement (2 cores, 384 dims):
OpenBLAS's sgemv ran 180-200 ms on 1M rows where vecdot ran 80 (einsum 100-160), and its
threads stall when another process holds a core (11 ms instead of 0.3-0.5 on 10k rows).
vecdot releases the GIL, so matrices of ``PARALLEL_MIN_ROWS`` rows or more are split across a
thread pool, one block per core. Batches of queries (``tune``, ``query -``) use one BLAS
matrix product, where BLAS is at its best.

Exact at every size, by measurement: a float32 scan of 1M x 384 is memory-bound at ~65 ms on
one core, inside the 150 ms target. numpy has no fast float16/int8 kernels (a float16 scan
measured 10x slower than float32, int8 no faster), so a reduced-precision pre-scan would add
error without saving time; see ``bench/RESULTS.md``.

Order is total and deterministic: score descending, then rowid ascending. Ties at the cut of
``argpartition`` are resolved by that order too, so the best ``n`` are always a prefix of the
best ``n + m``: asking for a larger reject window never reshuffles the top.

Limits: the matrix lives in memory (1M x 384 float32 = 1.5 GB); a ``--path`` filter reads
the row ids of the matching documents once per ``Searcher`` and glob.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.retrieval.hybrid import DEFAULT_MODE
from ragsift.retrieval.topk import Retrieval, TopK, build_retrieval

if TYPE_CHECKING:
    import numpy as np

# Queries scored together in one matrix product (bounds the (n, batch) score buffer).
QUERY_BATCH = 32
# Below this many rows one thread scans faster than a pool can be woken up.
PARALLEL_MIN_ROWS = 200_000

_POOL: Any = None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _rowdot(matrix: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    import numpy as np

    vecdot = getattr(np, "vecdot", None)
    if vecdot is not None:
        vecdot(matrix, q, out=out)
    else:  # numpy < 2
        np.einsum("ij,j->i", matrix, q, out=out)


def dot_rows(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``matrix @ q`` (float32), one block per core for big matrices."""
    import numpy as np

    global _POOL
    n = matrix.shape[0]
    out = np.empty(n, dtype=np.float32)
    cores = _cores()
    if n < PARALLEL_MIN_ROWS or cores < 2:
        _rowdot(matrix, q, out)
        return out
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=cores, thread_name_prefix="ragsift-scan")
    bounds = np.linspace(0, n, cores + 1).astype(np.int64).tolist()

    def part(i: int) -> None:
        a, b = bounds[i], bounds[i + 1]
        _rowdot(matrix[a:b], q, out[a:b])

    list(_POOL.map(part, range(cores)))
    return out


def top_order(scores: np.ndarray, n: int, tiebreak: np.ndarray) -> np.ndarray:
    """Positions of the ``n`` best ``scores``, in order: score descending, ``tiebreak``
    ascending. NaN scores rank last."""
    import numpy as np

    total = int(scores.shape[0])
    n = min(n, total)
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    if n == total:
        idx = np.arange(total)
    else:
        # Partition so that positions total-n-1 and total-n hold the (n+1)-th and n-th best
        # scores. If they are equal, argpartition chose arbitrarily among tied scores at the
        # cut: take every score >= the cut and let the tiebreak decide, so the result never
        # depends on n.
        order = np.argpartition(scores, (total - n - 1, total - n))
        if scores[order[total - n - 1]] == scores[order[total - n]]:
            idx = np.flatnonzero(scores >= scores[order[total - n]])
        else:
            idx = order[total - n:]
    picked = scores[idx]
    order = np.lexsort((tiebreak[idx], -picked))
    return idx[order][:n]


def _clean(scores: np.ndarray) -> np.ndarray:
    """Replace NaN (a broken vector) by -inf so it can never be a top candidate."""
    import numpy as np

    return np.where(np.isnan(scores), -np.inf, scores).astype(np.float32)


class Searcher:
    """Exact top-N search over one index; holds the matrix in memory.

    ``store`` follows the ``IndexStore`` contract (``settings``, ``load_matrix``, ``chunks``).
    The embedder is loaded on first use and must match the index's model fingerprint.
    ``mode`` "lexical" or "hybrid" orders candidates by FTS5 BM25 or by the fusion of both
    sides (``ragsift.retrieval.hybrid``); the threshold still applies to the cosine.
    """

    def __init__(self, store: Any, embedder: Any = None, model_dir: str | None = None,
                 preload_embedder: bool = False, mode: str = DEFAULT_MODE,
                 fusion: Any = None) -> None:
        if mode not in ("dense", "lexical", "hybrid"):
            raise RagsiftError(f"--mode must be dense, lexical or hybrid, not {mode!r}")
        self.mode = mode
        self.fusion = fusion
        self.store = store
        self.settings: dict = dict(store.settings() or {})
        self._loading: Any = None
        if embedder is None and preload_embedder:
            # The model load (onnxruntime session, ~0.3-0.6 s) runs beside numpy's import
            # and the matrix load: a cold `ragsift query` pays the longer of the two, not
            # their sum (both release the GIL for most of their work).
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1, thread_name_prefix="ragsift-model") as pool:
                self._loading = pool.submit(embedder_for, self.settings, model_dir)
                rowids, matrix = store.load_matrix()
        else:
            rowids, matrix = store.load_matrix()
        import numpy as np

        self.rowids = np.ascontiguousarray(rowids, dtype=np.int64)
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if self.matrix.ndim != 2 or self.matrix.shape[0] != self.rowids.shape[0]:
            raise RagsiftError("index matrix and row ids disagree; rebuild the index")
        self.dimensions = int(self.matrix.shape[1]) if self.matrix.size else int(
            self.settings.get("dimensions") or 0)
        self._embedder = embedder
        self._model_dir = model_dir
        self._masks: dict[str, np.ndarray] = {}

    # -- model -----------------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            if self._loading is not None:
                loading, self._loading = self._loading, None
                self._embedder = loading.result()
            else:
                self._embedder = embedder_for(self.settings, self._model_dir)
        return self._embedder

    @property
    def model(self) -> str:
        if self._embedder is not None:
            return str(getattr(self._embedder, "name", ""))
        return str(self.settings.get("model") or "")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vectors = np.asarray(self.embedder.embed(list(texts), kind="query").vectors,
                             dtype=np.float32)
        if self.matrix.size and vectors.shape[1] != self.matrix.shape[1]:
            raise RagsiftError(
                f"the model gives {vectors.shape[1]}-dimensional vectors but the index holds "
                f"{self.matrix.shape[1]}; query with the model the index was built with")
        return vectors

    # -- filtering -------------------------------------------------------------------------
    def path_mask(self, glob: str | None) -> np.ndarray | None:
        """Boolean mask over rows whose document path matches ``glob`` (None: no filter).
        ``*`` matches across ``/`` (``docs/*`` is everything under docs/)."""
        import numpy as np

        if not glob:
            return None
        if glob not in self._masks:
            paths = [p for p in self.store.paths() if fnmatch.fnmatchcase(p, glob)]
            wanted = [int(r["rowid"]) for p in paths for r in self.store.document_chunks(p)]
            self._masks[glob] = np.isin(self.rowids, np.asarray(wanted, dtype=np.int64))
        return self._masks[glob]

    # -- search ----------------------------------------------------------------------------
    def dense_scores(self, qvec: np.ndarray, glob: str | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, cosine of every searchable row) for one query vector; for fusions that
        need the dense score of candidates found by other means."""
        import numpy as np

        mask = self.path_mask(glob)
        matrix, rowids = ((self.matrix, self.rowids) if mask is None else
                          (self.matrix[mask], self.rowids[mask]))
        if rowids.shape[0] == 0:
            return rowids, np.empty(0, np.float32)
        return rowids, dot_rows(matrix, np.asarray(qvec, dtype=np.float32).reshape(-1))

    def top_vectors(self, qvecs: np.ndarray, n: int, glob: str | None = None
                    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
        """For each query vector, (rowids, scores) of its ``n`` best rows in order, and the
        number of rows searched."""
        import numpy as np

        qvecs = np.atleast_2d(np.asarray(qvecs, dtype=np.float32))
        mask = self.path_mask(glob)
        if mask is None:
            matrix, rowids = self.matrix, self.rowids
        else:
            sel = np.flatnonzero(mask)
            matrix, rowids = self.matrix[sel], self.rowids[sel]
        searched = int(rowids.shape[0])
        out: list[tuple[np.ndarray, np.ndarray]] = []
        if searched == 0:
            empty = (np.empty(0, np.int64), np.empty(0, np.float32))
            return [empty for _ in range(qvecs.shape[0])], 0
        if qvecs.shape[1] != matrix.shape[1]:
            raise RagsiftError(f"query vectors have {qvecs.shape[1]} dimensions, the index "
                               f"{matrix.shape[1]}")
        for b in range(0, qvecs.shape[0], QUERY_BATCH):
            block = qvecs[b:b + QUERY_BATCH]
            if block.shape[0] == 1:
                all_scores = dot_rows(matrix, block[0])[:, None]
            else:
                all_scores = matrix @ block.T
            for j in range(block.shape[0]):
                scores = np.ascontiguousarray(all_scores[:, j])
                pos = top_order(scores, n, rowids)
                if np.isnan(scores[pos]).any():  # NaN sorts as largest: only then clean up
                    scores = _clean(scores)
                    pos = top_order(scores, n, rowids)
                out.append((rowids[pos], scores[pos]))
        return out, searched

    def retrieve(self, query: str, strategy: TopK, *, path_glob: str | None = None,
                 qvec: np.ndarray | None = None) -> Retrieval:
        return self.retrieve_many([query], strategy, path_glob=path_glob,
                                  qvecs=None if qvec is None else qvec[None, :])[0]

    def retrieve_many(self, queries: Sequence[str], strategy: TopK, *,
                      path_glob: str | None = None, qvecs: np.ndarray | None = None
                      ) -> list[Retrieval]:
        """Embed ``queries`` in one batch, search, and apply ``strategy`` to each."""
        if not queries:
            return []
        if self.mode != "dense":
            from ragsift.retrieval.hybrid import Fusion, retrieve_fused

            return retrieve_fused(self, queries, strategy, mode=self.mode,
                                  fusion=self.fusion or Fusion(), path_glob=path_glob,
                                  qvecs=qvecs)
        if self.matrix.shape[0] == 0:
            return [self._record(q, strategy, [], [], 0, path_glob) for q in queries]
        if qvecs is None:
            qvecs = self.embed_queries(queries)
        tops, searched = self.top_vectors(qvecs, strategy.fetch, path_glob)
        wanted = sorted({int(r) for rowids, _ in tops for r in rowids.tolist()})
        recs = {int(r["rowid"]): r for r in self.store.chunks(wanted)} if wanted else {}
        out = []
        for q, (rowids, scores) in zip(queries, tops):
            missing = [int(r) for r in rowids.tolist() if int(r) not in recs]
            if missing:
                raise RagsiftError(f"index is inconsistent: vector rows {missing[:3]} have no "
                                   "chunk; rebuild it")
            out.append(self._record(q, strategy, scores.tolist(),
                                    [recs[int(r)] for r in rowids.tolist()], searched, path_glob))
        return out

    def _record(self, query: str, strategy: TopK, scores: list[float], records: list[dict],
                searched: int, path_glob: str | None) -> Retrieval:
        return build_retrieval(strategy, query=query, scores=scores, records=records,
                               dimensions=self.dimensions, model=self.model, searched=searched,
                               path_filter=path_glob, corpus_empty=self.matrix.shape[0] == 0)


def embedder_for(settings: dict, model_dir: str | None = None) -> Any:
    """Load the embedder an index was built with, refusing a different model.

    The embedder options the index recorded (``embedder_options``: pooling, normalize,
    max_length, query_prefix, passage_prefix) are applied, so queries get the same pooling
    and their own prefix without any flag.
    """
    from ragsift.embedders import load_embedder

    stored = settings.get("embedder_options")
    options = {k: stored[k] for k in _EMBEDDER_OPTIONS
               if isinstance(stored, dict) and stored.get(k) is not None}
    embedder = load_embedder(model_dir, **options)
    want = settings.get("model_fingerprint")
    if want and getattr(embedder, "fingerprint", None) != want:
        raise RagsiftError(
            f"the index was built with model {settings.get('model') or want!r} "
            f"(fingerprint {want}); the loaded model is {embedder.fingerprint}. "
            "Pass --model with the folder of the index's model, or rebuild the index")
    return embedder


# keys of the ``embedder_options`` index setting (``ragsift.pipeline.EMBEDDER_OPTIONS``)
_EMBEDDER_OPTIONS = ("pooling", "normalize", "max_length", "query_prefix", "passage_prefix")


def default_threshold(embedder: Any) -> float | None:
    """The embedder's measured default floor (``Embedder.default_threshold``)."""
    value = getattr(embedder, "default_threshold", None)
    return None if value is None else float(value)
