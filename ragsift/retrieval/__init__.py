"""The index on disk, exact search, the top-K strategy and explanations of hits.

- ``store.py``: ``IndexStore`` (SQLite file; see docs/CONTRACTS.md).
- ``topk.py``: ``TopK`` options, ``Candidate`` / ``Retrieval`` records, admission rule.
- ``search.py``: ``Searcher`` (exact float32 matrix scan, deterministic order).
- ``attribution.py``: which citable unit of a hit is closest to the query (a similarity proxy).

Importing this package is cheap: numpy and the model load inside the functions that use them.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragsift.retrieval.topk import (
        BELOW_THRESHOLD,
        OVER_CHAR_BUDGET,
        OVER_K,
        Candidate,
        Retrieval,
        TopK,
        admission,
    )

__all__ = [
    "BELOW_THRESHOLD",
    "OVER_CHAR_BUDGET",
    "OVER_K",
    "Candidate",
    "Retrieval",
    "TopK",
    "admission",
]


def __getattr__(name: str):  # the names above load ``topk`` on first use (start-up: issue 13)
    if name in __all__:
        from ragsift.retrieval import topk

        return getattr(topk, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
