"""Fusion variants and lexical expansions tried for issue 14 (none adopted), on the candidate
lists of ``bench_fusion.py collect`` (four folds: chroma-dev's three corpora, recall@5;
SciFact train, nDCG@10).

``variants``: re-fuse the cached lists with numpy (the same order as ``hybrid.fuse`` for
convex min-max: fused score desc, cosine desc, id; checked by the ``minmax`` rows, which equal
``bench_fusion.py sweep``'s) under other score normalisations: z-score (mean/std over each
side's list), min-max against the D-th best score of each side (a fixed-depth reference),
a power of the min-max dense score, exp(s·cosine), min-max plus RRF, log(1 + BM25), and
fusion at document level (SciFact only: each side's document score = its best chunk's).

``depths``: SciFact nDCG@10 of the ranking ``query`` returns when each side is cut to 100 /
300 / 1,000 candidates before fusing.

``expand``: a second FTS5 query fused into the lexical side, per query: RM3-style expansion
(the top ``m`` chunks of the default fused order give ``t`` feedback terms by
Σ tf/len · log(N/df), minus stop words and the query's own words; lexical side =
(1−λ)·minmax(BM25(query)) + λ·minmax(BM25(expansion))), or the query's adjacent word pairs as
FTS5 phrases (λ the same way). Needs each set's index (``--chroma-index``, ``--sf-index``; the
ones ``collect`` builds, e.g. with /tmp/i14/build_sf.py's recipe) and times the extra query.

    .venv/bin/python bench/bench_fusion_variants.py variants --cands /tmp/j14a/cands_d1000.pkl
    .venv/bin/python bench/bench_fusion_variants.py depths --cands /tmp/j14a/cands_d1000.pkl
    .venv/bin/python bench/bench_fusion_variants.py expand --cands /tmp/j14a/cands.pkl \\
        --chroma-index /tmp/j14a/ch/index.sqlite --sf-index /tmp/i14/sf/index.sqlite
"""

from __future__ import annotations

import argparse
import collections
import itertools
import math
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ragsift import metrics as m

FOLDS = ("chatlogs", "state_of_the_union", "wikitexts", "scifact")


def prepare(data: dict, name: str) -> list:
    out = []
    for dense, lex, cos in data[name]["cands"]:
        have = {r for r, _ in dense}
        lex = [(r, s) for r, s in lex if r in have or cos.get(r) is not None]
        ids = list(dict.fromkeys([*(r for r, _ in dense), *(r for r, _ in lex)]))
        dm, lm = dict(dense), dict(lex)
        drank = {r: i for i, (r, _) in enumerate(dense)}
        lrank = {r: i for i, (r, _) in enumerate(lex)}
        out.append((np.array(ids),
                    np.array([dm[r] if r in dm else cos[r] for r in ids], dtype=np.float64),
                    np.array([lm.get(r, np.nan) for r in ids], dtype=np.float64),
                    np.array([drank.get(r, 10**9) for r in ids]),
                    np.array([lrank.get(r, 10**9) for r in ids]),
                    np.array([str(r) for r in ids])))
    return out


def order(ids, score, cos, strid):
    return ids[np.lexsort((strid, -cos, -score))]


def mm(x):
    """Min-max over the present (non-nan) scores; a missing score counts 0."""
    ok = ~np.isnan(x)
    y = np.zeros_like(x)
    if ok.any():
        lo, hi = x[ok].min(), x[ok].max()
        y[ok] = 1.0 if hi <= lo else (x[ok] - lo) / (hi - lo)
    return y


def zs(x):
    """z-score over the present scores; a missing score counts as the side's lowest."""
    ok = ~np.isnan(x)
    y = np.zeros_like(x)
    if ok.sum() >= 2:
        mu, sd = x[ok].mean(), x[ok].std() or 1.0
        y[ok] = (x[ok] - mu) / sd
        y[~ok] = (x[ok].min() - mu) / sd
    return y


