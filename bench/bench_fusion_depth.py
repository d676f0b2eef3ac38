"""What a deeper fusion costs: warm hybrid ranking with ``Fusion.depth`` 100 vs 1000 (issue 14).

The fused order of min-max convex fusion depends on how deep each side's candidate list is
(each side is scaled over its own list). Before issue 14 ``query`` fused 100 candidates per
side while ``eval`` fused 1,000 on SciFact (it needs 1,000 for Recall@100), so the SciFact
number was not what ``query`` returned. This times ``engine.rank(mode="hybrid", n=13)`` (the
``query`` default: k 3 + the reject window of 10) with both depths, one query at a time, the
settings taking turns on each query, after one warm-up call each. "whole list built": the
engine before issue 14, which built every fused candidate and then kept ``n`` (now ``fuse``
builds only the ``limit`` it returns).

Indexes: ``--sf-index`` (a real index: e.g. SciFact's 9,625 chunks with their real vectors,
queried with the real claim embeddings) and/or ``--chunks`` N synthetic-vector chunks of real
SciFact text (``bench_hybrid.build``, built once into ``--work``).

    .venv/bin/python bench/bench_fusion_depth.py --sf-index /tmp/i14/sf/index.sqlite --chunks 100000
    .venv/bin/python bench/bench_fusion_depth.py --lance /tmp/bs_i12/s1000000.lance
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hybrid import DIM, build, claims

from ragsift.index.store import IndexStore
from ragsift.retrieval import engine
from ragsift.retrieval.hybrid import Fusion

_fuse = engine.fuse


def _whole(dense, lexical, fusion, *, dense_score_of=None, limit=None):
    """The engine before issue 14: every fused candidate built, then cut to ``n``."""
    return _fuse(dense, lexical, fusion, dense_score_of=dense_score_of)[:limit]


# (fusion, fuse function): before = depth 100, α 0.5, the whole fused list built
SETTINGS = {"before: depth 100, α 0.5, whole list built": (Fusion(alpha=0.5, depth=100), _whole),
            "depth 100, α 0.5": (Fusion(alpha=0.5, depth=100), _fuse),
            "after: depth 1000, α 0.6": (Fusion(alpha=0.6, depth=1000), _fuse)}


def time_index(path: str, queries: list[str], qv: np.ndarray) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in SETTINGS}
    names = list(SETTINGS)
    with IndexStore.open(path, "r") as store:
        store.load()
        for q, v in zip(queries, qv):
            names = names[1:] + names[:1]
            for name in names:
                fusion, engine.fuse = SETTINGS[name]
                try:
                    engine.rank(store, [q], v[None, :], mode="hybrid", n=13, fusion=fusion)
                    t = time.perf_counter()
                    engine.rank(store, [q], v[None, :], mode="hybrid", n=13, fusion=fusion)
                    times[name].append((time.perf_counter() - t) * 1000)
                finally:
                    engine.fuse = _fuse
    return times


def report(label: str, times: dict[str, list[float]], load: tuple[float, float]) -> None:
    print(f"\n**{label}** (load average {load[0]:.2f} before, {load[1]:.2f} after)\n")
    print("| setting | median ms | p90 ms |\n| --- | ---: | ---: |")
    for name, xs in times.items():
        xs = sorted(xs)
        print(f"| {name} | {statistics.median(xs):.1f} | {xs[int(0.9 * (len(xs) - 1))]:.1f} |")
    before, after = (statistics.median(times[k]) for k in (next(iter(times)), list(times)[-1]))
    print(f"\nratio after / before: {after / before:.2f}")


def time_lance(path: str, queries: int) -> None:
    """The dense side of a Lance index above ``ANN_MIN_ROWS`` (IVF-PQ proposals, exact
    re-score) at n 100 and 1,000, with and without ``ann.REFINE_DEPTH`` (before it, a list of
    n asked n × REFINE proposals). Query vectors: ``q.npy`` beside the index
    (``bench_scale.py`` writes it)."""
    from ragsift.index import ann

    qv = np.load(Path(path).parent / "q.npy")[:queries].astype(np.float32)
    load0 = os.getloadavg()[0]
    cap = ann.REFINE_DEPTH
    times: dict[str, list[float]] = {"n 100": [], "n 1000, REFINE_DEPTH 100": [],
                                     "n 1000, every rank refined (before)": []}
    same, overlap = 0, []
    with IndexStore.open(path, "r") as ix:
        for v in qv:
            got = {}
            for name, n, depth in (("n 100", 100, cap), ("n 1000, REFINE_DEPTH 100", 1000, cap),
                                   ("n 1000, every rank refined (before)", 1000, 10**9)):
                ann.REFINE_DEPTH = depth
                t = time.perf_counter()
                got[name] = ix.dense_candidates(v[None, :], n)[0]
                times[name].append((time.perf_counter() - t) * 1000)
            ann.REFINE_DEPTH = cap
            a, b, c = got.values()
            same += [r for r, _ in a[:13]] == [r for r, _ in b[:13]] == [r for r, _ in c[:13]]
            overlap.append(len({r for r, _ in b} & {r for r, _ in c}) / max(1, len(c)))
    print(f"\n**{path}: dense side through the ANN path, {len(qv)} queries** (load average "
          f"{load0:.2f} before, {os.getloadavg()[0]:.2f} after)\n")
    print("| dense_candidates | median ms |\n| --- | ---: |")
    for name, xs in times.items():
        print(f"| {name} | {statistics.median(xs):.1f} |")
    print(f"\nsame top 13 in all three: {same}/{len(qv)}; top-1000 overlap with every rank "
          f"refined: mean {np.mean(overlap):.3f}, min {min(overlap):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sf-index", default=None)
    ap.add_argument("--chunks", type=int, default=0)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--work", default="/tmp/ragsift-bench-hybrid")
    ap.add_argument("--lance", default=None, help="a Lance index above ANN_MIN_ROWS, e.g. "
                    "bench_scale.py's s1000000.lance")
    args = ap.parse_args()
    if args.lance:
        time_lance(args.lance, min(args.queries, 10))
    queries = claims(args.queries) if args.sf_index or args.chunks else []
    if args.sf_index:
        from ragsift.embedders import load_embedder

        qv = np.asarray(load_embedder().embed(queries, kind="query").vectors, dtype=np.float32)
        load0 = os.getloadavg()[0]
        times = time_index(args.sf_index, queries, qv)
        report(f"{args.sf_index}: real vectors, {len(queries)} SciFact claims", times,
               (load0, os.getloadavg()[0]))
    if args.chunks:
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        path = work / f"scifact-windows-{args.chunks}.ragsift"
        build(path, args.chunks)
        rng = np.random.default_rng(1)
        qv = rng.standard_normal((len(queries), DIM), dtype=np.float32)
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
        load0 = os.getloadavg()[0]
        times = time_index(str(path), queries, qv)
        report(f"{args.chunks:,} chunks of real text, synthetic vectors, {len(queries)} claims",
               times, (load0, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
