"""Fusion that transfers: leave-one-corpus-out choice of the fusion rule and weight (issue 14).

Four folds: the three chroma-dev corpora (recall@5 in characters, all corpora in one index, as
``ragsift eval`` scores them) and SciFact train (nDCG@10, a document scores as its best chunk).

Step 1 (``collect``): build each set's index with the default chunker and embedder through the
evaluation harness (vectors from the shared embedding cache), and store, per query, both sides'
candidate lists exactly as the engine asks the backend for them (``Fusion.depth`` for
chroma-dev where ``eval`` asks k = 5: 1,000 since issue 14, 100 before; 1,000 for SciFact
where ``eval`` asks 1,000), with the cosine of every lexical-only candidate. Pickled to
``--out``.

Step 2 (``sweep``): re-fuse those lists with ``ragsift.retrieval.hybrid.fuse`` (the engine's
own function) for every candidate setting, score each fold, and run leave-one-corpus-out: for
each held-out fold, the setting with the smallest worst-case regret on the three other folds
(regret = better single side's score − the setting's score), then its regret on the held-out
fold. A fixed setting passes when no held-out regret exceeds 1 point.

    .venv/bin/python bench/bench_fusion.py collect --out /tmp/i14/cands.pkl
    .venv/bin/python bench/bench_fusion.py sweep --cands /tmp/i14/cands.pkl --table /tmp/i14/folds.tsv
    .venv/bin/python bench/bench_fusion.py loco --table /tmp/i14/folds.tsv
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
if not EVAL.exists():
    EVAL = Path("/work/shared/eval")


def collect(out: str, only: str | None = None) -> None:
    import tempfile

    from ragsift.evaluation import runner
    from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache
    from ragsift.evaluation.config import DEFAULT_CONFIG
    from ragsift.evaluation.datasets import load_dataset
    from ragsift.retrieval.hybrid import Fusion

    cache = EmbeddingCache()
    cfg = DEFAULT_CONFIG
    data: dict = {}
    for name, split, depth in (("chroma-dev", None, Fusion().depth),
                               ("scifact", "train", runner.BEIR_DEPTH)):
        if only and name != only:
            continue
        ds = load_dataset(EVAL / name, split)
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ragsift-fusion-") as tmp:
            paths, label_of = runner._materialize(ds, Path(tmp))
            emb = CachingEmbedder(runner._load_embedder(cfg), cache)
            index = runner._build(paths, Path(tmp) / "index.sqlite", cfg, emb)
            print(f"{name}: indexed {len(index.records)} chunks in "
                  f"{time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
            store = index.store
            queries, gold = queries_and_gold(ds)
            qvecs = emb.embed(queries, kind="query").vectors
            dense = store.dense_candidates(qvecs, depth)
            per_query = candidate_lists(store, queries, qvecs, dense, depth)
            records = {r.rowid: (label_of(r.path), r.start, r.end, r.path, r.text)
                       for r in index.records}
            store.close()
        data[name] = {"queries": queries, "gold": gold, "cands": per_query,
                      "records": records, "depth": depth}
        print(f"{name}: {len(queries)} queries collected in {time.perf_counter() - t0:.0f}s",
              file=sys.stderr, flush=True)
    with open(out, "wb") as fh:
        pickle.dump(data, fh)


def queries_and_gold(ds) -> tuple[list[str], list]:
    """A set's query texts and what each is scored against: (corpus id, reference spans) for
    a span set, the qrels for a BEIR set."""
    if hasattr(ds, "questions"):
        return ([q.question for q in ds.questions],
                [(q.corpus_id, q.references) for q in ds.questions])
    qids = list(ds.queries)
    return [ds.queries[q] for q in qids], [ds.qrels[q] for q in qids]


def candidate_lists(store, queries, qvecs, dense, depth: int) -> list[tuple]:
    """Per query, (dense list, lexical list, cosine of every lexical-only candidate): what
    the engine asks the backend for before it fuses."""
    out = []
    for query, qvec, d in zip(queries, qvecs, dense):
        lex = store.lexical_candidates(query, depth) if query.strip() else []
        have = {r for r, _ in d}
        todo = [r for r, _ in lex if r not in have]
        cos = dict(zip(todo, store.cosines(qvec, todo))) if todo else {}
        out.append((d, lex, cos))
    return out


FOLDS = ("chatlogs", "state_of_the_union", "wikitexts", "scifact")


def settings() -> list:
    from ragsift.retrieval.hybrid import Fusion

    out = [("dense", None), ("lexical", None)]
    for a in (0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7):
        out.append((f"convex minmax α={a}", Fusion(alpha=a)))
        if a * 10 == int(a * 10):
            out.append((f"convex tmm α={a}", Fusion(alpha=a, norm="tmm")))
    for k in (10, 60):
        out.append((f"rrf k={k}", Fusion(fusion="rrf", rrf_k=k)))
    for top in (5, 10, 20):
        out.append((f"adaptive z@{top}", ("adaptive", top)))
    return out


def adaptive_alpha(dense, lex, top: int) -> float:
    """α from each side's score distribution: how far the side's best score stands above its
    next ``top`` scores, in units of that side's spread over its whole candidate list (a
    peaked side is confident). α = zd / (zd + zl); 0.5 when neither side is peaked."""
    import statistics

    def z(scores):
        if len(scores) < 3:
            return 0.0
        sd = statistics.pstdev(scores)
        if sd <= 0:
            return 0.0
        return max(0.0, (scores[0] - statistics.mean(scores[1:top + 1])) / sd)

    zd, zl = z([s for _, s in dense]), z([s for _, s in lex])
    return 0.5 if zd + zl <= 0 else zd / (zd + zl)


def fused_order(setting, dense, lex, cos, n):
    from ragsift.retrieval.hybrid import Fusion, fuse

    if setting is None:
        raise ValueError
    if isinstance(setting, tuple):
        setting = Fusion(alpha=adaptive_alpha(dense, lex, setting[1]))
    have = {x for x, _ in dense}
    lex = [(r, s) for r, s in lex if r in have or cos.get(r) is not None]
    return [c.rowid for c in fuse(dense, lex, setting, dense_score_of=cos.get, limit=n)]


def order_for(name, setting, dense, lex, cos, n):
    if name == "dense":
        return [r for r, _ in dense[:n]]
    if name == "lexical":  # the engine's lexical mode keeps BM25's order (RRF over one list)
        return [r for r, _ in lex[:n]]
    return fused_order(setting, dense, lex, cos, n)


def fold_scores(data, name, setting) -> dict[str, float]:
    from ragsift import metrics as m

    out: dict[str, float] = {}
    ch = data["chroma-dev"]
    per: dict[str, list[float]] = {}
    for (cid, refs), (d, lex, cos) in zip(ch["gold"], ch["cands"]):
        top = order_for(name, setting, d, lex, cos, 5)
        retrieved = [ch["records"][r][:3] for r in top]
        per.setdefault(cid, []).append(m.span_scores(retrieved, refs, cid).recall)
    for cid, vals in per.items():
        out[cid] = 100 * sum(vals) / len(vals)
    sf = data["scifact"]
    vals = []
    for qrels, (d, lex, cos) in zip(sf["gold"], sf["cands"]):
        top = order_for(name, setting, d, lex, cos, sf["depth"])
        docs = [sf["records"][r][0] for r in top]
        ranking = m.best_chunk_ranking((doc, -float(i)) for i, doc in enumerate(docs))
        vals.append(m.ndcg_at_k(ranking, qrels, 10))
    out["scifact"] = 100 * sum(vals) / len(vals)
    return out


def sweep(cands: str, names: list[str] | None, table_out: str | None) -> None:
    """Score the settings (``names``: a subset, by their labels) on the four folds; each row is
    printed and appended to ``table_out`` (tab-separated) for ``loco``."""
    with open(cands, "rb") as fh:
        data = pickle.load(fh)
    for name, setting in settings():
        if names and name not in names:
            continue
        t0 = time.perf_counter()
        row = fold_scores(data, name, setting)
        print(f"{name:24s} " + " ".join(f"{row[f]:6.2f}" for f in FOLDS)
              + f"   ({time.perf_counter() - t0:.0f}s)", flush=True)
        if table_out:
            with open(table_out, "a", encoding="utf-8") as fh:
                fh.write("\t".join([name, *(f"{row[f]:.4f}" for f in FOLDS)]) + "\n")


def loco(table_file: str) -> None:
    """Leave-one-corpus-out over the rows of ``table_file``: for each held-out fold, the
    setting with the smallest worst-case regret on the three other folds (ties: smallest
    mean regret), and its regret on the held-out fold (regret = the better single side's
    score − the setting's; a setting passes where no held-out regret exceeds 1 point)."""
    table: dict[str, dict[str, float]] = {}
    for line in open(table_file, encoding="utf-8"):
        name, *vals = line.rstrip("\n").split("\t")
        table[name] = dict(zip(FOLDS, map(float, vals)))
    best_single = {f: max(table["dense"][f], table["lexical"][f]) for f in FOLDS}
    regret = {n: {f: best_single[f] - s[f] for f in FOLDS} for n, s in table.items()
              if n not in ("dense", "lexical")}
    print("| setting | " + " | ".join(FOLDS) + " |\n| --- |" + " ---: |" * len(FOLDS))
    for n, s in table.items():
        print(f"| {n} | " + " | ".join(f"{s[f]:.2f}" for f in FOLDS) + " |")
    print("\n| held-out fold | chosen on the other three | held-out score | better single side "
          "| regret |\n| --- | --- | ---: | ---: | ---: |")
    for f in FOLDS:
        train = [g for g in FOLDS if g != f]
        chosen = min(regret, key=lambda n: (max(regret[n][g] for g in train),
                                            sum(regret[n][g] for g in train)))
        print(f"| {f} | {chosen} | {table[chosen][f]:.2f} | {best_single[f]:.2f} "
              f"| {regret[chosen][f]:+.2f} |")
    print("\nworst regret over all four folds (a fixed setting passes at ≤ 1):")
    for n in sorted(regret, key=lambda n: (max(regret[n].values()), sum(regret[n].values()))):
        print(f"  {n:24s} worst {max(regret[n].values()):+.2f}  "
              + " ".join(f"{f}={regret[n][f]:+.2f}" for f in FOLDS))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--out", required=True)
    c.add_argument("--only", choices=("chroma-dev", "scifact"), default=None)
    s = sub.add_parser("sweep")
    s.add_argument("--cands", required=True)
    s.add_argument("--names", default=None, help="comma-separated setting labels (default all)")
    s.add_argument("--table", default=None, help="append each row to this TSV file")
    lo = sub.add_parser("loco")
    lo.add_argument("--table", required=True)
    args = ap.parse_args()
    if args.cmd == "collect":
        collect(args.out, args.only)
    elif args.cmd == "sweep":
        sweep(args.cands, args.names.split(",") if args.names else None, args.table)
    else:
        loco(args.table)


if __name__ == "__main__":
    main()