def mm_at(x, rank, depth):
    """Min-max with the low end at the ``depth``-th best score of the side, clipped at 0."""
    ok = ~np.isnan(x) & (rank < depth)
    if not ok.any():
        return np.zeros_like(x)
    lo, hi = x[ok].min(), np.nanmax(x)
    if hi <= lo:
        return np.where(np.isnan(x), 0.0, 1.0)
    return np.where(np.isnan(x), 0.0, np.clip((x - lo) / (hi - lo), 0, None))


def variants() -> list:
    out = [("dense", lambda c, l, dr, lr: -dr.astype(float)),
           ("lexical", lambda c, l, dr, lr: np.where(np.isnan(l), -1e9, l))]
    for a in (0.5, 0.6, 0.65):
        out.append((f"minmax α={a}", lambda c, l, dr, lr, a=a: a * mm(c) + (1 - a) * mm(l)))
    for a in (0.5, 0.6, 0.7):
        out.append((f"z-score α={a}", lambda c, l, dr, lr, a=a: a * zs(c) + (1 - a) * zs(l)))
    for d in (20, 100):
        for a in (0.5, 0.6):
            out.append((f"minmax@{d} α={a}", lambda c, l, dr, lr, a=a, d=d:
                        a * mm_at(c, dr, d) + (1 - a) * mm_at(l, lr, d)))
    for a, p in ((0.5, 1.5), (0.5, 2), (0.55, 1.5)):
        out.append((f"minmax dense^{p} α={a}", lambda c, l, dr, lr, a=a, p=p:
                    a * mm(c) ** p + (1 - a) * mm(l)))
    for a, s in ((0.4, 5), (0.5, 5), (0.5, 20)):
        out.append((f"exp({s}·cos) α={a}", lambda c, l, dr, lr, a=a, s=s:
                    a * mm(np.exp(s * c)) + (1 - a) * mm(l)))
    out.append(("minmax α=0.6 + 0.1·RRF", lambda c, l, dr, lr: 0.6 * mm(c) + 0.4 * mm(l)
                + 0.1 * (1 / (61 + dr) + 1 / (61 + lr)) * 61 / 2))
    for a in (0.55, 0.6, 0.65):  # the lexical side over [0, its max] (BM25's minimum is 0)
        out.append((f"dense minmax + BM25/max α={a}", lambda c, l, dr, lr, a=a: a * mm(c)
                    + (1 - a) * np.nan_to_num(l) / max(np.nanmax(l), 1e-12)
                    if (~np.isnan(l)).any() else a * mm(c)))
    out.append(("minmax log(1+BM25) α=0.6", lambda c, l, dr, lr: 0.6 * mm(c)
                + 0.4 * mm(np.log1p(l))))
    return out


def score(data, prepared, tops_of) -> dict[str, float]:
    out: dict[str, float] = {}
    ch = data["chroma-dev"]
    per: dict[str, list[float]] = {}
    for (cid, refs), top in zip(ch["gold"], tops_of("chroma-dev")):
        got = [ch["records"][int(r)][:3] for r in top[:5]]
        per.setdefault(cid, []).append(m.span_scores(got, refs, cid).recall)
    allv: list[float] = []
    for cid, v in per.items():
        out[cid] = 100 * sum(v) / len(v)
        allv += v
    out["chroma-dev"] = 100 * sum(allv) / len(allv)
    sf = data["scifact"]
    vals = []
    for qrels, top in zip(sf["gold"], tops_of("scifact")):
        docs = [sf["records"][int(r)][0] for r in top[:200]]
        vals.append(m.ndcg_at_k(m.best_chunk_ranking((d, -float(i)) for i, d in enumerate(docs)),
                                qrels, 10))
    out["scifact"] = 100 * sum(vals) / len(vals)
    return out


def row(name: str, r: dict[str, float]) -> str:
    return (f"| {name} | " + " | ".join(f"{r[f]:.2f}" for f in FOLDS)
            + f" | {r['chroma-dev']:.2f} |")


