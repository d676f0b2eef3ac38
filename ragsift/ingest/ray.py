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
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.ingest.batch import EMBED_STEP
from ragsift.ingest.load import load_each, report_warnings, walk
from ragsift.ingest.plan import ChangePlan
from ragsift.ingest.records import content_hash, index_records

if TYPE_CHECKING:
    from ragsift.ingest.batch import Run
    from ragsift.ingest.request import BuildRequest

# What the last ``ingest_files`` moved: vectors streamed back to the driver, chunk rows the
# workers wrote to a Lance index themselves, and the fragments they wrote (read by tests).
LAST_RUN: dict[str, int] = {}

# Set by tests to kill a worker process once (fault injection); see tests/test_ray_engine.py.
FAULT_ENV = "RAGSIFT_RAY_KILL_ONCE"


def _ray():
    try:
        import ray
    except ImportError:
        raise RagsiftError("--engine ray needs Ray: pip install 'ragsift[ray]'") from None
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


# Ray's C++ core worker logs this at ERROR on the driver's stderr each time Ray Data starts an
# actor pool: Ray Data hands its actors their function through the object store, and Ray
# warns that a restart could fail if that object were lost (ray-project/ray#53727, #57733).
# Here it is held by this process for the whole stage, so restarts work (a killed actor is
# retried: tests/test_ray_engine.py); the line is noise on every run (issue 41, item 6).
RESTART_NOTICE = re.compile(
    rb"core_worker\.cc:\d+: Actor with class name: .* has constructor arguments in the "
    rb"object store and max_restarts > 0"
)


@contextlib.contextmanager
def restart_notice_dropped():
    """While inside, the driver's file descriptor 2 (where Ray's C++ code writes, out of
    Python's reach) goes through a pipe that drops ``RESTART_NOTICE`` lines and passes every
    other byte on at once, in order: real errors still show. Nothing done where fd 2 cannot
    be duplicated."""
    import sys
    import threading

    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:
        yield
        return

    def pump() -> None:
        pending = b""
        while True:
            try:
                data = os.read(read_end, 65536)
            except OSError:
                break
            if not data:
                break
            *lines, pending = (pending + data).split(b"\n")
            out = b"".join(ln + b"\n" for ln in lines if not RESTART_NOTICE.search(ln))
            if pending and not pending.startswith(b"["):  # only a log line is held back
                out, pending = out + pending, b""
            if out:
                with contextlib.suppress(OSError):
                    os.write(saved, out)
        if pending and not RESTART_NOTICE.search(pending):
            with contextlib.suppress(OSError):
                os.write(saved, pending)
        os.close(read_end)

    thread = threading.Thread(target=pump, name="ray-stderr", daemon=True)
    thread.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer gone: the pump ends
        thread.join(timeout=5)
        if not thread.is_alive():  # else a child still holds the pipe: the pump keeps it
            os.close(saved)


def _kill_once(stage: str) -> None:
    """Fault injection for tests: the first worker reaching ``stage`` dies (once per run)."""
    where = os.environ.get(FAULT_ENV)
    if not where:
        return
    marker = os.path.join(where, f"killed-{stage}")
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


def parse_file(row: dict, chunker: Any) -> dict:
    """Stage 1 (a Ray task): one changed file -> its chunk records (JSON) or a skip reason."""
    import hashlib
    import json
    import pathlib

    from ragsift.sources import SourceFile
    from ragsift.sources.scripts import count_scripts

    _kill_once("parse")
    sf = SourceFile(
        path=pathlib.Path(row["file"]), relpath=row["relpath"], size=row["size"], mtime=row["mtime"]
    )
    out = {
        "key": row["key"],
        "skip": "",
        "records": "",
        "warnings": "",
        "format": "",
        "path": row["relpath"],
        "sha256": "",
        "scripts": "{}",
    }
    skipped: list = []  # the local run's one read -> parse loop: same caps, same skip reasons
    loaded = list(
        load_each(
            [sf], skip=skipped.append, on_warning=None, max_file_size=row.get("max_file_size")
        )
    )
    if skipped or not loaded:
        out["skip"] = skipped[0].reason if skipped else "unreadable"
        return out
    _, data, doc = loaded[0]
    out["sha256"] = hashlib.sha256(data).hexdigest()
    out["warnings"] = json.dumps(list(doc.warnings))
    out["scripts"] = json.dumps(count_scripts(doc.text))  # for the one script warning (CLI)
    doc, records = index_records(chunker, doc)
    out.update(records=json.dumps(records), format=doc.format or "", path=doc.path)
    return out


