"""Attribution: which part of an admitted hit lies closest to the query.

This is an embedding-similarity proxy, not a causal explanation: it says which citable unit
of the chunk, embedded on its own, is nearest to the query in the model's vector space. It
does not say why the whole chunk scored what it did (the chunk's vector is not a sum of its
units' vectors).

Algorithm: cut each admitted chunk into citable units (prose: hard-wrapped lines joined, then
sentences/lines via ``ragsift.sources.text_units``; a JSON chunk: ``key: value`` units via
``ragsift.sources.json_units``), at most ``MAX_UNITS`` of at most ``MAX_UNIT_CHARS`` characters;
embed every unit of every hit in one batch (vectors cached in-process by text hash); rank each
hit's units by cosine to the query; report the best ones with their scores and their share of
the hit's positive similarity mass (``max(score, 0) / sum(max(score_i, 0))``).

Weird input (empty text, binary noise, a JSON fragment) yields fewer units, never an
exception.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ragsift.retrieval.topk import Candidate

MAX_UNITS = 12
MAX_UNIT_CHARS = 200
METHOD = "embedding-similarity proxy"
NOTE = ("attribution is an embedding-similarity proxy: the unit whose own vector lies closest "
        "to the query; it is not a causal explanation of the hit's score")

_CACHE: dict[tuple[str, str], np.ndarray] = {}
_CACHE_LIMIT = 8192


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
        return {"text": self.text, "score": round(self.score, 6), "share": round(self.share, 6),
                "rank": self.rank, "start": self.start, "end": self.end}


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
        return {"id": self.id, "method": self.method, "total_units": self.total_units,
                "units": [u.as_dict() for u in self.units]}


def citable_units(text: str, path: str = "", max_units: int = MAX_UNITS,
                  max_length: int = MAX_UNIT_CHARS) -> list[str]:
    """Cut a chunk's text into at most ``max_units`` units of at most ``max_length`` chars."""
    try:
        units = _units(text or "", path, max_units, max_length)
    except (ValueError, TypeError, RecursionError):  # odd input must not break `explain`
        units = []
    clean = []
    for u in units:
        u = str(u).strip()
        if u and u not in clean:
            clean.append(u[:max_length])
        if len(clean) >= max_units:
            break
    return clean


def _units(text: str, path: str, max_units: int, max_length: int) -> list[str]:
    from ragsift.sources import json_units, text_units

    stripped = text.strip()
    if stripped[:1] in ("{", "[") or path.lower().endswith((".json", ".jsonl", ".ndjson")):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, (dict, list)):
            units = list(json_units(value, max=max_units, max_length=max_length))
            if units:
                return units
    return list(text_units(unwrap(text), max=max_units, max_length=max_length))


# A line that starts a block of its own (list item, table row, heading, quote) is never joined
# to the line before it.
_BLOCK_START = re.compile(r"\s*(?:[-*+>|#]|\d{1,3}[.)]\s)")


def unwrap(text: str) -> str:
    """Join hard-wrapped prose lines (a paragraph typed at 80 columns) so that sentences, not
    line fragments, become units; blank lines, list items, table rows and headings stay lines."""
    out: list[str] = []
    for line in text.splitlines():
        if (out and line.strip() and out[-1].strip() and not _BLOCK_START.match(line)
                and not out[-1].lstrip().startswith(("#", "|"))):
            out[-1] = out[-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def locate(unit: str, text: str) -> tuple[int, int] | None:
    """Where ``unit`` sits in ``text``, allowing any whitespace between its words (units of
    unwrapped prose) and ignoring a trailing ellipsis (units cut to length)."""
    start = text.find(unit)
    if start >= 0:
        return start, start + len(unit)
    words = unit.rstrip("…").split()
    if not words:
        return None
    m = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return (m.start(), m.end()) if m else None


def _unit_vectors(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """Embed ``texts`` in one batch, reusing vectors of texts seen before in this process."""
    import numpy as np

    fp = str(getattr(embedder, "fingerprint", id(embedder)))
    keys = [(fp, hashlib.sha1(t.encode("utf-8", "replace")).hexdigest()) for t in texts]
    todo_texts: dict[tuple[str, str], str] = {}
    for key, text in zip(keys, texts):
        if key not in _CACHE:
            todo_texts.setdefault(key, text)
    if todo_texts:
        vecs = np.asarray(embedder.embed(list(todo_texts.values()), kind="passage").vectors,
                          dtype=np.float32)
        if len(_CACHE) + len(todo_texts) > _CACHE_LIMIT:
            _CACHE.clear()
        for key, vec in zip(todo_texts, vecs):
            _CACHE[key] = vec
    dim = int(getattr(embedder, "dimensions", 0) or 0)
    if not keys:
        return np.zeros((0, dim), dtype=np.float32)
    return np.stack([_CACHE[key] for key in keys])


def shares(scores: Sequence[float]) -> list[float]:
    """Each score's share of the positive similarity mass (all zero when nothing is > 0)."""
    pos = [max(float(s), 0.0) for s in scores]
    total = sum(pos)
    return [p / total if total > 0 else 0.0 for p in pos]


def rank_units(units: Sequence[str], scores: Sequence[float], chunk_text: str,
               top: int) -> tuple[UnitScore, ...]:
    """Rank units by score (ties: earlier unit first) and keep the ``top`` best."""
    share = shares(scores)
    order = sorted(range(len(units)), key=lambda i: (-float(scores[i]), i))[:max(top, 0)]
    out = []
    for rank, i in enumerate(order, start=1):
        span = locate(units[i], chunk_text)
        out.append(UnitScore(text=units[i], score=float(scores[i]), share=share[i], rank=rank,
                             start=span[0] if span else None, end=span[1] if span else None))
    return tuple(out)


def attribute(embedder: Any, query_vector: np.ndarray, candidates: Sequence[Candidate],
              top: int = 3, max_units: int = MAX_UNITS,
              max_length: int = MAX_UNIT_CHARS) -> list[Attribution]:
    """Attributions for ``candidates`` (normally the admitted hits), in their order."""
    import numpy as np

    per_hit = [citable_units(c.text, c.path, max_units, max_length) for c in candidates]
    flat = [u for units in per_hit for u in units]
    vectors = _unit_vectors(embedder, flat) if flat else None
    q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    out = []
    offset = 0
    for cand, units in zip(candidates, per_hit):
        if units and vectors is not None:
            scores = (vectors[offset:offset + len(units)] @ q).tolist()
        else:
            scores = []
        offset += len(units)
        out.append(Attribution(id=cand.id, units=rank_units(units, scores, cand.text, top),
                               total_units=len(units)))
    return out
