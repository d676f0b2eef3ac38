"""Backends give the same answers (issue 29; a benchmark, not a test). Results go to
bench/RESULTS.md ("Backends give the same answers (issue 29)"); every record carries the load
average.

  diff       fixtures/ embedded into SQLite and Lance by the real model; the answers test's 50
             queries (tests/test_backend_contract.py) in each mode through ``api.open_index``
             with no threshold: how many queries give other ids or order, and the largest
             |Lance - SQLite| of the relevance score, BM25 and cosine of the same chunk.
  cold-ab N BEFORE_TREE BEFORE_WORK
             cold runs taking turns (``--queries`` pairs): this tree on ``--work``'s index of
             ``lance N`` and the tree BEFORE_TREE (PYTHONPATH) on BEFORE_WORK's, each query
             another of the bench's queries; medians and the ratio.
  lance N    the cost on Lance at N synthetic chunks (bench_scale.py's corpus: clustered 384-d
             vectors, 40 words per chunk from a 5,000-word vocabulary): build (write +
             compact), size, warm dense / lexical (candidates + the query's BM25 ceiling, what
             the engine asks) / hybrid (both), and cold (a new process: import, open, one dense
             + one lexical query with its ceiling).

Run the code before a change against the same script by putting its tree first on the path:

  .venv/bin/python -m bench.bench_backends diff lance 100000 --work /tmp/bb_new
  PYTHONPATH=/tmp/lance_before .venv/bin/python bench/bench_backends.py diff lance 100000 \
      --work /tmp/bb_old
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.append(str(REPO))  # bench.bench_scale, tests (after any tree put first)

FETCH = 13  # k=3 + reject window 10, as bench_scale.py


def load() -> str:
    return open("/proc/loadavg").read().split(" ")[0]


def code() -> str:
    import ragsift

    return str(Path(ragsift.__file__).resolve().parent.parent)


def bench_diff(work: Path) -> dict:
    import importlib.util

    from ragsift import api

    # the answers test's queries, from this tree's tests (whichever ragsift runs)
    spec = importlib.util.spec_from_file_location(
        "answers", REPO / "tests" / "test_backend_contract.py"
    )
    answers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(answers)
    ANSWER_MODES, ANSWER_QUERIES = answers.ANSWER_MODES, answers.ANSWER_QUERIES
    out: dict = {"task": "diff", "code": code(), "load_before": load()}
    paths = {"sqlite": str(work / "f.db"), "lance": str(work / "f.lance")}
    for p in paths.values():
        if os.path.exists(p):
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
        api.build(p, [str(REPO / "fixtures")])
    got = {}
    for name, p in paths.items():
        ix = api.open_index(p)
        got[name] = {
            (m, q): ix.query(q, k=10, threshold=None, mode=m)
            for m in ANSWER_MODES
            for q in ANSWER_QUERIES
        }
    other_order = 0
    worst = {"score": 0.0, "lexical": 0.0, "dense": 0.0}
    for key, a in got["sqlite"].items():
        b = got["lance"][key]
        if [c.id for c in a.admitted] != [c.id for c in b.admitted]:
            other_order += 1
        sb = {c.id: c for c in b.admitted}
        for c in a.admitted:
            d = sb.get(c.id)
            if d is None:
                continue
            for name, x, y in (
                ("score", c.score, d.score),
                ("lexical", c.lexical_score, d.lexical_score),
                ("dense", c.dense_score, d.dense_score),
            ):
                if (x is None) != (y is None):
                    worst[name] = max(worst[name], abs((x or 0.0) - (y or 0.0)))
                elif x is not None:
                    worst[name] = max(worst[name], abs(x - y))
    out.update(
        {
            "searches": len(got["sqlite"]),
            "other_ids_or_order": other_order,
            **{f"max_abs_diff_{k}": float(f"{v:.3g}") for k, v in worst.items()},
            "load_after": load(),
        }
    )
    return out


COLD = """
import sys, time, numpy as np
t0 = time.perf_counter()
from ragsift.index import open_index
with open_index(sys.argv[1]) as s:
    q = np.load(sys.argv[2])
    s.dense_candidates(q[:1], 13)
    s.lexical_candidates(sys.argv[3], 13)
    s.lexical_ceiling(sys.argv[3])
