"""BM25's k1 and b on the lexical side (issue 14, item 3: a stronger lexical side, kept only
where it helps on every fold).

The lexical side (``ragsift/index/lexical.py``) computes FTS5's ``bm25()`` formula with the
module's constants ``K1``/``B`` (k1 0.9, b 0.4 since the fifth session; FTS5's own are 1.2 and
0.75). Here they are set to each grid point and the four folds of ``bench_fusion.py``
(chroma-dev's three corpora, recall@5; SciFact train, nDCG@10) are scored for the lexical side
alone and for min-max convex fusion at several α, every list collected through the same
backend calls as the engine's (1,000 per side). (Before the fifth session, queries whose words
FTS5 splits into phrases were answered by FTS5's own ``bm25()``, which the constants did not
reach; now every path uses them.)

    .venv/bin/python bench/bench_bm25.py --k1 0.9,1.0,1.2 --b 0.4,0.5,0.6,0.75 --alpha 0.55,0.6,0.65,0.7

``--spans K1:B,...``: instead, what ``ragsift eval ../shared/eval/chroma-dev --span best``
gives (the defaults, α 0.6) with each of those constants (the spans target: recall ≥ 95 with
IoU ≥ 8).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fusion as BF  # noqa: E402
from ragsift.index.lexical import B, K1  # noqa: E402  (the shipped constants, restored after)


def collect(settings: list[tuple[float, float]]) -> dict:
    from ragsift.evaluation import runner
    from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache
    from ragsift.evaluation.config import DEFAULT_CONFIG
    from ragsift.evaluation.datasets import load_dataset
    from ragsift.index import lexical

    cache = EmbeddingCache()
    per: dict = {s: {} for s in settings}
    for name, split in (("chroma-dev", None), ("scifact", "train")):
        ds = load_dataset(BF.EVAL / name, split)
        depth = runner.BEIR_DEPTH
        with tempfile.TemporaryDirectory(prefix="ragsift-bm25-") as tmp:
            paths, label_of = runner._materialize(ds, Path(tmp))
            emb = CachingEmbedder(runner._load_embedder(DEFAULT_CONFIG), cache)
            index = runner._build(paths, Path(tmp) / "index.sqlite", DEFAULT_CONFIG, emb)
            store = index.store
            queries, gold = BF.queries_and_gold(ds)
            qvecs = emb.embed(queries, kind="query").vectors
            dense = store.dense_candidates(qvecs, depth)
            records = {r.rowid: (label_of(r.path), r.start, r.end, r.path, r.text)
                       for r in index.records}
            try:
                for k1, b in settings:
                    lexical.K1, lexical.B = k1, b
                    store._postings = None  # a fresh snapshot: the constants are read per query
                    t0 = time.perf_counter()
                    cands = BF.candidate_lists(store, queries, qvecs, dense, depth)
                    per[(k1, b)][name] = {"queries": queries, "gold": gold, "cands": cands,
                                          "records": records, "depth": depth}
                    print(f"{name} k1={k1} b={b}: {time.perf_counter() - t0:.1f}s",
                          file=sys.stderr, flush=True)
            finally:
                lexical.K1, lexical.B = K1, B
                store.close()
    return per


def spans(settings: list[tuple[float, float]]) -> None:
    from ragsift.evaluation import runner
    from ragsift.evaluation.cache import EmbeddingCache
    from ragsift.evaluation.config import DEFAULT_CONFIG
    from ragsift.evaluation.datasets import load_dataset
    from ragsift.index import lexical

    ds = load_dataset(BF.EVAL / "chroma-dev", None)
    print("| k1, b | recall / IoU | " + " / ".join(BF.FOLDS[:3]) + " recall |")
    print("| --- | ---: | --- |")
    try:
        for k1, b in settings:
            lexical.K1, lexical.B = k1, b
            (res,) = runner.evaluate(ds, [DEFAULT_CONFIG.replace(span="best")],
                                     cache=EmbeddingCache())
            per = " / ".join(f"{res.per_corpus[c]['recall']:.2f}" for c in BF.FOLDS[:3])
            print(f"| {k1}, {b} | {res.overall['recall']:.2f} / {res.overall['iou']:.2f} | "
                  f"{per} |", flush=True)
    finally:
        lexical.K1, lexical.B = K1, B


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k1", default="0.9,1.0,1.2")
    ap.add_argument("--b", default="0.4,0.5,0.6,0.75")
    ap.add_argument("--alpha", default="0.55,0.6,0.65,0.7")
    ap.add_argument("--spans", default=None, metavar="K1:B,...")
    args = ap.parse_args()
    from ragsift.retrieval.hybrid import Fusion

    if args.spans:
        spans([tuple(float(x) for x in kb.split(":")) for kb in args.spans.split(",")])
        return

    settings = [(float(k), float(b)) for k in args.k1.split(",") for b in args.b.split(",")]
    per = collect(settings)
    print("| k1 | b | setting | " + " | ".join(BF.FOLDS) + " |")
    print("| ---: | ---: | --- |" + " ---: |" * len(BF.FOLDS))
    rows = [("lexical", None)] + [(f"α {a}", Fusion(alpha=float(a)))
                                  for a in args.alpha.split(",")]
    for k1, b in settings:
        for label, setting in rows:
            row = BF.fold_scores(per[(k1, b)], "lexical" if setting is None else label, setting)
            print(f"| {k1} | {b} | {label} | " + " | ".join(f"{row[f]:.2f}" for f in BF.FOLDS)
                  + " |", flush=True)


if __name__ == "__main__":
    main()