class EmbedActor:
    """Stage 2: one onnxruntime session per actor, reused for every batch it is given."""

    def __init__(self, model_dir: str | None, options: dict, threads: int | None) -> None:
        import ray

        from ragsift.embedders import load_embedder

        self.embedder = load_embedder(model_dir, threads=threads, **options)
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        from ragsift.embedders.evidence import embed_evidence

        _kill_once("embed")
        items = [(str(c), str(t)) for c, t in zip(batch["context"], batch["text"])]
        found = embed_evidence(self.embedder, items)
        return {
            "hash": batch["hash"],
            "vector": np.stack([e.vector for e in found]).astype(np.float32),
            "truncated": np.asarray([e.truncated for e in found], dtype=np.int64),
            "units": np.asarray([e.units for e in found], dtype=object),
            "fingerprint": np.asarray([self.embedder.fingerprint] * len(items)),
            "node": np.asarray([self.node] * len(items)),
        }


class EmbedWriteActor(EmbedActor):
    """Stage 2 for an index with ``FragmentCommits``: embed, then write the batch's chunk rows
    (each hash's rows, made by the driver, get its vector) through the index's picklable
    ``fragment_writer`` as uncommitted fragments; returns per hash only its truncation count,
    and the fragments' metadata (JSON) on the batch's first row."""

    def __init__(
        self, model_dir: str | None, options: dict, threads: int | None, writer: Any
    ) -> None:
        super().__init__(model_dir, options, threads)
        self.writer = writer

    def __call__(self, batch: dict) -> dict:
        import json

        import numpy as np

        out = super().__call__(batch)
        rows, vectors = [], []
        for group, vec, cut, units in zip(
            batch["rows"], out["vector"], out["truncated"], out["units"]
        ):
            for row in json.loads(str(group)):
                row["truncated"] = int(cut)
                row["units"] = bytes(units)
                rows.append(row)
                vectors.append(vec)
        dim = int(out["vector"].shape[1])
        frags = self.writer(rows, vectors, dim)
        n = len(out["hash"])
        return {
            "hash": out["hash"],
            "truncated": out["truncated"],
            "fingerprint": out["fingerprint"],
            "node": out["node"],
            "dimensions": np.asarray([dim] * n, dtype=np.int64),
            "rows": np.asarray([len(rows)] + [0] * (n - 1), dtype=np.int64),
            "fragments": np.asarray([json.dumps(frags)] + [""] * (n - 1), dtype=object),
        }


def _no_bytes(value: Any) -> None:
    """JSON for the rows handed to the workers: a unit blob is filled in by the worker."""
    if isinstance(value, bytes):
        return None
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class _Precomputed:
    """The embedder as ``Run.flush`` sees it: each chunk's evidence comes from the Ray stage,
    looked up by content hash (``evidence``, which ``embed_evidence`` asks first);
    name/fingerprint/dimensions are the real model's."""

    def __init__(self, info: dict, vectors: dict[str, tuple[Any, int, bytes]]) -> None:
        self.name = info["name"]
        self.fingerprint = info["fingerprint"]
        self.dimensions = info["dimensions"]
        self._vectors = vectors

    def evidence(self, items: list[tuple[str, str]]) -> list:
        from ragsift.embedders.evidence import Evidence

        try:
            rows = [self._vectors[content_hash(c + t)] for c, t in items]
        except KeyError:
            raise RagsiftError("internal: a chunk was not embedded by the Ray stage") from None
        return [Evidence(v, u, int(c)) for v, c, u in rows]


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
    changed = _changed_files(run, plan, found.files, rules.max_file_size)
    LAST_RUN.clear()
    LAST_RUN.update(vectors_to_driver=0, rows_written_by_workers=0, fragments=0)
    if changed:
        _ray_stages(run, request.ray_address, plan, changed, chunker, (workers, threads))
    run.flush()
    if request.prune:  # only what is certainly gone from a folder listed in this run (as locally)
        run.remove(plan.gone(list(request.paths), found))
    return plan