def run_variants(cands: str) -> None:
    with open(cands, "rb") as fh:
        data = pickle.load(fh)
    prepared = {n: prepare(data, n) for n in ("chroma-dev", "scifact")}
    print("| setting | " + " | ".join(FOLDS) + " | chroma-dev all |\n| --- |" + " ---: |" * 5)
    for name, fn in variants():
        def tops_of(set_name, fn=fn):
            return [order(ids, fn(c, l, dr, lr), c, s)
                    for ids, c, l, dr, lr, s in prepared[set_name]]
        print(row(name, score(data, prepared, tops_of)), flush=True)
    sf = data["scifact"]
    for a in (0.5, 0.6, 0.7):  # document level (SciFact): each side's best chunk per document
        vals = []
        for qrels, (ids, c, l, dr, lr, s) in zip(sf["gold"], prepared["scifact"]):
            dc: dict = {}
            dl: dict = {}
            for rid, ci, li in zip(ids, c, l):
                d = sf["records"][int(rid)][0]
                dc[d] = max(dc.get(d, -9.0), ci)
                if not np.isnan(li):
                    dl[d] = max(dl.get(d, -9.0), li)
            keys = list(dc)
            cc = np.array([dc[k] for k in keys])
            ll = np.array([dl.get(k, np.nan) for k in keys])
            f = a * mm(cc) + (1 - a) * mm(ll)
            vals.append(m.ndcg_at_k([keys[i] for i in np.lexsort((-cc, -f))], qrels, 10))
        print(f"| document-level minmax α={a} | - | - | - | {100 * np.mean(vals):.2f} | - |")


def run_expand(cands: str, chroma_index: str, sf_index: str, alpha: float = 0.5) -> None:
    from ragsift.evaluation import runner
    from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache
    from ragsift.evaluation.config import DEFAULT_CONFIG
    from ragsift.index.store import _STOPWORDS, _TERM, IndexStore

    with open(cands, "rb") as fh:
        data = pickle.load(fh)
    emb = CachingEmbedder(runner._load_embedder(DEFAULT_CONFIG), EmbeddingCache())
    index = {"chroma-dev": chroma_index, "scifact": sf_index}

    def words(text):
        return [t.lower() for t in _TERM.findall(text)]

    def rm3(m_fb, n_terms):
        def terms(query, top, tf, df, n):
            qt = set(words(query))
            w: collections.Counter = collections.Counter()
            for r in top[:m_fb]:
                c = tf[int(r)]
                length = sum(c.values()) or 1
                for t, k in c.items():
                    if t not in qt and t not in _STOPWORDS and not t.isdigit() and len(t) > 2:
                        w[t] += k / length * math.log(n / df[t])
            return " ".join(t for t, _ in w.most_common(n_terms))
        return terms

    def pairs(query, top, tf, df, n):
        t = words(query)
        ph = [f'"{a} {b}"' for a, b in itertools.pairwise(t)
              if not (a in _STOPWORDS and b in _STOPWORDS)]
        return " OR ".join(list(dict.fromkeys(ph))[:64])

    expansions = [("RM3 m=3 t=10", rm3(3, 10), False), ("RM3 m=5 t=10", rm3(5, 10), False),
                  ("RM3 m=5 t=20", rm3(5, 20), False), ("RM3 m=10 t=20", rm3(10, 20), False),
                  ("word pairs as phrases", pairs, True)]
    lams = (0.0, 0.2, 0.35, 0.5)
    results: dict = collections.defaultdict(dict)
    for set_name in ("chroma-dev", "scifact"):
        d = data[set_name]
        prepared = prepare(data, set_name)
        store = IndexStore.open(index[set_name], "r")
        qv = np.asarray(emb.embed(d["queries"], kind="query").vectors, dtype=np.float32)
        tf = {r: collections.Counter(words(v[4])) for r, v in d["records"].items()}
        df = collections.Counter(t for c in tf.values() for t in c)
        for label, make, raw in expansions:
            tops: dict = {lam: [] for lam in lams}
            spent = 0.0
            for qi, (query, (ids, c, l, dr, lr, s)) in enumerate(zip(d["queries"], prepared)):
                base = order(ids, alpha * mm(c) + (1 - alpha) * mm(l), c, s)
                expr = make(query, base, tf, df, len(tf))
                t0 = time.perf_counter()
                if not expr:
                    ex = []
                elif raw:  # FTS5 phrase syntax, built from the query's own words
                    ex = [(int(r), -float(x)) for r, x in store.db.execute(
                        "SELECT rowid, bm25(chunks_fts) s FROM chunks_fts WHERE chunks_fts "
                        "MATCH ? ORDER BY s LIMIT ?", (expr, d["depth"]))]
                else:
                    ex = store.lexical_candidates(expr, d["depth"])
                spent += time.perf_counter() - t0
                known = {int(r) for r in ids}
                new = [r for r, _ in ex if r not in known]
                new_cos = store.cosines(qv[qi], new) if new else []
                new = [(r, x) for r, x in zip(new, new_cos) if x is not None]
                ids2 = np.concatenate([ids, np.array([r for r, _ in new], dtype=ids.dtype)])
                c2 = np.concatenate([c, np.array([x for _, x in new], dtype=float)])
                l2 = np.concatenate([l, np.full(len(new), np.nan)])
                exm = dict(ex)
                e2 = np.array([exm.get(int(r), np.nan) for r in ids2])
                s2 = np.array([str(r) for r in ids2])
                for lam in lams:
                    lex = (1 - lam) * mm(l2) + lam * mm(e2)
                    tops[lam].append(order(ids2, alpha * mm(c2) + (1 - alpha) * lex, c2, s2))
            for lam in lams:
                results[(label, lam)][set_name] = (tops[lam], spent / len(d["queries"]))
        store.close()
    print(f"| expansion (α {alpha}) | λ | " + " | ".join(FOLDS)
          + " | chroma-dev all | extra FTS5 ms/query (chroma / SciFact) |\n| --- | ---: |"
          + " ---: |" * 6)
    for (label, lam), by_set in results.items():
        r = score(data, None, lambda name, by_set=by_set: by_set[name][0])
        cost = f"{by_set['chroma-dev'][1] * 1000:.1f} / {by_set['scifact'][1] * 1000:.1f}"
        print(f"| {label} | {lam} | " + " | ".join(f"{r[f]:.2f}" for f in FOLDS)
              + f" | {r['chroma-dev']:.2f} | {cost} |", flush=True)


