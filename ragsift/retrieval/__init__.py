"""Ranking: what an index backend returns, ordered, gated and explained (no persistence:
the index on disk is ``ragsift.index``).

- ``engine.py``: the one ranking engine (``rank``, ``retrieve``): ``query``, ``explain``,
  ``tune``, ``eval`` and the Python API all come through it.
- ``request.py``: ``SearchRequest``, one search's options from the front end to the engine
  (checked once, its floor resolved once), and the mode list.
- ``relevance.py``: the relevance score that orders candidates and holds the threshold.
- ``hybrid.py``: hybrid-mode settings (``Fusion``) and the historical fusions ``eval`` compares.
- ``units.py``: each candidate's best unit (the unit-level dense evidence).
- ``topk.py``: ``TopK`` options, ``Candidate`` / ``Retrieval`` records, the admission rule.
- ``threshold.py``: which floor is in force and where it came from.
- ``search.py``: ``Searcher``, the model and the index opened together for queries.
- ``spans.py``: evidence spans inside a hit's chunk; ``attribution.py``: the closest unit.
- ``hints.py``: the hint sentences of a retrieval.

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