def _changed_files(
    run: Run, plan: ChangePlan, files: list, max_file_size: int | None
) -> list[dict]:
    """The change plan's side on the driver: each discovered file unchanged (counted, as a
    local run counts it) or changed, a row for the parse stage."""
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

    def write_of(row: dict, recs: list[dict]) -> DocumentWrite:
        c = by_key[row["key"]]
        plan.note_written(row["key"], row["path"])
        return DocumentWrite(
            key=row["key"],
            path=row["path"],
            sha256=row["sha256"],
            records=recs,
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
            docs = _parse_stage(ray, run, changed, chunker)
            slot = run.model
            pool = Pool(ray, slot.model_dir, slot.options, slot.batch_size, *sizes)
            if fragments:  # the workers write the chunk rows; one commit here
                _write_fragments(pool, run, [write_of(r, recs) for r, recs in docs])
                docs = []
            else:
                _embed_stage(pool, run, docs)
        finally:
            if owned:
                ray.shutdown()
    for row, recs in docs:
        run.add(write_of(row, recs))


def _parse_stage(
    ray: Any, run: Run, changed: list[dict], chunker: Any
) -> list[tuple[dict, list[dict]]]:
    """Stage 1 on Ray (read, parse, chunk); returns [(file row, chunk records)] in the
    driver's file order, skips reported as a local run reports them."""
    import json

    from ragsift.sources import Skipped

    ds = ray.data.from_items(changed, override_num_blocks=min(len(changed), 64))
    ds = ds.map(parse_file, fn_kwargs={"chunker": chunker})
    parsed = {row["key"]: row for row in ds.iter_rows()}
    docs: list[tuple[dict, list[dict]]] = []
    for c in changed:  # the driver's file order, whatever order the workers finished in
        row = parsed[c["key"]]
        if row["skip"]:
            run.skip(Skipped(c["relpath"], row["skip"]))
            run.progress.advance(files=1)
            continue
        run.summary.parsed += 1
        for script, n in json.loads(row["scripts"]).items():  # as a local run counts them
            run.summary.scripts[script] = run.summary.scripts.get(script, 0) + n
        report_warnings(row["path"], json.loads(row["warnings"]), run.on_warning)
        docs.append((row, json.loads(row["records"])))
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


def _embed_stage(pool: Pool, run: Run, docs: list[tuple[dict, list[dict]]]) -> None:
    """Stage 2 on Ray for an index without ``FragmentCommits``: embed the texts the index
    lacks; their vectors come back to the driver, where ``Run.flush`` writes them."""
    hashes = [r["content_hash"] for _, recs in docs for r in recs]
    known = run.store.vectors_for_hashes(hashes) if hashes else {}
    todo: dict[str, tuple[str, str]] = {}
    for _, recs in docs:
        for r in recs:
            if r["content_hash"] not in known:
                todo.setdefault(r["content_hash"], (r["context"], r["text"]))
    if todo:
        vectors, model = embed_texts(pool, todo)
        run.model.use(_Precomputed(model, vectors))


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


def _write_fragments(pool: Pool, run: Run, writes: list) -> None:
    """Stage 2 on Ray for an index with ``FragmentCommits`` (Lance): the actor pool embeds the
    texts the index lacks and writes their chunk rows as fragments; the driver writes the
    document rows and the chunks whose vector the index already holds, then commits everything
    as ONE transaction. Same summary counts as ``Run.flush``."""
    store = run.store
    if not writes:
        return
    hashes = [r["content_hash"] for w in writes for r in w.records]
    known = store.vectors_for_hashes(hashes) if hashes else {}
    rowid = store.alloc_rowids(len(hashes))
    groups: dict[str, dict] = {}  # content hash -> its text, tokens and chunk rows
    here_rows: list[dict] = []
    here_vecs: list = []
    truncated: dict[str, int] = {h: cut for h, (_, cut, _) in known.items()}
    for w in writes:
        for r in w.records:
            h = r["content_hash"]
            chunk = store.chunk_row(w.key, rowid, r)
            rowid += 1
            if h in known:
                chunk["truncated"] = known[h][1]
                chunk["units"] = known[h][2]
                here_rows.append(chunk)
                here_vecs.append(known[h][0])
            else:
                g = groups.setdefault(
                    h,
                    {
                        "context": r["context"],
                        "text": r["text"],
                        "rows": [],
                        "tokens": int(r.get("tokens") or 0),
                    },
                )
                g["rows"].append(chunk)
    fragments: list[str] = []
    try:
        _embed_and_commit(pool, run, writes, groups, here_rows, here_vecs, truncated, fragments)
    except BaseException:  # a refusal or an interruption: the workers' files go too
        with contextlib.suppress(Exception):
            store.discard_fragments(fragments)
        raise


def _embed_and_commit(
    pool: Pool,
    run: Run,
    writes: list,
    groups: dict[str, dict],
    here_rows: list[dict],
    here_vecs: list,
    truncated: dict[str, int],
    fragments: list[str],
) -> None:
    """``_write_fragments``' second half: the actors write the rows of ``groups`` (their
    fragments' metadata collected in ``fragments`` as they come back), the model is checked
    (``one_model``, ``ModelSlot.use``: the refusal), and the run is committed."""
    import json

    s, store = run.summary, run.store
    hashes = [r["content_hash"] for w in writes for r in w.records]
    dim = store.dimensions()
    if groups:
        items = [
            {
                "hash": h,
                "context": g["context"],
                "text": g["text"],
                "rows": json.dumps(g["rows"], default=_no_bytes),
            }
            for h, g in groups.items()
        ]
        prints, dims, done = set(), set(), set()
        for batch in pool.batches(EmbedWriteActor, items, writer=store.fragment_writer()):
            for h, cut, fp, d in zip(
                batch["hash"], batch["truncated"], batch["fingerprint"], batch["dimensions"]
            ):
                truncated[str(h)] = int(cut)
                done.add(str(h))
                prints.add(str(fp))
                dims.add(int(d))
            for f in batch["fragments"]:
                if f:
                    fragments.extend(json.loads(str(f)))
            LAST_RUN["rows_written_by_workers"] += int(batch["rows"].sum())
        if set(groups) - done:
            raise RagsiftError(f"the Ray stage wrote {len(done)} of {len(groups)} texts")
        model = pool.one_model(prints, dims)
        dim = model["dimensions"]
        run.model.use(_Precomputed(model, {}))  # the refusal and the settings, as locally
        s.embedded += len(groups)
        s.tokens += sum(g["tokens"] for g in groups.values())
        LAST_RUN["fragments"] = len(fragments)
    n_chunks = len(hashes)
    for w in writes:
        for r in w.records:
            cut = truncated[r["content_hash"]]
            r["truncated"] = cut
            if cut:
                s.truncated += 1
                s.truncated_tokens += cut
    s.chunks += n_chunks
    s.reused += n_chunks - len(groups)
    store.commit_fragments(writes, fragments, here_rows, here_vecs, int(dim or 1))
    run.progress.advance(files=len(writes), chunks=n_chunks)
