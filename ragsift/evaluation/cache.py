"""An embedding cache shared by evaluation runs: vectors keyed by (model fingerprint, kind,
sha256 of the embedded string).

The embedded string is what the embedder is handed (``context + text`` for a chunk, the query
text for a query), so two configurations that produce the same chunk never embed it twice, and
a re-run embeds nothing it has seen. One SQLite file (``$RAGSIFT_CACHE_DIR`` or
``$XDG_CACHE_HOME/ragsift``, default ``~/.cache/ragsift``), float32 blobs, WAL so that a
concurrent reader never blocks.

``CachingEmbedder`` wraps an ``Embedder`` and answers ``embed`` from the cache, sending only
the misses to the model; every other attribute is the wrapped embedder's, so the pipeline sees
the same model (same fingerprint) and stores the same vectors.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    fingerprint TEXT NOT NULL,
    kind TEXT NOT NULL,
    sha256 BLOB NOT NULL,
    truncated INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (fingerprint, kind, sha256)
) WITHOUT ROWID;
"""


def default_cache_path() -> Path:
    base = os.environ.get("RAGSIFT_CACHE_DIR")
    if base:
        return Path(base) / "embeddings.sqlite"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "ragsift" / "embeddings.sqlite"


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Persistent (fingerprint, kind, sha256(text)) → (vector, truncated tokens)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        self._db.close()

    def get_many(
        self, fingerprint: str, kind: str, keys: Sequence[bytes]
    ) -> dict[bytes, tuple[bytes, int]]:
        found: dict[bytes, tuple[bytes, int]] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT sha256, vector, truncated FROM vectors WHERE fingerprint = ? AND kind = ?"
                f" AND sha256 IN ({marks})",
                (fingerprint, kind, *part),
            )
            for key, vec, trunc in rows:
                found[bytes(key)] = (bytes(vec), int(trunc))
        return found

    def put_many(
        self, fingerprint: str, kind: str, items: Sequence[tuple[bytes, bytes, int]]
    ) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (fingerprint, kind, sha256, vector, truncated)"
                " VALUES (?, ?, ?, ?, ?)",
                [(fingerprint, kind, k, v, t) for k, v, t in items],
            )

    def count(self, fingerprint: str | None = None) -> int:
        if fingerprint is None:
            return self._db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return self._db.execute(
            "SELECT count(*) FROM vectors WHERE fingerprint = ?", (fingerprint,)
        ).fetchone()[0]


class CachingEmbedder:
    """An ``Embedder`` whose ``embed`` consults an ``EmbeddingCache`` first."""

    def __init__(self, embedder: Any, cache: EmbeddingCache) -> None:
        self._embedder = embedder
        self._cache = cache

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    @property
    def wrapped(self) -> Any:
        return self._embedder

    def embed(self, texts: list[str], kind: str = "passage") -> Any:
        import numpy as np

        fp = self._embedder.fingerprint
        if kind == "query" and getattr(self._embedder, "query_prefix", ""):
            # the query prefix changes query vectors but is not part of the model fingerprint
            fp += f"|query_prefix={self._embedder.query_prefix!r}"
        dim = int(self._embedder.dimensions)
        keys = [text_key(t) for t in texts]
        found = self._cache.get_many(fp, kind, keys)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self._cache.hits += len(texts) - sum(1 for k in keys if k not in found)
        self._cache.misses += len(missing)
        if missing:
            by_key = {k: t for k, t in zip(keys, texts)}
            result = self._embedder.embed([by_key[k] for k in missing], kind=kind)
            vecs = np.asarray(result.vectors, dtype=np.float32)
            items = [
                (k, vecs[i].tobytes(), int(result.truncated[i])) for i, k in enumerate(missing)
            ]
            self._cache.put_many(fp, kind, items)
            found.update({k: (v, t) for k, v, t in items})
        vectors = np.empty((len(texts), dim), dtype=np.float32)
        truncated = []
        for i, k in enumerate(keys):
            blob, trunc = found[k]
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
            truncated.append(trunc)
        return _result(vectors, truncated)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], kind="query").vectors[0]


def _result(vectors: np.ndarray, truncated: list[int]) -> Any:
    """An ``EmbedResult`` of the embedders package (same type the wrapped model returns)."""
    from ragsift.embedders import EmbedResult

    return EmbedResult(vectors=vectors, truncated=truncated)
