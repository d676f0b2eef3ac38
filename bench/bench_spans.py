"""Evidence spans on chroma-dev (issues 14, 21): recall / IoU at k = 5 with whole chunks and
with ``best_spans`` at several evidence strengths (the one at which a hit keeps its whole
chunk), per corpus, on the relevance order, plus the time span selection adds per query.

Quality on the relevance order (the hits as the engine orders them now), from the admission
set (``python -m bench.admission_set --out SET``), chosen leave-one-corpus-out:

    .venv/bin/python -m bench.bench_spans relevance --set /tmp/i21/set3.pkl

Speed: span selection alone (``spans_for`` on the admitted hits of ``Searcher.retrieve``) on
an index of ``fixtures/`` (what the CLI tests search), k = 5, queries on its topics:

    .venv/bin/python -m bench.bench_spans speed

(The ``quality`` mode on the convex-fusion order of issue 14 read ``bench_fusion.py collect``'s
lists; both left with that fusion: ``git show 6ec5c5b:bench/bench_spans.py``.)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def relevance_loco(set_path: str, strongs: list[float], by: str = "cosine") -> None:
    """Spans on the relevance order (issue 21): the top 5 of each chroma-dev question as the
    engine orders them now (``relevance.score_array``, hybrid), from the admission set
    (``bench/admission_set.py``), at each evidence strength; then leave-one-corpus-out over
    the three corpora: STRONG chosen on two by the largest mean of recall and IoU (each
    corpus weighted equally), scored on the third."""
    import numpy as np

    from bench.bench_relevance import load, order
    from ragsift import metrics as m
    from ragsift.evaluation.datasets import load_dataset
    from ragsift.retrieval.relevance import score_array
    from ragsift.retrieval.spans import MIN_CHARS, best_spans

    ds = load_dataset(ROOT.parent / "shared" / "eval" / "chroma-dev")
    texts = {cid: p.read_text(encoding="utf-8") for cid, p in ds.corpora.items()}
    qs = [q for q in load(set_path) if q.index == "chroma-dev" and q.kind == "full"]
    corpora = sorted({q.fold for q in qs})
    table: dict = {}
    for strong in [None, *strongs]:
        per: dict = {c: [] for c in corpora}
        for q in qs:
            p = score_array("hybrid", q.cos, q.share, q.words)
            pos = order(q, p)[:5]
            strength_of = q.cos if by == "cosine" else p
            recs = [q.records[int(r)] for r in q.ids[pos]]
            if strong is None:
                got = recs
            else:
                spans = best_spans(
                    q.text,
                    [texts[c][s:e] for c, s, e in recs],
                    [s for _, s, _ in recs],
                    MIN_CHARS,
                    [float(x) for x in strength_of[pos]],
                    strong,
                )
                got = [(rec[0], sp.start, sp.end) for rec, sp in zip(recs, spans)]
            cid, refs = q.gold
            per[q.fold].append(m.span_scores(got, refs, cid))
        table[strong] = {
            c: (
                100 * float(np.mean([x.recall for x in v])),
                100 * float(np.mean([x.iou for x in v])),
            )
            for c, v in per.items()
        }
        allq = [x for v in per.values() for x in v]
        print(
            f"strong {strong}: all {100 * np.mean([x.recall for x in allq]):.1f} / "
            f"{100 * np.mean([x.iou for x in allq]):.1f}  "
            + "  ".join(f"{c} {r:.1f}/{i:.1f}" for c, (r, i) in table[strong].items()),
            flush=True,
        )
    print(
        "\n| held-out corpus | STRONG chosen on the other two | held-out recall | held-out IoU |"
        "\n| --- | ---: | ---: | ---: |"
    )
    for held in corpora:
        train = [c for c in corpora if c != held]
        best = max(strongs, key=lambda s: (np.mean([sum(table[s][c]) / 2 for c in train]), -s))
        r, i = table[best][held]
        print(f"| {held} | {best:g} | {r:.1f} | {i:.1f} |")


def speed(repeats: int) -> None:
    from ragsift.chunkers import make_chunker
    from ragsift.embedders import load_embedder
    from ragsift.index import open_index
    from ragsift.ingest import BuildHooks, BuildRequest, build_index
    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.search import Searcher
    from ragsift.retrieval.spans import spans_for

    queries = [
        "when do honey bees swarm",
        "how do I feed a sourdough starter",
        "how to light the lantern",
        "what lives in a tide pool",
        "market prices in the old notes",
        "recipe with flour and eggs",
        "field observations of birds",
        "kitchen cleaning notes",
    ]
    emb = load_embedder(None)
    with tempfile.TemporaryDirectory() as tmp:
        idx = Path(tmp) / "fixtures.db"
        build_index(
            BuildRequest.of(
                idx, [str(ROOT / "fixtures")], chunker=make_chunker("recursive"), embedder=emb
            ),
            BuildHooks(on_skip=lambda _s: None),
        )
        with open_index(idx, "r") as store:
            searcher = Searcher(store, embedder=emb)
            results = [searcher.retrieve(q, SearchRequest(k=5, threshold=None)) for q in queries]
            wall, cpu = [], []
            for _ in range(repeats):
                for r in results:
                    t0, c0 = time.perf_counter(), time.process_time()
                    spans_for(r.query, r.admitted)
                    wall.append(time.perf_counter() - t0)
                    cpu.append(time.process_time() - c0)
    hits = statistics.mean(len(r.admitted) for r in results)

    def ms(xs: list[float]) -> str:
        xs = sorted(xs)
        return (
            f"median {1000 * statistics.median(xs):.3f} ms, p95 "
            f"{1000 * xs[int(0.95 * len(xs))]:.3f} ms, mean {1000 * statistics.mean(xs):.3f}"
        )

    with open("/proc/loadavg") as fh:
        load = fh.read().split()[:3]
    print(
        f"span selection on the fixtures' index (k = 5, {hits:.1f} hits/query, "
        f"{len(wall)} timed selections): wall {ms(wall)}; CPU {ms(cpu)}; "
        f"load {load}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--repeats", type=int, default=50)
    r = sub.add_parser("relevance", help="spans on the relevance order, leave-one-corpus-out")
    r.add_argument("--set", required=True, help="bench/admission_set.py --out")
    r.add_argument("--strong", default="0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.7,inf")
    r.add_argument(
        "--by",
        choices=("cosine", "score"),
        default="cosine",
        help="the dense half of a hit's strength: its cosine or its relevance score",
    )
    args = ap.parse_args()
    if args.cmd == "relevance":
        relevance_loco(args.set, [float(x) for x in args.strong.split(",")], args.by)
    else:
        speed(args.repeats)


if __name__ == "__main__":
    main()
