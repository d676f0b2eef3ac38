"""Search speed: ragsift's exact scan vs faiss ``IndexFlatIP`` and sqlite-vec (a benchmark,
not a test).

For each size N (default 10k, 100k, 1M) of 384-dimensional synthetic unit vectors:

- builds an index file through ``IndexStore.write_documents`` (cached in ``--work``; the
  settings carry the default model's fingerprint and the evidence layout, and each row its
  unit evidence (one unit, the row's vector), so ``ragsift query`` accepts the file);
- warm search latency per query, single query at a time, top ``k + reject_window`` = 13,
  the engines taking turns on each query (the machine may be shared):
  ``IndexStore.dense_candidates`` (the scan + argpartition), ``Searcher.retrieve`` (plus chunk
  records and the TopK record), faiss ``IndexFlatIP.search`` on the same matrix, and
  sqlite-vec (``vec0`` table, cosine distance, ``MATCH ... AND k = 13``);
- checks that ragsift's top 13 equals faiss's (exact search);
- cold end-to-end ``ragsift query`` in a new process (imports, model load, index open,
  matrix load, search, print) and its peak RSS.

Synthetic vectors: queries are stored vectors plus noise, so the top scores look like real
matches (0.5-0.9) rather than noise around 0.

Run:  .venv/bin/python -m bench.bench_search [--sizes 10000,100000,1000000] [--queries 50]
Needs: pip install faiss-cpu sqlite-vec apsw (columns are skipped when missing; apsw because
this Python's sqlite3 module cannot load extensions).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

from ragsift.index import open_index
from ragsift.index.backend import ChunkRow, DocumentWrite
from ragsift.retrieval.request import SearchRequest
from ragsift.retrieval.search import Searcher

DIM = 384
FETCH = 13  # k=3 + reject window 10
ROWS_PER_DOC = 1000


def synthetic(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = np.empty((n, dim), np.float32)
    for s in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - s), dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        m[s : s + block.shape[0]] = block
    return m


def queries_for(matrix: np.ndarray, count: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, matrix.shape[0], count)
    q = matrix[picks] + rng.standard_normal((count, matrix.shape[1]), dtype=np.float32) * 0.06
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def build_index(path: Path, n: int, fingerprint: str, model: str) -> None:
    from ragsift.embedders import evidence

    marker = path.with_suffix(".done")
    done = f"{n} {evidence.EVIDENCE_KIND}"  # a file cached without this evidence is rebuilt
    if path.exists() and marker.exists() and marker.read_text() == done:
        return
    for p in (path, marker, Path(str(path) + "-wal"), Path(str(path) + "-shm")):
        if p.exists():
            p.unlink()
    matrix = synthetic(n, DIM)
    t0 = time.perf_counter()
    with open_index(path, "w") as store:
        store.set_settings(
            model=model,
            model_fingerprint=fingerprint,
            dimensions=DIM,
            chunker="synthetic",
            chunker_options={},
            evidence=evidence.EVIDENCE_KIND,  # as embed records it: the query path checks it
        )
        batch = []
        for d, s in enumerate(range(0, n, ROWS_PER_DOC)):
            e = min(n, s + ROWS_PER_DOC)
            recs = [
                {
                    "index": i,
                    "text": f"synthetic chunk {s + i}",
                    "start": 0,
                    "end": 0,
                    "context": "",
                    "tokens": 3,
                    "line_start": 1,
                    "line_end": 1,
                    "headings": [],
                    "page": None,
                    "level": 0,
                    "content_hash": f"{s + i:016x}",
                    "truncated": 0,
                }
                for i in range(e - s)
            ]
            # unit evidence as embed stores it: the text's own units ("synthetic chunk N" is
            # one), each with the chunk's vector, so their length-weighted mean (the chunk's
            # vector, ``evidence.aggregate``) is the stored row itself and the matrix stays
            # the one faiss and sqlite-vec search
            for i, rec in enumerate(recs):
                bounds = evidence.unit_bounds(rec["text"]) or [(0, len(rec["text"]))]
                rec["units"] = evidence.encode(
                    bounds, np.repeat(matrix[s + i][None], len(bounds), 0)
                )
            batch.append(
                DocumentWrite(
                    key=f"doc{d:05d}.txt",
                    path=f"doc{d:05d}.txt",
                    sha256="0" * 64,
                    records=tuple(ChunkRow(path=f"doc{d:05d}.txt", **r) for r in recs),
                    vectors=matrix[s:e],
                )
            )
            if len(batch) == 50:
                store.write_documents(batch)
                batch = []
        store.write_documents(batch)
    marker.write_text(done)
    print(f"  built {path.name}: {n} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def timed(fn, qs) -> list[float]:
    fn(qs[0])
    out = []
    for q in qs:
        t = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t) * 1000)
    return out


def interleaved(fns: dict, qs) -> dict[str, list[float]]:
    """Time every engine on each query in turn, so a change in machine load hits all of them
    alike (the machine this runs on is shared)."""
    for fn in fns.values():
        fn(qs[0])
    out: dict[str, list[float]] = {name: [] for name in fns}
    for q in qs:
        for name, fn in fns.items():
            t = time.perf_counter()
            fn(q)
            out[name].append((time.perf_counter() - t) * 1000)
    return out


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"{statistics.median(ms):.2f} / {p95:.2f}"


def faiss_engines(matrix: np.ndarray) -> dict:
    """faiss IndexFlatIP with its default OpenMP threads and with one thread (its spinning
    threads lose badly when the machine is busy); the better median is the reference."""
    try:
        import faiss
    except ImportError:
        return {}
    index = faiss.IndexFlatIP(matrix.shape[1])
    index.add(matrix)
    threads = faiss.omp_get_max_threads()

    def search(q, n_threads):
        faiss.omp_set_num_threads(n_threads)
        return index.search(q[None, :], FETCH)[1][0]

    return {"faiss": lambda q: search(q, threads), "faiss1": lambda q: search(q, 1)}


def sqlite_vec_engine(work: Path, n: int, matrix: np.ndarray):
    """sqlite-vec through apsw (this Python's sqlite3 module cannot load extensions)."""
    try:
        import apsw
        import sqlite_vec
    except ImportError:
        return None
    path = work / f"sqlite-vec-{n}.db"
    marker = path.with_suffix(".done")
    db = apsw.Connection(str(path))
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    if not (marker.exists() and marker.read_text() == str(n)):
        db.execute("DROP TABLE IF EXISTS v")
        db.execute(
            f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIM}] distance_metric=cosine)"
        )
        with db:
            for s in range(0, n, 10_000):
                db.executemany(
                    "INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                    [(s + i + 1, row.tobytes()) for i, row in enumerate(matrix[s : s + 10_000])],
                )
        marker.write_text(str(n))
    sql = "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance"
    return lambda q: db.execute(sql, (q.tobytes(), FETCH)).fetchall()


