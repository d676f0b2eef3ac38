"""``IndexStore``: the index on disk, one SQLite file in WAL mode (contract in docs/CONTRACTS.md).

Role: persistence only. It stores documents, chunks, vectors, settings and an FTS5 lexical
index, and answers reads; it never chunks, embeds or decides what is stale (the pipeline
does). Schema and its migrations: ``ragsift/index/migrations.py``.

This module: ``IndexStore`` (opening, lifecycle, settings, reads and search) and the wrapper
that maps a writer's SQLite errors. The writing methods are the ``StoreWriter`` mixin
(``store_write.py``); the file helpers (``inspect_file``, ``sqlite_uri``, ``write_error``, ...)
live in ``sqlite_file.py`` and are importable from here as before.

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
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import Action, RagsiftError, Words
from ragsift.index import lexical, migrations
from ragsift.index.backend import (
    SETTING_KEYS,
    ChunkRecord,
    DocState,
    DocumentInfo,
    page_title,
    rebuild_action,
)
from ragsift.index.locking import WriterLock, holder_pid
from ragsift.index.sqlite_file import (
    check_writable,
    connect_reader,
    corrupt,
    create_file,
    inspect_file,
    sqlite_uri,
    write_error,
)
from ragsift.index.store_write import StoreWriter
from ragsift.index.terms import query_terms, query_words

if TYPE_CHECKING:
    import numpy as np

SMALL_BLOCK = 256  # blocks with fewer live vectors are merged by ``compact``
MMAP_SIZE = 1 << 30  # readers map up to 1 GiB of the index file
IDENTIFIER_SCHEMA = 4  # from this schema chunks_fts holds identifier terms (migrations.m004)
CJK_SCHEMA = 6  # from this schema it holds CJK bigrams and unigrams (migrations.m006)

_CHUNK_COLUMNS = (
    'c.id, d.path, c.idx, c.text, c.start, c."end", c.context, c.tokens, c.chars, '
    "c.line_start, c.line_end, c.headings, c.page, c.level, c.content_hash, c.truncated"
)


class IndexStore(StoreWriter):
    """An open index file. Use ``IndexStore.open(path, mode)`` as a context manager."""

    def __init__(
        self, path: str, mode: str, db: sqlite3.Connection, lock: WriterLock | None
    ) -> None:
        self.path = path
        self.mode = mode
        self.db = db
        self._lock = lock
        self._dim: int | None = None
        self._dense: Any = None  # ragsift.index.dense.DenseMatrix, loaded by ``load``
        self._postings: Any = None  # lexical.Postings (False: lexical.scan answers instead)
        self._ceilings: dict[str, float] = {}  # query text -> BM25 ceiling (this snapshot)
        self._stamp: tuple = ()  # reader: the files' (mtime, size) when the snapshot began
        self._released = False  # reader: the snapshot ended by ``release``, taken again on a read
        self._recorded = True  # writer: the schema upgraded and the writer's stamp written
        self._wal_pending = False  # writer: WAL mode still to be set (before the first write)

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike,
        mode: str = "r",
        wait: bool | Callable[[int | None], None] = False,
    ) -> IndexStore:
        """Open ``path`` for reading (``"r"``) or writing (``"w"``, creates it, takes the lock).

        Raises ``RagsiftError`` for a missing index (``"r"``), a foreign or corrupt file, a
        path that is not a regular file (FIFO, device, directory, dangling symlink), a newer
        schema, an index that cannot be written (``"w"``), or a busy writer lock (unless
        ``wait``: True blocks; a callable is told the holder's PID first, then blocks).
        A reader that cannot write the index or its folder reads it read-only (see
        ``connect_reader``). Any character in ``path`` is fine: SQLite gets it percent-encoded.
        """
        path = os.fspath(path)
        if mode not in ("r", "w"):
            raise ValueError(f"mode must be 'r' or 'w', not {mode!r}")
        state = inspect_file(path)
        if mode == "r":
            if state == "missing":
                raise RagsiftError(
                    Words(
                        "no index at {at}; build one with: {build}",
                        {"at": path, "build": Action("build", "PATH", index=path)},
                    )
                )
            if state == "empty":
                raise RagsiftError(f"{path} is an empty file, not a ragsift index")
            return cls._open_reader(path)
        check_writable(path, state)
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
            db = connect_reader(path)
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
            raise corrupt(path, exc) from None

    @classmethod
    def _open_writer(cls, path: str, state: str, lock: WriterLock) -> IndexStore:
        try:
            if state in ("missing", "empty"):
                create_file(path)
            db = sqlite3.connect(
                sqlite_uri(path, "rw"),
                uri=True,
                isolation_level=None,
                timeout=30,
                check_same_thread=False,
            )
            store = cls(path, "w", db, lock)
            # Nothing is written here (issue 40): a command may still refuse the index (its
            # evidence layout, its model), and must leave it as it was. The missing
            # migrations, WAL mode and the writer's stamp come with the first write
            # (``StoreWriter.transaction``).
            store._check_schema(writable=True)
            if migrations.schema_version(db) == 0:  # holds no index yet: nothing to keep
                migrations.migrate(db)
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                store._wal_pending = True  # a file put out of WAL mode by another tool
            db.execute("PRAGMA synchronous = NORMAL")
            store._recorded = False
            return store
        except sqlite3.DatabaseError as exc:
            raise corrupt(path, exc) from None

    def _check_schema(self, writable: bool) -> None:
        app_id = self.db.execute("PRAGMA application_id").fetchone()[0]
        if app_id != migrations.APPLICATION_ID:
            raise RagsiftError(f"{self.path} is not a ragsift index; refusing to use it")
        version = migrations.schema_version(self.db)
        if version > migrations.LATEST:
            raise RagsiftError(
                f"index {self.path} has schema version {version}, newer than this ragsift "
                f"understands ({migrations.LATEST}); upgrade ragsift"
            )
        if not writable and version < migrations.OLDEST_READABLE:
            if version == 0:
                raise RagsiftError(f"index {self.path} is empty: no run has committed yet")
            raise RagsiftError(
                Words(
                    "index {at} has schema version {version}; run `{build}` once to upgrade it",
                    {"at": self.path, "version": version, "build": Action("build")},
                )
            )
        if version >= 1:
            names = {
                r[0]
                for r in self.db.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                )
            }
            missing = {"settings", "documents", "chunks", "vec_blocks", "chunks_fts"} - names
            if missing:
                raise RagsiftError(
                    f"index {self.path} is damaged (missing tables: {', '.join(sorted(missing))})"
                )

    def close(self) -> None:
        if self.db is None:
            return
        try:
            # a reader's snapshot ends, a writer's uncommitted batch is dropped; on a file
            # damaged while open this fails too, and must not hide the error that got here
            with contextlib.suppress(sqlite3.DatabaseError):
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK" if self.mode == "w" else "COMMIT")
                if self.mode == "w":
                    self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            self.db.close()
            self.db = None  # type: ignore[assignment]
            if self._lock is not None:
                self._lock.release()

    @contextlib.contextmanager
    def reading(self):
        """A read's SQLite error (a file damaged or cut while it is open) as the one line
        opening it would give ("index ... is corrupt ...; --rebuild"): what ``api.Index``
        wraps every read in. A reader whose snapshot was ended by ``release`` takes one again
        first (``_resume``)."""
        try:
            if self._released:
                self._resume()
            yield
        except sqlite3.DatabaseError as exc:
            raise corrupt(self.path, exc) from None

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def refresh(self) -> None:
        """Reader: drop the snapshot and take a new one (see commits made since opening)."""
        if self.mode == "r":
            self._forget(self._file_stamp())
            if self.db.in_transaction:  # not after ``release``
                self.db.execute("COMMIT")
            self.db.execute("BEGIN")
            self.db.execute("SELECT count(*) FROM settings").fetchone()
            self._released = False

    def _forget(self, stamp: tuple) -> None:
        """Reader: drop what was read from the old snapshot; ``stamp`` is the new one's."""
        self._dense, self._postings, self._ceilings, self._stamp = None, None, {}, stamp

    def release(self) -> None:
        """Reader: end the snapshot until the next read (``reading`` takes one again), so an
        idle reader (the MCP server between calls) does not hold the write-ahead log back: no
        checkpoint resets it past an open snapshot, and every write would append to it."""
        if self.mode == "r" and not self._released:
            self.db.execute("COMMIT")
            self._released = True

    def _resume(self) -> None:
        """Reader: take the snapshot ``release`` ended. What was read before (the matrix, the
        postings) is kept only if the files' stamp before and after ``BEGIN`` is the old one
        (a commit in between: one refresh too many at the next ``stale``, never too few)."""
        before = self._file_stamp()
        self.db.execute("BEGIN")
        try:
            self.db.execute("SELECT count(*) FROM settings").fetchone()
        except BaseException:  # damaged meanwhile: still released, the next read tries again
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise
        self._released = False
        if before != self._stamp or self._file_stamp() != before:
            self._forget(before)

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
            "SELECT id, n, dead, rowids, data FROM vec_blocks ORDER BY id"
        ):
            ids, vecs = self._block(block_id, n, dim, rid_blob, data)
            if dead:
                live = ids >= 0
                ids, vecs = ids[live], vecs[live]
            m = ids.shape[0]
            rowids[k : k + m] = ids
            matrix[k : k + m] = vecs
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
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        ):
            found[row[0]] = _record(row)
        return [found[i] for i in ids if i in found]

    def chunks(self, rowids: Sequence[int]) -> list[dict]:
        """``chunk_records`` as dicts (the JSON shape: ``ragsift chunk`` fields plus
        ``rowid``, ``content_hash``, ``truncated``)."""
        return [r.as_dict() for r in self.chunk_records(rowids)]

    def document_chunks(self, path: str) -> list[dict]:
        """All chunk records of the document with display path ``path``, in order."""
        return [
            _record(row).as_dict()
            for row in self.db.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.doc_id "
                "WHERE d.path = ? ORDER BY d.id, c.idx",
                (path,),
            )
        ]

    # -- search (the backend contract, ragsift/index/backend.py) ---------------------------
    def count(self, paths: Collection[str] | None = None) -> int:
        """Chunks that can be searched (those with a vector), optionally of ``paths`` only."""
        if paths is None:
            return int(
                self.db.execute("SELECT coalesce(sum(n - dead), 0) FROM vec_blocks").fetchone()[0]
            )
        return int(
            self.db.execute(
                "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE "
                "c.block_id IS NOT NULL AND d.path IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(paths)),),
            ).fetchone()[0]
        )

    def load(self) -> None:
        """Read the vector matrix into memory (once per open store)."""
        if self._dense is None:
            from ragsift.index.dense import DenseMatrix

            self._dense = DenseMatrix(*self.load_matrix(), self._rowids_of_paths)

    def dense_candidates(
        self, qvecs: np.ndarray, n: int, paths: Collection[str] | None = None
    ) -> list[list[tuple[int, float]]]:
        """Exact cosine top ``n`` per query vector (``ragsift.index.dense``)."""
        self.load()
        return self._dense.candidates(qvecs, n, paths)

    def cosines(self, qvec: np.ndarray, rowids: Sequence[int]) -> list[float | None]:
        self.load()
        return self._dense.cosines(qvec, rowids)

    def unit_evidence(self, rowids: Sequence[int]) -> dict[int, bytes]:
        """Each chunk's unit evidence (``ragsift.embedders.evidence.encode``'s bytes), for
        those of ``rowids`` that have it (an index from before schema 3 has none)."""
        if migrations.schema_version(self.db) < 3:
            return {}
        return {r: b for r, b in self._chunk_column(rowids, "units") if b is not None}

    def page_titles(self, rowids: Sequence[int]) -> dict[int, str]:
        """Each chunk's page title (the first of its headings), for those of ``rowids`` that
        have one."""
        rows = self._chunk_column(rowids, "headings")
        return {r: t for r, h in rows if (t := page_title(json.loads(h) if h else ()))}

    def _chunk_column(self, rowids: Sequence[int], column: str) -> list[tuple[int, Any]]:
        """``(rowid, value)`` of one column (a name of this module's, never a user's) for the
        chunks among ``rowids``."""
        ids = [int(r) for r in rowids]
        if not ids:
            return []
        return self.db.execute(
            f"SELECT id, {column} FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        ).fetchall()

    def lexical_candidates(
        self, text: str, n: int, paths: Collection[str] | None = None
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
        return [
            r[0]
            for r in self.db.execute(
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id "
                "WHERE d.path IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(paths)),),
            )
        ]

    def documents(self) -> list[DocumentInfo]:
        """Every document (with its chunk and token counts), by path."""
        return [
            DocumentInfo(*row)
            for row in self.db.execute(
                "SELECT d.path, d.key, d.n_chunks, coalesce((SELECT sum(tokens) FROM chunks c "
                "WHERE c.doc_id = d.id), 0), d.size, d.mtime, d.indexed_at, d.format, d.chunker, "
                "d.sha256 FROM documents d ORDER BY d.path, d.key"
            )
        ]

    def lexical_search(
        self, query: str, limit: int, rowids_filter: Iterable[int] | None = None
    ) -> list[tuple[int, float]]:
        """BM25 over ``context + text``: [(rowid, -bm25)] best first, at most ``limit``.

        The score has the sign of FTS5's ``bm25()``: negative, more negative is better; its
        constants are ``lexical.K1``/``lexical.B`` on every path. The query is never passed
        as FTS5 syntax: its words (letters/digits runs) and, from schema 4, its identifiers'
        terms (``terms.query_terms``: ``url_for`` also as the whole ``urlfor``) and, from
        schema 6, CJK runs by their bigrams (``文件上传``: ``文件 件上 上传``) are each quoted
        and OR-ed, so punctuation, quotes or operators in user text cannot raise. No words: [].
        """
        schema = migrations.schema_version(self.db)
        terms = query_terms(query, schema >= IDENTIFIER_SCHEMA, schema >= CJK_SCHEMA)
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
        return {
            r[1]: DocState(*r)
            for r in self.db.execute(
                "SELECT id, key, path, source, size, mtime, sha256, chunker, n_chunks "
                "FROM documents"
            )
        }

    def stats(self) -> dict:
        q = self.db.execute
        docs = q("SELECT count(*) FROM documents").fetchone()[0]
        n_chunks, truncated, tokens = q(
            "SELECT count(*), coalesce(sum(truncated > 0), 0), coalesce(sum(tokens), 0) FROM chunks"
        ).fetchone()
        vectors, dead, blocks = q(
            "SELECT coalesce(sum(n - dead), 0), coalesce(sum(dead), 0), count(*) FROM vec_blocks"
        ).fetchone()
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(self.path + suffix)
        # pages freed by deletes and rewrites, which later writes reuse (no VACUUM: the file
        # never shrinks under a reader); bench/RESULTS.md, "Lance stays compact"
        free = q("PRAGMA freelist_count").fetchone()[0] * q("PRAGMA page_size").fetchone()[0]
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
            "free_bytes": free,
            "schema_version": migrations.schema_version(self.db),
            "writer_pid": holder_pid(self.path),
        }

    def _block(
        self, block_id: int, n: int, dim: int, rid: bytes, data: bytes
    ) -> tuple[np.ndarray, np.ndarray]:
        """One vector block's (rowids, vectors), after checking that its bytes hold the ``n``
        rows its counts say (a truncated or foreign blob is damage, not a reshape error)."""
        import numpy as np

        if len(rid) != 8 * n or len(data) != 4 * n * dim:
            raise self._damaged(
                f"vector block {block_id} holds {len(data)} bytes of vectors "
                f"and {len(rid)} of rowids for {n} rows of {dim} dimensions "
                f"({4 * n * dim} and {8 * n} expected)"
            )
        return np.frombuffer(rid, "<i8"), np.frombuffer(data, "<f4").reshape(n, dim)

    def _damaged(self, what: str) -> RagsiftError:
        return RagsiftError(
            Words(
                "index damaged: {at}: {what}; rebuild it with `{rebuild}`",
                {"at": self.path, "what": what, "rebuild": rebuild_action(self.path)},
            )
        )

    @staticmethod
    def _small_block() -> int:
        """``SMALL_BLOCK`` as this module holds it now (``StoreWriter`` reads it here, at each
        call, so that a test may set ``store.SMALL_BLOCK``)."""
        return SMALL_BLOCK


def _record(row: tuple) -> ChunkRecord:
    """A row of ``_CHUNK_COLUMNS`` as the record readers get."""
    r = dict(zip(_RECORD_FIELDS, row))
    r["context"] = r["context"] or ""
    r["chars"] = r["chars"] if r["chars"] is not None else len(r["text"])
    r["headings"] = tuple(json.loads(r["headings"]))
    r["level"] = r["level"] or 0
    r["truncated"] = int(r["truncated"] or 0)
    return ChunkRecord(**r)


# the ChunkRecord field of each column of ``_CHUNK_COLUMNS``, in order
_RECORD_FIELDS = (
    "rowid path index text start end context tokens chars line_start line_end headings page "
    "level content_hash truncated"
).split()


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


for _name in (
    "settings",
    "dimensions",
    "set_settings",
    "documents_state",
    "write_documents",
    "touch_document",
    "remove_documents",
    "vectors_for_hashes",
    "clear",
    "compact",
    "stats",
):
    setattr(IndexStore, _name, _write_errors_as_ragsift(getattr(IndexStore, _name)))
