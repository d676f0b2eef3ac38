"""The writer side of ``LanceIndex`` (mode ``"w"``): ``LanceWriter``, a mixin.

Settings, transactions (writes inside are ONE Lance commit), replacing, touching and removing
documents, vector reuse by content hash, the ``FragmentCommits`` capability (rows written as
fragments by other processes, committed here), ``clear``, schema upgrades and ``verify``.
``compact`` is the ``LanceCompaction`` mixin (``lance_compact.py``). ``LanceIndex``
(``lance.py``) combines these with opening and reading; the guarantees are in ``lance.py``'s
docstring.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError, Words
from ragsift.index.ann import sql_str as _sql_str
from ragsift.index.backend import ChunkRow, DocumentWrite, writer_stamp
from ragsift.index.dense import as_f32 as _as_f32
from ragsift.index.lance_rows import (
    DOC_FIELDS,
    arrow_schema,
    chunk_row,
    lance_module,
    lex_fields,
    lexical_rows,
    rows_table,
    write_fragments,
)

if TYPE_CHECKING:
    import numpy as np

# settings a ``clear`` (``--rebuild``) keeps: what the index is, and who may write and read it
_KEPT_SETTINGS = (
    "format",
    "schema_version",
    "written_by",
    "min_writer_version",
    "min_reader_version",
)


class LanceWriter:
    """The writing methods of ``LanceIndex`` (and ``verify``); not used on its own.

    Uses what ``LanceIndex`` sets up: ``self.path``, ``self.mode``, ``self._opts``,
    ``self._chunks_uri``, ``self._settings_uri``, the datasets ``self._ds`` and
    ``self._settings_ds``, the caches ``self._docs``, ``self._dense``, ``self._ann``,
    ``self._lex``, and the writer's state ``self._touched``, ``self._next_rowid``,
    ``self._batch``, ``self._batch_removed``, ``self._recorded``, ``self._upgrade_to``,
    ``self._schema_version``; the methods ``_dataset``, ``_raw_settings``, ``_doc_rows``,
    ``dimensions``, ``count`` and ``load_matrix``; and ``LanceCompaction._merge_postings``
    (``lance_compact.py``) for a schema upgrade.
    """

    # -- settings --------------------------------------------------------------------------
    def set_settings(self, **values: Any) -> None:
        self._require_writer()
        if not values:
            return
        self._put_settings({**self._first_write(), **values})  # the stamp in the same commit

    def _put_settings(self, values: dict[str, Any]) -> None:
        """ONE commit of ``settings.lance``: ``values`` replace their keys."""
        import pyarrow as pa

        if not values:
            return
        table = pa.table({"key": list(values), "value": [json.dumps(v) for v in values.values()]})
        (
            self._settings_ds.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(table)
        )
        self._settings_ds = self._dataset(self._settings_uri)

    # -- the first write -------------------------------------------------------------------
    def _first_write(self) -> dict[str, Any]:
        """Before this writer's first write (opening wrote nothing, so that a refused command
        leaves the index as it was, issue 40): an older schema upgraded (``_upgrade``, which
        records the writer with the new schema number), else the writer's stamp
        (``backend.writer_stamp``) returned for the caller to commit with its own settings;
        {} once done."""
        if self._recorded:
            return {}
        stamp = writer_stamp(self._raw_settings())
        if self._upgrade_to is not None:
            self._upgrade(self._schema_version, self._upgrade_to, stamp)
            self._upgrade_to, stamp = None, {}
        self._recorded = True
        return stamp

    def _record_first(self) -> None:
        """``_first_write`` for a write of the chunks dataset: the stamp is committed to the
        settings just before it (two datasets, two commits: a crash between leaves a stamp
        that claims a write this version may make, never a write without it)."""
        self._put_settings(self._first_write())

    # -- vector reuse ----------------------------------------------------------------------
    def vectors_for_hashes(
        self, hashes: Iterable[str]
    ) -> dict[str, tuple[np.ndarray, int, bytes | None]]:
        import numpy as np

        wanted = list(dict.fromkeys(hashes))
        if not wanted or self._ds is None:
            return {}
        out: dict[str, tuple[np.ndarray, int, bytes | None]] = {}
        has_units = "units" in self._ds.schema.names
        cols = ["content_hash", "vector", "truncated"] + (["units"] if has_units else [])
        for lo in range(0, len(wanted), 2000):
            part = wanted[lo : lo + 2000]
            t = self._ds.to_table(
                columns=cols, filter=f"kind = 'chunk' AND content_hash IN ({_sql_str(part)})"
            )
            units = t.column("units").to_pylist() if has_units else [None] * t.num_rows
            for h, v, cut, u in zip(
                t.column("content_hash").to_pylist(),
                t.column("vector").to_pylist(),
                t.column("truncated").to_pylist(),
                units,
            ):
                if h not in out:
                    out[h] = (np.asarray(v, np.float32), int(cut or 0), u)
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

    def touch_document(
        self,
        key: str,
        *,
        path: str | None = None,
        size: int | None = None,
        mtime: float | None = None,
    ) -> None:
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
        if docs or removed or self._touched:  # something will be written
            self._record_first()
        vecs_of = [_as_f32(d.vectors, len(d.records)) for d in docs]
        dim = next((v.shape[1] for v, d in zip(vecs_of, docs) if len(d.records)), None)
        have = int(self._ds.schema.field("vector").type.list_size) if self._ds is not None else None
        have = self._fit_dimensions(dim, have)
        dim = have or dim or self.dimensions() or 1  # 1: no vector yet (see ``_reshape``)
        keep = {d.key: d for d in docs}  # the last write of a key wins, as in SQLite
        rows, flat = self._commit_rows(docs, vecs_of, keep, dim)
        if not rows["uid"]:
            if removed and self._ds is not None:
                self._ds.delete(f"doc_key IN ({_sql_str(removed)})")
                self._reopen()
            return
        self._write_table(_columns_table(rows, flat, dim), [d.key for d in keep.values()], removed)
        self._reopen()

    def _fit_dimensions(self, dim: int | None, have: int | None) -> int | None:
        """The index's vector size once a write of ``dim``-wide vectors may go into one of
        ``have`` (None: no vector to write, or no dataset yet): an index without chunks takes
        the write's size (``_reshape``); a different size otherwise is refused."""
        if dim is None or have is None or dim == have:
            return have
        if not self.count():
            self._reshape(dim)  # an index without vectors takes its first vectors' size
            return dim
        raise RagsiftError(
            Words(
                "vectors have {dim} dimensions but index {at} holds {have}; use the index's "
                "model or {rebuild}",
                {"dim": dim, "at": self.path, "have": have},
            )
        )

    def _commit_rows(
        self,
        docs: list[DocumentWrite],
        vecs_of: list[np.ndarray],
        keep: dict[str, DocumentWrite],
        dim: int,
    ) -> tuple[dict[str, list], list[np.ndarray]]:
        """``_commit``'s rows as columns (field -> values) and their vectors (one (1, dim)
        array per row, zeros for a document or postings row): each kept document's row and
        its chunks' (new ids), the chunks' postings (in the same commit as their chunks), and
        the pending touched document rows, which this takes."""
        import numpy as np

        now = time.time()
        rows: dict[str, list] = {f: [] for f in arrow_schema(dim).names}
        flat: list[np.ndarray] = []

        def add(vec: np.ndarray | None, **values: Any) -> None:
            for f in rows:
                rows[f].append(values.get(f))
            flat.append(np.zeros((1, dim), np.float32) if vec is None else vec.reshape(1, -1))

        rowid = self._alloc_rowids(sum(len(d.records) for d in keep.values()))
        written: list[dict] = []  # the chunk rows, for their postings
        for doc, vecs in zip(docs, vecs_of):
            if keep.get(doc.key) is not doc:
                continue
            self._touched.pop(doc.key, None)
            add(None, **_doc_row(doc, now))
            for rec, vec in zip(doc.records, vecs):
                written.append(chunk_row(doc.key, rowid, rec))
                add(vec, **written[-1])
                rowid += 1
        for row in lexical_rows(written):
            add(None, **row)
        for key, row in self._touched.items():
            add(None, uid="d:" + key, kind="doc", doc_key=key, **{f: row[f] for f in DOC_FIELDS})
        self._touched = {}
        return rows, flat

    def _write_table(self, table: Any, keys: list[str], removed: Sequence[str]) -> None:
        """``table`` committed: the dataset created with it, or merged in by ``uid`` with the
        old chunks of ``keys`` and every row of the ``removed`` keys deleted, one commit."""
        if self._ds is None:
            self._ds = lance_module().write_dataset(
                table, self._chunks_uri, mode="create", storage_options=self._opts or None
            )
            return
        merge = self._ds.merge_insert("uid").when_matched_update_all().when_not_matched_insert_all()
        gone = []
        if keys:
            gone.append(f"(kind = 'chunk' AND doc_key IN ({_sql_str(keys)}))")
        if removed:
            gone.append(f"doc_key IN ({_sql_str(removed)})")
        if gone:
            merge = merge.when_not_matched_by_source_delete(" OR ".join(gone))
        merge.execute(table)

    def writer_target(self) -> tuple[str, dict, bool]:
        """(chunks dataset URI, storage options, create) for ``write_fragments`` elsewhere."""
        return self._chunks_uri, dict(self._opts), self._ds is None

    def fragment_writer(self) -> Any:
        """``FragmentCommits``: a picklable writer of uncommitted fragments (``lance_rows``)."""
        from ragsift.index.lance_rows import FragmentWriter

        self._record_first()  # the fragments are written in this version's schema
        uri, options, create = self.writer_target()
        return FragmentWriter(uri, options, create)

    @staticmethod
    def chunk_row(doc_key: str, rowid: int, record: ChunkRow) -> dict:
        """``FragmentCommits``: the stored row of one chunk record."""
        from ragsift.index.lance_rows import chunk_row

        return chunk_row(doc_key, rowid, record)

    def alloc_rowids(self, n: int) -> int:
        """Reserve ``n`` chunk ids for rows written elsewhere; returns the first."""
        self._require_writer()
        return self._alloc_rowids(n)

    def commit_fragments(
        self,
        docs: Sequence[DocumentWrite],
        fragments: Sequence[str],
        rows: list[dict],
        vectors: list,
        dim: int,
    ) -> None:
        """ONE Lance commit of documents whose chunk rows were written as ``fragments`` by
        other processes (``write_fragments``): the replaced documents' old rows are deleted, the
        document rows (+ pending touched ones) and ``rows``/``vectors`` (chunks written here,
        e.g. reused vectors) are added, the fragments appended, all in one ``Update``."""
        from lance.fragment import FragmentMetadata

        self._require_writer()
        self._record_first()
        if self._ds is not None:
            self._fit_dimensions(dim, int(self._ds.schema.field("vector").type.list_size))
        now = time.time()
        rows, vectors = list(rows), list(vectors)
        for doc in docs:
            self._touched.pop(doc.key, None)
            rows.append(_doc_row(doc, now))
            vectors.append(None)
        for key, row in self._touched.items():
            rows.append(
                dict(uid="d:" + key, kind="doc", doc_key=key, **{f: row[f] for f in DOC_FIELDS})
            )
            vectors.append(None)
        replaced = [d.key for d in docs] + list(self._touched)
        self._touched = {}
        new = [FragmentMetadata.from_json(f) for f in fragments]
        if rows:
            new += [
                FragmentMetadata.from_json(f)
                for f in write_fragments(
                    self._chunks_uri,
                    rows_table(rows, vectors, dim),
                    self._opts,
                    create=self._ds is None,
                )
            ]
        if not new:
            return
        self._commit_new_fragments(new, replaced, dim)
        self._reopen()

    def _commit_new_fragments(self, new: list, replaced: list[str], dim: int) -> None:
        """ONE commit appending the ``new`` fragments (``FragmentMetadata``): an ``Overwrite``
        that creates the dataset, or an ``Update`` that also deletes every row of the
        ``replaced`` keys (fragments left empty removed, the others given deletion files)."""
        lance = lance_module()
        if self._ds is None:
            op = lance.LanceOperation.Overwrite(arrow_schema(dim), new)
            self._ds = lance.LanceDataset.commit(
                self._chunks_uri, op, storage_options=self._opts or None
            )
            return
        removed, updated = [], []
        pred = f"doc_key IN ({_sql_str(replaced)})" if replaced else None
        for frag in self._ds.get_fragments() if pred else ():
            after = frag.delete(pred)
            if after is None:
                removed.append(frag.fragment_id)
            elif after.num_deletions != frag.metadata.num_deletions:
                updated.append(after)
        op = lance.LanceOperation.Update(
            removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new
        )
        lance.LanceDataset.commit(
            self._chunks_uri,
            op,
            read_version=self._ds.version,
            storage_options=self._opts or None,
        )

    def discard_fragments(self, fragments: Sequence[str]) -> int:
        """Remove the data files of ``fragments`` (``write_fragments``' JSON) that the newest
        version does not use: a Ray run refused or interrupted after its workers wrote them
        (``ingest.ray``), so a refusal leaves the index as it was. In a folder only; on object
        storage they stay until ``compact``'s cleanup finds them a week old. Returns the
        files removed."""
        import os

        from ragsift.index.locations import is_remote

        if not fragments or is_remote(self.path):
            return 0
        used: set[str] = set()
        latest = self._dataset(self._chunks_uri)
        for frag in latest.get_fragments() if latest is not None else ():
            used.update(os.path.basename(f.path) for f in frag.metadata.files)
        removed = 0
        for meta in fragments:
            for file in json.loads(meta).get("files") or ():
                name = os.path.basename(str(file.get("path") or ""))
                if not name or name in used:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(self._chunks_uri, "data", name))
                    removed += 1
        return removed

    def _reshape(self, dim: int) -> None:
        """Rewrite an index holding documents but no chunk yet with ``dim``-wide vectors."""
        import pyarrow as pa

        old = self._ds.to_table(filter="kind = 'doc'")
        cols = {f: old.column(f) for f in old.schema.names if f != "vector"}
        cols["vector"] = pa.nulls(old.num_rows, pa.list_(pa.float32(), dim))
        table = pa.table(cols, schema=arrow_schema(dim))
        self._ds = lance_module().write_dataset(
            table, self._chunks_uri, mode="overwrite", storage_options=self._opts or None
        )

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
        self._dense = self._ann = self._lex = None

    def remove_documents(self, keys: Iterable[str]) -> int:
        self._require_writer()
        keys = list(dict.fromkeys(keys))
        if self._batch is not None:  # in a transaction: removed with its one commit
            pending = {d.key for d in self._batch}
            present = [
                k
                for k in keys
                if k in pending or (k in self._doc_rows() and k not in self._batch_removed)
            ]
            self._batch[:] = [d for d in self._batch if d.key not in present]
            for k in present:
                self._touched.pop(k, None)
            self._batch_removed.extend(k for k in present if k in self._doc_rows())
            return len(present)
        present = [k for k in keys if k in self._doc_rows()]
        if not present or self._ds is None:
            return 0
        self._record_first()
        for k in present:
            self._touched.pop(k, None)
        self._ds.delete(f"doc_key IN ({_sql_str(present)})")
        self._reopen()
        return len(present)

    def clear(self) -> None:
        """Drop every document, chunk, vector and setting (``--rebuild``)."""
        self._require_writer()
        self._record_first()
        self._touched = {}
        if self._ds is not None:
            self._ds.delete("true")
            self._reopen()
        keys = [k for k in self._raw_settings() if k not in _KEPT_SETTINGS]
        if keys:
            self._settings_ds.delete(f"key IN ({_sql_str(keys)})")
            self._settings_ds = self._dataset(self._settings_uri)
        self._next_rowid = None

    # -- schema upgrades -------------------------------------------------------------------
    def _upgrade(self, version: int, target: int, stamp: dict[str, Any]) -> None:
        """Bring an index of schema ``version`` to ``target`` (``lance.SCHEMA_VERSION``);
        a writer's first write does this first: it never adds rows of one schema to another.
        Schemas 2 and 4: every chunk's ``fts`` is recomputed from its context and text with the
        identifier terms (2) and the CJK terms (4) (``lance_rows.fts_text``; the rows it
        changes, one commit). Schema 3: the postings columns are added (empty) and every
        chunk's postings written (``_merge_postings``; one commit); schema 4 from 3: where a
        chunk's terms changed, every postings batch is written again from the chunks' text
        (``_rebuild_postings``; one commit). Then the version is recorded (a crash before
        that: the next writer does it again; a reader meanwhile reads the old schema's rule,
        with the missing postings built in memory), with the writer's ``stamp`` in the same
        settings commit. Done by the first write (``_first_write``), never by opening."""
        changed = False
        if version < 4 and self._ds is not None:
            changed = self._recompute_fts()
        if version < 3 and self._ds is not None:
            if "lex_term" not in self._ds.schema.names:
                self._ds.add_columns(lex_fields())
                self._reopen()
            self._merge_postings()
        elif version < 4 and changed:
            self._rebuild_postings()
        self._put_settings({**stamp, "schema_version": target})
        self._schema_version = target

    def _recompute_fts(self) -> bool:
        """Every chunk's ``fts`` with this version's terms (``lance_rows.fts_text``), the rows
        it changes in one commit; whether some changed."""
        import pyarrow as pa

        from ragsift.index.lance_rows import fts_text

        t = self._ds.to_table(columns=["uid", "context", "text", "fts"], filter="kind = 'chunk'")
        uids: list[str] = []
        fts: list[str] = []
        for uid, c, x, old in zip(
            t.column("uid").to_pylist(),
            t.column("context").to_pylist(),
            t.column("text").to_pylist(),
            t.column("fts").to_pylist(),
        ):
            new = fts_text(c or "", x or "")
            if new != old:
                uids.append(uid)
                fts.append(new)
        if uids:
            table = pa.table(
                {"uid": pa.array(uids, pa.string()), "fts": pa.array(fts, pa.string())}
            )
            self._ds.merge_insert("uid").when_matched_update_all().execute(table)
            self._reopen()
        return bool(uids)

    def _rebuild_postings(self) -> None:
        """Every live chunk's postings computed again from its context and text
        (``lance_rows.lexical_rows``: this version's terms), written as one batch in place of
        every stored one, in ONE commit."""
        t = self._ds.to_table(columns=["rowid", "context", "text"], filter="kind = 'chunk'")
        rows = lexical_rows(
            [
                {"kind": "chunk", "rowid": r, "context": c, "text": x}
                for r, c, x in zip(
                    t.column("rowid").to_pylist(),
                    t.column("context").to_pylist(),
                    t.column("text").to_pylist(),
                )
            ]
        )
        if not rows:
            self._ds.delete("kind = 'lex'")
        else:
            dim = int(self._ds.schema.field("vector").type.list_size)
            (
                self._ds.merge_insert("uid")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete("kind = 'lex'")
                .execute(rows_table(rows, [None] * len(rows), dim))
            )
        self._reopen()

    # -- indexes and checks ----------------------------------------------------------------
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


