"""The Ray runner (``ragsift embed --engine ray``): the same stages and change plan as the
local runner, wired on a Ray cluster. The changed files are read, parsed, chunked and embedded on a
Ray cluster (Ray Data); the driver keeps what must stay serial.

Who does what:
- Driver (this process, serial): discovery and the change plan (``ingest.plan.ChangePlan``,
  the same one a local run asks: size + mtime, then sha256; the same keys, the same prune
  rule); the model-fingerprint refusal (``ModelSlot.check_early``, before any work); the
  lookup of chunk texts that already have a vector (``vectors_for_hashes``); and every commit
  to the index, through the same ``Run.add``/``flush`` as a local run for an index without
  ``FragmentCommits`` (SQLite: same batches, same atomicity, same summary counts); for one
  with it (Lance), the one commit of the fragments the workers wrote.
- Ray, stage 1 (``map``, one task per file): read the file, parse it, chunk it, hash the chunks.
  A file that cannot be read or parsed comes back as one skip reason, reported by the driver.
- Ray, stage 2 (``map_batches`` over an actor pool): the ONNX embedder, one onnxruntime session
  per actor (``EmbedActor``), ``threads`` intra-op threads each, only for the texts the index
  does not hold yet. Vectors come back to the driver with the texts they belong to (SQLite).

Faults: Ray Data retries a task whose worker died, and restarts a dead embedding actor and
retries its batch (``max_restarts``/``max_task_retries``). Results are keyed by file and by
chunk hash and the driver writes each document once, so a retried batch can neither duplicate
nor lose a chunk (tests/test_ray_engine.py kills a worker to check it).

A Lance index is written by the workers (``EmbedWriteActor``): each embedding batch becomes
Lance data files (uncommitted fragments, through the index's ``fragment_writer``) and only their
metadata comes back; the vectors never pass through the driver. The driver then commits the
whole change set as ONE Lance transaction (``LanceIndex.commit_fragments``: the replaced
documents' old rows deleted, the document rows and the new fragments added). A killed run
therefore leaves the index exactly as before the run (its written files are never referenced)
and a re-run redoes the change set; a SQLite index keeps the streamed-back path above.

Not distributed (measured in bench/RESULTS.md): the change set and the commit.

Here: the driver's side (connecting, the change plan, the stages wired, ``Pool``). Beside it:
``ray_stages.py`` (what runs on the workers: ``parse_file``, the embedding actors),
``ray_fragments.py`` (the Lance path: the workers' fragments and the one commit) and
``ray_stderr.py`` (the filter for Ray's core_worker restart notice on fd 2).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError, Words
from ragsift.ingest.batch import EMBED_STEP
from ragsift.ingest.load import named_files, report_warnings, walk
from ragsift.ingest.plan import ChangePlan
from ragsift.ingest.ray_fragments import write_fragments
from ragsift.ingest.ray_stages import LAST_RUN, EmbedActor, Precomputed, parse_file
from ragsift.ingest.ray_stderr import restart_notice_dropped

if TYPE_CHECKING:
    from collections.abc import Callable

    from ragsift.index.backend import ChunkRow
    from ragsift.ingest.batch import Run
    from ragsift.ingest.request import BuildRequest
    from ragsift.sources import SourceFile


def _ray():
    try:
        import ray
    except ImportError:
        raise RagsiftError(
            Words("{engine=ray} needs Ray: pip install 'ragsift[ray]'", {"ray": "ray"})
        ) from None
    return ray


def connect(address: str | None) -> Any:
    """Join the cluster at ``address`` ("auto": the one this machine belongs to) or start a
    local one (None)."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_ACCEPT_DEPRECATED_FEATURES", "1")
    try:
        if address:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        else:
            # Ray starts its workers at niceness 15 (a background cluster's default); the
            # local cluster of one `embed` run does that command's work, so it runs at the
            # command's priority: on a busy machine niced workers starved for minutes
            os.environ.setdefault("RAY_worker_niceness", "0")
            # "local": a new cluster even when /tmp/ray names another one; a cluster that
            # died left that file behind, and joining it hung (`--ray-address auto` joins)
            ray.init(
                address="local", include_dashboard=False, log_to_driver=False, logging_level="ERROR"
            )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RagsiftError(
            f"cannot connect to the Ray cluster at {address or 'local'}: {str(exc).splitlines()[0]}"
        ) from None
    import logging
    import warnings

    import ray.data

    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*ray_remote_args. is deprecated")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    return ray


