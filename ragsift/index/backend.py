"""The index-backend contract: what readers (the ranking engine ``ragsift.retrieval.engine``,
``ls``, ``info``, the API) and writers (``embed``, ``rm``, ``tune --save``) need from an index on
disk, and nothing more.

- ``IndexReader``: an open snapshot, searched and listed.
- ``IndexWriter``: a reader holding the writer lock, plus what ingestion and removal write.
- ``FragmentCommits``: an optional writer capability, for ``embed --engine ray`` workers that
  write chunk rows themselves and a driver that commits them in one transaction. Checked by
  type (``isinstance(store, FragmentCommits)``), never by probing attributes.

Opening is ``ragsift.index.open_index(path, mode)``, which picks the backend. ``IndexStore``
(``store.py``, one SQLite file) and ``LanceIndex`` (``lance.py``) implement it and pass
``tests/test_backend_contract.py`` (reads and writes, unchanged for both). Each backend turns
its own storage errors into ``RagsiftError`` (a damaged index: exit 2 with ``--rebuild`` as the
way out; a full disk: exit 4). The written contract, with the guarantees each method owes, is
docs/CONTRACTS.md ("index backend").

Design rules:
- **Dense candidates are the backend's job.** The caller hands over query vectors and gets the
  best ``n`` (rowid, cosine) pairs back; it never holds the matrix, so a backend may scan an
  in-memory matrix (SQLite), an on-disk table or an ANN index.
- Scores are larger-is-better on both sides: cosine for dense, BM25 with its sign flipped
  for lexical.
- Order is total: score descending, then rowid ascending. Asking for more candidates never
  reshuffles the ones already returned (a prefix property the reject window relies on).
- A path filter is a set of document display paths (the engine turns ``--path GLOB`` into it
  with ``paths()``), the same for both sides.
- Records are typed both ways: what ingestion writes (``DocumentWrite`` of ``ChunkRow``) and
  what readers get (``ChunkRecord``, ``DocumentInfo``): frozen dataclasses, no dict lookups
  with fallbacks.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ragsift.errors import Action

if TYPE_CHECKING:
    import numpy as np


def rebuild_action(index: str, paths: str = "PATH...") -> Action:
    """What the error for a damaged index names as the way out: building ``index`` again
    from its documents (``paths``), ``ragsift embed PATH... --index INDEX --rebuild``."""
    return Action("build", paths, index=index, rebuild=True)


# Settings every backend stores and returns (``settings()``; None where unset). The tuned
# threshold is a dict: {"value", "queries", "k", "mode", "objective"} (``ragsift tune --save``).
SETTING_KEYS = (
    "model",
    "model_fingerprint",
    "dimensions",
    "chunker",
    "chunker_options",
    "embedder_options",
    "tuned_threshold",
    "evidence",
)


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One stored chunk: the fields of ``ragsift chunk`` plus ``rowid`` (the backend's id of
    the chunk, stable until the document is rewritten), ``content_hash`` and ``truncated``
    (tokens the embedder never saw)."""

    rowid: int
    path: str
    index: int
    text: str
    start: int | None = None
    end: int | None = None
    context: str = ""
    tokens: int | None = None
    chars: int = 0
    line_start: int | None = None
    line_end: int | None = None
    headings: tuple[str, ...] = ()
    page: int | None = None
    level: int = 0
    content_hash: str = ""
    truncated: int = 0

    @property
    def id(self) -> str:
        """``path#index``: the chunk id users see and label."""
        return f"{self.path}#{self.index}"

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (``ragsift chunk`` fields, headings as a list)."""
        return {
            **chunk_json(self),
            "rowid": self.rowid,
            "content_hash": self.content_hash,
            "truncated": self.truncated,
        }


def page_title(headings: Sequence[str]) -> str:
    """The page title of a heading trail: its first heading ("" for none): what
    ``IndexReader.page_titles`` answers on every backend."""
    return str(headings[0]) if headings else ""


def chunk_json(rec: ChunkRecord | ChunkRow) -> dict[str, Any]:
    """The ``ragsift chunk`` fields of a chunk record, in their order (an API), headings as a
    list: the one writer of that shape for both directions' records."""
    return {
        "id": rec.id,
        "path": rec.path,
        "index": rec.index,
        "text": rec.text,
        "start": rec.start,
        "end": rec.end,
        "context": rec.context,
        "tokens": rec.tokens,
        "chars": rec.chars,
        "line_start": rec.line_start,
        "line_end": rec.line_end,
        "headings": list(rec.headings),
        "page": rec.page,
        "level": rec.level,
    }


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """One indexed document, as ``ragsift ls`` shows it."""

    path: str
    key: str
    chunks: int
    tokens: int
    size: int | None
    mtime: float | None
    indexed_at: float
    format: str | None
    chunker: str
    sha256: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "key": self.key,
            "chunks": self.chunks,
            "tokens": self.tokens,
            "size": self.size,
            "mtime": self.mtime,
            "indexed_at": self.indexed_at,
            "format": self.format,
            "chunker": self.chunker,
            "sha256": self.sha256,
        }


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """One chunk as ingestion hands it to the index: the fields of ``ragsift chunk`` plus
    ``content_hash`` (the identity of its embedding input, what vector reuse keys on) and, once
    embedded, ``truncated`` (tokens the embedder never saw) and ``units`` (its unit evidence,
    ``embedders.evidence.encode``'s bytes). Made once in ingest (``ingest.records.chunk_row``
    from a chunk of a document, ``ingest.records.record_row`` from a stdin record), read by
    both writers. ``chars`` left out is the text's length."""

    path: str
    index: int
    text: str
    start: int | None = None
    end: int | None = None
    context: str = ""
    tokens: int | None = None
    chars: int | None = None  # None given: len(text) (``__post_init__``)
    line_start: int | None = None
    line_end: int | None = None
    headings: tuple[str, ...] = ()
    page: int | None = None
    level: int = 0
    content_hash: str = ""
    truncated: int = 0
    units: bytes | None = None

    def __post_init__(self) -> None:
        if self.chars is None:
            object.__setattr__(self, "chars", len(self.text))
        if not isinstance(self.headings, tuple):
            object.__setattr__(self, "headings", tuple(self.headings))

    @property
    def id(self) -> str:
        """``path#index``: the chunk id users see and label."""
        return f"{self.path}#{self.index}"

    def to_json(self, *, content_hash: bool = False) -> dict[str, Any]:
        """The ``ragsift chunk`` record (field names and order are an API; headings as a
        list); with ``content_hash``, that record plus its ``content_hash``."""
        out = chunk_json(self)
        if content_hash:
            out["content_hash"] = self.content_hash
        return out


