"""The labelled admission set (issue 21) and the evidence the engine sees for each query.

Two indexes are built with the default chunker and embedder through the evaluation harness
(chroma-dev's three corpora in one index, as ``ragsift eval`` builds it; SciFact's corpus in
another). Each is asked:

- **answerable**: its own questions (chroma-dev 276, SciFact train 809), and a *short* keyword
  form of each (``short_query``: the one or two rarest content words of the question in that
  index, the same labels);
- **unanswerable**: the other set's questions (chroma-dev ↔ SciFact), those of their short
  keyword forms whose words the index holds nowhere, and ``OFF_TOPIC`` (questions and keyword queries about none of the corpora, written
  for this set).

For every (index, query) it stores what the engine computes before it scores: the dense and
lexical candidate lists (``DEPTH`` each; SciFact's own queries ``runner.BEIR_DEPTH`` for
nDCG@10, as ``eval`` asks), the cosine of every lexical-only candidate, the query's BM25
ceiling, and the chunk spans and document ids to label candidates with. The fold of a query is
the corpus it was written for (chatlogs, state_of_the_union, wikitexts, scifact); off-topic
queries are dealt to the four folds in turn.

    .venv/bin/python -m bench.admission_set --out /tmp/i21/set3.pkl

Vectors come from the shared embedding cache (``ragsift.evaluation.cache``), so a rerun embeds
nothing; the first run embeds both corpora (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import tempfile
import time
from pathlib import Path

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
if not EVAL.exists():
    EVAL = Path("/work/shared/eval")

DEPTH = 1000  # candidates per side, as the engine asks in hybrid and lexical mode (Fusion.depth)
FOLDS = ("chatlogs", "state_of_the_union", "wikitexts", "scifact")

# Queries about none of the corpora (chat logs, US State of the Union addresses, Wikipedia
# articles, biomedical abstracts): what a user asks of the wrong index, full and keyword form.
OFF_TOPIC = (
    "How do I configure a reverse proxy in nginx for a websocket server?",
    "What is the best way to proof sourdough overnight in the fridge?",
    "Which git command rewrites the author of the last commit?",
    "How many grams of flour are in a cup?",
    "What is the capital of Mongolia?",
    "How do I set up a Kubernetes ingress with TLS certificates?",
    "What are the rules of the offside trap in football?",
    "How do you tune a guitar to drop D?",
    "What is the difference between a list and a tuple in Python?",
    "Which wax is best for cross-country skis in wet snow?",
    "How long should I boil an egg for a runny yolk?",
    "What does the error 'segmentation fault (core dumped)' mean in C?",
    "How do I replace the chain on a mountain bike?",
    "Where can I see the northern lights in Norway in March?",
    "What is the time complexity of heapsort?",
    "How should I water a fiddle leaf fig in winter?",
    "Which lens is best for astrophotography on a crop sensor camera?",
    "How do I export a Figma frame as SVG?",
    "What is the plot of the opera Carmen?",
    "How do I knit a cable stitch?",
    "kubernetes ingress",
    "sourdough starter",
    "guitar chords",
    "nginx websocket",
    "offside rule",
    "knitting",
    "espresso grind",
    "rust borrow checker",
    "figma export",
    "ski wax",
    "tax deductions freelancer",
    "chess openings",
    "bicycle chain",
    "houseplant watering",
    "css grid layout",
    "opera carmen",
    "docker compose volumes",
    "mortgage refinance",
    "yoga poses",
    "vim macros",
)


def short_query(question: str, df: dict[str, int]) -> str:
    """The one or two rarest content words of ``question`` in this index (by how many chunks
    hold the word; words the index lacks are skipped, ties by first occurrence), in the
    question's order: one word for half the questions, two for the other half (by the
    question's hash, so the set is the same on every run)."""
    return rarest_words(question, df, 1 + hashlib.sha256(question.encode()).digest()[0] % 2)


def rarest_words(text: str, df: dict[str, int], n: int) -> str:
    """The ``n`` rarest query words of ``text`` (at least 3 letters, held by some chunk), in
    the text's order; "" when there is none."""
    from ragsift.index.store import query_words

    words = [w for w in query_words(text) if len(w) >= 3 and df.get(w, 0) > 0]
    rare = sorted(range(len(words)), key=lambda i: (df[words[i]], i))[:n]
    return " ".join(words[i] for i in sorted(rare))


def word_df(records) -> dict[str, int]:
    """How many chunks hold each query word (the lexical side's word rule)."""
    from ragsift.index.store import query_words

    df: dict[str, int] = {}
    for r in records:
        for w in set(query_words(r.context + " " + r.text)):
            df[w] = df.get(w, 0) + 1
    return df


