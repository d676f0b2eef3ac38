"""The writer side of ``IndexStore`` (SQLite, mode ``"w"``): ``StoreWriter``, a mixin.

Transactions, settings, replacing and removing documents (their chunks, FTS entries and
vector blocks), vector reuse by content hash, ``clear``, ``compact`` (block merging and the
lexical postings' backfill), and ``verify``. The guarantees are those in ``store.py``'s
docstring; ``IndexStore`` (``store.py``) combines this with opening and reading.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError, Words
from ragsift.index import lexical, migrations
from ragsift.index.backend import DocumentWrite, writer_stamp
from ragsift.index.dense import as_f32
from ragsift.index.sqlite_file import write_error
from ragsift.index.terms import terms_text

if TYPE_CHECKING:
    import numpy as np

BLOCK_ROWS = 1024  # vectors per block written or compacted


class StoreWriter:
    """The writing methods of ``IndexStore`` (and ``verify``); not used on its own.

    Uses what ``IndexStore`` sets up: ``self.db`` (the ``sqlite3`` connection), ``self.path``,
    ``self.mode``, the caches ``self._dim``, ``self._dense``, ``self._postings`` and
    ``self._ceilings``, and the methods ``dimensions``, ``load_matrix``, ``_block``,
    ``_damaged`` and ``_small_block`` (``store.SMALL_BLOCK``, read at each call).
    """

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
        bad = q(
            "SELECT count(*) FROM documents d WHERE n_chunks != "
            "(SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)"
        ).fetchone()[0]
        if bad:
            problems.append(f"{bad} documents with a wrong chunk count")
        orphans = q(
            "SELECT count(*) FROM chunks WHERE doc_id NOT IN (SELECT id FROM documents)"
        ).fetchone()[0]
        if orphans:
            problems.append(f"{orphans} chunks without a document")
        for n, dead, rid in q("SELECT n, dead, rowids FROM vec_blocks"):
            ids = np.frombuffer(rid, "<i8")
            if ids.shape[0] != n or int((ids < 0).sum()) != dead:
                problems.append("a vector block disagrees with its counts")
                break
        if migrations.schema_version(self.db) >= 2:
            blocks = q("SELECT count(*) FROM vec_blocks").fetchone()[0]
            with_postings = q(
                "SELECT count(*) FROM lex_blocks WHERE block_id IN (SELECT id FROM vec_blocks)"
            ).fetchone()[0]
            if with_postings == blocks and lexical.Postings.load(self.db) is None:
                problems.append("lexical postings disagree with the FTS index (rows or tokens)")
        if self.mode == "w":  # FTS5's own check against the chunks table (a write statement)
            try:
                with self.transaction(work=False):
                    q("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"FTS index: {exc}")
        return problems

    # -- writing (mode "w") ----------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self, work: bool = True) -> Iterator[None]:
        """One write transaction; nested uses join the outer one. The first one that does
        ``work`` also brings an older schema up to date (``migrations.upgrade``) and records
        the writer (``backend.writer_stamp``) before the work, all committed together or not
        at all: opening wrote nothing, so a refusal before this point leaves the file byte
        for byte as it was (issue 40)."""
        self._require_writer()
        if self.db.in_transaction:
            yield
            return
        record = work and not self._recorded
        try:
            if record and self._wal_pending:  # not inside a transaction: SQLite's rule
                if self.db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
                    raise RagsiftError(f"cannot put index {self.path} in WAL mode")
                self._wal_pending = False
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise write_error(self.path, exc) from None
        try:
            if record:
                migrations.upgrade(self.db)
                self._record_writer()
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
        if record:
            self._recorded = True
        self._dense = None  # searches see the new rows
        self._postings = None
        self._ceilings = {}

    def _record_writer(self) -> None:
        """Inside the first write transaction: ``written_by`` and the version floors."""
        stamp = writer_stamp(
            {
                k: json.loads(v)
                for k, v in self.db.execute(
                    "SELECT key, value FROM settings WHERE key IN "
                    "('written_by', 'min_writer_version', 'min_reader_version')"
                )
            }
        )
        self.db.executemany(
            "INSERT INTO settings(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(k, json.dumps(v)) for k, v in stamp.items()],
        )

    def set_settings(self, **values: Any) -> None:
        with self.transaction():
            self.db.executemany(
                "INSERT INTO settings(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [(k, json.dumps(v)) for k, v in values.items()],
            )
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
                old = self.db.execute(
                    "SELECT id FROM documents WHERE key = ?", (doc.key,)
                ).fetchone()
                if old is not None:
                    self._delete_document(old[0])
                cur = self.db.execute(
                    "INSERT INTO documents(key, path, source, size, mtime, sha256, format, "
                    "chunker, n_chunks, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        doc.key,
                        doc.path,
                        doc.source,
                        doc.size,
                        doc.mtime,
                        doc.sha256,
                        doc.format,
                        doc.chunker,
                        len(doc.records),
                        now,
                    ),
                )
                doc_id = cur.lastrowid
                for rec, _vec in zip(doc.records, vecs):
                    cur = self.db.execute(
                        'INSERT INTO chunks(doc_id, idx, text, context, start, "end", tokens, '
                        "chars, line_start, line_end, headings, page, level, content_hash, "
                        "truncated, units, terms) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            doc_id,
                            rec.index,
                            rec.text,
                            rec.context,
                            rec.start,
                            rec.end,
                            rec.tokens,
                            rec.chars,
                            rec.line_start,
                            rec.line_end,
                            json.dumps(list(rec.headings)),
                            rec.page,
                            rec.level,
                            rec.content_hash,
                            rec.truncated,
                            rec.units,
                            terms_text(rec.context, rec.text),
                        ),
                    )
                    pending_ids.append(cur.lastrowid)
                if len(doc.records):
                    pending_vecs.append(vecs)
            if pending_ids:
                self._write_blocks(
                    np.asarray(pending_ids, np.int64),
                    np.concatenate(pending_vecs),
                    small_postings=False,
                )

    def touch_document(
        self,
        key: str,
        *,
        path: str | None = None,
        size: int | None = None,
        mtime: float | None = None,
    ) -> None:
        """Record a new size/mtime (content unchanged) or display path for ``key``."""
        with self.transaction():
            self.db.execute(
                "UPDATE documents SET path = coalesce(?, path), size = coalesce(?, size), "
                "mtime = coalesce(?, mtime) WHERE key = ?",
                (path, size, mtime, key),
            )

    def remove_documents(self, keys: Iterable[str]) -> int:
        removed = 0
        with self.transaction():
            for key in keys:
                row = self.db.execute("SELECT id FROM documents WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    self._delete_document(row[0])
                    removed += 1
        return removed

    def vectors_for_hashes(
        self, hashes: Iterable[str]
    ) -> dict[str, tuple[np.ndarray, int, bytes | None]]:
        """Stored vectors by chunk content hash: {hash: (vector, truncated, units)} for those
        found (``units``: the chunk's unit evidence, ``ragsift.embedders.evidence``)."""
        import numpy as np

        wanted = list(dict.fromkeys(hashes))
        dim = self.dimensions()
        if not wanted or not dim or migrations.schema_version(self.db) < 3:
            return {}  # before schema 3 (not migrated yet): no units, nothing reusable
        where: dict[int, list[tuple[int, str, int]]] = {}
        seen: set[str] = set()
        units: dict[str, bytes | None] = {}
        for h, block_id, pos, truncated, blob in self.db.execute(
            "SELECT content_hash, block_id, block_pos, truncated, units FROM chunks "
            "WHERE content_hash IN (SELECT value FROM json_each(?)) "
            "AND block_id IS NOT NULL",
            (json.dumps(wanted),),
        ):
            if h not in seen:
                seen.add(h)
                units[h] = blob
                where.setdefault(block_id, []).append((pos, h, truncated))
        out: dict[str, tuple[np.ndarray, int, bytes | None]] = {}
        width = dim * 4
        sizes = dict(
            self.db.execute(
                "SELECT id, length(data) FROM vec_blocks WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(where)),),
            )
        )
        for block_id, items in where.items():
            if any((pos + 1) * width > (sizes.get(block_id) or 0) for pos, _, _ in items):
                raise self._damaged(f"vector block {block_id} is shorter than its rows")
            if hasattr(self.db, "blobopen"):  # Python 3.11+: read only the rows needed
                with self.db.blobopen("vec_blocks", "data", block_id, readonly=True) as blob:
                    for pos, h, truncated in items:
                        blob.seek(pos * width)
                        out[h] = (
                            np.frombuffer(blob.read(width), "<f4").copy(),
                            int(truncated),
                            units[h],
                        )
            else:  # Python 3.10: substr() reads the same bytes through SQL
                for pos, h, truncated in items:
                    (raw,) = self.db.execute(
                        "SELECT substr(data, ?, ?) FROM vec_blocks WHERE id = ?",
                        (pos * width + 1, width, block_id),
                    ).fetchone()
                    out[h] = (np.frombuffer(raw, "<f4").copy(), int(truncated), units[h])
        return out

    def clear(self) -> None:
        """Drop every document, chunk, vector and setting (``--rebuild``)."""
        with self.transaction():
            self.db.execute("DELETE FROM chunks")  # triggers empty the FTS index
            self.db.execute("DELETE FROM documents")
            self.db.execute("DELETE FROM vec_blocks")
            # who may write and read it stays (``backend.writer_stamp``, recorded with this)
            self.db.execute(
                "DELETE FROM settings WHERE key NOT IN "
                "('written_by', 'min_writer_version', 'min_reader_version')"
            )
            self._dim = None

    def compact(self) -> int:
        """Rewrite blocks holding deleted rows and merge small blocks, then write the lexical
        postings of every block still without them; returns blocks removed.

        Keeps ``load_matrix`` a few large sequential reads no matter how the index grew.
        """
        if migrations.schema_version(self.db) < migrations.LATEST:
            with self.transaction():  # a run that wrote nothing still upgrades the schema
                pass
        rows = self.db.execute("SELECT id, n, dead FROM vec_blocks ORDER BY id").fetchall()
        todo = [bid for bid, n, dead in rows if dead or n - dead < self._small_block()]
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
                "SELECT n, rowids, data FROM vec_blocks WHERE id = ?", (bid,)
            ).fetchone()
            ids, vecs = self._block(bid, n, dim, rid, data)
            live = ids >= 0
            ids_parts.append(ids[live])
            vec_parts.append(vecs[live])
        self.db.execute(
            "DELETE FROM vec_blocks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(todo),),
        )
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
                Words(
                    "vectors have {dim} dimensions but index {at} holds {have}; use the "
                    "index's model or {rebuild}",
                    {"dim": dim, "at": self.path, "have": have},
                )
            )

    def _write_blocks(self, ids: np.ndarray, vecs: np.ndarray, small_postings: bool = True) -> int:
        """Vector blocks of ``BLOCK_ROWS`` and their lexical postings. ``small_postings=False``
        (``write_documents``): a block below ``SMALL_BLOCK`` rows gets its postings when
        ``compact`` merges it (or, left alone, backfills it), so they are built once, not
        here and again in the merge; until then readers use FTS5's bm25() (the same scores)."""
        import numpy as np

        n_blocks = 0
        for s in range(0, ids.shape[0], BLOCK_ROWS):
            part_ids = np.ascontiguousarray(ids[s : s + BLOCK_ROWS], "<i8")
            part = np.ascontiguousarray(vecs[s : s + BLOCK_ROWS], "<f4")
            cur = self.db.execute(
                "INSERT INTO vec_blocks(n, dead, dim, rowids, data) VALUES (?, 0, ?, ?, ?)",
                (part.shape[0], part.shape[1], part_ids.tobytes(), part.tobytes()),
            )
            self.db.executemany(
                "UPDATE chunks SET block_id = ?, block_pos = ? WHERE id = ?",
                [(cur.lastrowid, pos, int(cid)) for pos, cid in enumerate(part_ids.tolist())],
            )
            if small_postings or part.shape[0] >= self._small_block():
                lexical.write_block(self.db, cur.lastrowid, part_ids.tolist())
            n_blocks += 1
        return n_blocks

    def _delete_document(self, doc_id: int) -> None:
        import numpy as np

        by_block: dict[int, list[int]] = {}
        for block_id, pos in self.db.execute(
            "SELECT block_id, block_pos FROM chunks WHERE doc_id = ? AND block_id IS NOT NULL",
            (doc_id,),
        ):
            by_block.setdefault(block_id, []).append(pos)
        for block_id, positions in by_block.items():
            row = self.db.execute(
                "SELECT n, dead, rowids FROM vec_blocks WHERE id = ?", (block_id,)
            ).fetchone()
            if row is None:
                continue
            n, dead, rid = row
            ids = np.frombuffer(rid, "<i8").copy()
            newly = int((ids[positions] >= 0).sum())
            ids[positions] = -1
            if dead + newly >= n:
                self.db.execute("DELETE FROM vec_blocks WHERE id = ?", (block_id,))
            else:
                self.db.execute(
                    "UPDATE vec_blocks SET dead = ?, rowids = ? WHERE id = ?",
                    (dead + newly, ids.tobytes(), block_id),
                )
        self.db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        self.db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
