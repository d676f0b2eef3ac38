"""A threshold without labels (issue 21's `tune --auto`): measured, and not shipped.

The idea: choose the threshold from the index itself. Pseudo-queries are cut from sampled
chunks, each with its source chunk as the one relevant item: a window of ``WINDOW`` words (a
question-like query) and the chunk's one or two rarest words (a keyword query), as
``bench/admission_set.py`` cuts them from questions. Negatives are ``NEGATIVES``, generic
off-corpus queries written for this script (none of them is in the admission set). The
threshold is then chosen on those by the rule the default was chosen by (answered − 2 ×
falsely admitted, k 3, the shipped hybrid model), and compared with the default on the real
admission set of the same index, fold by fold: ``--auto`` would be kept only if on every fold
it answers at least as many queries as the default at no more false admissions.

    .venv/bin/python bench/bench_auto_threshold.py --set /tmp/i21/set3.pkl
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SAMPLE = 150  # chunks per index
WINDOW = 12  # words in a question-like pseudo-query
NEGATIVES = (
    "How do I reset the password of my router?",
    "What is the best tyre pressure for a road bike?",
    "Which oil should I use for a cast iron pan?",
    "How do I center a div horizontally?",
    "What time does the ferry to the island leave on Sundays?",
    "How many players are on a water polo team?",
    "What is a good beginner's telescope?",
    "How do I clean white sneakers?",
    "Which board games are good for two players?",
    "How do I convert a PDF to a Word document?",
    "What is the difference between baking soda and baking powder?",
    "How long does it take to learn the piano?",
    "wifi password",
    "tyre pressure",
    "board games",
    "piano lessons",
    "sneakers",
    "telescope",
    "ferry timetable",
    "spreadsheet formula",
)


def pseudo_queries(records, texts, df, rng) -> list[dict]:
    from admission_set import rarest_words

    out = []
    for rec in rng.sample(records, min(SAMPLE, len(records))):
        words = texts[rec.rowid].split()
        if len(words) < WINDOW:
            continue
        at = rng.randrange(0, len(words) - WINDOW + 1)
        out.append({"text": " ".join(words[at:at + WINDOW]), "rec": rec, "kind": "full"})
        short = rarest_words(" ".join(words), df, 1 + (rng.random() < 0.5))
        if short:
            out.append({"text": short, "rec": rec, "kind": "short"})
    return out


def run(set_path: str) -> None:
    from admission_set import SETS, build, evidence, word_df
    from bench_relevance import FOLDS, Q, admission_rates, choose_threshold, load, order

    from ragsift.evaluation import runner
    from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache
    from ragsift.evaluation.config import DEFAULT_CONFIG
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS, score_array

    def scored_of(qs):
        out = {}
        for q in qs:
            s = score_array("hybrid", q.cos, q.share, q.words)
            out[id(q)] = (order(q, s), s)
        return out

    emb = CachingEmbedder(runner._load_embedder(DEFAULT_CONFIG), EmbeddingCache())
    real = load(set_path)
    default = DEFAULT_THRESHOLDS["hybrid"]
    print("| index | auto threshold | pseudo: answered / false | fold | answered: default → "
          "auto | falsely admitted: default → auto |\n| --- | ---: | ---: | --- | ---: | ---: |")
    keep = True
    with tempfile.TemporaryDirectory(prefix="ragsift-auto-") as tmp:
        for name, split in SETS:
            t0 = time.perf_counter()
            _, index, label_of = build(name, split, Path(tmp), emb)
            records = {r.rowid: (label_of(r.path), r.start, r.end) for r in index.records}
            texts = {r.rowid: r.text for r in index.records}
            rng = random.Random(0)
            pseudo = pseudo_queries(index.records, texts, word_df(index.records), rng)
            rows = []
            for p in pseudo:
                lab = records[p["rec"].rowid]
                gold = ({lab[0]: 1} if name == "scifact"
                        else (lab[0], [(lab[1], lab[2])]))
                rows.append({"text": p["text"], "fold": "pseudo", "kind": p["kind"],
                             "index": name, "gold": gold})
            rows += [{"text": t, "fold": "pseudo", "kind": "negative", "index": name,
                      "gold": None} for t in NEGATIVES]
            evs = evidence(index.store, emb, [r["text"] for r in rows], 1000)
            qs = [Q({**r, **ev}, records) for r, ev in zip(rows, evs)]
            index.store.close()
            scored = scored_of(qs)
            auto = choose_threshold(qs, scored, ["pseudo"])
            pa, pf, _, _ = admission_rates(qs, scored, auto)
            mine = [q for q in real if q.index == name]
            rs = scored_of(mine)
            for f in [*FOLDS, "all"]:  # every query asked of this index, by its fold
                fq = [q for q in mine if f in (q.fold, "all")]
                da, df_, na, nu = admission_rates(fq, rs, default)
                aa, af, _, _ = admission_rates(fq, rs, auto)
                keep &= aa >= da and af <= df_
                ans = f"{100 * da:.1f} → {100 * aa:.1f} ({na})" if na else "-"
                print(f"| {name} | {auto:.2f} | {100 * pa:.1f} / {100 * pf:.1f} | {f} | {ans} | "
                      f"{100 * df_:.1f} → {100 * af:.1f} ({nu}) |", flush=True)
            print(f"{name}: {len(qs)} pseudo-queries in {time.perf_counter() - t0:.0f}s",
                  file=sys.stderr, flush=True)
    print(f"\nkeep --auto (every fold of every index answers at least as much at no more false "
          f"admissions): {keep}")



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", required=True, help="bench/admission_set.py --out")
    run(ap.parse_args().set)


if __name__ == "__main__":
    main()
