"""``IndexStore``: the index on disk, one SQLite file in WAL mode (contract in docs/CONTRACTS.md).

Role: persistence only. It stores documents, chunks, vectors, settings and an FTS5 lexical
index, and answers reads; it never chunks, embeds or decides what is stale (the pipeline
does). Schema and its migrations: ``ragsift/index/migrations.py``.

Guarantees:
- Atomicity per write call: a batch of documents (their rows, chunks, FTS entries and
  vectors) is committed in one transaction, so ``kill -9`` leaves every committed batch and
  nothing of the interrupted one. ``synchronous=NORMAL`` in WAL mode: a killed process loses
  nothing committed; only a power cut may lose the last commits (never consistency).
- One writer: mode ``"w"`` takes ``INDEX-lock`` (see ``locking.py``); a second writer gets
  "index is being written by PID N" or waits (``wait=True``). Readers never block: mode
  ``"r"`` holds one read snapshot for its lifetime, so ``load_matrix`` and ``chunks`` agree
  even while a writer commits.
- A file that is not ours (no SQLite header, or another ``application_id``) is refused
  before anything is written, and so is one from a newer schema.
- ``load_matrix`` copies contiguous float32 blocks into one preallocated array: no Python
  object per vector (100k × 384 in ~50 ms here, see bench/RESULTS.md).

Not claimed: concurrent writers on network file systems (``flock`` semantics vary there).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.index import lexical, migrations
from ragsift.index.backend import SETTING_KEYS, ChunkRecord, DocState, DocumentInfo, DocumentWrite
from ragsift.index.dense import as_f32
from ragsift.index.locking import WriterLock, file_kind, holder_pid
from ragsift.index.terms import query_words

if TYPE_CHECKING:
    import numpy as np

SQLITE_MAGIC = b"SQLite format 3\x00"
BLOCK_ROWS = 1024  # vectors per block written or compacted
SMALL_BLOCK = 256  # blocks with fewer live vectors are merged by ``compact``
MMAP_SIZE = 1 << 30  # readers map up to 1 GiB of the index file

_CHUNK_COLUMNS = (
    "c.id, d.path, c.idx, c.text, c.start, c.\"end\", c.context, c.tokens, c.chars, "
    "c.line_start, c.line_end, c.headings, c.page, c.level, c.content_hash, c.truncated"
)
class IndexStore:
    """An open index file. Use ``IndexStore.open(path, mode)`` as a context manager."""

    def __init__(self, path: str, mode: str, db: sqlite3.Connection,
                 lock: WriterLock | None) -> None:
        self.path = path
        self.mode = mode
        self.db = db
        self._lock = lock
        self._dim: int | None = None
        self._dense: Any = None  # ragsift.index.dense.DenseMatrix, loaded by ``load``
        self._postings: Any = None  # lexical.Postings (False: lexical.scan answers instead)
        self._ceilings: dict[str, float] = {}  # query text -> BM25 ceiling (this snapshot)
        self._stamp: tuple = ()  # reader: the files' (mtime, size) when the snapshot began

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, mode: str = "r",
             wait: bool | Callable[[int | None], None] = False) -> IndexStore:
        """Open ``path`` for reading (``"r"``) or writing (``"w"``, creates it, takes the lock).

        Raises ``RagsiftError`` for a missing index (``"r"``), a foreign or corrupt file, a
        path that is not a regular file (FIFO, device, directory, dangling symlink), a newer
        schema, an index that cannot be written (``"w"``), or a busy writer lock (unless
        ``wait``: True blocks; a callable is told the holder's PID first, then blocks).
        A reader that cannot write the index or its folder reads it read-only (see
        ``_connect_reader``). Any character in ``path`` is fine: SQLite gets it percent-encoded.
        """
        path = os.fspath(path)
        if mode not in ("r", "w"):
            raise ValueError(f"mode must be 'r' or 'w', not {mode!r}")
        state = inspect_file(path)
        if mode == "r":
            if state == "missing":
                raise RagsiftError(
                    f"no index at {path}; build one with: ragsift embed PATH --index {path}")
            if state == "empty":
                raise RagsiftError(f"{path} is an empty file, not a ragsift index")
            return cls._open_reader(path)
        _check_writable(path, state)
        lock = WriterLock(path)
        lock.acquire(wait=wait)
        try:
            state = inspect_file(path)  # again: another writer may have created it meanwhile
            return cls._open_writer(path, state, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _open_reader(cls, path: str) -> IndexStore:
        try:
            db = _connect_reader(path)
            # Blocks are read straight from the mapped file (measured: SQL part of a 100k × 384
            # load 54-74 ms → 25 ms). The file never shrinks under a reader (no VACUUM).
            db.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
            store = cls(path, "r", db, None)
            store._check_schema(writable=False)
            # One snapshot for the store's life: matrix and chunk reads agree.
            store._stamp = store._file_stamp()
            db.execute("BEGIN")
            db.execute("SELECT count(*) FROM settings").fetchone()
            return store
        except sqlite3.DatabaseError as exc:
            raise _corrupt(path, exc) from None

    @classmethod
    def _open_writer(cls, path: str, state: str, lock: WriterLock) -> IndexStore:
        try:
            if state in ("missing", "empty"):
                _create(path)
            db = sqlite3.connect(sqlite_uri(path, "rw"), uri=True, isolation_level=None,
                                 timeout=30, check_same_thread=False)
            if db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
                raise RagsiftError(f"cannot put index {path} in WAL mode")
            db.execute("PRAGMA synchronous = NORMAL")
            store = cls(path, "w", db, lock)
            store._check_schema(writable=True)
            migrations.migrate(db)
            return store
        except sqlite3.DatabaseError as exc:
            raise _corrupt(path, exc) from None

    def _check_schema(self, writable: bool) -> None:
        app_id = self.db.execute("PRAGMA application_id").fetchone()[0]
        if app_id != migrations.APPLICATION_ID:
            raise RagsiftError(f"{self.path} is not a ragsift index; refusing to use it")
        version = migrations.schema_version(self.db)
        if version > migrations.LATEST:
            raise RagsiftError(
                f"index {self.path} has schema version {version}, newer than this ragsift "
                f"understands ({migrations.LATEST}); upgrade ragsift")
        if not writable and version < migrations.OLDEST_READABLE:
            if version == 0:
                raise RagsiftError(f"index {self.path} is empty: no run has committed yet")
            raise RagsiftError(
                f"index {self.path} has schema version {version}; run `ragsift embed` "
                "once to upgrade it")
        if version >= 1:
            names = {r[0] for r in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            missing = {"settings", "documents", "chunks", "vec_blocks", "chunks_fts"} - names
            if missing:
                raise RagsiftError(
                    f"index {self.path} is damaged (missing tables: {', '.join(sorted(missing))})")

    def close(self) -> None:
        if self.db is None:
            return
        try:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK" if self.mode == "w" else "COMMIT")
            if self.mode == "w":
                with contextlib.suppress(sqlite3.DatabaseError):
                    self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            self.db.close()
            self.db = None  # type: ignore[assignment]
            if self._lock is not None:
                self._lock.release()

    def __enter__(self) -> IndexStore:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def refresh(self) -> None:
        """Reader: drop the snapshot and take a new one (see commits made since opening)."""
        if self.mode == "r":
            self._dense = None
            self._postings = None
            self._ceilings = {}
            self._stamp = self._file_stamp()
            self.db.execute("COMMIT")
            self.db.execute("BEGIN")
            self.db.execute("SELECT count(*) FROM settings").fetchone()

    def stale(self) -> bool:
        """Reader: whether a writer may have committed since the snapshot was taken (the
        file or its write-ahead log changed size or time since then). Two ``stat`` calls; a
        long-lived reader (the MCP server) calls ``refresh`` only when this says so."""
        return self.mode == "r" and self._file_stamp() != self._stamp

    def _file_stamp(self) -> tuple:
        out = []
        for suffix in ("", "-wal"):
            try:
                st = os.stat(self.path + suffix)
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    # -- reading ---------------------------------------------------------------------------
    def settings(self) -> dict:
        """``model``, ``model_fingerprint``, ``dimensions``, ``chunker``, ``chunker_options``,
        ``schema_version`` (None where nothing was recorded yet), plus any other setting."""
        out: dict[str, Any] = {k: None for k in SETTING_KEYS}
        for key, value in self.db.execute("SELECT key, value FROM settings"):
            out[key] = json.loads(value)
        out["schema_version"] = migrations.schema_version(self.db)
        return out

    def dimensions(self) -> int | None:
        if self._dim is None:
            row = self.db.execute("SELECT value FROM settings WHERE key = 'dimensions'").fetchone()
            if row is not None and json.loads(row[0]):
                self._dim = int(json.loads(row[0]))
            else:
                row = self.db.execute("SELECT dim FROM vec_blocks LIMIT 1").fetchone()
                self._dim = int(row[0]) if row else None
        return self._dim

    def load_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(rowids int64 (n,), vectors float32 (n, dim)): every live vector, block order."""
        import numpy as np

        total = self.db.execute("SELECT coalesce(sum(n - dead), 0) FROM vec_blocks").fetchone()[0]
        dim = self.dimensions() or 0
        if not total:
            return np.empty(0, np.int64), np.empty((0, dim), np.float32)
        rowids = np.empty(total, np.int64)
        matrix = np.empty((total, dim), np.float32)
        k = 0
        # Iterate the cursor (not fetchall): each block's bytes are freed before the next
        # one, so the allocator reuses one buffer instead of faulting in fresh pages.
        for block_id, n, dead, rid_blob, data in self.db.execute(
                "SELECT id, n, dead, rowids, data FROM vec_blocks ORDER BY id"):
            ids, vecs = self._block(block_id, n, dim, rid_blob, data)
            if dead:
                live = ids >= 0
                ids, vecs = ids[live], vecs[live]
            m = ids.shape[0]
            rowids[k:k + m] = ids
            matrix[k:k + m] = vecs
            k += m
        if k != total:  # a block disagrees with its own counts
            raise self._damaged("a vector block disagrees with its counts")
        return rowids, matrix

    def chunk_records(self, rowids: Sequence[int]) -> list[ChunkRecord]:
        """Chunk records for ``rowids``, in the order asked (ids not in the index are left
        out)."""
        ids = [int(r) for r in rowids]
        if not ids:
            return []
        found: dict[int, ChunkRecord] = {}
        for row in self.db.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.doc_id "
                "WHERE c.id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)):
            found[row[0]] = _record(row)
        return [found[i] for i in ids if i in found]

    def chunks(self, rowids: Sequence[int]) -> list[dict]:
        """``chunk_records`` as dicts (the JSON shape: ``ragsift chunk`` fields plus
        ``rowid``, ``content_hash``, ``truncated``)."""
        return [r.as_dict() for r in self.chunk_records(rowids)]

    def document_chunks(self, path: str) -> list[dict]:
        """All chunk records of the document with display path ``path``, in order."""
        return [_record(row).as_dict() for row in self.db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.path = ? ORDER BY d.id, c.idx", (path,))]

    # -- search (the backend contract, ragsift/index/backend.py) ---------------------------
    def count(self, paths: Collection[str] | None = None) -> int:
        """Chunks that can be searched (those with a vector), optionally of ``paths`` only."""
        if paths is None:
            return int(self.db.execute(
                "SELECT coalesce(sum(n - dead), 0) FROM vec_blocks").fetchone()[0])
        return int(self.db.execute(
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE "
            "c.block_id IS NOT NULL AND d.path IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(paths)),)).fetchone()[0])

    def load(self) -> None:
        """Read the vector matrix into memory (once per open store)."""
        if self._dense is None:
            from ragsift.index.dense import DenseMatrix

            self._dense = DenseMatrix(*self.load_matrix(), self._rowids_of_paths)

    def dense_candidates(self, qvecs: np.ndarray, n: int,
                         paths: Collection[str] | None = None
                         ) -> list[list[tuple[int, float]]]:
        """Exact cosine top ``n`` per query vector (``ragsift.index.dense``)."""
        self.load()
        return self._dense.candidates(qvecs, n, paths)

    def cosines(self, qvec: np.ndarray, rowids: Sequence[int]) -> list[float | None]:
        self.load()
        return self._dense.cosines(qvec, rowids)

    def lexical_candidates(self, text: str, n: int, paths: Collection[str] | None = None
                           ) -> list[tuple[int, float]]:
        """``lexical_search`` with the score sign flipped (larger is better) and the filter
        given as document paths."""
        if paths is not None:
            if not paths:
                return []
            ids = self._rowids_of_paths(paths)
            return [(r, -s) for r, s in self.lexical_search(text, n, ids)] if ids else []
        return [(r, -s) for r, s in self.lexical_search(text, n)]

    def rowids_of_paths(self, paths: Collection[str]) -> list[int]:
        """The rowids of every chunk of the documents at ``paths``."""
        return self._rowids_of_paths(paths)

    def _rowids_of_paths(self, paths: Collection[str]) -> list[int]:
        return [r[0] for r in self.db.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.path IN (SELECT value FROM json_each(?))", (json.dumps(sorted(paths)),))]

    def documents(self) -> list[DocumentInfo]:
        """Every document (with its chunk and token counts), by path."""
        return [DocumentInfo(*row) for row in self.db.execute(
            "SELECT d.path, d.key, d.n_chunks, coalesce((SELECT sum(tokens) FROM chunks c "
            "WHERE c.doc_id = d.id), 0), d.size, d.mtime, d.indexed_at, d.format, d.chunker, "
            "d.sha256 FROM documents d ORDER BY d.path, d.key")]

    def lexical_search(self, query: str, limit: int,
                       rowids_filter: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """BM25 over ``context + text``: [(rowid, -bm25)] best first, at most ``limit``.

        The score has the sign of FTS5's ``bm25()``: negative, more negative is better; its
        constants are ``lexical.K1``/``lexical.B`` on every path. The query is never passed
        as FTS5 syntax: its words (letters/digits runs) are each quoted and
        OR-ed, so punctuation, quotes or operators in user text cannot raise. No words: [].
        """
        terms = query_words(query)
        if not terms:
            return []
        out: dict = {}
        postings = self._lexical_postings()
        hits = None
        if postings is not None:  # BM25 from the postings (lexical.py)
            phrases = postings.phrases(terms)
            if phrases is not None:
                hits = postings.search(self.db, phrases, max(limit, 0), rowids_filter, out)
        if hits is None:
            if rowids_filter is not None:
                rowids_filter = [int(r) for r in rowids_filter]
            hits = lexical.scan(self.db, terms, max(limit, 0), rowids_filter, out)
        self._ceilings[query] = out.get("ceiling", 0.0)
        if len(self._ceilings) > 256:  # the ceilings of recent queries only
            self._ceilings.pop(next(iter(self._ceilings)))
        return hits

    def lexical_ceiling(self, text: str) -> float:
        """The largest BM25 any chunk could score for ``text`` (``lexical.ceiling``); 0.0 when
        the text has no query words. Remembered from the lexical search of the same text."""
        if not query_words(text):
            return 0.0
        if text not in self._ceilings:
            self.lexical_search(text, 0)
        return self._ceilings[text]

    def _lexical_postings(self) -> lexical.Postings | None:
        """The index's postings (once per snapshot), or None: ``lexical.scan`` answers."""
        if self._postings is None:
            self._postings = lexical.Postings.load(self.db) or False
        return self._postings or None

    def paths(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT path FROM documents ORDER BY path")]

    def documents_state(self) -> dict[str, DocState]:
        """Every document by key (one query; used for change detection)."""
        return {r[1]: DocState(*r) for r in self.db.execute(
            "SELECT id, key, path, source, size, mtime, sha256, chunker, n_chunks "
            "FROM documents")}

    def stats(self) -> dict:
        q = self.db.execute
        docs = q("SELECT count(*) FROM documents").fetchone()[0]
        n_chunks, truncated, tokens = q(
            "SELECT count(*), coalesce(sum(truncated > 0), 0), coalesce(sum(tokens), 0) "
            "FROM chunks").fetchone()
        vectors, dead, blocks = q(
            "SELECT coalesce(sum(n - dead), 0), coalesce(sum(dead), 0), count(*) "
            "FROM vec_blocks").fetchone()
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(self.path + suffix)
        return {
            "path": self.path,
            "documents": docs,
            "chunks": n_chunks,
            "vectors": vectors,
            "truncated": truncated,
            "tokens": tokens,
            "blocks": blocks,
            "dead_vectors": dead,
            "size_bytes": size,
            "schema_version": migrations.schema_version(self.db),
            "writer_pid": holder_pid(self.path),
        }

    def _block(self, block_id: int, n: int, dim: int, rid: bytes, data: bytes
               ) -> tuple[np.ndarray, np.ndarray]:
        """One vector block's (rowids, vectors), after checking that its bytes hold the ``n``
        rows its counts say (a truncated or foreign blob is damage, not a reshape error)."""
        import numpy as np

        if len(rid) != 8 * n or len(data) != 4 * n * dim:
            raise self._damaged(f"vector block {block_id} holds {len(data)} bytes of vectors "
                                f"and {len(rid)} of rowids for {n} rows of {dim} dimensions "
                                f"({4 * n * dim} and {8 * n} expected)")
        return np.frombuffer(rid, "<i8"), np.frombuffer(data, "<f4").reshape(n, dim)

    def _damaged(self, what: str) -> RagsiftError:
        return RagsiftError(f"index damaged: {self.path}: {what}; rebuild it with `ragsift "
                            f"embed PATH... --index {self.path} --rebuild`")

    def verify(self) -> list[str]:
        """Consistency problems (empty list: consistent). Used by tests and ``info --check``."""
        import numpy as np

        problems: list[str] = []
        q = self.db.execute
        loaded = True
        try:
            rowids, matrix = self.load_matrix()
        except RagsiftError as exc:  # damaged blocks: say what, and check the rest
            problems.append(exc.message)
            loaded = False
            rowids, matrix = np.empty(0, np.int64), np.empty((0, 0), np.float32)
        chunk_ids = np.array([r[0] for r in q("SELECT id FROM chunks ORDER BY id")], np.int64)
        if loaded and not np.array_equal(np.sort(rowids), chunk_ids):
            problems.append(f"{len(rowids)} vectors for {len(chunk_ids)} chunks")
        if matrix.size and not np.isfinite(matrix).all():
            problems.append("non-finite vector values")
        bad = q("SELECT count(*) FROM documents d WHERE n_chunks != "
                "(SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)").fetchone()[0]
        if bad:
            problems.append(f"{bad} documents with a wrong chunk count")
        orphans = q("SELECT count(*) FROM chunks WHERE doc_id NOT IN "
                    "(SELECT id FROM documents)").fetchone()[0]
        if orphans:
            problems.append(f"{orphans} chunks without a document")
        for n, dead, rid in q("SELECT n, dead, rowids FROM vec_blocks"):
            ids = np.frombuffer(rid, "<i8")
            if ids.shape[0] != n or int((ids < 0).sum()) != dead:
                problems.append("a vector block disagrees with its counts")
                break
        if migrations.schema_version(self.db) >= 2:
            blocks = q("SELECT count(*) FROM vec_blocks").fetchone()[0]
            with_postings = q("SELECT count(*) FROM lex_blocks WHERE block_id IN "
                              "(SELECT id FROM vec_blocks)").fetchone()[0]
            if with_postings == blocks and lexical.Postings.load(self.db) is None:
                problems.append("lexical postings disagree with the FTS index (rows or tokens)")
        if self.mode == "w":  # FTS5's own check against the chunks table (a write statement)
            try:
                with self.transaction():
                    q("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"FTS index: {exc}")
        return problems

    # -- writing (mode "w") ----------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; nested uses join the outer one."""
        self._require_writer()
        if self.db.in_transaction:
            yield
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise write_error(self.path, exc) from None
        try:
            yield
        except BaseException:
            if self.db.in_transaction:  # SQLite already rolled back after e.g. a full disk
                self.db.execute("ROLLBACK")
            raise
        try:
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise write_error(self.path, exc) from None
        self._dense = None  # searches see the new rows
        self._postings = None
        self._ceilings = {}

    def set_settings(self, **values: Any) -> None:
        with self.transaction():
            self.db.executemany(
                "INSERT INTO settings(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [(k, json.dumps(v)) for k, v in values.items()])
            if "dimensions" in values:
                self._dim = int(values["dimensions"]) if values["dimensions"] else None

    def write_documents(self, docs: Sequence[DocumentWrite]) -> None:
        """Replace each document (by ``key``) with the given chunks and vectors, atomically."""
        import numpy as np

        if not docs:
            return
        with self.transaction():
            now = time.time()
            pending_ids: list[int] = []
            pending_vecs: list[np.ndarray] = []
            for doc in docs:
                vecs = as_f32(doc.vectors, len(doc.records))
                if len(doc.records):
                    self._check_dim(vecs.shape[1])
                old = self.db.execute("SELECT id FROM documents WHERE key = ?",
                                      (doc.key,)).fetchone()
                if old is not None:
                    self._delete_document(old[0])
                cur = self.db.execute(
                    "INSERT INTO documents(key, path, source, size, mtime, sha256, format, "
                    "chunker, n_chunks, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (doc.key, doc.path, doc.source, doc.size, doc.mtime, doc.sha256,
                     doc.format, doc.chunker, len(doc.records), now))
                doc_id = cur.lastrowid
                for rec, vec in zip(doc.records, vecs):
                    cur = self.db.execute(
                        "INSERT INTO chunks(doc_id, idx, text, context, start, \"end\", tokens, "
                        "chars, line_start, line_end, headings, page, level, content_hash, "
                        "truncated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (doc_id, rec["index"], rec["text"], rec.get("context") or "",
                         rec.get("start"), rec.get("end"), rec.get("tokens"),
                         rec.get("chars", len(rec["text"])), rec.get("line_start"),
                         rec.get("line_end"), json.dumps(list(rec.get("headings") or [])),
                         rec.get("page"), rec.get("level") or 0, rec["content_hash"],
                         int(rec.get("truncated") or 0)))
                    pending_ids.append(cur.lastrowid)
                if len(doc.records):
                    pending_vecs.append(vecs)
            if pending_ids:
                self._write_blocks(np.asarray(pending_ids, np.int64),
                                   np.concatenate(pending_vecs), small_postings=False)

    def touch_document(self, key: str, *, path: str | None = None, size: int | None = None,
                       mtime: float | None = None) -> None:
        """Record a new size/mtime (content unchanged) or display path for ``key``."""
        with self.transaction():
            self.db.execute(
                "UPDATE documents SET path = coalesce(?, path), size = coalesce(?, size), "
                "mtime = coalesce(?, mtime) WHERE key = ?", (path, size, mtime, key))

    def remove_documents(self, keys: Iterable[str]) -> int:
        removed = 0
        with self.transaction():
            for key in keys:
                row = self.db.execute("SELECT id FROM documents WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    self._delete_document(row[0])
                    removed += 1
        return removed

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, tuple[np.ndarray, int]]:
        """Stored vectors by chunk content hash: {hash: (vector, truncated)} for those found."""
        import numpy as np

        wanted = list(dict.fromkeys(hashes))
        dim = self.dimensions()
        if not wanted or not dim:
            return {}
        where: dict[int, list[tuple[int, str, int]]] = {}
        seen: set[str] = set()
        for h, block_id, pos, truncated in self.db.execute(
                "SELECT content_hash, block_id, block_pos, truncated FROM chunks "
                "WHERE content_hash IN (SELECT value FROM json_each(?)) "
                "AND block_id IS NOT NULL", (json.dumps(wanted),)):
            if h not in seen:
                seen.add(h)
                where.setdefault(block_id, []).append((pos, h, truncated))
        out: dict[str, tuple[np.ndarray, int]] = {}
        width = dim * 4
        sizes = dict(self.db.execute(
            "SELECT id, length(data) FROM vec_blocks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(where)),)))
        for block_id, items in where.items():
            if any((pos + 1) * width > (sizes.get(block_id) or 0) for pos, _, _ in items):
                raise self._damaged(f"vector block {block_id} is shorter than its rows")
            if hasattr(self.db, "blobopen"):  # Python 3.11+: read only the rows needed
                with self.db.blobopen("vec_blocks", "data", block_id, readonly=True) as blob:
                    for pos, h, truncated in items:
                        blob.seek(pos * width)
                        out[h] = (np.frombuffer(blob.read(width), "<f4").copy(), int(truncated))
            else:  # Python 3.10: substr() reads the same bytes through SQL
                for pos, h, truncated in items:
                    (raw,) = self.db.execute(
                        "SELECT substr(data, ?, ?) FROM vec_blocks WHERE id = ?",
                        (pos * width + 1, width, block_id)).fetchone()
                    out[h] = (np.frombuffer(raw, "<f4").copy(), int(truncated))
        return out

    def clear(self) -> None:
        """Drop every document, chunk, vector and setting (``--rebuild``)."""
        with self.transaction():
            self.db.execute("DELETE FROM chunks")  # triggers empty the FTS index
            self.db.execute("DELETE FROM documents")
            self.db.execute("DELETE FROM vec_blocks")
            self.db.execute("DELETE FROM settings")
            self._dim = None

    def compact(self) -> int:
        """Rewrite blocks holding deleted rows and merge small blocks, then write the lexical
        postings of every block still without them; returns blocks removed.

        Keeps ``load_matrix`` a few large sequential reads no matter how the index grew.
        """
        rows = self.db.execute("SELECT id, n, dead FROM vec_blocks ORDER BY id").fetchall()
        todo = [bid for bid, n, dead in rows if dead or n - dead < SMALL_BLOCK]
        dim = self.dimensions()
        if not dim or (len(todo) == 1 and not any(d for _, _, d in rows)):
            todo = []
        if not todo and not lexical.missing_blocks(self.db):
            return 0
        written = 0
        with self.transaction():
            if todo:
                written = self._merge_blocks(todo, dim)
            lexical.backfill(self.db)  # blocks written small and left alone
        return len(todo) - written

    def _merge_blocks(self, todo: list[int], dim: int) -> int:
        """Rewrite the live rows of blocks ``todo`` as new full blocks; returns blocks written."""
        import numpy as np

        ids_parts, vec_parts = [], []
        for bid in todo:
            n, rid, data = self.db.execute(
                "SELECT n, rowids, data FROM vec_blocks WHERE id = ?", (bid,)).fetchone()
            ids, vecs = self._block(bid, n, dim, rid, data)
            live = ids >= 0
            ids_parts.append(ids[live])
            vec_parts.append(vecs[live])
        self.db.execute("DELETE FROM vec_blocks WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps(todo),))
        ids = np.concatenate(ids_parts)
        vecs = np.concatenate(vec_parts)
        order = np.argsort(ids, kind="stable")
        return self._write_blocks(ids[order], vecs[order]) if ids.size else 0

    # -- internals -------------------------------------------------------------------------
    def _require_writer(self) -> None:
        if self.mode != "w":
            raise RagsiftError(f"index {self.path} is open read-only")

    def _check_dim(self, dim: int) -> None:
        have = self.dimensions()
        if have is None:
            self.set_settings(dimensions=dim)
        elif have != dim:
            raise RagsiftError(
                f"vectors have {dim} dimensions but index {self.path} holds {have}; "
                "use the index's model or --rebuild")

    def _write_blocks(self, ids: np.ndarray, vecs: np.ndarray,
                      small_postings: bool = True) -> int:
        """Vector blocks of ``BLOCK_ROWS`` and their lexical postings. ``small_postings=False``
        (``write_documents``): a block below ``SMALL_BLOCK`` rows gets its postings when
        ``compact`` merges it (or, left alone, backfills it), so they are built once, not
        here and again in the merge; until then readers use FTS5's bm25() (the same scores)."""
        import numpy as np

        n_blocks = 0
        for s in range(0, ids.shape[0], BLOCK_ROWS):
            part_ids = np.ascontiguousarray(ids[s:s + BLOCK_ROWS], "<i8")
            part = np.ascontiguousarray(vecs[s:s + BLOCK_ROWS], "<f4")
            cur = self.db.execute(
                "INSERT INTO vec_blocks(n, dead, dim, rowids, data) VALUES (?, 0, ?, ?, ?)",
                (part.shape[0], part.shape[1], part_ids.tobytes(), part.tobytes()))
            self.db.executemany(
                "UPDATE chunks SET block_id = ?, block_pos = ? WHERE id = ?",
                [(cur.lastrowid, pos, int(cid)) for pos, cid in enumerate(part_ids.tolist())])
            if small_postings or part.shape[0] >= SMALL_BLOCK:
                lexical.write_block(self.db, cur.lastrowid, part_ids.tolist())
            n_blocks += 1
        return n_blocks

    def _delete_document(self, doc_id: int) -> None:
        import numpy as np

        by_block: dict[int, list[int]] = {}
        for block_id, pos in self.db.execute(
                "SELECT block_id, block_pos FROM chunks WHERE doc_id = ? AND block_id IS NOT NULL",
                (doc_id,)):
            by_block.setdefault(block_id, []).append(pos)
        for block_id, positions in by_block.items():
            row = self.db.execute("SELECT n, dead, rowids FROM vec_blocks WHERE id = ?",
                                  (block_id,)).fetchone()
            if row is None:
                continue
            n, dead, rid = row
            ids = np.frombuffer(rid, "<i8").copy()
            newly = int((ids[positions] >= 0).sum())
            ids[positions] = -1
            if dead + newly >= n:
                self.db.execute("DELETE FROM vec_blocks WHERE id = ?", (block_id,))
            else:
                self.db.execute("UPDATE vec_blocks SET dead = ?, rowids = ? WHERE id = ?",
                                (dead + newly, ids.tobytes(), block_id))
        self.db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        self.db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


def inspect_file(path: str) -> str:
    """``"missing"``, ``"empty"`` (0 bytes) or ``"ours"``; raises for anything else.

    Reads the 100-byte SQLite header only, so a foreign file is never opened by SQLite
    (which could replay or create journals next to it).
    """
    try:
        st = os.stat(path)  # a symlink to a regular file is fine; its target is the index
    except FileNotFoundError:
        if os.path.lexists(path):
            raise RagsiftError(
                f"{path} is a symbolic link to a missing file; refusing to replace it") from None
        return "missing"
    except OSError as exc:
        raise RagsiftError(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        # never opened: reading a FIFO blocks, a device may have no end; nothing is replaced
        raise RagsiftError(
            f"{path} is {file_kind(st.st_mode)}, not an index file; refusing to touch it")
    if st.st_size == 0:
        return "empty"
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise RagsiftError(f"cannot read {path}: {exc.strerror}") from None
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        raise RagsiftError(
            f"{path} is not a ragsift index (not an SQLite database); refusing to touch it")
    if int.from_bytes(head[68:72], "big") != migrations.APPLICATION_ID:
        raise RagsiftError(
            f"{path} is an SQLite database but not a ragsift index; refusing to touch it")
    return "ours"


def _create(path: str) -> None:
    """Build a new, fully migrated index next to ``path`` and rename it into place.

    So a run killed while creating the index leaves either no index or a complete empty
    one, never a half-initialised file. (Caller holds the writer lock.)
    """
    import glob

    for stale in glob.glob(glob.escape(path) + ".creating-*"):  # from a killed creator
        with contextlib.suppress(OSError):
            os.unlink(stale)
    tmp = f"{path}.creating-{os.getpid()}"
    try:
        db = sqlite3.connect(sqlite_uri(tmp, "rwc"), uri=True, isolation_level=None)
        try:
            db.execute(f"PRAGMA page_size = {migrations.PAGE_SIZE}")
            db.execute(f"PRAGMA application_id = {migrations.APPLICATION_ID}")
            migrations.migrate(db)
        finally:
            db.close()
        os.replace(tmp, path)
    except BaseException:  # e.g. a full disk: leave nothing behind
        for leftover in (tmp, f"{tmp}-journal", f"{tmp}-wal", f"{tmp}-shm"):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
        raise


def sqlite_uri(path: str, mode: str, **params: int) -> str:
    """A ``file:`` URI that names exactly ``path``, whatever characters it holds.

    SQLite reads ``?`` and ``#`` in a URI as the start of parameters and a fragment and
    decodes ``%XX``; so the absolute path is percent-encoded byte for byte (``a?b.db`` must
    never open ``a``). ``mode``: ``ro``, ``rw`` or ``rwc``; ``params`` e.g. ``immutable=1``.
    """
    from urllib.parse import quote

    encoded = quote(os.fsencode(os.path.abspath(path)), safe="/")
    query = "&".join([f"mode={mode}", *(f"{k}={v}" for k, v in params.items())])
    return f"file:{encoded}?{query}"


_READONLY_CODES = (8, 14)  # SQLITE_READONLY, SQLITE_CANTOPEN (primary result codes)


def _connect_reader(path: str) -> sqlite3.Connection:
    """A connection for reading ``path``, also where the user cannot write.

    - File and folder writable: a normal connection with ``query_only`` (it may create the
      ``-shm``/``-wal`` files SQLite's WAL mode needs, as any reader does).
    - Otherwise ``mode=ro``: works where ``PATH-shm``/``PATH-wal`` exist or can be created.
    - Where they cannot (a folder the user cannot write) SQLite cannot coordinate with a
      writer, so the file is read as ``immutable``, which is only right when nothing is
      pending in ``PATH-wal`` and no writer holds the lock; otherwise one line says exactly
      what is missing. A healthy file is never reported as corrupt.
    """
    folder = os.path.dirname(os.path.abspath(path))
    kw: dict[str, Any] = {"uri": True, "isolation_level": None, "check_same_thread": False}
    if os.access(path, os.W_OK) and os.access(folder, os.W_OK):
        db = sqlite3.connect(sqlite_uri(path, "rw"), **kw)
        db.execute("PRAGMA query_only = 1")
        return db
    try:
        db = sqlite3.connect(sqlite_uri(path, "ro"), **kw)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens -shm/-wal
        except BaseException:
            db.close()
            raise
        return db
    except sqlite3.OperationalError as exc:
        if _result_code(exc) not in _READONLY_CODES:
            raise
    wal = f"{path}-wal"
    pending = os.path.exists(wal) and os.path.getsize(wal) > 0
    pid = holder_pid(path)  # a lock file exists only while (or if) a writer runs
    shm = f"{os.path.basename(path)}-shm"
    if pid:
        raise RagsiftError(
            f"cannot read index {path} read-only while PID {pid} writes it: reading alongside "
            f"a writer needs write access to {folder} (SQLite creates {shm} there); retry "
            "when the write is done")
    if pending:
        raise RagsiftError(
            f"cannot read index {path} read-only: {wal} holds commits not yet copied into "
            f"the index file (a write was interrupted), and reading them needs write access "
            f"to {folder} (SQLite creates {shm} there); any ragsift command run once by a "
            "user who can write there folds them in")
    db = sqlite3.connect(sqlite_uri(path, "ro", immutable=1), **kw)
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return db


def _result_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return code & 0xFF
    text = str(exc)
    if "readonly" in text:
        return 8
    if "unable to open" in text:
        return 14
    if "disk is full" in text:
        return 13
    if "disk I/O error" in text:
        return 10
    if "malformed" in text:
        return 11
    if "not a database" in text:
        return 26
    return None


def _check_writable(path: str, state: str) -> None:
    """Refuse, before taking the lock, to write an index the user cannot write."""
    folder = os.path.dirname(os.path.abspath(path))
    if state != "missing" and not os.access(path, os.W_OK):
        raise RagsiftError(
            f"index {path} is read-only (no write permission); `embed` must write it "
            "(query, explain and info read it as it is)")
    if not os.path.isdir(folder):
        raise RagsiftError(f"cannot create index {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise RagsiftError(
            f"cannot write in {folder} (no write permission): the index, its lock and its "
            "write-ahead log live there")


def _corrupt(path: str, exc: Exception) -> RagsiftError:
    code = _result_code(exc) if isinstance(exc, sqlite3.Error) else None
    if code in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB: the file itself is damaged
        return RagsiftError(f"index {path} is corrupt ({exc}); it was not modified")
    if code in _WRITE_FAILED:
        return write_error(path, exc)
    return RagsiftError(f"cannot use index {path}: {exc}; it was not modified")


_WRITE_FAILED = (13, 10)  # SQLITE_FULL, SQLITE_IOERR (a full disk, a file-size limit, EIO)


def write_error(path: str, exc: Exception) -> RagsiftError:
    """The one line for an SQLite error while writing ``path``: a full disk (or a file-size
    limit, or an I/O error) is ``EXIT_OUTPUT`` and says that committed batches are kept;
    anything else is a plain ``index PATH: error`` (exit 2)."""
    from ragsift.errors import EXIT_OUTPUT

    code = _result_code(exc) if isinstance(exc, sqlite3.Error) else None
    if code in _WRITE_FAILED:
        return RagsiftError(
            f"cannot write index {path}: {exc}; every batch committed before is kept, the "
            "next run continues from there", EXIT_OUTPUT)
    return RagsiftError(f"index {path}: {exc}")


def _record(row: tuple) -> ChunkRecord:
    (rowid, path, idx, text, start, end, context, tokens, chars, line_start, line_end,
     headings, page, level, content_hash, truncated) = row
    return ChunkRecord(
        rowid=rowid, path=path, index=idx, text=text, start=start, end=end,
        context=context or "", tokens=tokens, chars=chars if chars is not None else len(text),
        line_start=line_start, line_end=line_end, headings=tuple(json.loads(headings)),
        page=page, level=level or 0, content_hash=content_hash, truncated=int(truncated or 0))


def _write_errors_as_ragsift(method):
    """Wrap an ``IndexStore`` method that a writer calls: an SQLite error while writing (a full
    disk, an I/O error, a damaged file) becomes the one ``write_error`` line (the backend's
    own error mapping: callers above ``index/`` never see ``sqlite3``). A reader's errors are
    left as they are (its reads map them where they happen)."""
    import functools

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if self.mode != "w":
                raise
            raise write_error(self.path, exc) from None

    return call


for _name in ("settings", "dimensions", "set_settings", "documents_state", "write_documents",
              "touch_document", "remove_documents", "vectors_for_hashes", "clear", "compact",
              "stats"):
    setattr(IndexStore, _name, _write_errors_as_ragsift(getattr(IndexStore, _name)))