@dataclass(frozen=True)
class DocumentWrite:
    """One document to (re)write: its rows replace whatever the index held under ``key``.

    ``records`` are its chunks in index order (a list given is kept as a tuple); ``vectors``
    is (len(records), dim) float32, row i belonging to record i (None until the batch is
    embedded: ``ingest.batch.Run.flush`` writes a new ``DocumentWrite`` with them).
    """

    key: str
    path: str
    sha256: str
    records: tuple[ChunkRow, ...]
    vectors: Any  # np.ndarray
    source: str = ""
    size: int | None = None
    mtime: float | None = None
    format: str | None = None
    chunker: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.records, tuple):
            object.__setattr__(self, "records", tuple(self.records))


@dataclass(frozen=True)
class DocState:
    """What the index remembers of a document, for change detection (``documents_state``)."""

    id: int
    key: str
    path: str
    source: str
    size: int | None
    mtime: float | None
    sha256: str
    chunker: str
    n_chunks: int


@runtime_checkable
class IndexReader(Protocol):
    """An open index (see module docstring and docs/CONTRACTS.md).

    Opened by ``ragsift.index.open_index(path, mode="r"|"w", wait=False)``: ``"w"`` takes the
    writer lock (a second writer is refused with ``RagsiftError`` naming the holder, or waits
    with ``wait=True``) and returns an ``IndexWriter``; readers never block and see one
    snapshot.
    """

    path: str
    mode: str

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None: ...
    def __enter__(self) -> IndexReader: ...
    def __exit__(self, *exc: object) -> None: ...
    def reading(self) -> AbstractContextManager[None]:
        """A context in which the backend's own read errors (a file damaged while open)
        become its one ``RagsiftError`` line."""
        ...

    # -- settings ------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """Every key of ``SETTING_KEYS`` (None where unset) plus any other stored setting."""
        ...

    # -- documents -----------------------------------------------------------------------
    def documents(self) -> list[DocumentInfo]:
        """Every document, by path."""
        ...

    def paths(self) -> list[str]:
        """Every document's display path, sorted."""
        ...

    # -- search --------------------------------------------------------------------------
    def count(self, paths: Collection[str] | None = None) -> int:
        """Chunks that can be searched (those with a vector), optionally of ``paths`` only."""
        ...

    def load(self) -> None:
        """Make searching ready (read what must be in memory); may do nothing."""
        ...

    def dense_candidates(
        self, qvecs: np.ndarray, n: int, paths: Collection[str] | None = None
    ) -> list[list[tuple[int, float]]]:
        """For each row of ``qvecs`` (m, dim) float32: its best ``n`` (rowid, cosine), in
        the total order. ``paths``: only chunks of these documents. A query's scores never
        depend on the other queries of the batch."""
        ...

    def cosines(self, qvec: np.ndarray, rowids: Sequence[int]) -> list[float | None]:
        """The cosine of ``qvec`` with each chunk (None where a rowid has no vector), computed
        exactly as ``dense_candidates`` computes it."""
        ...

    def unit_evidence(self, rowids: Sequence[int]) -> dict[int, bytes]:
        """Each chunk's unit evidence, ``ragsift.embedders.evidence.encode``'s bytes (the
        offsets and int8 vectors of its units), for those of ``rowids`` that have it."""
        ...

    def page_titles(self, rowids: Sequence[int]) -> dict[int, str]:
        """Each chunk's page title: the first heading of its trail (``ChunkRecord.headings[0]``),
        for those of ``rowids`` that have one (a chunk without headings, an empty title or an
        unknown rowid is left out). What the relevance score's title evidence reads
        (``ragsift.retrieval.relevance.title_share``)."""
        ...

    def lexical_candidates(
        self, text: str, n: int, paths: Collection[str] | None = None
    ) -> list[tuple[int, float]]:
        """The best ``n`` (rowid, BM25 score, larger is better) for the words of ``text``,
        in the total order. Never raises on user text; no words: []."""
        ...

    def stale(self) -> bool:
        """Reader: whether a writer may have committed since this snapshot (cheap; a
        long-lived reader calls ``refresh`` when it says so). Writers: False."""
        ...

    def refresh(self) -> None:
        """Reader: take a new snapshot (see commits made since opening)."""
        ...

    def release(self) -> None:
        """Reader: end the snapshot until the next read (``reading`` takes one again, seeing
        what was committed meanwhile), so that an idle reader holds nothing back. Writers and
        backends without such a hold: nothing to do."""
        ...

    def lexical_ceiling(self, text: str) -> float:
        """The largest BM25 any chunk could score for ``text`` (``Σ idf·(k1 + 1)`` over its
        query words, words no chunk holds included); 0.0 for a text without query words.
        ``lexical_candidates`` scores divided by it are the relevance score's lexical share
        (``ragsift.retrieval.relevance``)."""
        ...

    def rowids_of_paths(self, paths: Collection[str]) -> list[int]:
        """The rowids of every chunk of the documents at ``paths`` (any order)."""
        ...

    def chunk_records(self, rowids: Sequence[int]) -> list[ChunkRecord]:
        """Records for ``rowids``, in the order asked; ids not in the index are left out."""
        ...

    def chunks(self, rowids: Sequence[int]) -> list[dict]:
        """``chunk_records`` as ``ChunkRecord.as_dict`` dicts."""
        ...

    def document_chunks(self, path: str) -> list[dict]:
        """Every chunk of the document at display path ``path``, in index order."""
        ...

    def stats(self) -> dict:
        """Counts and sizes for ``info`` (documents, chunks, bytes, model, ...)."""
        ...

    def verify(self) -> list[str]:
        """``info --check``: every problem found reading the whole index (empty: sound)."""
        ...

    def dimensions(self) -> int | None:
        """The stored vectors' width (None: no vector yet)."""
        ...