def ingest_files(
    run: Run,
    request: BuildRequest,
    chunker: Any,
    *,
    workers: int | None = None,
    threads: int | None = None,
) -> ChangePlan:
    """The Ray counterpart of ``ingest.local.ingest_files``: the same walk, change plan,
    summary and commits; returns the plan. ``workers``/``threads``: the embedding actors and
    the onnxruntime threads of each (None: one actor per CPU the texts can use, 1 thread)."""
    rules = request.walk
    key_of_chunker = run.use_chunker(chunker)
    found = walk(request.paths, rules, run.skip, run.on_warning, run.summary.ignored)
    # -- the change plan, on the driver, exactly as a local run ------------------------------
    plan = ChangePlan(run.store.documents_state(), key_of_chunker, run.root)
    changed = _changed_files(
        run, plan, found.files, rules.max_file_size, named_files(request.paths)
    )
    LAST_RUN.clear()
    LAST_RUN.update(vectors_to_driver=0, rows_written_by_workers=0, fragments=0)
    if changed:
        _ray_stages(run, request.ray_address, plan, changed, chunker, (workers, threads))
    run.flush()
    if request.prune:  # only what is certainly gone from a folder listed in this run (as locally)
        run.remove(plan.gone(list(request.paths), found))
    return plan


def _changed_files(
    run: Run,
    plan: ChangePlan,
    files: list,
    max_file_size: int | None,
    named: Callable[[SourceFile], bool],
) -> list[dict]:
    """The change plan's side on the driver: each discovered file unchanged (counted, as a
    local run counts it) or changed, a row for the parse stage (``named``: the file was
    named as an argument, so not being a document is a skip, ``load.load_each``)."""
    import hashlib

    from ragsift.errors import SkipFile
    from ragsift.sources import DEFAULT_MAX_FILE_SIZE, read_bytes

    cap = DEFAULT_MAX_FILE_SIZE if max_file_size is None else max_file_size
    changed: list[dict] = []
    run.progress.start(len(files))
    for sf in files:
        run.summary.discovered += 1
        key = plan.key(sf)
        u = plan.by_stat(sf, key)
        if u is None and plan.needs_bytes(key, sf):
            try:
                sha = hashlib.sha256(read_bytes(sf, cap)).hexdigest()
            except (OSError, SkipFile):
                sha = None  # the worker reports the read error
            u = plan.by_bytes(sf, key, sha)
        if u is not None:
            run.unchanged(u)
            continue
        changed.append(
            {
                "file": str(sf.path),
                "relpath": sf.relpath,
                "size": sf.size,
                "mtime": sf.mtime,
                "key": key,
                "max_file_size": cap,
                "pipeline": plan.pipeline(sf),
                "named": named(sf),
            }
        )
    return changed


def _ray_stages(
    run: Run,
    address: str | None,
    plan: ChangePlan,
    changed: list[dict],
    chunker: Any,
    sizes: tuple[int | None, int | None],
) -> None:
    """The changed files through the Ray stages (parse, then embed: the workers write a Lance
    index's chunk rows themselves, a SQLite index's vectors come back to ``run``); ``sizes``:
    the actor pool's workers and threads."""
    import contextlib
    import sys

    from ragsift.index.backend import DocumentWrite, FragmentCommits

    by_key = {c["key"]: c for c in changed}

    def write_of(row: dict, recs: list[ChunkRow]) -> DocumentWrite:
        c = by_key[row["key"]]
        plan.note_written(row["key"], row["path"])
        return DocumentWrite(
            key=row["key"],
            path=row["path"],
            sha256=row["sha256"],
            records=tuple(recs),
            vectors=None,
            source=row["key"],
            size=c["size"],
            mtime=c["mtime"],
            format=row["format"] or None,
            chunker=c["pipeline"],
        )

    # Ray prints worker-death notices on the driver's stdout; keep stdout for --json.
    with contextlib.redirect_stdout(sys.stderr):
        owned = not _ray().is_initialized()
        ray = connect(address)
        fragments = isinstance(run.store, FragmentCommits)
        try:
            docs = _parse_stage(ray, run, plan, changed, chunker)
            slot = run.model
            pool = Pool(ray, slot.model_dir, slot.options, slot.batch_size, *sizes)
            if fragments:  # the workers write the chunk rows; one commit here
                write_fragments(pool, run, [write_of(r, recs) for r, recs in docs])
                docs = []
            else:
                _embed_stage(pool, run, docs)
        finally:
            if owned:
                ray.shutdown()
    for row, recs in docs:
        run.add(write_of(row, recs))


def _parse_stage(
    ray: Any, run: Run, plan: ChangePlan, changed: list[dict], chunker: Any
) -> list[tuple[dict, list[ChunkRow]]]:
    """Stage 1 on Ray (read, parse, chunk); returns [(file row, its chunks)] in the driver's
    file order, skips reported as a local run reports them."""
    import json
    import pickle

    from ragsift.sources import Skipped

    ds = ray.data.from_items(changed, override_num_blocks=min(len(changed), 64))
    ds = ds.map(parse_file, fn_kwargs={"chunker": chunker})
    parsed = {row["key"]: row for row in ds.iter_rows()}
    docs: list[tuple[dict, list[ChunkRow]]] = []
    for c in changed:  # the driver's file order, whatever order the workers finished in
        row = parsed[c["key"]]
        if row["skip"]:
            run.skip(Skipped(c["relpath"], pickle.loads(row["skip"])))
            run.progress.advance(files=1)
            continue
        if row["ignore"]:
            plan.not_a_document(c["key"])
            run.ignore(Skipped(c["relpath"], row["ignore"]))
            run.progress.advance(files=1)
            continue
        run.summary.parsed += 1
        for script, n in json.loads(row["scripts"]).items():  # as a local run counts them
            run.summary.scripts[script] = run.summary.scripts.get(script, 0) + n
        report_warnings(row["path"], json.loads(row["warnings"]), run.on_warning)
        docs.append((row, pickle.loads(row["records"])))
    return docs