def _doc_row(doc: DocumentWrite, now: float) -> dict:
    """The stored row of a written document (``kind = "doc"``), indexed at ``now``."""
    return {
        "uid": "d:" + doc.key,
        "kind": "doc",
        "doc_key": doc.key,
        "path": doc.path,
        "source": doc.source,
        "size": doc.size,
        "mtime": doc.mtime,
        "sha256": doc.sha256,
        "format": doc.format,
        "chunker": doc.chunker,
        "n_chunks": len(doc.records),
        "doc_tokens": sum(r.tokens or 0 for r in doc.records),
        "indexed_at": now,
    }


def _columns_table(rows: dict[str, list], flat: list[np.ndarray], dim: int) -> Any:
    """An Arrow table of the chunks schema from ``_commit_rows``' columns and vectors (the
    vector null where the row is not a chunk)."""
    import numpy as np
    import pyarrow as pa

    schema = arrow_schema(dim)
    is_doc = np.array([k != "chunk" for k in rows["kind"]])
    matrix = np.concatenate(flat).astype(np.float32) if flat else np.zeros((0, dim), "f4")
    values = pa.array(matrix.reshape(-1), pa.float32())
    vector = pa.FixedSizeListArray.from_arrays(values, dim, mask=pa.array(is_doc))
    cols = {f: pa.array(rows[f], schema.field(f).type) for f in schema.names if f != "vector"}
    cols["vector"] = vector
    return pa.table(cols, schema=schema)
