"""The best unit of each candidate: the unit-level side of the dense evidence (issue 28).

``embed`` stores, for every chunk, its units' offsets and int8 vectors
(``ragsift.embedders.evidence``) and, as the chunk's vector, their mean weighted by each
unit's length (the *aggregate*). The dense scan ranks every chunk by the aggregate's cosine (exact, float32);
the engine then reads the units of the candidates that can reach the top (the first
``UNIT_DEPTH`` of each side's list) and takes, per chunk, its best unit's cosine and where
that unit lies. That cosine is evidence of the relevance score (``relevance.FEATURES``:
``unit``), and the unit is the hit's evidence span (``--span best``, ``explain``, MCP): one
computation, no second embedding pass at query time.

A candidate deeper than ``UNIT_DEPTH`` on both sides is not read: its unit evidence is taken
as its aggregate cosine (``BestUnit.read`` False), which places it where the aggregate alone
would. Measured: bench/RESULTS.md, "Unit evidence".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from ragsift.index.backend import IndexReader

# Candidates of each side (dense by aggregate cosine, lexical by BM25) whose units are read.
UNIT_DEPTH = 40


@dataclass(frozen=True, slots=True)
class BestUnit:
    """A chunk's best unit for one query: ``cosine`` (int8 vectors: within 0.003 of float32),
    ``start``/``end`` offsets into the chunk's text, ``units`` how many the chunk has."""

    cosine: float
    start: int
    end: int
    units: int


def best_units(
    backend: IndexReader, qvec: np.ndarray, rowids: Sequence[int]
) -> dict[int, BestUnit]:
    """The best unit of each of ``rowids`` that has unit evidence."""
    import numpy as np

    from ragsift.embedders.evidence import unit_cosines

    blobs = backend.unit_evidence(list(rowids)) if rowids else {}
    if not blobs:
        return {}
    q = np.asarray(qvec, np.float32)
    out: dict[int, BestUnit] = {}
    for rowid, blob in blobs.items():
        starts, ends, cos = unit_cosines(blob, q)
        if not len(starts):
            continue
        i = int(np.argmax(cos))
        out[rowid] = BestUnit(float(cos[i]), int(starts[i]), int(ends[i]), len(starts))
    return out


def wanted(
    dense: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    depth: int = UNIT_DEPTH,
) -> list[int]:
    """The rowids whose units are read: the first ``depth`` of each side, each once."""
    return list(dict.fromkeys([r for r, _ in dense[:depth]] + [r for r, _ in lexical[:depth]]))
