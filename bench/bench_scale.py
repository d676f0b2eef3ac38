"""Scale benchmarks for issue 12 (a benchmark, not a test): Lance vs SQLite, the ANN path, and
the Ray engine vs the local one. Results go to bench/RESULTS.md ("When one machine is not
enough"); every run prints the load average next to its numbers.

  backends N   Lance vs SQLite on the same N synthetic chunks (384-d clustered unit vectors,
               texts drawn from a 5,000-word vocabulary so BM25 has work): build time through
               ``write_documents`` + ``compact``, size on disk, warm dense / lexical / hybrid
               candidate latency (hybrid = dense + lexical candidates, what the engine fuses),
               cold latency (a new process: import, open, one dense + one lexical query).
  ann N        IVF-PQ build time, recall@10 of the ANN path (with exact re-scoring) against
               the exact scan, and both latencies, on the Lance index of ``backends N``.
  ray          2,000 chunks through ``build_index`` locally and with ``engine="ray"`` on a
               local Ray (num_cpus=2): the overhead ratio, Ray start-up, per-actor embedding
               throughput (1 and 2 actors), and the serial parts (change set of a no-op rerun).

Run:  .venv/bin/python -m bench.bench_scale backends 100000 ann 100000 ray --work /tmp/bs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

DIM = 384
ROWS_PER_DOC = 1000
FETCH = 13  # k=3 + reject window 10, as bench_search.py


def load() -> str:
    return open("/proc/loadavg").read().split(" ")[0]


def clustered(n: int, seed: int = 0, centres: int = 1000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, DIM)).astype(np.float32)
    out = np.empty((n, DIM), np.float32)
    for s in range(0, n, 100_000):
        m = min(100_000, n - s)
        block = c[rng.integers(0, centres, m)] + 0.8 * rng.standard_normal(
            (m, DIM), dtype=np.float32
        )
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[s : s + m] = block
    return out


def vocabulary(n: int = 5000) -> list[str]:
    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(n)]


def build(path: str, matrix: np.ndarray, words: list[str]) -> float:
    from ragsift.index import open_index
    from ragsift.index.backend import ChunkRow, DocumentWrite

    rng = random.Random(2)
    t0 = time.perf_counter()
    with open_index(path, "w") as w:
        w.set_settings(model="synthetic", model_fingerprint="synthetic/384/x", dimensions=DIM)
        n = matrix.shape[0]
        docs = []
        for d, s in enumerate(range(0, n, ROWS_PER_DOC)):
            rows = matrix[s : s + ROWS_PER_DOC]
            recs = [
                {
                    "index": i,
                    "text": " ".join(rng.choices(words, k=40)),
                    "start": 0,
                    "end": 0,
                    "tokens": 40,
                    "chars": 0,
                    "content_hash": f"{d}-{i}",
                    "truncated": 0,
                }
                for i in range(rows.shape[0])
            ]
            docs.append(
                DocumentWrite(
                    key=f"doc{d}",
                    path=f"doc{d}.txt",
                    sha256="0",
                    records=tuple(ChunkRow(path=f"doc{d}.txt", **r) for r in recs),
                    vectors=rows,
                )
            )
            if len(docs) == 10:  # commits of 10k chunks
                w.write_documents(docs)
                docs = []
        w.write_documents(docs)
        w.compact()
    return time.perf_counter() - t0


def size_of(path: str) -> int:
    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return sum(Path(path + s).stat().st_size for s in ("", "-wal") if Path(path + s).exists())


def queries(matrix: np.ndarray, words: list[str], m: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    q = matrix[rng.integers(0, matrix.shape[0], m)] + 0.1 * rng.standard_normal(
        (m, DIM), dtype=np.float32
    )
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    r = random.Random(seed)
    return q, [" ".join(r.choices(words, k=4)) for _ in range(m)]


def ms(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 2)


COLD = """
import sys, time, numpy as np
t0 = time.perf_counter()
from ragsift.index import open_index
with open_index(sys.argv[1]) as s:
    q = np.load(sys.argv[2])
    s.dense_candidates(q[:1], 13)
    s.lexical_candidates(sys.argv[3], 13)