def cold_query(index: Path, runs: int) -> tuple[list[float], list[float], float]:
    """Wall time and CPU time (user + system, ms) of a fresh ``ragsift query`` process, and
    its own peak RSS (MiB). CPU time is the load-independent part on a busy machine."""
    env = {**os.environ, "COLUMNS": "120"}
    times, cpu, rss = [], [], 0.0
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragsift",
                "query",
                "honey bee swarm",
                "--index",
                str(index),
                "--threshold",
                "none",
                "--json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=REPO,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        times.append((time.perf_counter() - t) * 1000)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"ragsift query failed: {proc.stderr.read().decode()}")
        rss = max(rss, usage.ru_maxrss / 1024)  # KiB on Linux
        cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
    return times, cpu, rss


def measure_warm(path: Path, emb, args, work: Path, n: int) -> dict:
    with open_index(path, "r") as store:
        t = time.perf_counter()
        searcher = Searcher(store, embedder=emb)
        load_ms = (time.perf_counter() - t) * 1000
        matrix, rowids = store._dense.matrix, store._dense.rowids  # what the backend loaded
        qs = queries_for(matrix, args.queries)
        strat = SearchRequest(k=3, threshold=0.5, reject_window=10)
        engines = {
            "scan": lambda q: np.array(
                [r for r, _ in store.dense_candidates(q[None, :], FETCH)[0]]
            ),
            "retrieve": lambda q: searcher.retrieve("q", strat, qvec=q),
            **faiss_engines(matrix),
        }
        if not args.no_sqlite_vec:
            vec = sqlite_vec_engine(work, n, matrix)
            if vec is not None:
                engines["sqlite_vec"] = vec
        times = interleaved(engines, qs)
        exact = None
        if "faiss" in engines:
            # faiss ids are positions in the matrix; ours are rowids
            exact = all(
                np.array_equal(rowids[engines["faiss1"](q)], engines["scan"](q)) for q in qs
            )
    fms = None
    if "faiss" in times:
        fms = min(times["faiss"], times["faiss1"], key=statistics.median)
    vms = times.get("sqlite_vec")
    return {
        "load_ms": load_ms,
        "scan": summary(times["scan"]),
        "retrieve": summary(times["retrieve"]),
        "faiss": summary(fms) if fms else "-",
        "sqlite_vec": summary(vms) if vms else "-",
        "ratio": statistics.median(times["scan"]) / statistics.median(fms) if fms else None,
        "exact": exact,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--cold-runs", type=int, default=3)
    ap.add_argument("--work", default="/tmp/ragsift-bench-search")
    ap.add_argument("--no-sqlite-vec", action="store_true")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    from ragsift.embedders import load_embedder

    emb = load_embedder(lazy=True)
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numpy "
        f"{np.__version__}, python {platform.python_version()}",
        file=sys.stderr,
    )
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        path = work / f"synthetic-{n}.ragsift"
        build_index(path, n, emb.fingerprint, emb.name)
        warm = measure_warm(path, emb, args, work, n)
        cold, cpu, rss = cold_query(path, args.cold_runs)
        row = {
            "n": n,
            "load_avg": os.getloadavg()[0],
            **warm,
            "cold_ms": summary(cold),
            "cold_cpu_ms": f"{statistics.median(cpu):.0f}",
            "cold_rss_mib": rss,
            "file_mib": path.stat().st_size / 2**20,
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    print(
        "| chunks | ragsift scan ms (median / p95) | ragsift retrieve ms | faiss IndexFlatIP ms "
        "| sqlite-vec ms | scan / faiss | same top-13 as faiss | matrix load ms | cold "
        "`ragsift query` ms | its CPU ms | cold peak RSS MiB | index file MiB | load avg |"
    )
    print(
        "| ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |"
    )
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] else "-"
        print(
            f"| {r['n']:,} | {r['scan']} | {r['retrieve']} | {r['faiss']} | {r['sqlite_vec']} "
            f"| {ratio} | {r['exact']} | {r['load_ms']:.0f} | {r['cold_ms']} | "
            f"{r['cold_cpu_ms']} | {r['cold_rss_mib']:.0f} | {r['file_mib']:.0f} | {r['load_avg']:.1f} |"
        )


if __name__ == "__main__":
    main()
