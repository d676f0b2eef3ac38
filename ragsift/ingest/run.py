"""``build_index``: the whole ``ragsift embed`` run, as a ``BuildRequest`` asks. It opens the
index writer (``index.open_index``), binds the model (``model.ModelSlot``), and hands the stages
to a runner: ``local`` (this machine: a producer thread reads, parses and chunks while this
thread embeds and commits) or ``ray`` (the same stages and change plan on a Ray cluster). The
model is loaded on the first chunk that needs it, so an unchanged corpus never loads it; a run
that will embed everything (a new or rebuilt index) loads it on a thread from the start."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragsift.embedders.binding import check_evidence, load_options
from ragsift.ingest.batch import Run
from ragsift.ingest.model import KeptModels, ModelLoad, ModelSlot
from ragsift.ingest.request import BuildHooks, BuildRequest, index_model
from ragsift.ingest.sizing import default_embed_chunker
from ragsift.ingest.summary import EmbedProgress, EmbedSummary

if TYPE_CHECKING:
    from ragsift.chunkers.base import Chunker
    from ragsift.ingest.plan import ChangePlan


def build_index(
    request: BuildRequest, hooks: BuildHooks | None = None, *, kept: KeptModels | None = None
) -> EmbedSummary:
    """Bring the index at ``request.index`` up to date with ``request.paths`` (see
    ``ingest.plan`` for what is unchanged, changed and gone), as the request says
    (``ingest.request.BuildRequest``); ``hooks``: where it reports skips, warnings and
    progress.

    The chunker defaults to ``default_embed_chunker`` for the run's model (``index_model``:
    the index's own when the request names none) and its embedder options; the embedder (a
    ready object in the request, else ``load_embedder(model, **embedder_options)``) is loaded
    on first need. The embedder options are recorded in the index settings so
    ``query``/``explain``/``tune`` load the same embedder. Raises ``RagsiftError`` for a
    busy/foreign index or a model (or vector-changing option) mismatch, and (before the index
    is opened or created) for a path that does not exist or a bad glob. Pruning removes only
    documents whose absence is certain (``Walk.may_prune``). ``kept``: embedders kept across
    the runs of one process (``watch``), loaded once.
    """
    import time

    from ragsift.index import open_index

    t0 = time.perf_counter()
    hooks = hooks or BuildHooks()
    summary = EmbedSummary()
    progress = hooks.progress or EmbedProgress()
    _check_paths(request)  # before the index exists
    model_dir = index_model(request.index, request.model)
    early = None
    try:
        chunker = _chunker(request, model_dir)
        early = _load_ahead(request, model_dir, kept)
        store = open_index(request.index, "w", wait=request.wait)
    except BaseException:
        if early is not None:
            early.wait()
        raise
    slot = None
    try:
        if request.rebuild:
            store.clear()
        else:  # an index from before unit evidence is rebuilt, never added to
            check_evidence(store.settings(), f"index {request.index}")
        slot = ModelSlot(store, request, model_dir, early, kept)
        run = Run(
            store,
            summary,
            slot,
            progress,
            on_skip=hooks.on_skip,
            on_warning=hooks.on_warning,
            root=request.walk.root,
        )
        slot.check_early()
        plan = _ingest(run, request, chunker)
        run.flush()
        store.compact()
        _sum_up(summary, slot, store, plan, hooks.on_warning)
    finally:
        progress.finish()
        store.close()
        if slot is not None:
            slot.wait()
        elif early is not None:
            early.wait()
    summary.seconds = time.perf_counter() - t0
    return summary


def _check_paths(request: BuildRequest) -> None:
    """Stdin alone, or paths that exist and globs that parse (``sources.check_arguments``)."""
    from ragsift.errors import RagsiftError

    if request.reads_stdin:
        if len(request.paths) > 1:
            raise RagsiftError("- (chunk JSON lines on stdin) cannot be combined with other paths")
        return
    from ragsift.sources import check_arguments

    walk = request.walk
    check_arguments(list(request.paths), list(walk.include), list(walk.exclude))


def _chunker(request: BuildRequest, model_dir: str | None) -> Chunker | None:
    """The request's chunker, else embed's default for the model and its embedder options
    (None for chunk JSON lines on stdin: they are chunked already)."""
    if request.reads_stdin or request.chunker is not None:
        return request.chunker
    options = request.embedder_options
    return default_embed_chunker(
        model_dir, max_length=options.max_length, passage_prefix=options.passage_prefix
    )


def _ingest(run: Run, request: BuildRequest, chunker: Chunker | None) -> ChangePlan:
    """The request's inputs through its engine's runner; returns the change plan."""
    if request.reads_stdin:
        from ragsift.ingest.local import ingest_records

        lines = request.stdin_lines
        return ingest_records(run, lines if lines is not None else [])
    if request.engine == "ray":
        from ragsift.ingest.ray import ingest_files as on_ray

        return on_ray(run, request, chunker)
    from ragsift.ingest.local import ingest_files

    return ingest_files(run, request, chunker)


def _sum_up(
    summary: EmbedSummary,
    slot: ModelSlot,
    store: Any,
    plan: ChangePlan,
    on_warning: Callable[[str, str], None] | None,
) -> None:
    """The summary's last fields, and the one warning for documents found under another
    spelling of their path."""
    summary.model_loaded = slot.loaded
    summary.index = {k: v for k, v in store.stats().items() if k != "writer_pid"}
    summary.rekeyed = plan.moved
    summary.rechunked = dict(getattr(plan, "rechunked", {}))
    if plan.moved and on_warning is not None and plan.moved_example is not None:
        from ragsift.errors import Worded, Words

        was, now = plan.moved_example
        n = plan.moved
        said = Words(
            "was {was}: {n} indexed document{s} now listed under the path spelling of this "
            "run (the same files, not re-embedded); `ls`, `{path}` and `tune` labels use the "
            "new one",
            {"was": was, "n": n, "s": "s" if n != 1 else ""},
        )
        on_warning(now, Worded(said))  # a str, its parameter worded by a front end


def _load_ahead(
    request: BuildRequest, model_dir: str | None, kept: KeptModels | None = None
) -> ModelLoad | None:
    """Start loading the model now when the run will certainly need it: a new index (no
    file, or a 0-byte one) or a rebuilt one embeds everything it indexes (an index with
    documents loads the model only once something needs embedding, so an unchanged re-run
    never does)."""
    from ragsift.errors import RagsiftError
    from ragsift.index import inspect_index

    options = load_options(request.embedder_options.as_dict(), request.batch_size)
    if (
        request.embedder is not None
        or request.engine != "local"
        or (kept is not None and kept.get(KeptModels.key(model_dir, options)) is not None)
    ):
        return None
    if not request.rebuild:
        try:
            if inspect_index(request.index) == "ours":
                return None
        except RagsiftError:
            return None  # open_index says what is wrong with it
    return ModelLoad(model_dir, options)
