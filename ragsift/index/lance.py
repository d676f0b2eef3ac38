"""``LanceIndex``: the index as Lance datasets in a folder (``docs.lance``) or on object storage
(``s3://bucket/prefix.lance``): the second implementation of the backend contract
(``ragsift/index/backend.py``, docs/CONTRACTS.md), chosen by ``is_lance_location``.

Layout (the LanceDB layout, so ``lancedb.connect(LOCATION).open_table("chunks")`` reads it):
- ``chunks.lance``: one row per document (``kind = "doc"``: key, path, size, mtime, sha256, ...),
  one per chunk (``kind = "chunk"``: the ``ragsift chunk`` fields, ``content_hash``,
  ``truncated``, ``vector`` as fixed_size_list<float32, dim>, ``fts`` = context + text + the
  identifier terms of both, ``ragsift.index.terms.terms_text``: schema 2, and their CJK
  bigrams and unigrams: schema 4; kept for LanceDB users; ragsift builds no full-text index
  on it) and the postings (``kind = "lex"``: per batch
  of chunks, one row per term with the chunk ids holding it and how often, and the chunks'
  lengths: schema 3, ``lance_rows.lexical_rows``, ``lance_lexical``).
  Documents and their chunks live in ONE dataset so a write call is ONE Lance commit
  (``merge_insert`` keyed by ``uid``, deleting the replaced rows in the same commit): after a
  crash a call is either wholly visible or not at all, as on SQLite.
- ``settings.lance``: key -> JSON value (model fingerprint, chunker, tuned threshold, ...).

Search, so that a result means the same on both backends:
- Dense candidates and ``cosines``: the vector column is read once per open index and scanned
  exactly with the SQLite backend's own kernel (``ragsift.index.dense``): same scores to the
  last bit, same total order.
- Lexical candidates and ``lexical_ceiling``: the SQLite backend's BM25 (``lexical.py``: FTS5's
  ``unicode61`` + ``porter`` tokenizer, ``K1`` 0.9 / ``B`` 0.4, the live chunks' count and
  lengths as collection statistics), from the postings written with the chunks and scored by
  the function SQLite scores with (``lexical.score_postings``; ``lance_lexical``): the same ids,
  order, BM25 and ceiling, so the relevance score and its default threshold mean the same on
  both backends (``tests/test_backend_contract.py``, the answers test). A fresh write is found
  at once (its postings are in its commit). Query words: the same extraction and stop-word rule
  as SQLite, with the same identifier and CJK terms (``terms.query_terms``), OR-ed.
- Unit evidence: the same int8 blobs as SQLite (``units``), so the best unit scores the same.

Snapshots and the writer lock:
- A reader opens one dataset version and keeps it: every read of an open index agrees even
  while a writer commits (Lance versions are immutable); ``refresh()`` moves to the newest.
- A folder: the writer takes the same ``flock`` lock file as SQLite (``LOCATION-lock``), so a
  second writer is refused or waits. Object storage has no ``flock``: ragsift takes no lock
  there; Lance's commits are atomic (conditional put), so two writers cannot corrupt the
  index, but the later conflicting commit fails with an error and must be rerun. Run one
  writer per bucket index (e.g. one scheduled job).
- ``compact`` (the end of every ``embed`` and ``rm`` that wrote) keeps the newest version
  only (``KEEP_VERSIONS``, lance_compact.py; docs/scale.md, "What a Lance index keeps"): the
  files of older versions go. A reader whose snapshot was removed meanwhile moves to the
  newest version at the read that finds a file gone, and answers from it
  (``lance_damage.snapshot_removed``; tests/test_compaction.py).

Object storage credentials come from the environment as for any AWS client
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL`` for an
S3-compatible server, ``AWS_ALLOW_HTTP=true`` for a plain-http one).

This module: ``LanceIndex`` (opening, settings, reads and search, stats) and
``inspect_location``. The writing methods are the ``LanceWriter`` mixin (``lance_write.py``),
``compact`` the ``LanceCompaction`` mixin (``lance_compact.py``); the schema, row and fragment
helpers live in ``lance_rows.py``; the guard that reports damaged data files and follows a
removed snapshot in ``lance_damage.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.errors import Action, RagsiftError, Words
from ragsift.index.ann import sql_str as _sql_str
from ragsift.index.backend import (
    SETTING_KEYS,
    ChunkRecord,
    DocState,
    DocumentInfo,
    DocumentWrite,
    FragmentCommits,
    page_title,
)
from ragsift.index.lance_compact import LanceCompaction
from ragsift.index.lance_damage import guard
from ragsift.index.lance_rows import (
    CHUNK_FIELDS,
    DOC_FIELDS,
    join_uri,
    lance_module,
    storage_options,
)
from ragsift.index.lance_write import LanceWriter
from ragsift.index.locations import is_remote
from ragsift.index.terms import query_terms, query_words

if TYPE_CHECKING:
    import numpy as np

    from ragsift.index.lance_lexical import LancePostings

# 2: ``fts`` holds the identifier terms; 3: ragsift's own postings beside the chunks
# (``lance_lexical``: the SQLite backend's BM25); 4: the terms (``fts`` and postings) hold CJK
# bigrams and unigrams (issue 37). ``LanceWriter._upgrade`` brings older ones up.
SCHEMA_VERSION = 4
IDENTIFIER_SCHEMA = 2
POSTINGS_SCHEMA = 3
CJK_SCHEMA = 4
FORMAT = "ragsift-lance"


class LanceIndex(LanceWriter, LanceCompaction, FragmentCommits):
    """An open Lance index. Use ``LanceIndex.open(location, mode)`` as a context manager."""

    def __init__(self, path: str, mode: str, lock: Any) -> None:
        self.path = path
        self.mode = mode
        self._lock = lock
        self._opts = storage_options() if is_remote(path) else {}
        self._chunks_uri = join_uri(path, "chunks.lance")
        self._settings_uri = join_uri(path, "settings.lance")
        self._ds: Any = None  # chunks dataset (None: nothing written yet)
        self._settings_ds: Any = None
        self._docs: dict[str, dict] | None = None  # doc_key -> doc row (cached per version)
        self._dense: Any = None
        self._ann: Any = None
        self._touched: dict[str, dict] = {}  # writer: doc rows to rewrite at the next commit
        self._lex: LancePostings | None = None  # this version's postings (``lance_lexical``)
        self._next_rowid: int | None = None
        self._batch: list[DocumentWrite] | None = None  # inside ``transaction()``
        self._batch_removed: list[str] = []  # keys removed inside ``transaction()``
        self._closed = False
        self._schema_version = SCHEMA_VERSION  # the index's schema version (read when opened)
        self._recorded = True  # writer: the schema upgraded and the writer's stamp written
        self._upgrade_to: int | None = None  # writer: the schema its first write upgrades to

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, mode: str = "r", wait: bool = False) -> LanceIndex:
        path = os.fspath(path)
        if mode not in ("r", "w"):
            raise ValueError(f"mode must be 'r' or 'w', not {mode!r}")
        if not is_remote(path):
            path = path.rstrip("/") or path
        lance_module()
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
        lance = lance_module()
        try:
            return lance.dataset(uri, version=version, storage_options=self._opts or None)
        except (ValueError, FileNotFoundError, OSError) as exc:
            msg = str(exc)
            if (
                "not found" in msg.lower()
                or "does not exist" in msg.lower()
                or isinstance(exc, FileNotFoundError)
            ):
                return None
            raise RagsiftError(f"cannot read index {self.path}: {msg.splitlines()[0]}") from None

    def _open_datasets(self) -> None:
        local = not is_remote(self.path)
        if local and os.path.exists(self.path) and not os.path.isdir(self.path):
            raise RagsiftError(
                f"{self.path} is a file, not a Lance index folder; refusing to touch it"
            )
        self._settings_ds = self._dataset(self._settings_uri)
        if self._settings_ds is None:
            if local and os.path.isdir(self.path) and os.listdir(self.path):
                raise RagsiftError(
                    f"{self.path} is a folder but not a ragsift index; refusing to touch it"
                )
            if self.mode == "r":
                raise RagsiftError(
                    Words(
                        "no index at {at}; build one with: {build}",
                        {"at": self.path, "build": Action("build", "PATH", index=self.path)},
                    )
                )
            self._create()
        stored = self._raw_settings()
        if stored.get("format") != FORMAT:
            raise RagsiftError(f"{self.path} is not a ragsift index; refusing to use it")
        version = int(stored.get("schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise RagsiftError(
                f"index {self.path} has schema version {version}, newer than this ragsift "
                f"understands ({SCHEMA_VERSION}); upgrade ragsift"
            )
        self._ds = self._dataset(self._chunks_uri)
        self._schema_version = version
        # a writer upgrades an older schema before its first write (``_first_write``), never
        # here: a command may still refuse the index, and must leave it as it was (issue 40)
        self._recorded = self.mode != "w"
        self._upgrade_to = SCHEMA_VERSION if self.mode == "w" and version < SCHEMA_VERSION else None

    def _create(self) -> None:
        import pyarrow as pa

        lance = lance_module()
        table = pa.table(
            {
                "key": ["format", "schema_version"],
                "value": [json.dumps(FORMAT), json.dumps(SCHEMA_VERSION)],
            }
        )
        self._settings_ds = lance.write_dataset(
            table, self._settings_uri, mode="create", storage_options=self._opts or None
        )

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """Reads' errors as they are (``IndexStore.reading`` maps SQLite's)."""
        return contextlib.nullcontext()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.mode == "w" and self._touched:
                self._commit([])
        finally:
            self._ds = self._settings_ds = self._dense = self._ann = self._lex = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    @property
    def dataset(self) -> Any:
        """This snapshot's chunks dataset (None: nothing written yet), for ``ann``."""
        return self._ds

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> LanceIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stale(self) -> bool:
        """Reader: whether a newer version was committed than the one read (of the chunks or
        of the settings)."""
        if self.mode != "r":
            return False
        for uri, have in ((self._chunks_uri, self._ds), (self._settings_uri, self._settings_ds)):
            try:
                latest = self._dataset(uri)
            except Exception:
                continue
            if latest is None or have is None:
                if (latest is None) != (have is None):
                    return True
            elif latest.version != have.version:
                return True
        return False

    def release(self) -> None:
        """Reader: nothing to end (a Lance reader holds a version, which holds nothing back:
        compaction keeps the versions readers may be on; ``IndexStore.release``)."""

    def refresh(self) -> None:
        """Reader: move to the newest committed version."""
        self._settings_ds = self._dataset(self._settings_uri)
        self._ds = self._dataset(self._chunks_uri)
        self._schema_version = int(self._raw_settings().get("schema_version") or 0)
        self._docs = None
        self._dense = self._ann = self._lex = None

    # -- settings --------------------------------------------------------------------------
    def _raw_settings(self) -> dict[str, Any]:
        if self._settings_ds is None:
            return {}
        t = self._settings_ds.to_table(columns=["key", "value"])
        return {
            k: json.loads(v)
            for k, v in zip(t.column("key").to_pylist(), t.column("value").to_pylist())
        }

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: None for k in SETTING_KEYS}
        raw = self._raw_settings()
        out.update({k: v for k, v in raw.items() if k not in ("format",)})
        if out.get("dimensions") is None and self._ds is not None:
            out["dimensions"] = self.dimensions()
        out["schema_version"] = raw.get("schema_version", SCHEMA_VERSION)
        return out

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
                cols = ["doc_key", *DOC_FIELDS]
                t = self._ds.to_table(columns=cols, filter="kind = 'doc'")
                for row in t.to_pylist():
                    self._docs[row["doc_key"]] = row
            for key, row in self._touched.items():
                if key in self._docs:
                    self._docs[key] = row
        return self._docs

    def documents(self) -> list[DocumentInfo]:
        rows = sorted(self._doc_rows().values(), key=lambda r: (r["path"], r["doc_key"]))
        return [
            DocumentInfo(
                path=r["path"],
                key=r["doc_key"],
                chunks=r["n_chunks"],
                tokens=r["doc_tokens"] or 0,
                size=r["size"],
                mtime=r["mtime"],
                indexed_at=r["indexed_at"],
                format=r["format"],
                chunker=r["chunker"] or "",
                sha256=r["sha256"],
            )
            for r in rows
        ]

    def paths(self) -> list[str]:
        return sorted(r["path"] for r in self._doc_rows().values())

    def documents_state(self) -> dict:
        return {
            k: DocState(
                id=0,
                key=k,
                path=r["path"],
                source=r["source"] or "",
                size=r["size"],
                mtime=r["mtime"],
                sha256=r["sha256"],
                chunker=r["chunker"] or "",
                n_chunks=r["n_chunks"],
            )
            for k, r in self._doc_rows().items()
        }

    def keys_of_paths(self, paths: Collection[str]) -> list[str]:
        """The keys of the documents at ``paths``."""
        wanted = set(paths)
        return [k for k, r in self._doc_rows().items() if r["path"] in wanted]

    def rowids_of_paths(self, paths: Collection[str]) -> list[int]:
        """The rowids of every chunk of the documents at ``paths``."""
        return self._rowids_of_paths(paths)

    def _rowids_of_paths(self, paths: Collection[str]) -> list[int]:
        keys = self.keys_of_paths(paths)
        if not keys or self._ds is None:
            return []
        t = self._ds.to_table(
            columns=["rowid"], filter=f"kind = 'chunk' AND doc_key IN ({_sql_str(keys)})"
        )
        return t.column("rowid").to_pylist()

    # -- search ----------------------------------------------------------------------------
    def count(self, paths: Collection[str] | None = None) -> int:
        if self._ds is None:
            return 0
        if paths is None:
            return int(self._ds.count_rows("kind = 'chunk'"))
        keys = self.keys_of_paths(paths)
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

    def _use_ann(self) -> bool:
        """Whether dense reads go through the ANN index (``ann.use_ann``), once per snapshot."""
        from ragsift.index import ann

        if self._ann is None:
            self._ann = ann.use_ann(self, None)
        return self._ann

    def load(self) -> None:
        """Read the vector column into memory for the exact scan (nothing on the ANN path)."""
        if self._dense is None and not self._use_ann():
            from ragsift.index.dense import DenseMatrix

            self._dense = DenseMatrix(*self.load_matrix(), self._rowids_of_paths)

    def dense_candidates(
        self, qvecs: np.ndarray, n: int, paths: Collection[str] | None = None
    ) -> list[list[tuple[int, float]]]:
        from ragsift.index import ann

        if self._use_ann():
            return ann.candidates(self, qvecs, n, paths)
        self.load()
        return self._dense.candidates(qvecs, n, paths)

    def cosines(self, qvec: np.ndarray, rowids: Sequence[int]) -> list[float | None]:
        from ragsift.index import ann

        if self._use_ann():
            return ann.cosines(self, qvec, rowids)
        self.load()
        return self._dense.cosines(qvec, rowids)

    def unit_evidence(self, rowids: Sequence[int]) -> dict[int, bytes]:
        """Each chunk's unit evidence (``ragsift.embedders.evidence``), for those of
        ``rowids`` that have it."""
        if self._ds is None or "units" not in self._ds.schema.names:
            return {}
        return {r: u for r, u in self._chunk_column(rowids, "units") if u is not None}

    def page_titles(self, rowids: Sequence[int]) -> dict[int, str]:
        """Each chunk's page title (the first of its headings), for those of ``rowids`` that
        have one."""
        return {
            r: title
            for r, h in self._chunk_column(rowids, "headings")
            if (title := page_title(h or ()))
        }

    def _chunk_column(self, rowids: Sequence[int], column: str) -> list[tuple[int, Any]]:
        """``(rowid, value)`` of one column for the chunks among ``rowids`` (each once)."""
        ids = {int(r) for r in rowids}
        if not ids or self._ds is None:
            return []
        t = self._ds.to_table(
            columns=["rowid", column],
            filter=f"kind = 'chunk' AND rowid IN ({', '.join(map(str, sorted(ids)))})",
        )
        return list(zip(t.column("rowid").to_pylist(), t.column(column).to_pylist()))

    def lexical_candidates(
        self, text: str, n: int, paths: Collection[str] | None = None
    ) -> list[tuple[int, float]]:
        """BM25 candidates, larger is better: the SQLite backend's scores from the postings
        kept beside the chunks (``lance_lexical``); ``paths`` filters by document path."""
        if paths is not None:
            if not paths:
                return []
            ids = self._rowids_of_paths(paths)
            return [(r, -s) for r, s in self._lexical_search(text, n, ids)] if ids else []
        return [(r, -s) for r, s in self._lexical_search(text, n)]

    def _lexical_search(
        self, text: str, limit: int, rowids_filter: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """[(rowid, -bm25)] best first (the SQLite backend's ``lexical_search``); remembers the
        query's ceiling."""
        terms = self._query_terms(text)
        postings = self._lexical_postings()
        if postings is None or not terms:
            return []
        out: dict = {}
        hits = postings.search(terms, limit, rowids_filter, out)
        postings.ceilings[text] = out.get("ceiling", 0.0)
        if len(postings.ceilings) > 256:  # the ceilings of recent queries only
            postings.ceilings.pop(next(iter(postings.ceilings)))
        return hits

    def lexical_ceiling(self, text: str) -> float:
        """The largest BM25 any chunk could score for ``text`` (``lexical.ceiling``, from the
        same postings and collection statistics as the scores, so the same number as on the
        SQLite backend); 0.0 when the text has no query words."""
        if not query_words(text) or self._lexical_postings() is None:
            return 0.0
        if text not in self._lex.ceilings:
            self._lexical_search(text, 0)
        return self._lex.ceilings[text]

    def _lexical_postings(self) -> LancePostings | None:
        """This snapshot's postings (``lance_lexical``; read once per version), or None for an
        index without chunks."""
        if self._ds is None:
            return None
        if self._lex is None:
            from ragsift.index.lance_lexical import LancePostings

            self._lex = LancePostings.load(self._ds, cjk=self._schema_version >= CJK_SCHEMA)
        return self._lex

    def _query_terms(self, text: str) -> list[str]:
        """``terms.query_terms``: with identifier terms from schema 2 (an index written before
        holds none, so its queries ask for none), CJK runs by their bigrams from schema 4 (an
        index written before is searched for whole runs, as it was indexed)."""
        return query_terms(
            text, self._schema_version >= IDENTIFIER_SCHEMA, self._schema_version >= CJK_SCHEMA
        )

    def has_index(self, column: str) -> bool:
        """Whether this snapshot's chunks dataset has an index on ``column``."""
        return any(column in ix.field_names for ix in self._ds.describe_indices())

    def chunk_records(self, rowids: Sequence[int]) -> list[ChunkRecord]:
        ids = [int(r) for r in rowids]
        if not ids or self._ds is None:
            return []
        t = self._ds.to_table(
            columns=list(CHUNK_FIELDS),
            filter=f"kind = 'chunk' AND rowid IN ({', '.join(map(str, set(ids)))})",
        )
        docs = self._doc_rows()
        found = {}
        for r in t.to_pylist():
            found[r["rowid"]] = ChunkRecord(
                rowid=r["rowid"],
                path=docs[r["doc_key"]]["path"] if r["doc_key"] in docs else r["doc_key"],
                index=r["idx"],
                text=r["text"],
                start=r["start"],
                end=r["end"],
                context=r["context"] or "",
                tokens=r["tokens"],
                chars=r["chars"] if r["chars"] is not None else len(r["text"]),
                line_start=r["line_start"],
                line_end=r["line_end"],
                headings=tuple(r["headings"] or ()),
                page=r["page"],
                level=r["level"] or 0,
                content_hash=r["content_hash"] or "",
                truncated=int(r["truncated"] or 0),
            )
        return [found[i] for i in ids if i in found]

    def chunks(self, rowids: Sequence[int]) -> list[dict]:
        return [r.as_dict() for r in self.chunk_records(rowids)]

    def document_chunks(self, path: str) -> list[dict]:
        keys = self.keys_of_paths([path])
        if not keys:
            return []
        t = self._ds.to_table(
            columns=["rowid", "doc_key", "idx"],
            filter=f"kind = 'chunk' AND doc_key IN ({_sql_str(keys)})",
        )
        rows = sorted(t.to_pylist(), key=lambda r: (r["doc_key"], r["idx"]))
        return self.chunks([r["rowid"] for r in rows])

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
            "schema_version": self._schema_version,
            "version": self._ds.version if self._ds is not None else 0,
            "fragments": len(self._ds.get_fragments()) if self._ds is not None else 0,
            "versions": self._versions_kept(),
            "writer_pid": None if is_remote(self.path) else holder_pid(self.path),
        }

    def _versions_kept(self) -> int:
        """How many versions of the chunks dataset are on disk (readable snapshots; after a
        ``compact`` 1, see ``KEEP_VERSIONS``)."""
        if self._ds is None:
            return 0
        try:
            return len(self._ds.versions())
        except Exception:
            return 1

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


def inspect_location(path: str) -> str:
    """``"missing"`` or ``"ours"`` for a Lance location (raises for a foreign one)."""
    try:
        with LanceIndex.open(path, "r"):
            return "ours"
    except RagsiftError as exc:
        if str(exc).startswith("no index at"):
            return "missing"
        raise


guard(LanceIndex)
