"""Attribution: which units of a hit lie closest to the query, from the index's own evidence.

``embed`` stores every chunk's units (``ragsift.embedders.evidence``: sentences, list items,
table rows, grouped code lines, with exact offsets) and their vectors; the engine already
ranks a chunk by its best unit (``ragsift.retrieval.units``). ``attribute`` reads the same
stored units for the hits it is given and ranks each hit's units by cosine to the query: no
second embedding pass, and the best unit shown is the one the score weighed.

It is an embedding-similarity proxy, not a causal explanation: the relevance score weighs the
best unit's cosine beside the chunk's aggregate cosine and the lexical side
(``ragsift.retrieval.relevance``); the units say where in the chunk the dense evidence lies.
Each unit reports its cosine and its share of the hit's positive similarity mass
(``max(score, 0) / sum(max(score_i, 0))``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ragsift.index.backend import IndexReader
    from ragsift.retrieval.topk import Candidate

METHOD = "stored unit vectors"
NOTE = (
    "attribution is an embedding-similarity proxy: each hit's stored units (sentences, "
    "items, rows, code lines) closest to the query; not a causal explanation of its score"
)


@dataclass(frozen=True)
class UnitScore:
    """One citable unit of a hit: cosine to the query, share of the positive mass, and where
    it sits in the chunk text (``start``/``end`` are None when the unit is a rendering, e.g.
    ``key: value`` of a JSON object, rather than a verbatim slice)."""

    text: str
    score: float
    share: float
    rank: int
    start: int | None = None
    end: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "score": round(self.score, 6),
            "share": round(self.share, 6),
            "rank": self.rank,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True)
class Attribution:
    """The ranked units of one hit (best first; ``units`` holds the ``top`` best of
    ``total_units``)."""

    id: str
    units: tuple[UnitScore, ...]
    total_units: int
    method: str = METHOD

    @property
    def best(self) -> UnitScore | None:
        return self.units[0] if self.units else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "method": self.method,
            "total_units": self.total_units,
            "units": [u.as_dict() for u in self.units],
        }


def shares(scores: Sequence[float]) -> list[float]:
    """Each score's share of the positive similarity mass (all zero when nothing is > 0)."""
    pos = [max(float(s), 0.0) for s in scores]
    total = sum(pos)
    return [p / total if total > 0 else 0.0 for p in pos]


def attribute(
    backend: IndexReader, query_vector: np.ndarray, candidates: Sequence[Candidate], top: int = 3
) -> list[Attribution]:
    """Attributions for ``candidates`` (normally the admitted hits), in their order, from the
    units ``backend`` stores for them (a chunk without stored units gets none)."""
    import numpy as np

    from ragsift.embedders.evidence import unit_cosines

    q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    blobs = backend.unit_evidence([c.rowid for c in candidates]) if candidates else {}
    out = []
    for cand in candidates:
        starts, ends, cos = unit_cosines(blobs.get(cand.rowid), q)
        scores = cos.tolist()
        share = shares(scores)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[: max(top, 0)]
        units = tuple(
            UnitScore(
                text=cand.text[int(starts[i]) : int(ends[i])],
                score=float(scores[i]),
                share=share[i],
                rank=rank,
                start=int(starts[i]),
                end=int(ends[i]),
            )
            for rank, i in enumerate(order, start=1)
        )
        out.append(Attribution(id=cand.id, units=units, total_units=len(scores)))
    return out
