"""Exact dense scan over an in-memory float32 matrix: the SQLite backend's dense candidates.

Pattern: the whole matrix is loaded once (``IndexStore.load_matrix``: contiguous float32, one
row per chunk, L2-normalised); a query is scored with one matrix-vector product (cosine = dot
product of unit vectors), the best ``n`` are taken with ``np.argpartition`` and only those are
sorted.

The product is ``np.vecdot`` (one BLAS ``sdot`` per row, numpy >= 2; ``einsum`` on older
numpy), not ``matrix @ q`` (BLAS ``gemv``), by measurement (2 cores, 384 dims): OpenBLAS's
sgemv ran 180-200 ms on 1M rows where vecdot ran 80 (einsum 100-160), and its threads stall
when another process holds a core. vecdot releases the GIL, so matrices of
``PARALLEL_MIN_ROWS`` rows or more are split across a thread pool, one block per core. Every
query of a batch is scored by the same kernel, so a query's scores (and so its ranking) never
depend on which other queries were in its batch: ``query``, ``tune`` and ``eval`` agree to the
last bit.

Exact at every size, by measurement: a float32 scan of 1M x 384 is memory-bound at ~65 ms on
one core. numpy has no fast float16/int8 kernels, so a reduced-precision pre-scan would add
error without saving time; see ``bench/RESULTS.md``.

Order is total and deterministic: score descending, then rowid ascending (``top_order``, the
one tie-safe top-N of the package). NaN scores (a broken vector) rank last.

Limits: the matrix lives in memory (1M x 384 float32 = 1.5 GB).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    import numpy as np

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
    ascending. NaN scores rank last. The best ``n`` are always a prefix of the best ``n + m``."""
    import numpy as np

    if np.isnan(scores).any():
        scores = np.where(np.isnan(scores), -np.inf, scores).astype(np.float32)
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
            idx = order[total - n :]
    picked = scores[idx]
    order = np.lexsort((tiebreak[idx], -picked))
    return idx[order][:n]


class DenseMatrix:
    """Rows of one index in memory: ``rowids`` (int64) and unit ``matrix`` (float32)."""

    def __init__(
        self,
        rowids: np.ndarray,
        matrix: np.ndarray,
        rowids_of_paths: Callable[[Collection[str]], Sequence[int]],
    ) -> None:
        import numpy as np

        self.rowids = np.ascontiguousarray(rowids, dtype=np.int64)
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if self.matrix.ndim != 2 or self.matrix.shape[0] != self.rowids.shape[0]:
            raise RagsiftError("index matrix and row ids disagree; rebuild the index")
        self._rowids_of_paths = rowids_of_paths
        self._selections: dict[frozenset[str], np.ndarray] = {}
        self._position: tuple[np.ndarray, np.ndarray | None] | None = None

    def _rows(self, paths: Collection[str] | None) -> np.ndarray | None:
        """Row positions of the chunks of ``paths`` (None: every row)."""
        import numpy as np

        if paths is None:
            return None
        key = frozenset(paths)
        if key not in self._selections:
            wanted = np.asarray(list(self._rowids_of_paths(key)) if key else [], np.int64)
            self._selections[key] = np.flatnonzero(np.isin(self.rowids, wanted))
        return self._selections[key]

    def candidates(
        self, qvecs: np.ndarray, n: int, paths: Collection[str] | None
    ) -> list[list[tuple[int, float]]]:
        import numpy as np

        qvecs = np.atleast_2d(np.asarray(qvecs, dtype=np.float32))
        sel = self._rows(paths)
        matrix, rowids = (
            (self.matrix, self.rowids) if sel is None else (self.matrix[sel], self.rowids[sel])
        )
        if rowids.shape[0] == 0 or n <= 0:
            return [[] for _ in range(qvecs.shape[0])]
        if qvecs.shape[1] != matrix.shape[1]:
            raise RagsiftError(
                f"query vectors have {qvecs.shape[1]} dimensions, the index "
                f"{matrix.shape[1]}; query with the model the index was built "
                "with"
            )
        out = []
        for q in qvecs:
            scores = dot_rows(matrix, q)
            pos = top_order(scores, n, rowids)
            out.append(list(zip(rowids[pos].tolist(), scores[pos].tolist())))
        return out

    def cosines(self, qvec: np.ndarray, rowids: Sequence[int]) -> list[float | None]:
        import numpy as np

        if not len(rowids):
            return []
        rows = self._positions(np.asarray(rowids, np.int64)).tolist()
        have = [r for r in rows if r >= 0]
        if not have:
            return [None] * len(rows)
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        values = dot_rows(self.matrix[np.asarray(have, np.int64)], q).tolist()
        it = iter(values)
        return [None if r < 0 else next(it) for r in rows]

    def _positions(self, wanted: np.ndarray) -> np.ndarray:
        """Row positions of the row ids ``wanted`` (-1: not in the matrix), by binary search
        (no dict of every row id: that cost a cold query ~10-20 ms on 100k rows)."""
        import numpy as np

        if self._position is None:
            ids = self.rowids
            # block order is usually ascending already; otherwise search a sorted copy
            order = (
                None
                if ids.shape[0] < 2 or bool((ids[1:] > ids[:-1]).all())
                else np.argsort(ids, kind="stable")
            )
            self._position = (ids if order is None else ids[order], order)
        ids, order = self._position
        if ids.shape[0] == 0:
            return np.full(wanted.shape[0], -1, np.int64)
        at = np.minimum(np.searchsorted(ids, wanted), ids.shape[0] - 1)
        found = ids[at] == wanted
        pos = at if order is None else order[at]
        return np.where(found, pos, -1).astype(np.int64)


def as_f32(vectors: Any, n: int) -> np.ndarray:
    """``vectors`` as an (n, dim) float32 array; a ``ValueError`` for any other shape."""
    import numpy as np

    arr = np.asarray(vectors, dtype=np.float32)
    if n == 0:
        return arr.reshape(0, arr.shape[1] if arr.ndim == 2 else 0)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise ValueError(f"expected ({n}, dim) vectors, got shape {arr.shape}")
    return arr
