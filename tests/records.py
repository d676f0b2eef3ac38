"""Test helper: a ``Retrieval`` from plain scores and chunk dicts (unit tests of the top-K
decision, hints and rendering, without an index)."""

from __future__ import annotations

from ragsift.index.backend import ChunkRecord
from ragsift.retrieval.relevance import Ranked
from ragsift.retrieval.topk import Scope, build_retrieval

_FIELDS = set(ChunkRecord.__slots__)
_RANKED = (
    "dense_score",
    "lexical_score",
    "lexical_rank",
    "fused_rank",
    "source",
    "lexical_share",
    "dense_rank",
)


def chunk(d: dict, i: int = 0) -> ChunkRecord:
    fields = {k: v for k, v in d.items() if k in _FIELDS}
    if "id" in d and "index" not in d:  # "path#N" ids give the index; others keep position
        tail = str(d["id"]).rpartition("#")[2]
        fields["index"] = int(tail) if tail.isdigit() else i
    fields.setdefault("rowid", i + 1)
    fields.setdefault("index", i)
    fields.setdefault("path", "")
    fields.setdefault("text", "")
    fields["headings"] = tuple(fields.get("headings") or ())
    return ChunkRecord(**fields)


def retrieval(strategy, *, scores, records, **kw):
    ranked = []
    for i, (s, d) in enumerate(zip(scores, records)):
        evidence = {k: d.get(k) for k in _RANKED}
        if "dense_score" not in d:  # no cosine of its own: the score stands in (dense mode)
            evidence["dense_score"] = float(s)
        ranked.append(Ranked(int(d.get("rowid", i + 1)), float(s), **evidence))
    recs = [chunk(d, i) for i, d in enumerate(records)]
    query = kw.pop("query", "q")
    return build_retrieval(strategy, Scope(**kw), query=query, ranked=ranked, records=recs)
