"""``build_index``: the whole ``ragsift embed`` run. It opens the index writer
(``index.open_index``), binds the model (``model.ModelSlot``), and hands the stages to a runner:
``local`` (this machine: a producer thread reads, parses and chunks while this thread embeds and
commits) or ``ray`` (the same stages and change plan on a Ray cluster). The model is loaded
on the first chunk that needs it, so an unchanged corpus never loads it; a run that will embed
everything (a new or rebuilt index) loads it on a thread from the start."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ragsift.embedders.binding import check_evidence, clean_embedder_options, load_options
from ragsift.ingest.batch import Run
from ragsift.ingest.model import KeptModels, ModelLoad, ModelSlot
from ragsift.ingest.sizing import default_embed_chunker
from ragsift.ingest.summary import EmbedProgress, EmbedSummary

if TYPE_CHECKING:
    from ragsift.chunkers.base import Chunker
    from ragsift.ingest.plan import ChangePlan
    from ragsift.sources import Skipped

ENGINES = ("local", "ray")


def build_index(
    paths: list[str],
    index: str | os.PathLike,
    chunker: Chunker | None = None,
    embedder=None,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    prune: bool = True,
    rebuild: bool = False,
    wait: bool = False,
    model_dir: str | None = None,
    batch_size: int | None = None,
    embedder_options: dict | None = None,
    stdin_lines: Iterable[str] | None = None,
    on_skip: Callable[[Skipped], None] | None = None,
    progress: EmbedProgress | None = None,
    on_warning: Callable[[str, str], None] | None = None,
    max_file_size: int | None = None,
    follow_links: bool = False,
    engine: str = "local",
    ray_address: str | None = None,
    root: str | None = None,
    kept: KeptModels | None = None,
) -> EmbedSummary:
    """Bring the index at ``index`` up to date with ``paths`` (see ``ingest.plan`` for what
    is unchanged, changed and gone).

    ``paths == ["-"]`` reads ``ragsift chunk`` JSON lines from ``stdin_lines`` instead of
    files. ``model_dir`` None: the index's own model (``index_model``: ``multilingual`` for
    an index built with it, else MiniLM). ``chunker`` defaults to
    ``default_embed_chunker(model_dir)``; ``embedder`` (an
    object, e.g. a caching wrapper) defaults to ``load_embedder(model_dir,
    **embedder_options)``, loaded on first need. ``embedder_options`` (pooling, normalize,
    max_length, query_prefix, passage_prefix; None = the model's own) are recorded in the
    index settings so ``query``/``explain``/``tune`` load the same embedder. Raises
    ``RagsiftError`` for a busy/foreign index or a model (or vector-changing option) mismatch,
    and (before the index is opened or created) for a path that does not exist or a bad glob.
    Pruning removes only documents whose absence is certain (``Walk.may_prune``).
    ``root``: the project root (``ragsift.project``): files inside it are stored by their path
    relative to it (keys and display paths); None: absolute keys, paths as typed.
    ``kept``: embedders kept across the runs of one process (``watch``), loaded once.
    """
    import time

    from ragsift.errors import RagsiftError
    from ragsift.index import open_index

    t0 = time.perf_counter()
    summary = EmbedSummary()
    progress = progress or EmbedProgress()
    if engine not in ENGINES:
        raise RagsiftError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    use_stdin = "-" in paths
    if use_stdin and len(paths) > 1:
        raise RagsiftError("- (chunk JSON lines on stdin) cannot be combined with other paths")
    if not use_stdin:
        from ragsift.sources import check_arguments

        check_arguments(list(paths), include or [], exclude or [])  # before the index exists

    model_dir = index_model(index, model_dir)
    early = None
    try:
        if not use_stdin and chunker is None:
            opts = clean_embedder_options(embedder_options)
            chunker = default_embed_chunker(
                model_dir,
                max_length=opts.get("max_length"),
                passage_prefix=opts.get("passage_prefix"),
            )
        early = _load_ahead(
            index, embedder, rebuild, engine, model_dir, batch_size, embedder_options, kept
        )
        store = open_index(index, "w", wait=wait)
    except BaseException:
        if early is not None:
            early.wait()
        raise
    slot = None
    try:
        if rebuild:
            store.clear()
        else:  # an index from before unit evidence is rebuilt, never added to
            check_evidence(store.settings(), f"index {index}")
        slot = ModelSlot(store, embedder, model_dir, batch_size, embedder_options, early, kept)
        run = Run(store, summary, slot, progress, on_skip=on_skip, on_warning=on_warning, root=root)
        slot.check_early()
        plan: ChangePlan
        if use_stdin:
            from ragsift.ingest.local import ingest_records

            plan = ingest_records(run, stdin_lines if stdin_lines is not None else [])
        elif engine == "ray":
            from ragsift.ingest.ray import ingest_files as on_ray

            plan = on_ray(
                run,
                paths,
                chunker,
                include,
                exclude,
                prune,
                address=ray_address,
                max_file_size=max_file_size,
                follow_links=follow_links,
            )
        else:
            from ragsift.ingest.local import ingest_files

            plan = ingest_files(
                run,
                paths,
                chunker,
                include,
                exclude,
                prune,
                max_file_size=max_file_size,
                follow_links=follow_links,
            )
        run.flush()
        store.compact()
        summary.model_loaded = slot.loaded
        summary.index = {k: v for k, v in store.stats().items() if k != "writer_pid"}
        summary.rekeyed = plan.moved
        summary.rechunked = dict(getattr(plan, "rechunked", {}))
        if plan.moved and on_warning is not None and plan.moved_example is not None:
            was, now = plan.moved_example
            n = plan.moved
            on_warning(
                now,
                f"was {was}: {n} indexed document{'s' if n != 1 else ''} now "
                "listed under the path spelling of this run (the same files, not "
                "re-embedded); `ls`, `--path` and `tune` labels use the new one",
            )
    finally:
        progress.finish()
        store.close()
        if slot is not None:
            slot.wait()
        elif early is not None:
            early.wait()
    summary.seconds = time.perf_counter() - t0
    return summary


def index_model(index: str | os.PathLike, model_dir: str | None) -> str | None:
    """The model a run on ``index`` uses: ``model_dir`` when one is given; else the model the
    index names for itself, ``multilingual`` for an index built with ``--model multilingual``
    (so ``embed`` without ``--model`` continues it, as ``query`` does, with that model's
    chunker) or the endpoint URL it was built through, else None (the bundled MiniLM). An
    index built with ``--model DIR`` is not followed: a folder can move, so ``--model DIR``
    stays needed (the mismatch refusal says so); a server that moved is one line naming the
    URL, and ``--model NEW-URL`` reaches it. Read before the chunker is chosen; a missing, empty or unreadable index: None
    (``open_index`` then says what is wrong with it)."""
    from ragsift.embedders import MULTILINGUAL, is_endpoint
    from ragsift.errors import RagsiftError
    from ragsift.index import inspect_index, open_index

    if model_dir is not None:
        return model_dir
    try:
        if inspect_index(os.fspath(index)) != "ours":
            return None
        with open_index(os.fspath(index), "r") as store:
            source = (store.settings() or {}).get("model_source")
    except RagsiftError:
        return None
    return source if source == MULTILINGUAL or is_endpoint(source) else None


def _load_ahead(
    index,
    embedder,
    rebuild: bool,
    engine: str,
    model_dir: str | None,
    batch_size: int | None,
    embedder_options: dict | None,
    kept: KeptModels | None = None,
) -> ModelLoad | None:
    """Start loading the model now when the run will certainly need it: a new index (no
    file, or a 0-byte one) or a rebuilt one embeds everything it indexes (an index with
    documents loads the model only once something needs embedding, so an unchanged re-run
    never does)."""
    from ragsift.errors import RagsiftError
    from ragsift.index import inspect_index

    options = load_options(clean_embedder_options(embedder_options), batch_size)
    if (
        embedder is not None
        or engine != "local"
        or (kept is not None and kept.get(KeptModels.key(model_dir, options)) is not None)
    ):
        return None
    if not rebuild:
        try:
            if inspect_index(os.fspath(index)) == "ours":
                return None
        except RagsiftError:
            return None  # open_index says what is wrong with it
    return ModelLoad(model_dir, options)
