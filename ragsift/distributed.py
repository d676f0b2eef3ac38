"""``ragsift embed --engine ray``: the changed files are read, parsed, chunked and embedded on a
Ray cluster (Ray Data); the driver keeps what must stay serial.

Who does what:
- Driver (this process, serial): discovery and the change set, exactly as a local run (size +
  mtime, then sha256; the same keys, the same prune rule); the model-fingerprint refusal
  (``pipeline._Run.check_model_early``, before any work); the lookup of chunk texts that
  already have a vector (``vectors_for_hashes``); and every commit to the index, through the
  pipeline's own ``_Run.add``/``flush`` for a SQLite file (same batches, same atomicity, same
  summary counts); for a Lance index, the one commit of the fragments the workers wrote.
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
Lance data files (uncommitted fragments, ``index.lance.write_fragments``) and only their
metadata comes back; the vectors never pass through the driver. The driver then commits the
whole change set as ONE Lance transaction (``LanceIndex.commit_fragments``: the replaced
documents' old rows deleted, the document rows and the new fragments added). A killed run
therefore leaves the index exactly as before the run (its written files are never referenced)
and a re-run redoes the change set; a SQLite index keeps the streamed-back path above.

Not distributed (measured in bench/RESULTS.md): the change set and the commit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ragsift.errors import RagsiftError

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
            ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RagsiftError(f"cannot connect to the Ray cluster at {address or 'local'}: "
                           f"{str(exc).splitlines()[0]}") from None
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

    from ragsift.pipeline import _load_each, index_records
    from ragsift.sources import SourceFile

    _kill_once("parse")
    sf = SourceFile(path=pathlib.Path(row["file"]), relpath=row["relpath"],
                    size=row["size"], mtime=row["mtime"])
    out = {"key": row["key"], "skip": "", "records": "", "warnings": "", "format": "",
           "path": row["relpath"], "sha256": ""}
    skipped: list = []  # the local run's one read -> parse loop: same caps, same skip reasons
    loaded = list(_load_each([sf], skip=skipped.append, on_warning=None,
                             max_file_size=row.get("max_file_size")))
    if skipped or not loaded:
        out["skip"] = skipped[0].reason if skipped else "unreadable"
        return out
    _, data, doc = loaded[0]
    out["sha256"] = hashlib.sha256(data).hexdigest()
    out["warnings"] = json.dumps(list(doc.warnings))
    doc, records = index_records(chunker, doc)
    out.update(records=json.dumps(records), format=doc.format or "", path=doc.path)
    return out


class EmbedActor:
    """Stage 2: one onnxruntime session per actor, reused for every batch it is given."""

    def __init__(self, model_dir: str | None, options: dict, threads: int | None) -> None:
        from ragsift.embedders import load_embedder

        import ray

        self.embedder = load_embedder(model_dir, threads=threads, **options)
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        _kill_once("embed")
        texts = [str(t) for t in batch["text"]]
        res = self.embedder.embed(texts, kind="passage")
        return {"hash": batch["hash"],
                "vector": np.asarray(res.vectors, dtype=np.float32),
                "truncated": np.asarray(res.truncated, dtype=np.int64),
                "fingerprint": np.asarray([self.embedder.fingerprint] * len(texts)),
                "node": np.asarray([self.node] * len(texts))}


class EmbedWriteActor(EmbedActor):
    """Stage 2 for a Lance index: embed, then write the batch's chunk rows (each hash's rows,
    made by the driver, get its vector) as uncommitted Lance fragments; returns per hash only
    its truncation count, and the fragments' metadata (JSON) on the batch's first row."""

    def __init__(self, model_dir: str | None, options: dict, threads: int | None,
                 uri: str, storage_options: dict, create: bool = False) -> None:
        super().__init__(model_dir, options, threads)
        self.uri, self.storage_options, self.create = uri, storage_options, create

    def __call__(self, batch: dict) -> dict:
        import json

        import numpy as np

        from ragsift.index.lance import rows_table, write_fragments

        out = super().__call__(batch)
        rows, vectors = [], []
        for group, vec, cut in zip(batch["rows"], out["vector"], out["truncated"]):
            for row in json.loads(str(group)):
                row["truncated"] = int(cut)
                rows.append(row)
                vectors.append(vec)
        dim = int(out["vector"].shape[1])
        frags = write_fragments(self.uri, rows_table(rows, vectors, dim), self.storage_options,
                                create=self.create)
        n = len(out["hash"])
        return {"hash": out["hash"], "truncated": out["truncated"],
                "fingerprint": out["fingerprint"], "node": out["node"],
                "dimensions": np.asarray([dim] * n, dtype=np.int64),
                "rows": np.asarray([len(rows)] + [0] * (n - 1), dtype=np.int64),
                "fragments": np.asarray([json.dumps(frags)] + [""] * (n - 1), dtype=object)}


class _Precomputed:
    """The embedder as the pipeline's ``_Run`` sees it: vectors come from the Ray stage,
    looked up by text hash; name/fingerprint/dimensions are the real model's."""

    def __init__(self, info: dict, vectors: dict[str, tuple[Any, int]]) -> None:
        self.name = info["name"]
        self.fingerprint = info["fingerprint"]
        self.dimensions = info["dimensions"]
        self._vectors = vectors

    def embed(self, texts: list[str], kind: str = "passage") -> Any:
        import numpy as np

        from ragsift.embedders.onnx import EmbedResult
        from ragsift.pipeline import content_hash

        try:
            rows = [self._vectors[content_hash(t)] for t in texts]
        except KeyError:
            raise RagsiftError("internal: a chunk was not embedded by the Ray stage") from None
        return EmbedResult(vectors=np.stack([v for v, _ in rows]),
                           truncated=[int(c) for _, c in rows])


