"""The Python API for the whole job: build or update an index, search it with a threshold, and
read the retrieval record. The command line is a thin layer over the same calls.

    import ragsift.api as rs

    summary = rs.build("docs.db", ["docs/"])          # chunk, embed, index (incremental)
    with rs.open_index("docs.db") as index:
        r = index.query("how do I rotate the logs", k=3)
        for hit in r.admitted:                        # ragsift.retrieval.Candidate records
            print(f"{hit.score:.2f} {hit.location}")
        r.as_dict()                                   # the record `query --json` prints

Thresholds follow the CLI's policy (``ragsift.retrieval.threshold``): ``threshold="auto"``
(the default) uses the one ``tune --save`` stored in the index, else the model's measured
default; ``None`` disables the floor; a number is used as given. Errors a user can fix raise
``ragsift.errors.RagsiftError`` (``exit_code`` says what the CLI would exit with).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.exports import EXPORTS, RENAMED
from ragsift.retrieval.request import DEFAULT_MODE, check_mode

if TYPE_CHECKING:
    from ragsift.index.backend import DocumentInfo
    from ragsift.ingest import BuildRequest, EmbedProgress, EmbedSummary
    from ragsift.retrieval.hybrid import Fusion
    from ragsift.retrieval.records import Hit
    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.search import Searcher
    from ragsift.retrieval.threshold import ThresholdInForce
    from ragsift.retrieval.topk import Retrieval
    from ragsift.sources.sourcefile import Skipped
    from ragsift.tuning import TuneReport

AUTO = "auto"  # the threshold argument's default (``ragsift.retrieval.threshold.AUTO``)


def __getattr__(name: str) -> Any:
    """A name of ``ragsift.exports``' table, imported from its layer on first use."""
    import importlib

    if name in EXPORTS:
        module, attr = EXPORTS[name], name
    elif name in RENAMED:
        module, attr = RENAMED[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


__all__ = [
    "AUTO",
    "Index",
    "RagsiftError",
    "Search",
    "build",
    "check_query",
    "open_index",
    "remove",
    "watch",
    *EXPORTS,
    *RENAMED,
]


def build(
    index: str | os.PathLike | None = None,
    paths: Iterable[str | os.PathLike] | str | os.PathLike | None = None,
    *,
    request: BuildRequest | None = None,
    on_skip: Callable[[Skipped], None] | None = None,
    on_warning: Callable[[str, str], None] | None = None,
    progress: EmbedProgress | None = None,
    **keywords: Any,
) -> EmbedSummary:
    """``ragsift embed PATHS --index INDEX``: create or update the index (only changed files
    are re-embedded). The run is one ``BuildRequest``: ``request``, made already (alone: no
    ``index``, ``paths`` or keywords beside it), or the one ``BuildRequest.of(index, paths,
    **keywords)`` makes from the keywords, its one list (``model``: an ONNX model folder,
    ``multilingual`` or an endpoint URL, None: the index's own, else the bundled
    all-MiniLM-L6-v2; the embedder options ``pooling``, ``normalize``, ``max_length``,
    ``query_prefix``, ``passage_prefix``; ``include``, ``exclude``, ``follow_links``,
    ``max_file_size``, ``root``: which files are read and how they are stored; ``chunker``, or
    ``chunking``: its options, for a chunker made for the model; ``rebuild``, ``prune``,
    ``wait``, ``batch_size``, ``stdin_lines`` with ``paths == ["-"]``; ``engine``: "local" or
    "ray", ``ray_address``; ``embedder``: an embedder object to use instead of loading
    ``model``); an unknown keyword is a ``TypeError``. Where the run reports, beside the
    request: ``on_skip(s)`` for each file that cannot be used, ``on_warning(path, message)``
    for each warning, ``progress`` (an ``EmbedProgress``). Returns the run's
    ``EmbedSummary`` (``skipped`` lists files that could not be used)."""
    from ragsift.ingest import build_index
    from ragsift.ingest.request import BuildHooks

    request = _build_request(index, paths, request, keywords, "build")
    return build_index(request, BuildHooks(on_skip, on_warning, progress))


def watch(
    index: str | os.PathLike | None = None,
    paths: Iterable[str | os.PathLike] | str | os.PathLike | None = None,
    *,
    request: BuildRequest | None = None,
    on_skip: Callable[[Skipped], None] | None = None,
    on_warning: Callable[[str, str], None] | None = None,
    progress: EmbedProgress | None = None,
    stop: Any = None,
    on_run: Callable[[Any], None] | None = None,
    on_error: Callable[[RagsiftError], None] | None = None,
    **keywords: Any,
) -> int:
    """``ragsift embed PATHS --index INDEX --watch``: ``build``'s run (its arguments, the
    request and where it reports), then one incremental run per settled burst of changes
    until ``stop`` (an Event, or a callable returning True) is set or Ctrl-C;
    ``ragsift.ingest.watch.watch`` says the rest (``on_run(run)`` after each later run,
    ``on_error(exc)`` for a later run's error). Returns the number of runs after the
    first."""
    from ragsift.ingest.request import BuildHooks
    from ragsift.ingest.watch import watch as watching

    request = _build_request(index, paths, request, keywords, "watch")
    hooks = BuildHooks(on_skip, on_warning, progress)
    return watching(request, hooks, stop=stop, on_run=on_run, on_error=on_error)


def _build_request(
    index: Any, paths: Any, request: BuildRequest | None, keywords: dict[str, Any], caller: str
) -> BuildRequest:
    """``build``'s and ``watch``'s run as one ``BuildRequest`` (checked once): ``request``
    alone, or the one made of ``index``, ``paths`` and the keywords."""
    from ragsift.ingest.request import BuildRequest

    if request is None:
        if index is None or paths is None:
            raise TypeError(f"{caller}() needs an index and paths, or a request")
        return BuildRequest.of(index, paths, caller=caller, **keywords)
    if index is not None or paths is not None or keywords:
        raise TypeError(f"{caller}() takes a request alone (with on_skip, on_warning, progress)")
    return request


def remove(
    index: str | os.PathLike, patterns: Sequence[str], *, dry_run: bool = False, wait: bool = False
) -> list[DocumentInfo]:
    """``ragsift rm``: remove the documents whose path matches one of ``patterns`` (a path or a
    glob; ``*`` also matches ``/``) with their chunks, lexical entries and vectors, in one
    transaction under the writer lock (``RagsiftError`` while another process writes, unless
    ``wait``). Returns the documents removed (or that would be, with ``dry_run``). A plain
    string is one pattern; no pattern, an empty one or an invalid glob is a ``RagsiftError``
    (nothing is removed)."""
    from ragsift.index import inspect_index, open_index
    from ragsift.retrieval.engine import path_matches
    from ragsift.retrieval.path_rules import removal_patterns

    patterns = removal_patterns(patterns)
    index = os.fspath(index)
    if inspect_index(index) != "ours":
        raise RagsiftError(f"no index at {index}")
    with open_index(index, "r" if dry_run else "w", wait=wait) as store:
        docs = [d for d in store.documents() if path_matches(d.path, patterns)]
        if docs and not dry_run:
            store.remove_documents([d.key for d in docs])
            store.compact()
    return docs


def open_index(
    path: str | os.PathLike,
    *,
    model: str | None = None,
    embedder: Any = None,
    typed_paths: bool = False,
    root: str | os.PathLike | None = None,
) -> Index:
    """Open an index for searching (read-only; never blocks a writer). A context manager.
    ``embedder``: an embedder object for the queries instead of loading ``model``.
    ``typed_paths``: a ``path`` glob given to ``search``/``tune`` and the globs given to
    ``documents`` are paths as a user typed them (``stored_path``: from the current folder,
    ``root`` the project root), as the CLI reads its arguments; else stored paths."""
    from ragsift.index import open_index
    from ragsift.index.opening import check_model_record

    store = open_index(os.fspath(path), "r")
    try:
        check_model_record(store, os.fspath(path))
    except BaseException:
        store.close()
        raise
    index = Index(store, model=model, embedder=embedder)
    if typed_paths:
        index.typed_root = (None if root is None else os.fspath(root),)
    return index


@dataclass
class Search:
    """The whole answer to a search (``Index.search``): what every front end prints is built
    from it."""

    results: list[Retrieval]  # one per query, in order
    threshold: ThresholdInForce  # the floor in force, where it came from, any warning
    truncated: list[int]  # per query: the tokens the model cut (0: none)
    max_length: int | None  # the model's max length in tokens
    model: str
    attributions: list[list[Any]] = field(default_factory=list)  # per query, with ``units``
    paths: list[str] | None = None  # the stored paths, when a query searched no document
    # per query: what the model was given of a query longer than it reads
    # (``ragsift.retrieval.search.DenseView``: its question, error lines, identifiers), or None
    dense_views: list[Any] = field(default_factory=list)

    @property
    def hits(self) -> list[tuple[Hit, ...]]:
        """Per query, every candidate considered (admitted or rejected, in rank order) as a
        ``Hit``: the one hit type every front end serialises (``Hit.to_json()``)."""
        from ragsift.retrieval.records import hits

        return [hits(r) for r in self.results]


def _reads(method: Any) -> Any:
    """A public read of ``Index``: the index must be open, and a backend error while reading
    (a file damaged under an open index) is the backend's one line (``store.reading()``),
    as opening the damaged file would give."""
    import functools

    @functools.wraps(method)
    def call(self: Index, *args: Any, **kwargs: Any) -> Any:
        self._check_open()
        with self.store.reading():
            return method(self, *args, **kwargs)

    return call


class Index:
    """An open index and the model that embeds its queries (loaded on the first query)."""

    def __init__(self, store: Any, *, model: str | None = None, embedder: Any = None) -> None:
        self.store = store
        self._model = model
        self._embedder = embedder
        self._searcher_of: Searcher | None = None
        self._closed = False
        # (project root,) when paths given to this index are as a user typed them (open_index)
        self.typed_root: tuple[str | None] | None = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self.store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RagsiftError("the index is closed; open it again with ragsift.api.open_index")

    @property
    @_reads
    def settings(self) -> dict[str, Any]:
        """Model, fingerprint, dimensions, chunker, embedder options, tuned threshold."""
        return self.store.settings()

    @_reads
    def documents(self, patterns: Sequence[str] | None = None) -> list[DocumentInfo]:
        """What ``ragsift ls`` lists (only paths matching one of ``patterns`` if given)."""
        from ragsift.retrieval.engine import check_globs, path_matches

        if isinstance(patterns, str):
            patterns = [patterns]  # one glob, not its characters
        check_globs(patterns)
        docs = self.store.documents()
        if patterns and self.typed_root is not None:
            stored = {d.path for d in docs}
            patterns = [self._as_stored(p, stored) for p in patterns]
        return [d for d in docs if path_matches(d.path, patterns)]

    def _as_stored(self, typed: str | None, stored: Iterable[str] | None = None) -> str | None:
        """``typed`` as the stored path or glob it names (``stored_path``) when this index
        reads paths as typed (``open_index(typed_paths=True)``), else as given."""
        from ragsift.retrieval.path_rules import stored_path

        if not typed or self.typed_root is None:
            return typed
        return stored_path(
            typed, self.store.paths() if stored is None else stored, root=self.typed_root[0]
        )

    @_reads
    def paths(self) -> list[str]:
        """Every stored document path, sorted."""
        return sorted(self.store.paths())

    @_reads
    def document_chunks(self, path: str) -> list[Any]:
        """The chunk records of the document stored as ``path``, in document order (``start``,
        ``end``, ``text``, ``line_start``, ``line_end``, ``page``, ...); ``[]`` if the index
        holds no such document."""
        rowids = self.store.rowids_of_paths([path])
        return sorted(self.store.chunk_records(rowids), key=lambda r: (r.start, r.end))

    def threshold(
        self,
        threshold: float | str | None = AUTO,
        mode: str = DEFAULT_MODE,
        *,
        required: bool = True,
    ) -> ThresholdInForce:
        """The floor a query with this ``threshold`` argument uses in ``mode``, and where it
        came from (``.value``, ``.label``: "measured default", "tuned on N queries", ...;
        ``.warning``: a saved threshold from ragsift < 0.2 that was ignored). ``threshold``:
        ``"auto"`` (the saved one, else the model's measured default), ``None`` (no floor) or
        a number in [0, 1]. ``required=False``: no error for a model with no measured
        default (``.value`` is then None)."""
        from ragsift.retrieval.request import SearchRequest

        request = SearchRequest(threshold=threshold, mode=mode, required=required)
        request = request.resolved(self.settings)
        request.check_floor(self.settings)
        return request.floor

    @_reads
    def prepare(self, request: SearchRequest | None = None, **options: Any) -> SearchRequest:
        """The ``SearchRequest`` (``request``, with ``options`` set on it; none: one made of
        ``options``, the keywords of ``search``) completed against this index, once: a
        ``path`` typed from the current folder becomes the stored path (``open_index(...,
        typed_paths=True)``) and the threshold argument the floor in force (``.floor``:
        ``.value``, ``.label``, ``.warning``; ``.floor.source`` None when no floor is known:
        a ``required`` request raises then, when it searches or with ``check_floor``). A
        request this index prepared is returned as it is."""
        from ragsift.retrieval.request import SearchRequest

        request = SearchRequest.of(request, options, "prepare")
        if request.floor is not None:
            return request
        if request.path and self.typed_root is not None:
            request = replace(request, path=self._as_stored(request.path))
        return request.resolved(self.settings)

    @_reads
    def search(
        self,
        texts: str | Sequence[str],
        request: SearchRequest | None = None,
        **options: Any,
    ) -> Search:
        """The whole answer to one query or a batch (embedded in one call): a ``Search``
        with each query's ``Retrieval``, the threshold in force and where it came from, the
        query tokens the model cut, and with ``units`` the closest stored units of each
        admitted hit (``explain``'s attributions). What ``query``, ``explain`` and the MCP
        server print is built from it. The options: a ``SearchRequest``, or its fields as
        keywords (``k=3``, ``threshold="auto"``, ``reject_window=10``, ``max_chars=None``,
        ``path=None``, ``within=None``, ``mode="hybrid"``, ``fusion=None``, ``span="chunk"``,
        ``units=None``, ``required=True``), or both (the keywords set on the request).
        ``required=False``: no error for an empty index or for a model with no measured
        threshold and none given (no floor then)."""
        from ragsift.retrieval.request import SearchRequest
        from ragsift.retrieval.search import require_chunks

        batch = [texts] if isinstance(texts, str) else list(texts)
        for t in batch:
            check_query(t)
        # every argument is checked before the model loads or anything is read
        request = self.prepare(SearchRequest.of(request, options, "search"))
        # the lexical side needs no query vector: fetched while the model loads
        ahead = None if request.path or request.within else batch
        searcher = self._searcher(ahead, request)
        if request.required:
            require_chunks(searcher.count)  # an empty index says so (exit 1), whatever its model
            request.check_floor(self.settings)  # no floor known: the policy's error (exit 2)
        qvecs, cut, views = searcher.embed_queries_viewed(batch)
        results = searcher.retrieve_many(batch, request, qvecs=qvecs)
        attributions: list[list[Any]] = [[] for _ in results]
        if request.units is not None:
            from ragsift.retrieval.attribution import attribute

            attributions = [
                attribute(searcher.store, qvecs[i], r.admitted, top=request.units)
                for i, r in enumerate(results)
            ]
        return Search(
            results=results,
            threshold=request.floor,
            truncated=cut,
            max_length=getattr(searcher.embedder, "max_length", None),
            model=searcher.model,
            attributions=attributions,
            paths=self.paths() if any(r.searched == 0 for r in results) else None,
            dense_views=views,
        )

    def query(self, text: str, request: SearchRequest | None = None, **options: Any) -> Retrieval:
        """One query through the engine ``ragsift query`` uses: the ``Retrieval`` record
        (``admitted``, ``rejected`` with reasons, ``as_dict()``). The options as for
        ``search`` (a ``SearchRequest`` or its fields as keywords). ``span="best"``: each
        admitted hit also carries ``span_start``/``span_end``/``span_text``, its evidence.
        ``within``: a glob every searched document must also match (``path`` narrows it)."""
        from ragsift.retrieval.request import SearchRequest

        self._check_open()  # a closed index, then the query, then its options (as before)
        check_query(text)
        return self.search([text], SearchRequest.of(request, options, "query")).results[0]

    def query_many(
        self, texts: Sequence[str], request: SearchRequest | None = None, **options: Any
    ) -> list[Retrieval]:
        """Several queries, embedded in one batch (the options as for ``search``)."""
        from ragsift.retrieval.request import SearchRequest

        if isinstance(texts, str):
            raise TypeError("query_many takes a list of query texts, not one str (use query)")
        self._check_open()  # a closed index, then the queries, then their options (as before)
        texts = list(texts)
        for t in texts:
            check_query(t)
        return self.search(texts, SearchRequest.of(request, options, "query_many")).results

    def explain(
        self, text: str, request: SearchRequest | None = None, **options: Any
    ) -> dict[str, Any]:
        """``ragsift explain QUERY --json``: the retrieval record with where its threshold came
        from, the hints, the query's truncation and the closest units of each admitted hit
        (``ExplainRecord.to_json()``; ``units`` 3 unless given). The options as for
        ``search``."""
        from ragsift.retrieval.records import ExplainRecord
        from ragsift.retrieval.request import SearchRequest

        check_query(text)  # one query: a str (a list would be a batch)
        self._check_open()  # then a closed index, then the options (as before)
        request = SearchRequest.of(request, options, "explain")
        if request.units is None:
            request = replace(request, units=3)
        found = self.search(text, request)
        return ExplainRecord.of(
            found.results[0],
            found.threshold,
            attributions=found.attributions[0],
            query_truncated=found.truncated[0],
            paths=found.paths,
        ).to_json()

    @_reads
    def tune(
        self,
        queries: str | os.PathLike | Sequence[Any],
        request: SearchRequest | None = None,
        *,
        objective: Any = "f1",
        step: float = 0.01,
        **options: Any,
    ) -> TuneReport:
        """``ragsift tune``: search every labelled query once (no floor) and sweep the
        threshold; ``queries``: a JSON-lines file (``load_queries``) or its loaded records;
        ``objective``: "f1", "recall@precision=0.8", ... (or an ``Objective``); the search
        options as for ``search`` (``k``, ``reject_window``, ``max_chars``, ``path``,
        ``mode``; ``threshold``: the floor to compare against, default the one in force, if
        any). Store the recommendation with ``save_threshold(index, report, mode=mode)``."""
        from ragsift.errors import EXIT_USAGE
        from ragsift.retrieval.request import SearchRequest
        from ragsift.retrieval.search import require_chunks
        from ragsift.tuning import Objective, load_queries, tune

        if isinstance(objective, str):
            objective = Objective.parse(objective)
        if isinstance(queries, (str, os.PathLike)):
            queries = load_queries(queries)
        request = self.prepare(SearchRequest.of(request, options, "tune"))
        searcher = self._searcher()
        # nothing to tune on: a usage error (exit 2), not "nothing found"
        require_chunks(
            searcher.count, EXIT_USAGE, subject=f"index {getattr(self.store, 'path', '')}"
        )
        return tune(searcher, list(queries), request, objective=objective, step=step)

    @_reads
    def rank(
        self,
        queries: Sequence[str],
        *,
        depth: int,
        mode: str = DEFAULT_MODE,
        fusion: Fusion | None = None,
    ) -> list[list[Any]]:
        """Each query's best ``depth`` candidates in ``mode``, best first (``Ranked``: rowid,
        score, evidence): the order ``query`` applies its threshold to, with no top-K record
        (``ragsift eval`` ranks thousands of queries at BEIR depth)."""
        from ragsift.retrieval.engine import rank
        from ragsift.retrieval.hybrid import Fusion

        check_mode(mode)
        searcher = self._searcher()
        return rank(
            self.store,
            list(queries),
            searcher.embed_queries(list(queries)),
            mode=mode,
            n=depth,
            fusion=fusion or Fusion(),
            models=searcher.models,
        )

    @_reads
    def records(self, rowids: Sequence[int] | None = None) -> list[Any]:
        """Chunk records (``rowid``, ``path``, ``start``, ``end``, ``text``, ...): of
        ``rowids``, or every chunk in the backend's row order."""
        if rowids is None:
            rowids = self.store.load_matrix()[0].tolist()
        return self.store.chunk_records(list(rowids))

    @_reads
    def info(self, *, check: bool = False) -> dict[str, Any]:
        """What ``ragsift info --json`` prints: counts, size, model, chunker, the threshold in
        force and where it came from; with ``check``, ``problems`` (a list; empty when
        vectors, chunks and documents agree)."""
        from ragsift.embedders import source_kind

        settings = self.settings
        floor = self.threshold(AUTO, required=False)
        info = {
            **self.store.stats(),
            "threshold": floor.value,
            "threshold_origin": floor.label,
            "threshold_from": floor.origin,
            "model": settings.get("model"),
            "model_source": settings.get("model_source"),
            "model_source_kind": source_kind(settings.get("model_source")),
            "model_fingerprint": settings.get("model_fingerprint"),
            "dimensions": settings.get("dimensions"),
            "embedder_options": settings.get("embedder_options") or {},
            "chunker": settings.get("chunker"),
            "chunker_options": settings.get("chunker_options"),
            "schema_version": settings.get("schema_version"),
            "written_by": settings.get("written_by"),
            "min_writer_version": settings.get("min_writer_version"),
        }
        if check:
            info["problems"] = self.store.verify()
        return info

    @_reads
    def refresh(self) -> bool:
        """See what writers committed since this index was opened (a reader keeps one
        snapshot otherwise). Only when the index changed (``store.stale()``); returns whether
        it did."""
        if not self.store.stale():
            return False
        self.store.refresh()
        return True

    def release(self) -> None:
        """End this reader's snapshot until its next read, which takes one again (seeing what
        writers committed meanwhile): an index kept open while idle holds nothing back."""
        self._check_open()
        self.store.release()

    def _searcher(
        self, prefetch: Sequence[str] | None = None, request: SearchRequest | None = None
    ) -> Searcher:
        """The searcher of this index; made on the first search, which loads the model in a
        thread beside the index's matrix and the lexical lists of ``prefetch`` for
        ``request`` (a cold query pays the longer of the two, not their sum)."""
        from ragsift.retrieval.search import Searcher

        if self._searcher_of is None:
            self._searcher_of = Searcher(
                self.store,
                embedder=self._embedder,
                model_dir=self._model,
                preload_embedder=self._embedder is None,
                prefetch=prefetch,
                request=request,
            )
        return self._searcher_of


def check_query(text: Any) -> None:
    """The one check of a query's text, for every front end: a ``str`` (else ``TypeError``)
    that is not blank (else ``RagsiftError``: "the query is empty", exit 2)."""
    if not isinstance(text, str):
        raise TypeError(f"a query is a str, not {type(text).__name__}")
    if not text.strip():
        raise RagsiftError("the query is empty")
