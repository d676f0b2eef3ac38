"""``LanceIndex``: the index as Lance datasets in a folder (``docs.lance``) or on object storage
(``s3://bucket/prefix.lance``): the second implementation of the backend contract
(``ragsift/index/backend.py``, docs/CONTRACTS.md), chosen by ``is_lance_location``.

Layout (the LanceDB layout, so ``lancedb.connect(LOCATION).open_table("chunks")`` reads it):
- ``chunks.lance``: one row per document (``kind = "doc"``: key, path, size, mtime, sha256, ...)
  and one per chunk (``kind = "chunk"``: the ``ragsift chunk`` fields, ``content_hash``,
  ``truncated``, ``vector`` as fixed_size_list<float32, dim>, ``fts`` = context + text).
  Documents and their chunks live in ONE dataset so a write call is ONE Lance commit
  (``merge_insert`` keyed by ``uid``, deleting the replaced rows in the same commit): after a
  crash a call is either wholly visible or not at all, as on SQLite.
- ``settings.lance``: key -> JSON value (model fingerprint, chunker, tuned threshold, ...).

Search, so that a result means the same on both backends:
- Dense candidates and ``cosines``: the vector column is read once per open index and scanned
  exactly with the SQLite backend's own kernel (``ragsift.index.dense``): same scores to the
  last bit, same total order.
- Lexical candidates: Lance's native inverted (BM25) index on ``fts`` (offline; lives beside
  the data, on object storage too), tokenised like the SQLite FTS5 table (lower case, ASCII
  folding, English stemming); rows committed after the index was last optimised are searched
  flat by Lance, so a fresh write is found at once. Query words: the same extraction and
  stop-word rule as SQLite, OR-ed. BM25 values differ from FTS5's (another implementation of
  the same formula); only their order is used by fusion.

Snapshots and the writer lock:
- A reader opens one dataset version and keeps it: every read of an open index agrees even
  while a writer commits (Lance versions are immutable); ``refresh()`` moves to the newest.
- A folder: the writer takes the same ``flock`` lock file as SQLite (``LOCATION-lock``), so a
  second writer is refused or waits. Object storage has no ``flock``: ragsift takes no lock
  there; Lance's commits are atomic (conditional put), so two writers cannot corrupt the
  index, but the later conflicting commit fails with an error and must be rerun. Run one
  writer per bucket index (e.g. one scheduled job).
- Old versions are removed by ``compact`` only when older than ``KEEP_VERSIONS`` (a reader
  holding a snapshot older than that may fail and must be reopened).

Object storage credentials come from the environment as for any AWS client
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL`` for an
S3-compatible server, ``AWS_ALLOW_HTTP=true`` for a plain-http one).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.index.ann import sql_str as _sql_str
from ragsift.index.backend import (
    SETTING_KEYS,
    ChunkRecord,
    DocState,
    DocumentInfo,
    DocumentWrite,
    FragmentCommits,
)
from ragsift.index.dense import as_f32 as _as_f32
from ragsift.index.locations import is_lance_location, is_remote  # noqa: F401 (re-export)
from ragsift.index.terms import query_words

if TYPE_CHECKING:
    import numpy as np

SCHEMA_VERSION = 1
FORMAT = "ragsift-lance"
KEEP_VERSIONS = datetime.timedelta(hours=1)
# From this many chunks ``compact`` adds B-tree indexes on ``rowid`` (chunk records by id) and
# ``content_hash`` (vector reuse), so neither lookup scans the table.
SCALAR_INDEX_MIN_ROWS = 10_000
# Extra lexical hits fetched beyond ``n`` so that ties at the cut are broken by rowid.
LEXICAL_SLACK = 32
LANCE_K1 = 1.2  # Lance's BM25 constant (its inverted index's default)


def _join(root: str, name: str) -> str:
    return root.rstrip("/") + "/" + name if is_remote(root) else os.path.join(root, name)


def storage_options() -> dict[str, str]:
    """Options for object storage from the environment (what boto/aws-cli users already set)."""
    env = os.environ
    out: dict[str, str] = {}
    for key, opt in (("AWS_ENDPOINT_URL_S3", "aws_endpoint"), ("AWS_ENDPOINT_URL", "aws_endpoint"),
                     ("AWS_ENDPOINT", "aws_endpoint"), ("AWS_REGION", "aws_region"),
                     ("AWS_DEFAULT_REGION", "aws_region"),
                     ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
                     ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
                     ("AWS_SESSION_TOKEN", "aws_session_token"),
                     ("AWS_ALLOW_HTTP", "allow_http")):
        if env.get(key) and opt not in out:
            out[opt] = env[key]
    if out.get("aws_endpoint", "").startswith("http://"):
        out.setdefault("allow_http", "true")
    return out


def _lance():
    import warnings

    # Ray forks its raylet after the driver opened the index; the index is never used in the
    # forked process, so lance's fork warning does not apply.
    warnings.filterwarnings("ignore", message="lance is not fork-safe")
    # Only ragsift's own lines reach stderr: Lance's Rust log (``WARN lance::…``) is kept to
    # errors unless the user asked for more (``LANCE_LOG`` set) or runs with --debug.
    cli = sys.modules.get("ragsift.cli._common")  # --debug, when the CLI runs (no import)
    debug = os.environ.get("RAGSIFT_DEBUG") or (cli is not None and cli.STATE.get("debug"))
    if "LANCE_LOG" not in os.environ and not debug:
        os.environ["LANCE_LOG"] = "error"
    try:
        import lance
    except ImportError:
        raise RagsiftError(
            "a .lance or object-storage index needs the Lance backend: "
            "pip install 'ragsift[lance]'") from None
    return lance


def _schema(dim: int):
    import pyarrow as pa

    return pa.schema([
        ("uid", pa.string()), ("kind", pa.string()), ("doc_key", pa.string()),
        ("rowid", pa.int64()),
        # document rows
        ("path", pa.string()), ("source", pa.string()), ("size", pa.int64()),
        ("mtime", pa.float64()), ("sha256", pa.string()), ("format", pa.string()),
        ("chunker", pa.string()), ("n_chunks", pa.int64()), ("doc_tokens", pa.int64()),
        ("indexed_at", pa.float64()),
        # chunk rows
        ("idx", pa.int64()), ("text", pa.string()), ("context", pa.string()),
        ("start", pa.int64()), ("end", pa.int64()), ("tokens", pa.int64()),
        ("chars", pa.int64()), ("line_start", pa.int64()), ("line_end", pa.int64()),
        ("headings", pa.list_(pa.string())), ("page", pa.int64()), ("level", pa.int64()),
        ("content_hash", pa.string()), ("truncated", pa.int64()), ("fts", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


_DOC_FIELDS = ("path", "source", "size", "mtime", "sha256", "format", "chunker", "n_chunks",
               "doc_tokens", "indexed_at")
_CHUNK_FIELDS = ("rowid", "doc_key", "idx", "text", "context", "start", "end", "tokens", "chars",
                 "line_start", "line_end", "headings", "page", "level", "content_hash",
                 "truncated")


def chunk_row(doc_key: str, rowid: int, rec: dict) -> dict:
    """The chunks-dataset row (all but ``vector``) of chunk record ``rec``."""
    context = rec.get("context") or ""
    return {"uid": f"c:{rowid}", "kind": "chunk", "doc_key": doc_key, "rowid": rowid,
            "idx": rec["index"], "text": rec["text"], "context": context,
            "start": rec.get("start"), "end": rec.get("end"), "tokens": rec.get("tokens"),
            "chars": rec.get("chars", len(rec["text"])), "line_start": rec.get("line_start"),
            "line_end": rec.get("line_end"),
            "headings": [str(h) for h in rec.get("headings") or []],
            "page": rec.get("page"), "level": rec.get("level") or 0,
            "content_hash": rec["content_hash"], "truncated": int(rec.get("truncated") or 0),
            "fts": (context + "\n" + rec["text"]) if context else rec["text"]}


def rows_table(rows: list[dict], vectors: list, dim: int):
    """An Arrow table of the chunks schema: ``rows`` (``chunk_row`` or document fields) and one
    vector per row (None for a document row)."""
    import numpy as np
    import pyarrow as pa

    schema = _schema(dim)
    matrix = np.stack([np.zeros(dim, np.float32) if v is None else np.asarray(v, np.float32)
                       for v in vectors]) if rows else np.zeros((0, dim), np.float32)
    vector = pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.reshape(-1), pa.float32()), dim,
        mask=pa.array([v is None for v in vectors], pa.bool_()))
    cols = {f: pa.array([r.get(f) for r in rows], schema.field(f).type)
            for f in schema.names if f != "vector"}
    cols["vector"] = vector
    return pa.table(cols, schema=schema)


def write_fragments(uri: str, table: Any, storage_options: dict | None,
                    create: bool = False) -> list[str]:
    """Write ``table`` as new data files of the dataset at ``uri`` WITHOUT committing them
    (any process: a Ray worker); returns the fragments' metadata as JSON for
    ``LanceIndex.commit_fragments``. Files of a write never committed are never read.
    ``create``: the dataset does not exist yet (its first commit will create it)."""
    from lance.fragment import write_fragments as write

    _lance()
    return [json.dumps(f.to_json()) for f in
            write(table, uri, schema=table.schema, mode="create" if create else "append",
                  storage_options=storage_options or None)]


class LanceIndex(FragmentCommits):
    """An open Lance index. Use ``LanceIndex.open(location, mode)`` as a context manager."""

    def __init__(self, path: str, mode: str, lock: Any) -> None:
        self.path = path
        self.mode = mode
        self._lock = lock
        self._opts = storage_options() if is_remote(path) else {}
        self._chunks_uri = _join(path, "chunks.lance")
        self._settings_uri = _join(path, "settings.lance")
        self._ds: Any = None  # chunks dataset (None: nothing written yet)
        self._settings_ds: Any = None
        self._docs: dict[str, dict] | None = None  # doc_key -> doc row (cached per version)
        self._dense: Any = None
        self._ann: Any = None
        self._touched: dict[str, dict] = {}  # writer: doc rows to rewrite at the next commit
        self._df: dict[tuple[int, str], int] = {}  # (version, query word) -> chunks holding it
        self._next_rowid: int | None = None
        self._batch: list[DocumentWrite] | None = None  # inside ``transaction()``
        self._batch_removed: list[str] = []  # keys removed inside ``transaction()``
        self._closed = False

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, mode: str = "r", wait: bool = False) -> LanceIndex:
        path = os.fspath(path)
        if mode not in ("r", "w"):
            raise ValueError(f"mode must be 'r' or 'w', not {mode!r}")
        if not is_remote(path):
            path = path.rstrip("/") or path
        _lance()
        lock = None
        if mode == "w" and not is_remote(path):
            from ragsift.index.locking import WriterLock

            lock = WriterLock(path)
            lock.acquire(wait=wait)
        self = cls(path, mode, lock)
        try:
            self._open_datasets()
            return self
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    def _dataset(self, uri: str, version: int | None = None):
        lance = _lance()
        try:
            return lance.dataset(uri, version=version, storage_options=self._opts or None)
        except (ValueError, FileNotFoundError, OSError) as exc:
            msg = str(exc)
            if "not found" in msg.lower() or "does not exist" in msg.lower() or \
                    isinstance(exc, FileNotFoundError):
                return None
            raise RagsiftError(f"cannot read index {self.path}: {msg.splitlines()[0]}") from None

    def _open_datasets(self) -> None:
        local = not is_remote(self.path)
        if local and os.path.exists(self.path) and not os.path.isdir(self.path):
            raise RagsiftError(f"{self.path} is a file, not a Lance index folder; refusing to "
                               "touch it")
        self._settings_ds = self._dataset(self._settings_uri)
        if self._settings_ds is None:
            if local and os.path.isdir(self.path) and os.listdir(self.path):
                raise RagsiftError(f"{self.path} is a folder but not a ragsift index; refusing "
                                   "to touch it")
            if self.mode == "r":
                raise RagsiftError(
                    f"no index at {self.path}; build one with: ragsift embed PATH --index "
                    f"{self.path}")
            self._create()
        stored = self._raw_settings()
        if stored.get("format") != FORMAT:
            raise RagsiftError(f"{self.path} is not a ragsift index; refusing to use it")
        version = int(stored.get("schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise RagsiftError(
                f"index {self.path} has schema version {version}, newer than this ragsift "
                f"understands ({SCHEMA_VERSION}); upgrade ragsift")
        self._ds = self._dataset(self._chunks_uri)

    def _create(self) -> None:
        import pyarrow as pa

        lance = _lance()
        table = pa.table({"key": ["format", "schema_version"],
                          "value": [json.dumps(FORMAT), json.dumps(SCHEMA_VERSION)]})
        self._settings_ds = lance.write_dataset(table, self._settings_uri, mode="create",
                                                storage_options=self._opts or None)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.mode == "w" and self._touched:
                self._commit([])
        finally:
            self._ds = self._settings_ds = self._dense = self._ann = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> LanceIndex:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stale(self) -> bool:
        """Reader: whether a newer version was committed than the one read."""
        if self.mode != "r":
            return False
        try:
            latest = self._dataset(self._chunks_uri)
        except Exception:  # noqa: BLE001 (no dataset yet, or unreadable: nothing newer to see)
            return False
        if latest is None or self._ds is None:
            return (latest is None) != (self._ds is None)
        return latest.version != self._ds.version

    def refresh(self) -> None:
        """Reader: move to the newest committed version."""
        self._settings_ds = self._dataset(self._settings_uri)
        self._ds = self._dataset(self._chunks_uri)
        self._docs = None
        self._dense = self._ann = None

    # -- settings --------------------------------------------------------------------------
    def _raw_settings(self) -> dict[str, Any]:
        if self._settings_ds is None:
            return {}
        t = self._settings_ds.to_table(columns=["key", "value"])
        return {k: json.loads(v) for k, v in zip(t.column("key").to_pylist(),
                                                 t.column("value").to_pylist())}

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: None for k in SETTING_KEYS}
        raw = self._raw_settings()
        out.update({k: v for k, v in raw.items() if k not in ("format",)})
        if out.get("dimensions") is None and self._ds is not None:
            out["dimensions"] = self.dimensions()
        out["schema_version"] = raw.get("schema_version", SCHEMA_VERSION)
        return out

    def set_settings(self, **values: Any) -> None:
        import pyarrow as pa

        self._require_writer()
        if not values:
            return
        table = pa.table({"key": list(values), "value": [json.dumps(v) for v in values.values()]})
        (self._settings_ds.merge_insert("key").when_matched_update_all()
         .when_not_matched_insert_all().execute(table))
        self._settings_ds = self._dataset(self._settings_uri)

    def dimensions(self) -> int | None:
        dim = self._raw_settings().get("dimensions")
        if dim:
            return int(dim)
        if self._ds is not None:
            return int(self._ds.schema.field("vector").type.list_size)
        return None

    # -- documents -------------------------------------------------------------------------
    def _doc_rows(self) -> dict[str, dict]:
        if self._docs is None:
            self._docs = {}
            if self._ds is not None:
                cols = ["doc_key", *_DOC_FIELDS]
                t = self._ds.to_table(columns=cols, filter="kind = 'doc'")
                for row in t.to_pylist():
                    self._docs[row["doc_key"]] = row
            for key, row in self._touched.items():
                if key in self._docs:
                    self._docs[key] = row
        return self._docs

    def documents(self) -> list[DocumentInfo]:
        rows = sorted(self._doc_rows().values(), key=lambda r: (r["path"], r["doc_key"]))
        return [DocumentInfo(path=r["path"], key=r["doc_key"], chunks=r["n_chunks"],
                             tokens=r["doc_tokens"] or 0, size=r["size"], mtime=r["mtime"],
                             indexed_at=r["indexed_at"], format=r["format"],
                             chunker=r["chunker"] or "", sha256=r["sha256"]) for r in rows]

    def paths(self) -> list[str]:
        return sorted(r["path"] for r in self._doc_rows().values())

    def documents_state(self) -> dict:
        return {k: DocState(id=0, key=k, path=r["path"], source=r["source"] or "",
                            size=r["size"], mtime=r["mtime"], sha256=r["sha256"],
                            chunker=r["chunker"] or "", n_chunks=r["n_chunks"])
                for k, r in self._doc_rows().items()}

    def _keys_of_paths(self, paths: Collection[str]) -> list[str]:
        wanted = set(paths)
        return [k for k, r in self._doc_rows().items() if r["path"] in wanted]

    def rowids_of_paths(self, paths: Collection[str]) -> list[int]:
        """The rowids of every chunk of the documents at ``paths``."""
        return self._rowids_of_paths(paths)

    def _rowids_of_paths(self, paths: Collection[str]) -> list[int]:
        keys = self._keys_of_paths(paths)
        if not keys or self._ds is None:
            return []
        t = self._ds.to_table(columns=["rowid"],
                              filter=f"kind = 'chunk' AND doc_key IN ({_sql_str(keys)})")
        return t.column("rowid").to_pylist()

    # -- search ----------------------------------------------------------------------------
    def count(self, paths: Collection[str] | None = None) -> int:
        if self._ds is None:
            return 0
        if paths is None:
            return int(self._ds.count_rows("kind = 'chunk'"))
        keys = self._keys_of_paths(paths)
        if not keys:
            return 0
        return int(self._ds.count_rows(f"kind = 'chunk' AND doc_key IN ({_sql_str(keys)})"))

    def load_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(rowids int64 (n,), vectors float32 (n, dim)) of every chunk, in rowid order."""
        import numpy as np

        dim = self.dimensions() or 0
        if self._ds is None:
            return np.empty(0, np.int64), np.empty((0, dim), np.float32)
        t = self._ds.to_table(columns=["rowid", "vector"], filter="kind = 'chunk'")
        rowids = t.column("rowid").to_numpy().astype(np.int64, copy=False)
        vec = t.column("vector").combine_chunks()
        flat = vec.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        matrix = flat.reshape(len(rowids), dim)
        order = np.argsort(rowids, kind="stable")
        return rowids[order], np.ascontiguousarray(matrix[order])

    def load(self) -> None:
        """Read the vector column into memory for the exact scan (nothing on the ANN path)."""
        from ragsift.index import ann

        if self._dense is None and not ann.use_ann(self, None):
            from ragsift.index.dense import DenseMatrix

            self._dense = DenseMatrix(*self.load_matrix(), self._rowids_of_paths)

    def dense_candidates(self, qvecs: np.ndarray, n: int,
                         paths: Collection[str] | None = None
                         ) -> list[list[tuple[int, float]]]:
        from ragsift.index import ann

        if ann.use_ann(self, paths):
            return ann.candidates(self, qvecs, n, paths)
        self.load()
        return self._dense.candidates(qvecs, n, paths)

    def cosines(self, qvec: np.ndarray, rowids: Sequence[int]) -> list[float | None]:
        from ragsift.index import ann

        if ann.use_ann(self, None):
            return ann.cosines(self, qvec, rowids)
        self.load()
        return self._dense.cosines(qvec, rowids)

    def lexical_candidates(self, text: str, n: int, paths: Collection[str] | None = None
                           ) -> list[tuple[int, float]]:
        if self._ds is None or n <= 0:
            return []
        terms = query_words(text)
        if not terms:
            return []
        where = "kind = 'chunk'"
        if paths is not None:
            keys = self._keys_of_paths(paths)
            if not keys:
                return []
            where += f" AND doc_key IN ({_sql_str(keys)})"
        self._ensure_fts()
        from lance.query import MatchQuery

        query = MatchQuery(" ".join(terms), "fts")
        t = self._ds.to_table(columns=["rowid", "_score"], full_text_query=query,
                              filter=where, prefilter=True, limit=n + LEXICAL_SLACK)
        hits = sorted(zip(t.column("rowid").to_pylist(), t.column("_score").to_pylist()),
                      key=lambda x: (-x[1], x[0]))
        return [(int(r), float(s)) for r, s in hits[:n]]

    def lexical_ceiling(self, text: str) -> float:
        """The largest BM25 a chunk could score for ``text`` under Lance's inverted index:
        ``Σ idf·(k1 + 1)`` over the query words, with Lance's BM25 (k1 1.2, idf
        ``ln(1 + (N − n + 0.5)/(n + 0.5))``), ``n`` counted per word by a full-text query.
        The relevance coefficients were fitted on the SQLite backend's BM25 (k1 0.9, b 0.4),
        so on Lance the share is the same kind of number, not the same calibration."""
        import math

        terms = query_words(text)
        if self._ds is None or not terms:
            return 0.0
        self._ensure_fts()
        from lance.query import MatchQuery

        rows = self.count()
        version = self._ds.version
        total = 0.0
        for term in terms:
            key = (version, term)
            n = self._df.get(key)
            if n is None:
                n = self._ds.to_table(columns=["rowid", "_score"], filter="kind = 'chunk'",
                                      full_text_query=MatchQuery(term, "fts"),
                                      prefilter=True).num_rows
                self._df[key] = n
            total += math.log(1.0 + (rows - n + 0.5) / (n + 0.5))
        return total * (LANCE_K1 + 1.0)

    def _ensure_fts(self) -> None:
        """The inverted index must exist for a full-text query (built by the writer's
        ``compact``; a reader of an index written by hand builds nothing and gets [])."""
        if self._ds is not None and not self._has_index("fts"):
            if self.mode == "w":
                self._build_fts()
            else:
                raise RagsiftError(f"index {self.path} has no full-text index yet; run "
                                   "`ragsift embed` once to build it")

    def _has_index(self, column: str) -> bool:
        return any(column in ix.field_names for ix in self._ds.describe_indices())

    def _build_fts(self) -> None:
        self._ds.create_scalar_index(
            "fts", index_type="INVERTED", replace=True, base_tokenizer="simple",
            language="English", lower_case=True, stem=True, remove_stop_words=False,
            ascii_folding=True, with_position=False)
        self._reopen()

    def chunk_records(self, rowids: Sequence[int]) -> list[ChunkRecord]:
        ids = [int(r) for r in rowids]
        if not ids or self._ds is None:
            return []
        t = self._ds.to_table(columns=list(_CHUNK_FIELDS),
                              filter=f"kind = 'chunk' AND rowid IN ({', '.join(map(str, set(ids)))})")
        docs = self._doc_rows()
        found = {}
        for r in t.to_pylist():
            found[r["rowid"]] = ChunkRecord(
                rowid=r["rowid"], path=docs[r["doc_key"]]["path"] if r["doc_key"] in docs
                else r["doc_key"], index=r["idx"], text=r["text"], start=r["start"],
                end=r["end"], context=r["context"] or "", tokens=r["tokens"],
                chars=r["chars"] if r["chars"] is not None else len(r["text"]),
                line_start=r["line_start"], line_end=r["line_end"],
                headings=tuple(r["headings"] or ()), page=r["page"], level=r["level"] or 0,
                content_hash=r["content_hash"] or "", truncated=int(r["truncated"] or 0))
        return [found[i] for i in ids if i in found]

    def chunks(self, rowids: Sequence[int]) -> list[dict]:
        return [r.as_dict() for r in self.chunk_records(rowids)]

    def document_chunks(self, path: str) -> list[dict]:
        keys = self._keys_of_paths([path])
        if not keys:
            return []
        t = self._ds.to_table(columns=["rowid", "doc_key", "idx"],
                              filter=f"kind = 'chunk' AND doc_key IN ({_sql_str(keys)})")
        rows = sorted(t.to_pylist(), key=lambda r: (r["doc_key"], r["idx"]))
        return self.chunks([r["rowid"] for r in rows])

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, tuple[np.ndarray, int]]:
        import numpy as np

        wanted = list(dict.fromkeys(hashes))
        if not wanted or self._ds is None:
            return {}
        out: dict[str, tuple[np.ndarray, int]] = {}
        for lo in range(0, len(wanted), 2000):
            part = wanted[lo:lo + 2000]
            t = self._ds.to_table(columns=["content_hash", "vector", "truncated"],
                                  filter=f"kind = 'chunk' AND content_hash IN ({_sql_str(part)})")
            for h, v, cut in zip(t.column("content_hash").to_pylist(),
                                 t.column("vector").to_pylist(),
                                 t.column("truncated").to_pylist()):
                if h not in out:
                    out[h] = (np.asarray(v, np.float32), int(cut or 0))
        return out

    # -- writing ---------------------------------------------------------------------------
    def _require_writer(self) -> None:
        if self.mode != "w":
            raise RagsiftError(f"index {self.path} is open read-only")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes inside are committed together, as one Lance commit, at the end."""
        self._require_writer()
        if self._batch is not None:
            yield
            return
        self._batch = []
        self._batch_removed = []
        try:
            yield
        except BaseException:
            self._batch = None
            raise
        batch, self._batch = self._batch, None
        self._commit(batch, self._batch_removed)

    def write_documents(self, docs: Sequence[DocumentWrite]) -> None:
        self._require_writer()
        if not docs:
            return
        for doc in docs:  # validate everything before anything is written
            _as_f32(doc.vectors, len(doc.records))
        if self._batch is not None:
            self._batch.extend(docs)
        else:
            self._commit(list(docs))

    def touch_document(self, key: str, *, path: str | None = None, size: int | None = None,
                       mtime: float | None = None) -> None:
        """Record a new size/mtime or display path; written with the next commit (or close):
        losing it to a crash only makes the next run hash the file again."""
        self._require_writer()
        row = self._doc_rows().get(key)
        if row is None:
            return
        row = dict(row)
        for name, value in (("path", path), ("size", size), ("mtime", mtime)):
            if value is not None:
                row[name] = value
        self._touched[key] = row
        self._docs[key] = row  # type: ignore[index]

    def _commit(self, docs: list[DocumentWrite], removed: Sequence[str] = ()) -> None:
        """ONE Lance commit: ``docs`` replace their keys, the ``removed`` keys go."""
        import numpy as np
        import pyarrow as pa

        lance = _lance()
        now = time.time()
        vecs_of = [_as_f32(d.vectors, len(d.records)) for d in docs]
        dim = next((v.shape[1] for v, d in zip(vecs_of, docs) if len(d.records)), None)
        have = (int(self._ds.schema.field("vector").type.list_size) if self._ds is not None
                else None)
        if dim is not None and have is not None and dim != have and not self.count():
            self._reshape(dim)  # an index without vectors takes its first vectors' size
            have = dim
        if dim is not None and have is not None and dim != have:
            raise RagsiftError(
                f"vectors have {dim} dimensions but index {self.path} holds {have}; "
                "use the index's model or --rebuild")
        dim = have or dim or self.dimensions() or 1  # 1: no vector yet (see ``_reshape``)
        rows: dict[str, list] = {f: [] for f in _schema(dim).names}
        flat: list[np.ndarray] = []

        def add(**values: Any) -> None:
            for f in rows:
                rows[f].append(values.get(f))

        keep = {d.key: d for d in docs}  # the last write of a key wins, as in SQLite
        rowid = self._alloc_rowids(sum(len(d.records) for d in keep.values()))
        for doc, vecs in zip(docs, vecs_of):
            if keep.get(doc.key) is not doc:
                continue
            self._touched.pop(doc.key, None)
            add(uid="d:" + doc.key, kind="doc", doc_key=doc.key, path=doc.path,
                source=doc.source, size=doc.size, mtime=doc.mtime, sha256=doc.sha256,
                format=doc.format, chunker=doc.chunker, n_chunks=len(doc.records),
                doc_tokens=sum(int(r.get("tokens") or 0) for r in doc.records),
                indexed_at=now)
            flat.append(np.zeros((1, dim), np.float32))
            for rec, vec in zip(doc.records, vecs):
                add(**chunk_row(doc.key, rowid, rec))
                flat.append(vec.reshape(1, -1))
                rowid += 1
        for key, row in self._touched.items():
            add(uid="d:" + key, kind="doc", doc_key=key, **{f: row[f] for f in _DOC_FIELDS})
            flat.append(np.zeros((1, dim), np.float32))
        self._touched = {}
        if not rows["uid"]:
            if removed and self._ds is not None:
                self._ds.delete(f"doc_key IN ({_sql_str(removed)})")
                self._reopen()
            return
        schema = _schema(dim)
        is_doc = np.array([k == "doc" for k in rows["kind"]])
        matrix = np.concatenate(flat).astype(np.float32) if flat else np.zeros((0, dim), "f4")
        values = pa.array(matrix.reshape(-1), pa.float32())
        vector = pa.FixedSizeListArray.from_arrays(values, dim, mask=pa.array(is_doc))
        cols = {f: pa.array(rows[f], schema.field(f).type) for f in schema.names if f != "vector"}
        cols["vector"] = vector
        table = pa.table(cols, schema=schema)
        if self._ds is None:
            self._ds = lance.write_dataset(table, self._chunks_uri, mode="create",
                                           storage_options=self._opts or None)
            self._build_fts()  # rows written later are searched flat until ``compact``
        else:
            keys = [d.key for d in keep.values()]
            merge = (self._ds.merge_insert("uid").when_matched_update_all()
                     .when_not_matched_insert_all())
            gone = []
            if keys:
                gone.append(f"(kind = 'chunk' AND doc_key IN ({_sql_str(keys)}))")
            if removed:
                gone.append(f"doc_key IN ({_sql_str(removed)})")
            if gone:
                merge = merge.when_not_matched_by_source_delete(" OR ".join(gone))
            merge.execute(table)
        self._reopen()

    def writer_target(self) -> tuple[str, dict, bool]:
        """(chunks dataset URI, storage options, create) for ``write_fragments`` elsewhere."""
        return self._chunks_uri, dict(self._opts), self._ds is None

    def alloc_rowids(self, n: int) -> int:
        """Reserve ``n`` chunk ids for rows written elsewhere; returns the first."""
        self._require_writer()
        return self._alloc_rowids(n)

    def commit_fragments(self, docs: Sequence[DocumentWrite], fragments: Sequence[str],
                         rows: list[dict], vectors: list, dim: int) -> None:
        """ONE Lance commit of documents whose chunk rows were written as ``fragments`` by
        other processes (``write_fragments``): the replaced documents' old rows are deleted, the
        document rows (+ pending touched ones) and ``rows``/``vectors`` (chunks written here,
        e.g. reused vectors) are added, the fragments appended, all in one ``Update``."""
        from lance.fragment import FragmentMetadata

        self._require_writer()
        lance = _lance()
        if self._ds is not None:
            have = int(self._ds.schema.field("vector").type.list_size)
            if have != dim and not self.count():
                self._reshape(dim)
            elif have != dim:
                raise RagsiftError(
                    f"vectors have {dim} dimensions but index {self.path} holds {have}; "
                    "use the index's model or --rebuild")
        now = time.time()
        rows, vectors = list(rows), list(vectors)
        for doc in docs:
            self._touched.pop(doc.key, None)
            rows.append({"uid": "d:" + doc.key, "kind": "doc", "doc_key": doc.key,
                         "path": doc.path, "source": doc.source, "size": doc.size,
                         "mtime": doc.mtime, "sha256": doc.sha256, "format": doc.format,
                         "chunker": doc.chunker, "n_chunks": len(doc.records),
                         "indexed_at": now,
                         "doc_tokens": sum(int(r.get("tokens") or 0) for r in doc.records)})
            vectors.append(None)
        for key, row in self._touched.items():
            rows.append(dict(uid="d:" + key, kind="doc", doc_key=key, **row))
            vectors.append(None)
        replaced = [d.key for d in docs] + list(self._touched)
        self._touched = {}
        new = [FragmentMetadata.from_json(f) for f in fragments]
        if rows:
            new += [FragmentMetadata.from_json(f) for f in
                    write_fragments(self._chunks_uri, rows_table(rows, vectors, dim),
                                    self._opts, create=self._ds is None)]
        if not new:
            return
        if self._ds is None:
            op = lance.LanceOperation.Overwrite(_schema(dim), new)
            self._ds = lance.LanceDataset.commit(self._chunks_uri, op,
                                                 storage_options=self._opts or None)
            self._build_fts()
        else:
            removed, updated = [], []
            pred = f"doc_key IN ({_sql_str(replaced)})" if replaced else None
            for frag in self._ds.get_fragments() if pred else ():
                after = frag.delete(pred)
                if after is None:
                    removed.append(frag.fragment_id)
                elif after.num_deletions != frag.metadata.num_deletions:
                    updated.append(after)
            op = lance.LanceOperation.Update(removed_fragment_ids=removed,
                                             updated_fragments=updated, new_fragments=new)
            lance.LanceDataset.commit(self._chunks_uri, op, read_version=self._ds.version,
                                      storage_options=self._opts or None)
        self._reopen()

    def _reshape(self, dim: int) -> None:
        """Rewrite an index holding documents but no chunk yet with ``dim``-wide vectors."""
        import pyarrow as pa

        old = self._ds.to_table(filter="kind = 'doc'")
        cols = {f: old.column(f) for f in old.schema.names if f != "vector"}
        cols["vector"] = pa.nulls(old.num_rows, pa.list_(pa.float32(), dim))
        table = pa.table(cols, schema=_schema(dim))
        self._ds = _lance().write_dataset(table, self._chunks_uri, mode="overwrite",
                                          storage_options=self._opts or None)
        self._build_fts()

    def _alloc_rowids(self, n: int) -> int:
        if self._next_rowid is None:
            self._next_rowid = 1
            if self._ds is not None:
                t = self._ds.to_table(columns=["rowid"], filter="kind = 'chunk'")
                if t.num_rows:
                    import pyarrow.compute as pc

                    self._next_rowid = int(pc.max(t.column("rowid")).as_py()) + 1
        start = self._next_rowid
        self._next_rowid += n
        return start

    def _reopen(self) -> None:
        self._ds = self._dataset(self._chunks_uri)
        self._docs = None
        self._dense = self._ann = None

    def remove_documents(self, keys: Iterable[str]) -> int:
        self._require_writer()
        keys = list(dict.fromkeys(keys))
        if self._batch is not None:  # in a transaction: removed with its one commit
            pending = {d.key for d in self._batch}
            present = [k for k in keys if k in pending or
                       (k in self._doc_rows() and k not in self._batch_removed)]
            self._batch[:] = [d for d in self._batch if d.key not in present]
            for k in present:
                self._touched.pop(k, None)
            self._batch_removed.extend(k for k in present if k in self._doc_rows())
            return len(present)
        present = [k for k in keys if k in self._doc_rows()]
        if not present or self._ds is None:
            return 0
        for k in present:
            self._touched.pop(k, None)
        self._ds.delete(f"doc_key IN ({_sql_str(present)})")
        self._reopen()
        return len(present)

    def clear(self) -> None:
        """Drop every document, chunk, vector and setting (``--rebuild``)."""
        self._require_writer()
        self._touched = {}
        if self._ds is not None:
            self._ds.delete("true")
            self._reopen()
        keys = [k for k in self._raw_settings() if k not in ("format", "schema_version")]
        if keys:
            self._settings_ds.delete(f"key IN ({_sql_str(keys)})")
            self._settings_ds = self._dataset(self._settings_uri)
        self._next_rowid = None

    def compact(self) -> int:
        """Merge small fragments, bring the full-text (and ANN) indexes up to date, drop
        versions older than ``KEEP_VERSIONS``; returns the fragments removed."""
        self._require_writer()
        if self._touched:
            self._commit([])
        if self._ds is None:
            return 0
        before = len(self._ds.get_fragments())
        if before > 1:
            self._ds.optimize.compact_files()
            self._reopen()
        n = self._ds.count_rows("kind = 'chunk'")
        if n:
            if n >= SCALAR_INDEX_MIN_ROWS:  # lookups by id and by text hash stop scanning
                for column in ("rowid", "content_hash"):
                    if not self._has_index(column):
                        self._ds.create_scalar_index(column, index_type="BTREE")
                        self._reopen()
            if self._has_index("fts"):
                self._ds.optimize.optimize_indices()
            else:
                self._build_fts()
            from ragsift.index import ann

            ann.maintain(self)
            self._reopen()
        with contextlib.suppress(Exception):
            self._ds.cleanup_old_versions(older_than=KEEP_VERSIONS)
            self._settings_ds.cleanup_old_versions(older_than=KEEP_VERSIONS)
        return max(0, before - len(self._ds.get_fragments()))

    # -- inspection ------------------------------------------------------------------------
    def stats(self) -> dict:
        docs = self._doc_rows()
        n_chunks = truncated = tokens = 0
        if self._ds is not None:
            import pyarrow.compute as pc

            t = self._ds.to_table(columns=["truncated", "tokens"], filter="kind = 'chunk'")
            n_chunks = t.num_rows
            if n_chunks:
                truncated = int(pc.sum(pc.greater(t.column("truncated"), 0)).as_py() or 0)
                tokens = int(pc.sum(t.column("tokens")).as_py() or 0)
        from ragsift.index.locking import holder_pid

        return {
            "path": self.path,
            "backend": "lance",
            "documents": len(docs),
            "chunks": n_chunks,
            "vectors": n_chunks,
            "truncated": truncated,
            "tokens": tokens,
            "blocks": len(self._ds.get_fragments()) if self._ds is not None else 0,
            "dead_vectors": 0,
            "size_bytes": self._size(),
            "schema_version": SCHEMA_VERSION,
            "version": self._ds.version if self._ds is not None else 0,
            "writer_pid": None if is_remote(self.path) else holder_pid(self.path),
        }

    def _size(self) -> int:
        if not is_remote(self.path):
            total = 0
            for root, _dirs, files in os.walk(self.path):
                for f in files:
                    with contextlib.suppress(OSError):
                        total += os.path.getsize(os.path.join(root, f))
            return total
        total = 0
        for ds in (self._ds, self._settings_ds):
            if ds is not None:
                with contextlib.suppress(Exception):
                    total += int(ds.versions()[-1]["metadata"].get("total_files_size", 0))
        return total

    def verify(self) -> list[str]:
        import numpy as np

        problems: list[str] = []
        if self._ds is None:
            return problems
        t = self._ds.to_table(columns=["kind", "doc_key", "rowid", "uid"])
        kinds = t.column("kind").to_pylist()
        keys = t.column("doc_key").to_pylist()
        rowids = [r for r, k in zip(t.column("rowid").to_pylist(), kinds) if k == "chunk"]
        uids = t.column("uid").to_pylist()
        if len(set(uids)) != len(uids):
            problems.append("duplicate rows")
        if len(set(rowids)) != len(rowids) or any(r is None for r in rowids):
            problems.append("duplicate or missing chunk ids")
        docs = self._doc_rows()
        counts: dict[str, int] = {}
        for k, kind in zip(keys, kinds):
            if kind == "chunk":
                counts[k] = counts.get(k, 0) + 1
        orphans = sum(n for k, n in counts.items() if k not in docs)
        if orphans:
            problems.append(f"{orphans} chunks without a document")
        bad = sum(1 for k, r in docs.items() if r["n_chunks"] != counts.get(k, 0))
        if bad:
            problems.append(f"{bad} documents with a wrong chunk count")
        ids, matrix = self.load_matrix()
        if ids.shape[0] != len(rowids):
            problems.append(f"{ids.shape[0]} vectors for {len(rowids)} chunks")
        if matrix.size and not np.isfinite(matrix).all():
            problems.append("non-finite vector values")
        return problems


def inspect_location(path: str) -> str:
    """``"missing"`` or ``"ours"`` for a Lance location (raises for a foreign one)."""
    try:
        with LanceIndex.open(path, "r"):
            return "ours"
    except RagsiftError as exc:
        if str(exc).startswith("no index at"):
            return "missing"
        raise


def _damage_as_error(method):
    """Wrap a ``LanceIndex`` read or write: an Arrow/Lance I/O failure on the index's own files (a data
    file cut short, a fragment that does not decode) is ``index damaged: …`` with the way out,
    a user error (exit 2), not an internal error."""
    import functools

    @functools.wraps(method)
    def read(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except RagsiftError:
            raise
        except Exception as exc:  # narrowed just below, else re-raised
            if type(exc).__module__.startswith("pyarrow") or "LanceError" in str(exc):
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                first = first.split(", /rustc/")[0]  # the Rust source location says nothing
                raise RagsiftError(
                    f"index damaged: {self.path}: {first[:200]}; rebuild it with `ragsift "
                    f"embed PATH... --index {self.path} --rebuild`") from None
            raise

    return read


for _name in ("settings", "dimensions", "documents", "paths", "documents_state",
              "rowids_of_paths", "count", "load_matrix", "load", "dense_candidates", "cosines",
              "lexical_candidates", "lexical_ceiling", "chunk_records", "chunks",
              "document_chunks", "vectors_for_hashes", "stats", "verify", "_open_datasets",
              "_raw_settings", "write_documents", "remove_documents", "touch_document",
              "set_settings", "clear", "compact", "alloc_rowids", "commit_fragments"):
    setattr(LanceIndex, _name, _damage_as_error(getattr(LanceIndex, _name)))
