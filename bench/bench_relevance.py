"""One relevance score (issue 21): fit it, choose its threshold, and check it fold by fold.

Reads the admission set (``python -m bench.admission_set --out SET``) and, for each mode:

1. **fit**: logistic regression (L2, Newton's method, each fold weighted equally) of "this
   candidate is relevant" on ``ragsift.retrieval.relevance.FEATURES``, over the top
   ``TRAIN_TOP`` candidates of each side per query;
2. **leave-one-corpus-out** over the four folds (chatlogs, state_of_the_union, wikitexts,
   scifact): for each held-out fold, fit on the other three, choose the threshold there by
   the rule below, and report on the held-out fold: admission (answered / falsely admitted at
   the default k), ranking (chroma recall@5, SciFact nDCG@10, with both single sides beside
   it) and calibration (ECE, 10 bins, over the top-k candidates of every query);
3. the same figures for today's design (fused order, cosine gate 0.40), beside it;
4. the coefficients and threshold fitted on all four folds: what ships in
   ``ragsift/retrieval/relevance.py``.

Labels: a SciFact chunk is relevant when its abstract is in the query's qrels; a chroma-dev
chunk when it holds at least half of one of the question's reference spans (or a reference
holds at least half of the chunk). A query is *answered* when an admitted hit is relevant; an
unanswerable query (another set's question, an off-topic one) is *falsely admitted* when
anything is admitted.

Threshold rule: the value that maximises ``answered − COST · falsely admitted`` on the
training folds (each fold's rates averaged): a false admission costs ``COST`` missed answers.
Not the largest value that keeps one figure at a target.

    .venv/bin/python -m bench.bench_relevance --set /tmp/i21/set3.pkl [--mode hybrid]
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys

import numpy as np

from ragsift.calibration import fit as shared
from ragsift.retrieval.relevance import FEATURES, Model, dense_evidence

# every feature tried: the shipped ones, and the reciprocal ranks of each side (tried, not
# kept: RESULTS.md)
ALL = (*FEATURES, "dense_rr", "lexical_rr", "unit", "unit_gap", "unit_words")

FOLDS = ("chatlogs", "state_of_the_union", "wikitexts", "scifact")
# the fit, the threshold rule and their constants are the package's (``ragsift.calibration.fit``,
# shared with ``ragsift calibrate``)
K = shared.K  # the default -k
TRAIN_TOP = shared.TRAIN_TOP  # candidates per side per query the model is fitted on
COST = shared.COST  # a false admission costs this many missed answers (threshold rule)
# the features shipped (chosen by held-out log-loss over the folds, RESULTS.md)
SHIPPED = ("cosine", "share", "cosine_gap", "share_gap", "log_words", "cosine_words", "share_words")
UNIT_DEPTH = 40  # set from --unit-depth (the engine's ragsift.retrieval.units.UNIT_DEPTH)
GRID = shared.grid()
OLD_THRESHOLD = 0.40  # today's cosine gate
OLD_ALPHA = 0.6


# -- the evidence of one query ------------------------------------------------------------------


class Q:
    """One query of the set with its candidates' evidence and labels."""

    def __init__(self, row: dict, records: dict) -> None:
        self.text, self.fold, self.kind, self.index = (
            row["text"],
            row["fold"],
            row["kind"],
            row["index"],
        )
        self.answerable = row["gold"] is not None
        d_ids, d_sc = row["dense"]
        l_ids, l_sc = row["lexical"]
        cos = dict(zip(d_ids.tolist(), d_sc.tolist()))
        cos.update(row["cos"])
        ids = list(dict.fromkeys([*d_ids.tolist(), *l_ids.tolist()]))
        ids = [r for r in ids if cos.get(r) is not None]
        bm = dict(zip(l_ids.tolist(), l_sc.tolist()))
        self.ids = np.array(ids, np.int64)
        self.cos = np.array([cos[r] for r in ids], np.float64)
        self.bm25 = np.array([bm.get(r, 0.0) for r in ids], np.float64)
        ceiling = row["ceiling"]
        self.share = self.bm25 / ceiling if ceiling > 0 else np.zeros_like(self.bm25)
        self.words = max(row["words"], 1)
        self.dense_rank = {r: i for i, r in enumerate(d_ids.tolist())}
        self.lex_rank = {r: i for i, r in enumerate(l_ids.tolist())}
        # the best unit's cosine where the engine reads it (the first UNIT_DEPTH of each
        # side), else the aggregate cosine, as ragsift.retrieval.engine does
        read = set(d_ids.tolist()[:UNIT_DEPTH]) | set(l_ids.tolist()[:UNIT_DEPTH])
        best = row.get("units", {})
        self.unit = np.array(
            [best[r] if r in read and r in best else cos[r] for r in ids], np.float64
        )
        # the dense side's evidence, as relevance.score_array computes it, and its order
        self.dense = dense_evidence(self.cos, self.unit)
        self.evidence_rank = {
            r: i for i, r in enumerate(self.ids[np.argsort(-self.dense, kind="stable")].tolist())
        }
        self.gold = row["gold"]
        self.records = records
        self.label = np.array([self._relevant(r) for r in ids], bool)

    def _relevant(self, rowid: int) -> bool:
        if self.gold is None:
            return False
        rec = self.records[rowid]
        if self.index == "scifact":
            return self.gold.get(rec[0], 0) > 0
        cid, refs = self.gold
        if rec[0] != cid:
            return False
        for s, e in refs:
            inter = min(e, rec[2]) - max(s, rec[1])
            if inter > 0 and (2 * inter >= e - s or 2 * inter >= rec[2] - rec[1]):
                return True
        return False

    def columns(self, mode: str) -> dict[str, np.ndarray]:
        """Every feature tried (``ALL``) by name: what ``shared.fit_model`` reads."""
        return dict(zip(ALL, self.features(mode).T))

    def features(self, mode: str) -> np.ndarray:
        cos = self.dense if mode != "lexical" else np.zeros_like(self.cos)
        share = self.share if mode != "dense" else np.zeros_like(self.share)
        unit = self.unit if mode != "lexical" else np.zeros_like(self.unit)
        cols = {
            "cosine": cos,
            "share": share,
            "unit": unit,
            "unit_gap": unit - unit.max() if unit.size else unit,
            "unit_words": unit * math.log(self.words),
            "cosine_gap": cos - cos.max() if cos.size else cos,
            "share_gap": share - share.max() if share.size else share,
            "log_words": np.full(cos.shape, math.log(self.words)),
            "cosine_words": cos * math.log(self.words),
            "share_words": share * math.log(self.words),
            "dense_rr": (
                np.array(
                    [
                        1.0 / (self.dense_rank[r] + 1) if r in self.dense_rank else 0.0
                        for r in self.ids.tolist()
                    ]
                )
                if mode != "lexical"
                else np.zeros_like(cos)
            ),
            "lexical_rr": (
                np.array(
                    [
                        1.0 / (self.lex_rank[r] + 1) if r in self.lex_rank else 0.0
                        for r in self.ids.tolist()
                    ]
                )
                if mode != "dense"
                else np.zeros_like(cos)
            ),
        }
        return np.stack([cols[f] for f in ALL], axis=1)

    def train_rows(self, mode: str) -> np.ndarray:
        """Positions of the top TRAIN_TOP of each side (what the gate is ever asked about):
        the dense side's by its aggregate (the backend's list) and, outside lexical mode, by
        its evidence (the order the score gives it)."""
        top = {r for r, i in self.dense_rank.items() if i < TRAIN_TOP}
        top |= {r for r, i in self.lex_rank.items() if i < TRAIN_TOP}
        if mode != "lexical":
            top |= {r for r, i in self.evidence_rank.items() if i < TRAIN_TOP}
        return np.array([i for i, r in enumerate(self.ids.tolist()) if r in top], np.int64)


