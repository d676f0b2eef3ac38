"""Rocchio pseudo-relevance feedback on the dense side (issue 14, item 3): measured on the four
folds of ``bench_fusion.py`` (chroma-dev's three corpora: recall@5; SciFact train: nDCG@10).

For each query: the default hybrid order (convex α 0.5) gives the top ``m`` chunks; the query
vector moves toward their mean, ``q' = normalize(q + β · mean(v_1..v_m))``; the dense side is
asked again with ``q'`` and fused with the unchanged lexical side. Indexes are built with the
default chunker and embedder from the shared embedding cache.

    .venv/bin/python bench/bench_prf.py --sf-index /tmp/i14/sf/index.sqlite
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fusion as BF  # noqa: E402
from bench_fusion import EVAL  # noqa: E402


def run(sf_index: str | None, ms: list[int], betas: list[float]) -> None:
    import numpy as np

    from ragsift import metrics as m
    from ragsift.evaluation import runner
    from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache
    from ragsift.evaluation.config import DEFAULT_CONFIG
    from ragsift.evaluation.datasets import load_dataset
    from ragsift.index.store import IndexStore
    from ragsift.retrieval.hybrid import Fusion, fuse

    emb = CachingEmbedder(runner._load_embedder(DEFAULT_CONFIG), EmbeddingCache())
    fusion = Fusion()
    results: dict[tuple, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sets = [("chroma-dev", None, fusion.depth, None)]
        if sf_index:
            sets.append(("scifact", "train", runner.BEIR_DEPTH, sf_index))
        for name, split, depth, prebuilt in sets:
            ds = load_dataset(EVAL / name, split)
            t0 = time.perf_counter()
            if prebuilt:
                ids = list(ds.docs)
                label_of = lambda p: ids[int(Path(p).stem)]  # noqa: E731
                store = IndexStore.open(prebuilt, "r")
            else:
                paths, label_of = runner._materialize(ds, Path(tmp))
                store = runner._build(paths, Path(tmp) / "i.sqlite", DEFAULT_CONFIG, emb).store
            rowids, matrix = store.load_matrix()
            row_of = {int(r): i for i, r in enumerate(rowids.tolist())}
            recs = {r.rowid: r for r in store.chunk_records(rowids.tolist())}
            queries, gold = BF.queries_and_gold(ds)
            qv = np.asarray(emb.embed(queries, kind="query").vectors, dtype=np.float32)
            dense0 = store.dense_candidates(qv, depth)
            lexs = [store.lexical_candidates(q, depth) for q in queries]

            def order(qvec, dense, lex):
                have = {r for r, _ in dense}
                todo = [r for r, _ in lex if r not in have]
                cos = dict(zip(todo, store.cosines(qvec, todo))) if todo else {}
                lex = [(r, s) for r, s in lex if r in have or cos.get(r) is not None]
                return [c.rowid for c in fuse(dense, lex, fusion, dense_score_of=cos.get)]

            base = [order(q, d, lx) for q, d, lx in zip(qv, dense0, lexs)]
            for mm in [0] + ms:
                for beta in ([0.0] if mm == 0 else betas):
                    if mm == 0:
                        tops = base
                    else:
                        q2 = []
                        for q, top in zip(qv, base):
                            cen = matrix[[row_of[r] for r in top[:mm]]].mean(axis=0)
                            v = q + beta * cen
                            q2.append(v / np.linalg.norm(v))
                        q2 = np.asarray(q2, dtype=np.float32)
                        d2 = store.dense_candidates(q2, depth)
                        tops = [order(q, d, lx) for q, d, lx in zip(q2, d2, lexs)]
                    key = (mm, beta)
                    out = results.setdefault(key, {})
                    if name == "chroma-dev":
                        per: dict[str, list[float]] = {}
                        for (cid, refs), top in zip(gold, tops):
                            got = [(label_of(recs[r].path), recs[r].start, recs[r].end)
                                   for r in top[:5]]
                            per.setdefault(cid, []).append(m.span_scores(got, refs, cid).recall)
                        for cid, v in per.items():
                            out[cid] = 100 * sum(v) / len(v)
                    else:
                        vals = []
                        for qrels, top in zip(gold, tops):
                            docs = [label_of(recs[r].path) for r in top]
                            ranking = m.best_chunk_ranking((d, -float(i))
                                                           for i, d in enumerate(docs))
                            vals.append(m.ndcg_at_k(ranking, qrels, 10))
                        out["scifact"] = 100 * sum(vals) / len(vals)
                    print(name, key, {k: round(v, 2) for k, v in out.items()}, flush=True)
            store.close()
            print(f"{name}: {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    print("\n| m | β | chatlogs | state_of_the_union | wikitexts | scifact |\n| --- | --- | --- | --- | --- | --- |")
    for (mm, beta), out in results.items():
        print(f"| {mm} | {beta} | " + " | ".join(f"{out.get(f, float('nan')):.2f}" for f in
                                               ("chatlogs", "state_of_the_union", "wikitexts",
                                                "scifact")) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf-index", default=None)
    ap.add_argument("--m", default="3,5,10")
    ap.add_argument("--beta", default="0.3,0.6,1.0")
    a = ap.parse_args()
    run(a.sf_index, [int(x) for x in a.m.split(",")], [float(x) for x in a.beta.split(",")])


if __name__ == "__main__":
    main()