def ingest_files(run: Any, paths: list[str], chunker: Any, include: list[str] | None,
                 exclude: list[str] | None, prune: bool, skip: Callable[[Any], None], *,
                 address: str | None = None, workers: int | None = None,
                 threads: int | None = None, max_file_size: int | None = None,
                 follow_links: bool = False) -> None:
    """The ``--engine ray`` counterpart of ``pipeline._ingest_files`` (same summary, same
    commits)."""
    import hashlib

    from ragsift.index.backend import DocumentWrite
    from ragsift.errors import SkipFile
    from ragsift.pipeline import _prune, _use_chunker, _walk
    from ragsift.sources import DEFAULT_MAX_FILE_SIZE, path_key, read_bytes

    store, s = run.store, run.summary
    key_of_chunker = _use_chunker(run, chunker)
    # the same walk, skips, ignored counts and pruning certainty as a local run
    found = _walk(paths, include, exclude, follow_links, skip, run.on_warning, s.ignored)
    files = found.files
    cap = DEFAULT_MAX_FILE_SIZE if max_file_size is None else max_file_size
    # -- the change set, on the driver, exactly as a local run ------------------------------
    state = store.documents_state()
    seen: set[str] = set()
    changed: list[dict] = []
    run.progress.start(len(files))
    for sf in files:
        s.discovered += 1
        key = path_key(sf.path)
        seen.add(key)
        old = state.get(key)
        same_chunker = old is not None and old.chunker == key_of_chunker
        if same_chunker and old.size == sf.size and old.mtime == sf.mtime:
            s.unchanged += 1
            if old.path != sf.relpath:
                store.touch_document(key, path=sf.relpath)
            run.progress.advance(files=1)
            continue
        if same_chunker:
            try:
                sha = hashlib.sha256(read_bytes(sf, cap)).hexdigest()
            except (OSError, SkipFile):
                sha = None  # the worker reports the read error
            if sha == old.sha256:
                s.unchanged += 1
                store.touch_document(key, path=sf.relpath, size=sf.size, mtime=sf.mtime)
                run.progress.advance(files=1)
                continue
        changed.append({"file": str(sf.path), "relpath": sf.relpath, "size": sf.size,
                        "mtime": sf.mtime, "key": key, "max_file_size": cap})
    by_key = {c["key"]: c for c in changed}
    LAST_RUN.clear()
    LAST_RUN.update(vectors_to_driver=0, rows_written_by_workers=0, fragments=0)
    if changed:
        import contextlib
        import sys

        # Ray prints worker-death notices on the driver's stdout; keep stdout for --json.
        with contextlib.redirect_stdout(sys.stderr):
            owned = not _ray().is_initialized()
            ray = connect(address)
            lance = getattr(store, "commit_fragments", None) is not None
            try:
                docs = _run_stages(ray, run, changed, chunker, skip, workers, threads,
                                   embed=not lance)
                if lance:  # the workers write the chunk rows; one commit here
                    _write_lance(ray, run, docs, by_key, key_of_chunker, workers, threads)
                    docs = []
            finally:
                if owned:
                    ray.shutdown()
        for row, recs in docs:
            c = by_key[row["key"]]
            run.add(DocumentWrite(key=row["key"], path=row["path"], sha256=row["sha256"],
                                  records=recs, vectors=None, source=row["key"],
                                  size=c["size"], mtime=c["mtime"], format=row["format"] or None,
                                  chunker=key_of_chunker))
    run.flush()
    if prune:  # only what is certainly gone from a folder listed in this run (as locally)
        _prune(run, state, seen, paths, found)