def load(path: str) -> list[Q]:
    with open(path, "rb") as fh:
        data = pickle.load(fh)
    return [Q(row, data["indexes"][row["index"]]["records"]) for row in data["queries"]]


# -- the model ----------------------------------------------------------------------------------


def fit(qs: list[Q], mode: str, feats: tuple[str, ...], l2: float) -> Model:
    """The package's fit (``ragsift.calibration.fit.fit_model``) over the features ``feats``
    (in ``ALL``'s order: the shipped ones, or ones only tried)."""
    return shared.fit_model(qs, mode, [f for f in ALL if f in feats], l2)


def score(q: Q, mode: str, model: Model) -> np.ndarray:
    """The model's score of every candidate. For the shipped features this is
    ``relevance.score_array`` itself (the product's function); a model with features that
    were only tried is scored from the feature matrix."""
    from ragsift.retrieval.relevance import score_array

    if set(model.weights) <= set(FEATURES):
        return score_array(mode, q.cos, q.share, q.words, model, unit=q.unit)
    x = q.features(mode)
    z = model.bias + x @ np.array([model.weights.get(f, 0.0) for f in ALL])
    return 1.0 / (1.0 + np.exp(-z))


def order(q: Q, s: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Positions best first: score descending, then cosine descending, then rowid."""
    tie = q.cos if tie is None else tie
    return np.lexsort((q.ids, -tie, -s))


# -- the measurements ---------------------------------------------------------------------------


def ranking(q: Q, pos: np.ndarray) -> float:
    from ragsift import metrics as m

    if q.index == "scifact":
        docs = [q.records[int(r)][0] for r in q.ids[pos[:1000]]]
        ranking_ = m.best_chunk_ranking((d, -float(i)) for i, d in enumerate(docs))
        return m.ndcg_at_k(ranking_, q.gold, 10)
    cid, refs = q.gold
    retrieved = [q.records[int(r)] for r in q.ids[pos[:5]]]
    return m.span_scores(retrieved, refs, cid).recall


def side_orders(q: Q, how: str) -> tuple[np.ndarray, np.ndarray]:
    """(order, the score a gate reads) for a single side or today's fused order."""
    if how == "dense":  # the dense side: its evidence (best unit and aggregate)
        return order(q, q.dense), q.dense
    if how == "aggregate":
        return order(q, q.cos), q.cos
    if how == "unit":
        return order(q, q.unit), q.unit
    if how == "lexical":
        return order(q, q.bm25), q.cos

    # today's hybrid: convex α·minmax(cos) + (1−α)·minmax(bm25), gated on the cosine
    def mm(v, present):
        if not present.any():
            return np.zeros_like(v)
        lo, hi = v[present].min(), v[present].max()
        return np.where(present, (v - lo) / (hi - lo) if hi > lo else 1.0, 0.0)

    fused = OLD_ALPHA * mm(q.cos, np.ones(q.cos.shape, bool)) + (1 - OLD_ALPHA) * mm(
        q.bm25, q.bm25 > 0
    )
    return order(q, fused), q.cos


def admitted(pos: np.ndarray, gate: np.ndarray, t: float, k: int = K) -> np.ndarray:
    head = pos[:k]
    return head[gate[head] >= t]


def admission_rates(qs: list[Q], orders: dict, t: float) -> tuple[float, float, int, int]:
    """(answered share, falsely admitted share, #answerable, #unanswerable)."""
    ans = [q for q in qs if q.answerable]
    una = [q for q in qs if not q.answerable]
    a = sum(bool(q.label[admitted(*orders[id(q)], t)].any()) for q in ans)
    f = sum(admitted(*orders[id(q)], t).size > 0 for q in una)
    return a / max(len(ans), 1), f / max(len(una), 1), len(ans), len(una)


def choose_threshold(qs: list[Q], orders: dict, folds: list[str]) -> float:
    """The package's threshold rule (``shared.choose_threshold``) over this bench's orders."""
    return shared.choose_threshold(qs, orders, folds, rate=admission_rates)


def ece(qs: list[Q], scored: dict, k: int = K, bins: int = 10) -> tuple[float, list]:
    ps, ys = [], []
    for q in qs:
        pos, s = scored[id(q)]
        ps.extend(s[pos[:k]].tolist())
        ys.extend(q.label[pos[:k]].tolist())
    p, y = np.array(ps), np.array(ys, np.float64)
    table, err = [], 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        sel = (p >= lo) & ((p < hi) if b < bins - 1 else (p <= hi))
        if sel.any():
            err += sel.sum() / p.size * abs(p[sel].mean() - y[sel].mean())
            table.append((lo, hi, int(sel.sum()), float(p[sel].mean()), float(y[sel].mean())))
        else:
            table.append((lo, hi, 0, float("nan"), float("nan")))
    return float(err), table


def mean_ranking(qs: list[Q], orders: dict) -> float:
    vals = [ranking(q, orders[id(q)][0]) for q in qs if q.answerable and q.kind == "full"]
    return 100 * float(np.mean(vals)) if vals else float("nan")


def _scored(qs: list[Q], mode: str, model: Model) -> dict:
    out = {}
    for q in qs:
        s = score(q, mode, model)
        out[id(q)] = (order(q, s, q.cos if mode != "lexical" else q.bm25), s)
    return out


def report(qs: list[Q], mode: str, feats: tuple[str, ...], l2: float) -> dict:
    from ragsift.retrieval import relevance

    base = {how: {id(q): side_orders(q, how) for q in qs} for how in ("dense", "lexical", "fused")}
    out: dict = {"folds": {}}
    rows, reliab = [], []
    for f in FOLDS:
        train = [q for q in qs if q.fold != f]
        test = [q for q in qs if q.fold == f]
        scored = _scored(qs, mode, fit(train, mode, feats, l2))
        t = choose_threshold(train, scored, [g for g in FOLDS if g != f])
        a, fa, na, nu = admission_rates(test, scored, t)
        row = {
            "fold": f,
            "threshold": t,
            "answered": a,
            "false": fa,
            "n": (na, nu),
            "full": admission_rates([q for q in test if q.kind == "full"], scored, t)[0],
            "short": admission_rates([q for q in test if q.kind == "short"], scored, t)[0],
            "ceiling": admission_rates(test, scored, 0.0)[0],
            "old": admission_rates(test, base["fused"], OLD_THRESHOLD)[:2],
            "ranking": mean_ranking(test, scored),
            "dense": mean_ranking(test, base["dense"]),
            "lexical": mean_ranking(test, base["lexical"]),
            "old_ranking": mean_ranking(test, base["fused"]),
        }
        row["ece"], table = ece(test, scored)
        reliab.append((f, table))
        out["folds"][f] = row
        rows.append(row)
    print(
        f"\n### mode {mode} (features {', '.join(feats)}; L2 {l2}; fitted on the top "
        f"{TRAIN_TOP} of each side)\n"
    )
    print(
        "Admission, k 3, each fold held out (model and threshold fitted on the other three):"
        "\n\n| held-out fold | threshold | answered: all (n) | full | short | falsely "
        "admitted (n) | no floor: answered | today (cosine ≥ 0.40): answered | today: false "
        "|\n| --- |" + " ---: |" * 8
    )
    for r in rows:
        print(
            f"| {r['fold']} | {r['threshold']:.2f} | {100 * r['answered']:.1f} ({r['n'][0]}) "
            f"| {100 * r['full']:.1f} | {100 * r['short']:.1f} | {100 * r['false']:.1f} "
            f"({r['n'][1]}) | {100 * r['ceiling']:.1f} | {100 * r['old'][0]:.1f} | "
            f"{100 * r['old'][1]:.1f} |"
        )
    metric = "chroma recall@5 (whole chunks) / SciFact nDCG@10"
    print(
        f"\nRanking ({metric}), full questions, each fold held out:\n\n| held-out fold | "
        "relevance score | dense | lexical | better side − score | today's fusion |\n"
        "| --- |" + " ---: |" * 5
    )
    for r in rows:
        print(
            f"| {r['fold']} | {r['ranking']:.2f} | {r['dense']:.2f} | {r['lexical']:.2f} | "
            f"{max(r['dense'], r['lexical']) - r['ranking']:+.2f} | {r['old_ranking']:.2f} |"
        )
    print(
        "\nCalibration: expected calibration error (10 bins) over the top 3 candidates of "
        "every held-out query, and the reliability table (mean score / share relevant, n):"
        "\n\n| held-out fold | ECE | "
        + " | ".join(f"[{b / 10:.1f}, {(b + 1) / 10:.1f})" for b in range(10))
        + " |\n| --- |"
        + " ---: |" * 11
    )
    for (f, table), r in zip(reliab, rows):
        cells = [f"{p:.2f} / {y:.2f} ({n})" if n else "-" for _, _, n, p, y in table]
        print(f"| {f} | {r['ece']:.3f} | " + " | ".join(cells) + " |")
    full = fit(qs, mode, feats, l2)
    scored = _scored(qs, mode, full)
    t = choose_threshold(qs, scored, list(FOLDS))
    out["model"], out["threshold"] = full, t
    shipped = relevance.MODELS[mode]
    same = (
        abs(shipped.bias - full.bias) < 5e-4
        and set(shipped.weights) == set(full.weights)
        and all(abs(shipped.weights[k] - v) < 5e-4 for k, v in full.weights.items())
    )
    print(
        f"\nFitted on all four folds: Model({full.bias:.4f}, "
        + "{"
        + ", ".join(f"{k!r}: {v:.4f}" for k, v in full.weights.items())
        + "})"
        + f", threshold {t:.2f}; the shipped relevance.MODELS[{mode!r}] is this model: {same}"
        f", DEFAULT_THRESHOLDS[{mode!r}] is {relevance.DEFAULT_THRESHOLDS[mode]:.2f}"
    )
    print(
        "\nThe shipped model and threshold on each fold (in-sample):\n\n| fold | answered "
        "| short queries | falsely admitted | ranking |\n| --- | ---: | ---: | ---: | ---: |"
    )
    for f in FOLDS:
        test = [q for q in qs if q.fold == f]
        a, fa, _, _ = admission_rates(test, scored, t)
        sa = admission_rates([q for q in test if q.kind == "short"], scored, t)[0]
        print(
            f"| {f} | {100 * a:.1f} | {100 * sa:.1f} | {100 * fa:.1f} | "
            f"{mean_ranking(test, scored):.2f} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", required=True)
    ap.add_argument("--mode", default="all", choices=("all", "dense", "lexical", "hybrid"))
    ap.add_argument("--features", default=",".join(SHIPPED))
    ap.add_argument("--l2", type=float, default=0.1)
    ap.add_argument("--unit-depth", type=int, default=None)
    args = ap.parse_args()
    global UNIT_DEPTH
    from ragsift.retrieval.units import UNIT_DEPTH as shipped_depth

    UNIT_DEPTH = args.unit_depth if args.unit_depth is not None else shipped_depth
    qs = load(args.set)
    print(
        f"{len(qs)} queries: " + ", ".join(f"{f} {sum(q.fold == f for q in qs)}" for f in FOLDS),
        file=sys.stderr,
    )
    feats = tuple(args.features.split(","))
    for mode in ("hybrid", "dense", "lexical") if args.mode == "all" else (args.mode,):
        report(qs, mode, feats, args.l2)


if __name__ == "__main__":
    main()