def run_depths(cands: str) -> None:
    """SciFact nDCG@10 of what ``query`` returns when each side is cut to ``depth`` before
    fusing (the cached lists are 1,000 deep; ``eval`` always fused 1,000)."""
    with open(cands, "rb") as fh:
        sf = pickle.load(fh)["scifact"]
    print("| depth per side | " + " | ".join(f"α {a}" for a in (0.5, 0.55, 0.6, 0.65))
          + " |\n| ---: |" + " ---: |" * 4)
    for depth in (100, 300, 1000):
        cut = {"scifact": {"cands": [(d[:depth], [x for x in lx if x[0] in {r for r, _ in d[:depth]}
                                                   or c.get(x[0]) is not None][:depth], c)
                                     for d, lx, c in sf["cands"]]}}
        prepared = prepare(cut, "scifact")
        cells = []
        for a in (0.5, 0.55, 0.6, 0.65):
            vals = []
            for qrels, (ids, c, l, _dr, _lr, s) in zip(sf["gold"], prepared):
                top = order(ids, a * mm(c) + (1 - a) * mm(l), c, s)[:60]
                docs = [sf["records"][int(r)][0] for r in top]
                vals.append(m.ndcg_at_k(
                    m.best_chunk_ranking((d, -float(i)) for i, d in enumerate(docs)), qrels, 10))
            cells.append(f"{100 * np.mean(vals):.2f}")
        print(f"| {depth} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("variants")
    v.add_argument("--cands", required=True)
    e = sub.add_parser("expand")
    e.add_argument("--cands", required=True)
    e.add_argument("--chroma-index", required=True)
    e.add_argument("--sf-index", required=True)
    d = sub.add_parser("depths")
    d.add_argument("--cands", required=True)
    a = ap.parse_args()
    if a.cmd == "variants":
        run_variants(a.cands)
    elif a.cmd == "depths":
        run_depths(a.cands)
    else:
        run_expand(a.cands, a.chroma_index, a.sf_index)


if __name__ == "__main__":
    main()