def _run_stages(ray: Any, run: Any, changed: list[dict], chunker: Any,
                skip: Callable[[Any], None], workers: int | None, threads: int | None,
                embed: bool = True) -> list[tuple[dict, list[dict]]]:
    """Stage 1 (parse + chunk) and stage 2 (embed the texts the index lacks; ``embed``) on
    Ray; returns [(file row, chunk records)] in the driver's file order."""
    import json

    from ragsift.pipeline import _report_warnings
    from ragsift.sources import Skipped

    s, store = run.summary, run.store
    # -- stage 1: read, parse, chunk -----------------------------------------------------
    ds = ray.data.from_items(changed, override_num_blocks=min(len(changed), 64))
    ds = ds.map(parse_file, fn_kwargs={"chunker": chunker})
    parsed = {row["key"]: row for row in ds.iter_rows()}
    docs: list[tuple[dict, list[dict]]] = []
    for c in changed:  # the driver's file order, whatever order the workers finished in
        row = parsed[c["key"]]
        if row["skip"]:
            skip(Skipped(c["relpath"], row["skip"]))
            run.progress.advance(files=1)
            continue
        s.parsed += 1
        _report_warnings(_Warned(row["path"], json.loads(row["warnings"])), run.on_warning)
        docs.append((row, json.loads(row["records"])))
    if not embed:
        return docs
    # -- stage 2: embed what the index does not hold yet --------------------------------
    hashes = [r["content_hash"] for _, recs in docs for r in recs]
    known = store.vectors_for_hashes(hashes) if hashes else {}
    todo: dict[str, str] = {}
    for _, recs in docs:
        for r in recs:
            if r["content_hash"] not in known:
                todo.setdefault(r["content_hash"], r["context"] + r["text"])
    if todo:
        vectors, info = embed_texts(ray, todo, run.model_dir, run.options or {},
                                    run.batch_size, workers, threads)
        s.model_loaded = True
        run._embedder = _Precomputed(info, vectors)
    return docs


class _Warned:
    """What ``_report_warnings`` reads of a document: its path and warnings."""

    def __init__(self, path: str, warnings: list[str]) -> None:
        self.path = path
        self.warnings = warnings


