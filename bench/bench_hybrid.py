"""Warm hybrid ranking and cold ``ragsift query`` on a large index of real text (issue 13).

Index: ``--chunks`` chunks (default 100,000) of real text: sliding windows of 60 words, stride
12, over the SciFact abstracts (``../shared/eval/scifact/corpus.jsonl``, cycled if needed), so
FTS5 holds real term statistics and ~60-word chunks. The vectors are synthetic unit vectors
(embedding 100k chunks takes hours on this machine; the scan's cost does not depend on the
values), stored with the default model's fingerprint so ``ragsift query`` accepts the file.
Built once into ``--work``.

Warm (one process, index open and matrix loaded, one query at a time, SciFact claims as query
texts with synthetic query vectors, rows taking turns on each query):
- ``rank hybrid``: ``engine.rank(mode="hybrid", n=13)`` as shipped (lexical side in a thread);
- ``rank hybrid, sequential``: the same with both sides run one after the other (before);
- ``rank hybrid, lexical fetched ahead``: ``rank`` given the lexical lists fetched beforehand
  (``engine.lexical_ahead``, not timed): what a cold ``query`` pays once its model is loaded;
- ``dense side`` / ``lexical side``: the backend's two calls alone;
- ``ordering step``: on the same two lists (fetched once, untimed), what orders them: the
  relevance score as shipped (``engine.order_candidates``: features, logistic score, sort; issue 21)
  and the convex min-max fusion it replaced (``hybrid.fuse``), n = 13 (k 3 + window 10);
- ``... FTS5 bm25() (before)``: the same with the lexical side answered by FTS5's own
  ``bm25()`` query instead of the lexical postings (``ragsift/index/lexical.py``); FTS5's
  constants are fixed (k1 1.2, b 0.75), the postings' are ``lexical.K1``/``B`` (0.9, 0.4).
The shipped hybrid rows must return identical rankings and scores, and FTS5's lexical lists
exactly what the postings return with FTS5's constants (checked, untimed). An index built by an older tree is upgraded in place first (schema 2).

Cold: ``ragsift query CLAIM --index FILE --json`` in new processes (imports, model load, index
open, matrix load, lexical side, print), median of ``--cold-runs``. A ``--baseline`` tree from
before schema 2 queries a copy of the index without the postings (``schema1_copy``).

Run:  .venv/bin/python -m bench.bench_hybrid [--chunks 100000] [--queries 30] [--cold-runs 7]
          [--baseline SRC]   (SRC/ragsift: another tree's cold query, alternating, as 'before')
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parent.parent

from bench._schema import schema1_copy
from ragsift.index import lexical, migrations, open_index
from ragsift.index import store as store_module
from ragsift.index.backend import ChunkRow, DocumentWrite
from ragsift.retrieval import engine
from ragsift.retrieval import hybrid as hybrid_module
from ragsift.retrieval.units import best_units, wanted

SHARED = Path(os.environ.get("RAGSIFT_SHARED_EVAL", REPO.parent / "shared" / "eval"))
DIM = 384
PER_DOC = 500


def windows(n: int) -> list[str]:
    out: list[str] = []
    lines = (SHARED / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    while len(out) < n:
        for line in lines:
            d = json.loads(line)
            words = f"{d['title']} {d['text']}".split()
            for s in range(0, max(1, len(words) - 48), 12):
                out.append(" ".join(words[s : s + 60]))
                if len(out) == n:
                    return out
    return out


def build(path: Path, n: int) -> None:
    marker = path.with_suffix(".done")
    if path.exists() and marker.exists() and marker.read_text() == str(n):
        with open_index(path, "r") as store:
            old = migrations.schema_version(store.db) < migrations.LATEST
        if old:  # built by an older tree: a writer upgrades it (lexical postings, schema 2)
            t0 = time.perf_counter()
            open_index(path, "w").close()
            print(f"upgraded {path} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        return
    for p in (path, marker, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)
    from ragsift.embedders import evidence, load_embedder

    emb = load_embedder(lazy=True)
    texts = windows(n)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    with open_index(path, "w") as store:
        store.set_settings(
            model=emb.name,
            model_fingerprint=emb.fingerprint,
            dimensions=DIM,
            chunker="bench-windows",
            chunker_options={},
            evidence=evidence.EVIDENCE_KIND,
        )
        batch = []
        for d, s in enumerate(range(0, n, PER_DOC)):
            part = texts[s : s + PER_DOC]
            recs = [
                {
                    "index": i,
                    "text": t,
                    "start": 0,
                    "end": len(t),
                    "context": "",
                    "tokens": len(t.split()),
                    "line_start": 1,
                    "line_end": 1,
                    "headings": [],
                    "page": None,
                    "level": 0,
                    "content_hash": f"{s + i:016x}",
                    "truncated": 0,
                }
                for i, t in enumerate(part)
            ]
            # unit evidence as embed stores it: the text's own units, synthetic unit vectors,
            # the chunk's vector their length-weighted mean
            vecs = np.zeros((len(part), DIM), np.float32)
            for i, (rec, t) in enumerate(zip(recs, part)):
                bounds = evidence.unit_bounds(t) or [(0, len(t))]
                uv = rng.standard_normal((len(bounds), DIM), dtype=np.float32)
                uv /= np.linalg.norm(uv, axis=1, keepdims=True)
                rec["units"] = evidence.encode(bounds, uv)
                vecs[i] = evidence.aggregate(uv, evidence.weights(bounds))
            batch.append(
                DocumentWrite(
                    key=f"doc{d:04d}.txt",
                    path=f"doc{d:04d}.txt",
                    sha256="0" * 64,
                    records=tuple(ChunkRow(path=f"doc{d:04d}.txt", **r) for r in recs),
                    vectors=vecs,
                )
            )
            if len(batch) == 20:
                store.write_documents(batch)
                batch = []
        store.write_documents(batch)
    marker.write_text(str(n))
    print(f"built {path} ({n} chunks) in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def claims(count: int) -> list[str]:
    lines = (SHARED / "scifact" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x)["text"] for x in lines[:count]]


def ms(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}–{max(xs):.1f})"


def warm(path: Path, queries: list[str]) -> tuple[dict[str, list[float]], bool]:
    rng = np.random.default_rng(1)
    qv = rng.standard_normal((len(queries), DIM), dtype=np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    threaded = engine.both_sides

    def sequential(first, second):
        return first(), second()

    with open_index(path, "r") as store:
        store.load()
        depth = engine.Fusion().depth

        def hybrid(q, v):
            engine.both_sides = threaded
            return engine.rank(store, [q], v[None, :], mode="hybrid", n=13)

        def hybrid_seq(q, v):
            engine.both_sides = sequential
            try:
                return engine.rank(store, [q], v[None, :], mode="hybrid", n=13)
            finally:
                engine.both_sides = threaded

        ahead: dict = {}
        # the lexical postings (ragsift/index/lexical.py), loaded as the store loads them
        postings = lexical.Postings.load(store.db)
        assert postings is not None, "the index has no usable lexical postings"

        shipped = store.lexical_search

        def fts5_search(query, limit, rowids_filter=None):  # FTS5's own bm25() query (before)
            match = " OR ".join(
                '"' + t.replace('"', '""') + '"' for t in store_module.query_words(query)
            )
            return [
                (int(r), float(s))
                for r, s in store.db.execute(
                    "SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
                    "ORDER BY s, rowid LIMIT ?",
                    (match, int(limit)),
                )
            ]

        def with_fts5(call):  # the same call answered by FTS5's own bm25() query (before)
            def run(q, v):
                store.lexical_search = fts5_search
                try:
                    return call(q, v)
                finally:
                    store.lexical_search = shipped

            return run

        def at_fts5_constants(call):  # the postings with FTS5's constants (the check)
            def run(q, v):
                with mock.patch.multiple(lexical, K1=1.2, B=0.75):
                    return call(q, v)

            return run

        def hybrid_ahead(q, v):  # the lexical lists fetched before (not timed): what a cold
            # query pays once the model is loaded (Searcher(prefetch=), engine.lexical_ahead)
            return engine.rank(
                engine.AheadReader(store, ahead[q]), [q], v[None, :], mode="hybrid", n=13
            )

        # per query: both sides' lists, the cosines and BM25 ceiling, and the candidates' best
        # units (as ``engine.rank`` reads them), fetched once (untimed)
        lists: dict = {}

        def prepared(q, v):
            if q not in lists:
                dense = store.dense_candidates(v[None, :], depth)[0]
                lex = store.lexical_candidates(q, depth)
                have = {r for r, _ in dense}
                todo = [r for r, _ in lex if r not in have]
                cos = dict(zip(todo, store.cosines(v, todo))) if todo else {}
                read = wanted(dense, lex)
                units = best_units(store, v, read)
                titles = engine.page_titles(store, read)  # the title evidence, as rank reads it
                lists[q] = engine.Evidence(dense, lex, cos, store.lexical_ceiling(q), units, titles)
            return lists[q]

        def order_relevance(q, v):  # the ordering step as shipped: relevance score + sort
            return engine.order_candidates("hybrid", q, prepared(q, v), 13, engine.Fusion())

        def order_convex(q, v):  # the ordering step before issue 21: convex min-max fusion
            found = prepared(q, v)
            dense, lex, cos = found.dense, found.lexical, found.cos_of
            return hybrid_module.fuse(
                dense, lex, hybrid_module.Fusion(fusion="convex"), dense_score_of=cos.get, limit=13
            )

        rows = {
            "rank hybrid (lexical in a thread)": hybrid,
            "ordering step: relevance score (shipped)": order_relevance,
            "ordering step: convex fusion (before issue 21)": order_convex,
            "rank hybrid, lexical fetched ahead (cold query's share)": hybrid_ahead,
            "rank hybrid, sequential (before)": hybrid_seq,
            "rank hybrid, FTS5 bm25() lexical side (before)": with_fts5(hybrid),
            "dense side alone": lambda q, v: store.dense_candidates(v[None, :], depth),
            "lexical side alone": lambda q, v: store.lexical_candidates(q, depth),
            "lexical side alone, FTS5 bm25() (before)": with_fts5(
                lambda q, v: store.lexical_candidates(q, depth)
            ),
        }
        times: dict[str, list[float]] = {k: [] for k in rows}
        same = {"engine": True, "fts5": True}
        names = list(rows)
        for _i, (q, v) in enumerate(zip(queries, qv)):
            names = names[1:] + names[:1]  # rotate the order
            prepared(q, v)
            got = {}
            ahead[q] = engine.lexical_ahead(store, [q], "hybrid")
            for name in names:
                rows[name](q, v)  # warm this query's pages once
                t = time.perf_counter()
                got[name] = rows[name](q, v)
                times[name].append((time.perf_counter() - t) * 1000)
            same["engine"] &= (
                got["rank hybrid (lexical in a thread)"]
                == got["rank hybrid, sequential (before)"]
                == got["rank hybrid, lexical fetched ahead (cold query's share)"]
            )
            # (the hybrid order also reads the query's BM25 ceiling, which differs with the
            # constants, so FTS5's side is checked on its own lists; FTS5's bm25() counts the
            # identifier terms (schema 4) in a row's length, the postings do not: rows with
            # identifier terms may differ)
            same["fts5"] &= got["lexical side alone, FTS5 bm25() (before)"] == at_fts5_constants(
                rows["lexical side alone"]
            )(q, v)
    return times, same


def cold(
    files: dict[str, Path], queries: list[str], runs: int, trees: dict[str, Path]
) -> dict[str, tuple[list[float], list[float]]]:
    """New processes, the trees taking turns (rotating order) on the same claims."""
    env = {**os.environ, "COLUMNS": "120"}
    out: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in trees}
    names = list(trees)
    for i in range(runs):
        names = names[1:] + names[:1]
        for name in names:
            tree = trees[name]
            t = time.perf_counter()
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ragsift",
                    "query",
                    queries[i % len(queries)],
                    "--index",
                    str(files[name]),
                    "--json",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={**env, "PYTHONPATH": str(tree)},
                cwd=tree,
            )
            _, status, usage = os.wait4(proc.pid, 0)
            out[name][0].append(time.perf_counter() - t)
            if os.waitstatus_to_exitcode(status) not in (0, 1):
                raise SystemExit(f"ragsift query failed: {proc.stderr.read().decode()}")
            out[name][1].append(usage.ru_utime + usage.ru_stime)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--cold-runs", type=int, default=7)
    ap.add_argument("--work", default="/tmp/ragsift-bench-hybrid")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument(
        "--baseline",
        metavar="SRC",
        help="a source tree holding another ragsift/ "
        "(e.g. `git archive main ragsift | tar -x -C SRC`): its cold query runs "
        "alternating with this tree's, as a 'before' row",
    )
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"scifact-windows-{args.chunks}.ragsift"
    build(path, args.chunks)
    queries = claims(args.queries)
    load = os.getloadavg()[0]
    times, same = warm(path, queries)
    print(
        f"**warm, {args.chunks:,} chunks of real text, {len(queries)} SciFact claims "
        f"(load average {load:.2f} before, {os.getloadavg()[0]:.2f} after)**\n"
    )
    print("| row | median ms (min–max) |\n| --- | ---: |")
    for name, xs in times.items():
        print(f"| {name} | {ms(xs)} |")
    print(
        "\nidentical rankings and scores, threaded vs sequential vs fetched ahead: "
        f"{same['engine']}; FTS5 bm25()'s lexical lists vs the postings' at FTS5's constants: "
        f"{same['fts5']}\n"
    )
    if not args.skip_cold:
        load = os.getloadavg()[0]
        trees = {"this tree": REPO}
        if args.baseline:
            import compileall

            base = Path(args.baseline).resolve()
            for tree in (REPO, base):  # byte code, as an installed copy has (see RESULTS.md)
                compileall.compile_dir(tree / "ragsift", quiet=1)
            trees["before (baseline)"] = base
        files = {name: path for name in trees}
        if args.baseline:  # a tree from before the lexical postings reads schema 1 only
            files["before (baseline)"] = schema1_copy(path)
        got = cold(files, queries, args.cold_runs, trees)
        print(
            f"**cold `ragsift query CLAIM --index FILE --json`, {args.cold_runs} new processes "
            f"per row, rows alternating (load average {load:.2f} before, "
            f"{os.getloadavg()[0]:.2f} after)**\n"
        )
        print(
            "| tree | median s (min–max) | CPU median s | × before |\n| --- | ---: | ---: | ---: |"
        )
        first = statistics.median(got[list(trees)[-1]][0])
        for name, (wall, cpu) in got.items():
            print(
                f"| {name} | {statistics.median(wall):.3f} ({min(wall):.3f}–{max(wall):.3f}) "
                f"| {statistics.median(cpu):.3f} | {statistics.median(wall) / first:.2f} |"
            )


if __name__ == "__main__":
    main()