print(time.perf_counter() - t0)
"""


def ms(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 2)


def bench_lance(n: int, work: Path, m: int) -> dict:
    from bench.bench_scale import build, clustered, queries, size_of, vocabulary
    from ragsift.index import open_index

    matrix = clustered(n)
    words = vocabulary()
    out: dict = {"task": "lance", "n": n, "code": code(), "load_before": load()}
    path = str(work / f"l{n}.lance")
    if os.path.exists(path):
        shutil.rmtree(path)
    out["build_s"] = round(build(path, matrix, words), 2)
    out["size_mb"] = round(size_of(path) / 2**20, 1)
    qv, qt = queries(matrix, words, m)
    np_path = work / "q.npy"
    import numpy as np

    np.save(np_path, qv)
    lat: dict = {k: [] for k in ("dense", "lexical", "hybrid")}
    with open_index(path) as s:
        s.load()
        s.dense_candidates(qv[:1], FETCH)
        s.lexical_candidates("warm up", FETCH)
        s.lexical_ceiling("warm up")
        for i in range(m):
            t0 = time.perf_counter()
            s.dense_candidates(qv[i : i + 1], FETCH)
            t1 = time.perf_counter()
            s.lexical_candidates(qt[i], FETCH)
            s.lexical_ceiling(qt[i])
            t2 = time.perf_counter()
            lat["dense"].append(t1 - t0)
            lat["lexical"].append(t2 - t1)
            lat["hybrid"].append(t2 - t0)
    out.update({f"warm_{k}_ms": ms(v) for k, v in lat.items()})
    env = dict(os.environ)
    cold = [
        float(
            subprocess.run(
                [sys.executable, "-c", COLD, path, str(np_path), qt[i]],
                capture_output=True,
                text=True,
                check=True,
                env=env,
                cwd=str(work),
            ).stdout
        )
        for i in range(5)
    ]
    out["cold_s"] = round(statistics.median(cold), 3)
    out["load_after"] = load()
    return out


def bench_cold_ab(n: int, work: Path, before_tree: str, before_work: Path, m: int) -> dict:
    from bench.bench_scale import clustered, queries, vocabulary

    _, qt = queries(clustered(n), vocabulary(), m)
    runs = {
        "after": (dict(os.environ), work / f"l{n}.lance"),
        "before": ({**os.environ, "PYTHONPATH": before_tree}, before_work / f"l{n}.lance"),
    }
    out: dict = {"task": "cold-ab", "n": n, "load_before": load()}
    times: dict = {k: [] for k in runs}
    for i in range(m):
        for name, (env, index) in runs.items():
            times[name].append(
                float(
                    subprocess.run(
                        [sys.executable, "-c", COLD, str(index), str(work / "q.npy"), qt[i]],
                        capture_output=True,
                        text=True,
                        check=True,
                        env=env,
                        cwd=str(work),
                    ).stdout
                )
            )
    out.update({f"cold_{k}_s": round(statistics.median(v), 3) for k, v in times.items()})
    out["ratio"] = round(out["cold_after_s"] / out["cold_before_s"], 3)
    out["load_after"] = load()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--work", default="/tmp/bench_backends")
    ap.add_argument("--queries", type=int, default=30)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tasks = list(args.tasks)
    while tasks:
        task = tasks.pop(0)
        if task == "diff":
            rec = bench_diff(work)
        elif task == "cold-ab":
            n, tree, before = int(tasks.pop(0)), tasks.pop(0), Path(tasks.pop(0))
            rec = bench_cold_ab(n, work, tree, before, args.queries)
        elif task == "lance":
            rec = bench_lance(int(tasks.pop(0)), work, args.queries)
        else:
            raise SystemExit(f"unknown task {task}")
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