def embed_texts(ray: Any, todo: dict[str, str], model_dir: str | None, options: dict,
                batch_size: int | None, workers: int | None, threads: int | None
                ) -> tuple[dict[str, tuple[Any, int]], dict]:
    """Embed ``todo`` ({content hash: embed text}) on an actor pool; returns ({hash: (vector,
    truncated)}, {"name", "fingerprint", "dimensions"})."""
    import numpy as np

    from ragsift.pipeline import EMBED_STEP

    opts = dict(options)
    if batch_size is not None:
        opts["batch_size"] = batch_size
    cpus = int(ray.cluster_resources().get("CPU", 1))
    threads = threads or 1
    pool = workers or max(1, min(cpus // threads, (len(todo) + EMBED_STEP - 1) // EMBED_STEP))
    items = [{"hash": h, "text": t} for h, t in todo.items()]
    ds = ray.data.from_items(items, override_num_blocks=max(1, min(pool * 4, len(items))))
    ds = ds.map_batches(
        EmbedActor, fn_constructor_kwargs={"model_dir": model_dir, "options": opts,
                                           "threads": threads},
        batch_size=EMBED_STEP, compute=ray.data.ActorPoolStrategy(size=pool),
        num_cpus=threads, batch_format="numpy",
        max_restarts=-1, max_task_retries=-1)
    out: dict[str, tuple[Any, int]] = {}
    prints, nodes = set(), set()
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        for h, vec, cut, fp in zip(batch["hash"], batch["vector"], batch["truncated"],
                                   batch["fingerprint"]):
            out[str(h)] = (np.asarray(vec, np.float32), int(cut))
            prints.add(str(fp))
        nodes.update(str(n) for n in batch["node"])
    LAST_RUN["vectors_to_driver"] = LAST_RUN.get("vectors_to_driver", 0) + len(out)
    if set(todo) - set(out):
        raise RagsiftError(f"the Ray stage returned {len(out)} of {len(todo)} vectors")
    if len(prints) != 1:
        raise RagsiftError("Ray workers loaded different models "
                           f"({', '.join(sorted(prints))}); install the same model everywhere")
    fingerprint = prints.pop()
    name, dim = fingerprint.split("/")[0], next(iter(out.values()))[0].shape[0]
    return out, {"name": name, "fingerprint": fingerprint, "dimensions": dim, "actors": pool,
                 "nodes": sorted(nodes)}


def _write_lance(ray: Any, run: Any, docs: list[tuple[dict, list[dict]]], by_key: dict,
                 key_of_chunker: str, workers: int | None, threads: int | None) -> None:
    """Stage 2 for a Lance index: the actor pool embeds the texts the index lacks and writes
    their chunk rows as fragments; the driver writes the document rows and the chunks whose
    vector the index already holds, then commits everything as ONE Lance transaction. Same
    summary counts as ``_Run.flush``."""
    import json

    from ragsift.index.backend import DocumentWrite
    from ragsift.index.lance import chunk_row
    from ragsift.pipeline import EMBED_STEP

    s, store = run.summary, run.store
    if not docs:
        return
    writes = []
    hashes = [r["content_hash"] for _, recs in docs for r in recs]
    known = store.vectors_for_hashes(hashes) if hashes else {}
    rowid = store.alloc_rowids(len(hashes))
    groups: dict[str, dict] = {}  # content hash -> its text, tokens and chunk rows
    here_rows: list[dict] = []
    here_vecs: list = []
    truncated: dict[str, int] = {h: cut for h, (_, cut) in known.items()}
    for row, recs in docs:
        c = by_key[row["key"]]
        writes.append(DocumentWrite(key=row["key"], path=row["path"], sha256=row["sha256"],
                                    records=recs, vectors=None, source=row["key"],
                                    size=c["size"], mtime=c["mtime"],
                                    format=row["format"] or None, chunker=key_of_chunker))
        for r in recs:
            h = r["content_hash"]
            chunk = chunk_row(row["key"], rowid, r)
            rowid += 1
            if h in known:
                chunk["truncated"] = known[h][1]
                here_rows.append(chunk)
                here_vecs.append(known[h][0])
            else:
                g = groups.setdefault(h, {"text": r["context"] + r["text"], "rows": [],
                                          "tokens": int(r.get("tokens") or 0)})
                g["rows"].append(chunk)
    fragments: list[str] = []
    dim = store.dimensions()
    if groups:
        uri, options, create = store.writer_target()
        opts = dict(run.options or {})
        if run.batch_size is not None:
            opts["batch_size"] = run.batch_size
        cpus = int(ray.cluster_resources().get("CPU", 1))
        threads = threads or 1
        pool = workers or max(1, min(cpus // threads,
                                     (len(groups) + EMBED_STEP - 1) // EMBED_STEP))
        items = [{"hash": h, "text": g["text"], "rows": json.dumps(g["rows"])}
                 for h, g in groups.items()]
        ds = ray.data.from_items(items, override_num_blocks=max(1, min(pool * 4, len(items))))
        ds = ds.map_batches(
            EmbedWriteActor, fn_constructor_kwargs={
                "model_dir": run.model_dir, "options": opts, "threads": threads,
                "uri": uri, "storage_options": options, "create": create},
            batch_size=EMBED_STEP, compute=ray.data.ActorPoolStrategy(size=pool),
            num_cpus=threads, batch_format="numpy", max_restarts=-1, max_task_retries=-1)
        prints, dims, done = set(), set(), set()
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
            for h, cut, fp, d in zip(batch["hash"], batch["truncated"], batch["fingerprint"],
                                     batch["dimensions"]):
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
        if len(prints) != 1 or len(dims) != 1:
            raise RagsiftError("Ray workers loaded different models "
                               f"({', '.join(sorted(prints))}); install the same model "
                               "everywhere")
        fingerprint, dim = prints.pop(), dims.pop()
        s.model_loaded = True
        run._embedder = _Precomputed({"name": fingerprint.split("/")[0],
                                      "fingerprint": fingerprint, "dimensions": dim}, {})
        run.embedder()  # the fingerprint refusal and the model settings, as a local run
        s.embedded += len(groups)
        s.tokens += sum(g["tokens"] for g in groups.values())
        LAST_RUN["fragments"] = len(fragments)
    n_chunks = len(hashes)
    for _, recs in docs:
        for r in recs:
            cut = truncated[r["content_hash"]]
            r["truncated"] = cut
            if cut:
                s.truncated += 1
                s.truncated_tokens += cut
    s.chunks += n_chunks
    s.reused += n_chunks - len(groups)
    store.commit_fragments(writes, fragments, here_rows, here_vecs, int(dim or 1))
    run.progress.advance(files=len(writes), chunks=n_chunks)