class Pool:
    """An embedding actor pool: its size and the actors' options, and the one check that
    every actor loaded the same model."""

    def __init__(
        self,
        ray: Any,
        model_dir: str | None,
        options: dict | None,
        batch_size: int | None,
        workers: int | None,
        threads: int | None,
    ) -> None:
        from ragsift.embedders.binding import load_options

        self.ray = ray
        self.model_dir = model_dir
        self.workers = workers
        self.threads = threads or 1
        self.options = load_options(options, batch_size)

    def size(self, n_texts: int) -> int:
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        return self.workers or max(
            1, min(cpus // self.threads, (n_texts + EMBED_STEP - 1) // EMBED_STEP)
        )

    def batches(self, actor: type, items: list[dict], **kwargs: Any):
        """Run ``actor`` over ``items`` (EMBED_STEP per call); yields numpy batches."""
        from ragsift.embedders import is_endpoint

        ray = self.ray
        pool = self.size(len(items))
        model_dir = self.model_dir
        if is_endpoint(model_dir):  # the actors share the endpoint's bound on requests
            from ragsift.embedders.endpoint import shared

            model_dir, pool = shared(model_dir, pool)
        ds = ray.data.from_items(items, override_num_blocks=max(1, min(pool * 4, len(items))))
        ds = ds.map_batches(
            actor,
            fn_constructor_kwargs={
                "model_dir": model_dir,
                "options": self.options,
                "threads": self.threads,
                **kwargs,
            },
            batch_size=EMBED_STEP,
            compute=ray.data.ActorPoolStrategy(size=pool),
            num_cpus=self.threads,
            batch_format="numpy",
            max_restarts=-1,
            max_task_retries=-1,
        )
        with restart_notice_dropped():
            yield from ds.iter_batches(batch_size=None, batch_format="numpy")

    @staticmethod
    def one_model(prints: set[str], dims: set[int]) -> dict:
        """The model every actor loaded (name, fingerprint, dimensions), or the refusal."""
        if len(prints) != 1 or len(dims) != 1:
            raise RagsiftError(
                "Ray workers loaded different models "
                f"({', '.join(sorted(prints))}); install the same model "
                "everywhere"
            )
        fingerprint = next(iter(prints))
        return {
            "name": fingerprint.split("/")[0],
            "fingerprint": fingerprint,
            "dimensions": next(iter(dims)),
        }


def _embed_stage(pool: Pool, run: Run, docs: list[tuple[dict, list[ChunkRow]]]) -> None:
    """Stage 2 on Ray for an index without ``FragmentCommits``: embed the texts the index
    lacks; their vectors come back to the driver, where ``Run.flush`` writes them."""
    hashes = [r.content_hash for _, recs in docs for r in recs]
    known = run.store.vectors_for_hashes(hashes) if hashes else {}
    todo: dict[str, tuple[str, str]] = {}
    for _, recs in docs:
        for r in recs:
            if r.content_hash not in known:
                todo.setdefault(r.content_hash, (r.context, r.text))
    if todo:
        vectors, model = embed_texts(pool, todo)
        run.model.use(Precomputed(model, vectors))


def embed_texts(
    pool: Pool, todo: dict[str, tuple[str, str]]
) -> tuple[dict[str, tuple[Any, int, bytes]], dict]:
    """Embed ``todo`` ({content hash: (context, text)}) on the actor pool; returns ({hash:
    (vector, truncated, units)}, the model: {"name", "fingerprint", "dimensions"})."""
    import numpy as np

    out: dict[str, tuple[Any, int, bytes]] = {}
    prints: set[str] = set()
    items = [{"hash": h, "context": c, "text": t} for h, (c, t) in todo.items()]
    for batch in pool.batches(EmbedActor, items):
        for h, vec, cut, units, fp in zip(
            batch["hash"], batch["vector"], batch["truncated"], batch["units"], batch["fingerprint"]
        ):
            out[str(h)] = (np.asarray(vec, np.float32), int(cut), bytes(units))
            prints.add(str(fp))
    LAST_RUN["vectors_to_driver"] = LAST_RUN.get("vectors_to_driver", 0) + len(out)
    if set(todo) - set(out):
        raise RagsiftError(f"the Ray stage returned {len(out)} of {len(todo)} vectors")
    return out, pool.one_model(prints, {v.shape[0] for v, _, _ in out.values()})