@runtime_checkable
class IndexWriter(IndexReader, Protocol):
    """An index open for writing (``open_index(path, "w")``): the reader's methods plus what
    ``embed``, ``rm`` and ``tune --save`` write. Every method that writes is atomic: a
    process killed at any point leaves the index as after the last completed call (for a
    ``transaction``: as before it or after it, never between).

    Opening writes nothing (issue 40): a command that refuses the index after opening it (its
    evidence layout, its model) leaves it byte for byte as it was. The first write brings an
    older schema up to date and records the writer (``writer_stamp``) together with its own
    work, in the same transaction (Lance: in the commits just before it); ``compact`` of an
    index nothing was written to still brings its schema up to date."""

    def set_settings(self, **values: Any) -> None:
        """Store settings (JSON values) atomically."""
        ...

    def documents_state(self) -> dict[str, DocState]:
        """Every document by key: what change detection compares a file with."""
        ...

    def write_documents(self, docs: Sequence[DocumentWrite]) -> None:
        """Replace each document (by key) with its chunks and vectors, all in one atomic
        step: after a crash either every document of the call is written or none is."""
        ...

    def touch_document(
        self,
        key: str,
        *,
        path: str | None = None,
        size: int | None = None,
        mtime: float | None = None,
    ) -> None:
        """Record a document as unchanged: its display path, size and mtime (None: kept).
        Durable by the next commit or ``close`` at the latest (losing it to a crash only makes
        the next run hash the file again)."""
        ...

    def remove_documents(self, keys: Iterable[str]) -> int:
        """Delete documents by key with their chunks, lexical entries and vectors, in one
        atomic step; returns how many existed."""
        ...

    def vectors_for_hashes(
        self, hashes: Iterable[str]
    ) -> dict[str, tuple[np.ndarray, int, bytes | None]]:
        """The stored vector and truncation count of each content hash the index holds (vector
        reuse: a chunk text embedded once is never embedded again)."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Group writes into one atomic commit (``with store.transaction(): ...``)."""
        ...

    def compact(self) -> int:
        """Tidy storage after a run (merge small blocks/fragments); returns what was merged.
        Never changes what a reader sees."""
        ...

    def clear(self) -> None:
        """Drop every document, chunk, vector and setting (``--rebuild``)."""
        ...