def evidence(store, emb, queries: list[str], depth: int) -> list[dict]:
    """What the engine reads for each query: both sides' lists, lexical-only cosines, the
    best unit's cosine of the first ``UNIT_READ`` of each side, the BM25 ceiling, the number
    of query words."""
    import numpy as np

    from ragsift.index.store import query_words
    from ragsift.retrieval.units import best_units, wanted

    out = []
    qvecs = emb.embed(queries, kind="query").vectors if queries else None
    for i in range(0, len(queries), 64):
        block = queries[i : i + 64]
        dense = store.dense_candidates(qvecs[i : i + 64], depth)
        for q, qvec, d in zip(block, qvecs[i : i + 64], dense):
            lex = store.lexical_candidates(q, depth) if q.strip() else []
            have = {r for r, _ in d}
            todo = [r for r, _ in lex if r not in have]
            cos = dict(zip(todo, store.cosines(qvec, todo))) if todo else {}
            best = best_units(store, qvec, wanted(d, lex, UNIT_READ))
            out.append(
                {
                    "units": {r: b.cosine for r, b in best.items()},
                    "dense": (
                        np.array([r for r, _ in d], np.int64),
                        np.array([s for _, s in d], np.float64),
                    ),
                    "lexical": (
                        np.array([r for r, _ in lex], np.int64),
                        np.array([s for _, s in lex], np.float64),
                    ),
                    "cos": cos,
                    "ceiling": store.lexical_ceiling(q),
                    "words": len(query_words(q)),
                }
            )
    return out


SETS = (("chroma-dev", None), ("scifact", "train"))
UNIT_READ = 100  # candidates per side whose best unit is recorded (UNIT_DEPTH is chosen below it)


def build(name: str, split: str | None, tmp: Path, emb) -> tuple:
    """(dataset, index, path → corpus or document id) of one set, indexed under ``tmp`` with
    the default chunker and ``emb`` (the evaluation harness's own build)."""
    from ragsift.evaluation import runner
    from ragsift.evaluation.config import DEFAULT_CONFIG
    from ragsift.evaluation.datasets import load_dataset

    t0 = time.perf_counter()
    ds = load_dataset(EVAL / name, split)
    sub = tmp / name
    sub.mkdir()
    paths, label_of = runner.materialize(ds, sub)
    index = runner.build_config_index(paths, sub / "index.sqlite", DEFAULT_CONFIG, emb)
    print(
        f"{name}: {len(index.records)} chunks in {time.perf_counter() - t0:.0f}s",
        file=sys.stderr,
        flush=True,
    )
    return ds, index, label_of


def collect(out: str) -> None:
    from ragsift.evaluation import runner
    from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache
    from ragsift.evaluation.config import DEFAULT_CONFIG

    cache = EmbeddingCache()
    cfg = DEFAULT_CONFIG
    emb = CachingEmbedder(runner.embedder_for_config(cfg), cache)
    with tempfile.TemporaryDirectory(prefix="ragsift-admission-") as tmp:
        sets = {name: build(name, split, Path(tmp), emb) for name, split in SETS}
        data: dict = {"indexes": {}, "queries": []}
        for name, (_ds, index, label_of) in sets.items():
            data["indexes"][name] = {
                "records": {r.rowid: (label_of(r.path), r.start, r.end) for r in index.records},
                "chunks": len(index.records),
            }
        own: dict[str, list[dict]] = {}
        dfs = {name: word_df(index.records) for name, (_, index, _) in sets.items()}
        for name, (ds, _, _) in sets.items():
            df = dfs[name]
            rows = []
            if name == "chroma-dev":
                for q in ds.questions:
                    rows.append(
                        {
                            "text": q.question,
                            "fold": q.corpus_id,
                            "gold": (q.corpus_id, q.references),
                        }
                    )
            else:
                for qid, text in ds.queries.items():
                    rows.append({"text": text, "fold": "scifact", "gold": ds.qrels[qid]})
            full = [dict(r, kind="full", index=name) for r in rows]
            short = [
                dict(r, text=short_query(r["text"], df), kind="short", index=name) for r in rows
            ]
            own[name] = full + [r for r in short if r["text"]]
        for name in sets:
            other = "scifact" if name == "chroma-dev" else "chroma-dev"
            # the other set's questions, and those of their keyword forms whose words this
            # index does not hold at all (a keyword query that names a word the index holds
            # is answered by a chunk holding it, so it is no negative)
            df = dfs[name]
            foreign = [
                dict(
                    r,
                    kind="foreign" if r["kind"] == "full" else "foreign-short",
                    index=name,
                    gold=None,
                )
                for r in own[other]
                if r["kind"] == "full" or not any(df.get(w, 0) for w in r["text"].split())
            ]
            off = [
                {"text": t, "fold": FOLDS[i % 4], "gold": None, "kind": "off-topic", "index": name}
                for i, t in enumerate(OFF_TOPIC)
            ]
            t0 = time.perf_counter()
            ask = own[name]
            depth = runner.BEIR_DEPTH if name == "scifact" else 1000
            for r, ev in zip(
                ask, evidence(index.index.store, emb, [r["text"] for r in ask], depth)
            ):
                data["queries"].append({**r, **ev})
            rest = foreign + off
            for r, ev in zip(
                rest, evidence(index.index.store, emb, [r["text"] for r in rest], DEPTH)
            ):
                data["queries"].append({**r, **ev})
            print(
                f"{name}: {len(ask) + len(rest)} queries in {time.perf_counter() - t0:.0f}s",
                file=sys.stderr,
                flush=True,
            )
        for _, index, _ in sets.values():
            index.index.close()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh:
        pickle.dump(data, fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    collect(ap.parse_args().out)


if __name__ == "__main__":
    main()