print(time.perf_counter() - t0)
"""


def bench_backends(n: int, work: Path, m: int) -> dict:
    from ragsift.index import open_index

    matrix = clustered(n)
    words = vocabulary()
    out: dict = {"n": n, "load_before": load()}
    paths = {"sqlite": str(work / f"s{n}.db"), "lance": str(work / f"s{n}.lance")}
    for name, path in paths.items():
        if os.path.exists(path):
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
        out[f"{name}_build_s"] = round(build(path, matrix, words), 2)
        out[f"{name}_size_mb"] = round(size_of(path) / 2**20, 1)
    qv, qt = queries(matrix, words, m)
    np.save(work / "q.npy", qv)
    lat: dict = {f"{b}_{k}": [] for b in paths for k in ("dense", "lexical", "hybrid")}
    stores = {b: open_index(p) for b, p in paths.items()}
    for s in stores.values():
        s.load()
        s.dense_candidates(qv[:1], FETCH)
        s.lexical_candidates(qt[0], FETCH)
    for i in range(m):  # backends take turns on each query (the machine is shared)
        for b, s in stores.items():
            t0 = time.perf_counter()
            s.dense_candidates(qv[i : i + 1], FETCH)
            t1 = time.perf_counter()
            s.lexical_candidates(qt[i], FETCH)
            t2 = time.perf_counter()
            lat[f"{b}_dense"].append(t1 - t0)
            lat[f"{b}_lexical"].append(t2 - t1)
            lat[f"{b}_hybrid"].append(t2 - t0)
    for s in stores.values():
        s.close()
    out.update({f"warm_{k}_ms": ms(v) for k, v in lat.items()})
    for b, p in paths.items():
        cold = [
            float(
                subprocess.run(
                    [sys.executable, "-c", COLD, p, str(work / "q.npy"), qt[0]],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=REPO,
                ).stdout
            )
            for _ in range(3)
        ]
        out[f"cold_{b}_s"] = round(statistics.median(cold), 3)
    out["load_after"] = load()
    return out


def bench_ann(n: int, work: Path, m: int) -> dict:
    from ragsift.index import ann
    from ragsift.index.lance import LanceIndex

    path = str(work / f"s{n}.lance")
    matrix = clustered(n)
    qv, _ = queries(matrix, vocabulary(), m)
    out: dict = {"n": n, "load_before": load()}
    ann.ANN_MIN_ROWS = 1
    with LanceIndex.open(path, "w") as w:
        t0 = time.perf_counter()
        w._ds.create_index(
            "vector",
            index_type="IVF_PQ",
            metric="cosine",
            name="vector_idx",
            num_partitions=max(1, int(n**0.5)),
            num_sub_vectors=DIM // 8,
            replace=True,
        )
        out["ivfpq_build_s"] = round(time.perf_counter() - t0, 1)
    with LanceIndex.open(path) as r:
        out["size_mb_with_ann"] = round(size_of(path) / 2**20, 1)
        approx_t, exact_t, recalls = [], [], []
        r.load()
        for i in range(m):
            ann.ANN_MIN_ROWS, r._ann = 1, None
            t0 = time.perf_counter()
            a = r.dense_candidates(qv[i : i + 1], 10)[0]
            t1 = time.perf_counter()
            ann.ANN_MIN_ROWS, r._ann = 10**12, None
            e = r.dense_candidates(qv[i : i + 1], 10)[0]
            t2 = time.perf_counter()
            approx_t.append(t1 - t0)
            exact_t.append(t2 - t1)
            recalls.append(len({x for x, _ in a} & {x for x, _ in e}) / 10)
        out.update(
            ann_ms=ms(approx_t),
            exact_ms=ms(exact_t),
            recall_at_10=round(float(np.mean(recalls)), 3),
            nprobes=ann.NPROBES,
            refine=ann.REFINE,
        )
    out["load_after"] = load()
    return out


WORDS = [
    "bees",
    "honey",
    "swarm",
    "bread",
    "starter",
    "tide",
    "crab",
    "lantern",
    "wick",
    "oven",
    "loaf",
    "flour",
    "yeast",
    "water",
    "salt",
    "sea",
    "star",
    "anemone",
    "queen",
    "comb",
    "river",
    "stone",
    "field",
    "cloud",
    "winter",
    "garden",
]


def bench_ray(work: Path) -> dict:
    import ray

    from ragsift.ingest import BuildRequest, build_index, default_embed_chunker
    from ragsift.ingest import ray as distributed

    docs = work / "raydocs"
    shutil.rmtree(docs, ignore_errors=True)
    docs.mkdir(parents=True)
    rng = random.Random(4)
    for f in range(200):  # 200 files x 10 paragraphs of ~45 words -> ~2,000 chunks of <= 64
        paras = [" ".join(rng.choice(WORDS) for _ in range(45)) + "." for _ in range(10)]
        (docs / f"f{f}.md").write_text("\n\n".join(paras) + "\n")
    chunker = default_embed_chunker(None, size=64)
    out: dict = {"load_before": load()}
    for p in ("local.db", "ray.db"):
        Path(work / p).unlink(missing_ok=True)
    t0 = time.perf_counter()
    s = build_index(BuildRequest.of(str(work / "local.db"), [str(docs)], chunker=chunker))
    out["local_s"] = round(time.perf_counter() - t0, 1)
    out["chunks"] = s.chunks
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    out["ray_init_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    s = build_index(
        BuildRequest.of(
            str(work / "ray.db"),
            [str(docs)],
            chunker=default_embed_chunker(None, size=64),
            engine="ray",
        )
    )
    out["ray_s"] = round(time.perf_counter() - t0, 1)
    out["overhead_ratio"] = round(out["ray_s"] / out["local_s"], 2)
    out["overhead_ratio_incl_init"] = round((out["ray_s"] + out["ray_init_s"]) / out["local_s"], 2)
    t0 = time.perf_counter()
    build_index(
        BuildRequest.of(
            str(work / "ray.db"),
            [str(docs)],
            chunker=default_embed_chunker(None, size=64),
            engine="ray",
        )
    )
    out["noop_rerun_s"] = round(time.perf_counter() - t0, 2)  # change set only: serial
    texts = {f"h{i}": " ".join(rng.choice(WORDS) for _ in range(45)) for i in range(1000)}
    for actors in (1, 2):
        t0 = time.perf_counter()
        distributed.embed_texts(distributed.Pool(ray, None, {}, None, actors, 1), texts)
        dt = time.perf_counter() - t0
        out[f"embed_{actors}_actor_chunks_per_s"] = round(len(texts) / dt, 1)
    out["per_actor_chunks_per_s_at_2"] = round(out["embed_2_actor_chunks_per_s"] / 2, 1)
    ray.shutdown()
    out["load_after"] = load()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--work", default="/tmp/bench_scale")
    ap.add_argument("--queries", type=int, default=30)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tasks = list(args.tasks)
    while tasks:
        t = tasks.pop(0)
        if t == "backends":
            res = {"task": "backends", **bench_backends(int(tasks.pop(0)), work, args.queries)}
        elif t == "ann":
            res = {"task": "ann", **bench_ann(int(tasks.pop(0)), work, args.queries)}
        elif t == "ray":
            res = {"task": "ray", **bench_ray(work)}
        else:
            raise SystemExit(f"unknown task {t}")
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