def writer_stamp(settings: dict) -> dict[str, Any]:
    """What a writer records with its first write, given the index's ``settings``: itself
    (``written_by``, what ``info`` shows) and, where the index asks for less,
    ``min_writer_version`` (``ragsift.version.MIN_WRITER_VERSION``) and ``min_reader_version``;
    never lowered. Empty when all is recorded already. (The refusal of an index a newer
    ragsift bound is ``opening.check_versions``, before anything is written.)"""
    from ragsift.version import MIN_READER_VERSION, MIN_WRITER_VERSION, __version__, version_tuple

    stamp: dict[str, Any] = {}
    if settings.get("written_by") != __version__:
        stamp["written_by"] = __version__
    for key, floor in (
        ("min_writer_version", MIN_WRITER_VERSION),
        ("min_reader_version", MIN_READER_VERSION),
    ):
        have = settings.get(key)
        if floor and (not have or version_tuple(str(have)) < version_tuple(floor)):
            stamp[key] = floor
    return stamp


@runtime_checkable
class FragmentCommits(Protocol):
    """Optional writer capability (Lance): workers write chunk rows as uncommitted fragments
    with ``fragment_writer()``, rowids come from ``alloc_rowids``, rows are made by
    ``chunk_row``, and ``commit_fragments`` commits the documents, the fragments and the
    driver's own rows as ONE transaction."""

    def fragment_writer(self) -> Any:
        """A picklable callable for another process: ``writer(rows, vectors, dim)`` writes
        the chunk ``rows`` with their ``vectors`` as uncommitted fragments and returns their
        metadata (JSON strings) for ``commit_fragments``."""
        ...

    def chunk_row(self, doc_key: str, rowid: int, record: ChunkRow) -> dict:
        """The stored row of one chunk ``record`` of ``doc_key``."""
        ...

    def alloc_rowids(self, n: int) -> int:
        """Reserve ``n`` consecutive rowids; returns the first."""
        ...

    def commit_fragments(
        self,
        docs: Sequence[DocumentWrite],
        fragments: Sequence[str],
        rows: list[dict],
        vectors: list,
        dim: int,
    ) -> None:
        """Commit ``docs`` (replacing those keys), the workers' ``fragments`` and ``rows`` with
        ``vectors`` written here, as one transaction."""
        ...

    def discard_fragments(self, fragments: Sequence[str]) -> int:
        """Remove the files of ``fragments`` never committed (a run refused or interrupted
        after its workers wrote them), so a refusal leaves the index as it was; returns the
        files removed."""
        ...
