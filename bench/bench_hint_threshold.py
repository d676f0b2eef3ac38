"""Which thresholds a "nothing admitted" hint may propose (issue 41 item 6): the best
candidate's score of every labelled query that admits nothing at the threshold in force, on
the English docs sites (Typer, Flask; the handbook and FastAPI's translations are held out),
split into off-topic queries (a proposed threshold would admit noise) and answerable ones
whose best candidate is one of their pages (the hint would help). Prints each group's
scores and, for a floor P, how many of each a hint would still propose a threshold for.

    cd /tmp/typer && ragsift embed docs -i /tmp/typer.db   (Flask likewise)
    python -m bench.bench_hint_threshold /tmp/typer.db bench/docs_site_typer.jsonl \\
        /tmp/flask.db bench/docs_site_flask.jsonl
"""

from __future__ import annotations

import json
import sys

import ragsift.api as rs


def misses(index: str, labels: str) -> tuple[float, list[float], list[float]]:
    """(threshold in force, best scores of off-topic queries, best scores of answerable
    queries whose best candidate is right), each for queries that admitted nothing."""
    with open(labels, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = [r for r in rows if r.get("kind") != "identifier"]
    off, right = [], []
    with rs.open_index(index) as ix:
        results = ix.query_many([r["query"] for r in rows], k=3)
        for row, r in zip(rows, results):
            if r.admitted or r.best is None:
                continue
            if not row["relevant"]:
                off.append(r.best.score)
            elif r.best.path in row["relevant"]:
                right.append(r.best.score)
        return results[0].threshold, sorted(off), sorted(right)


def main(args: list[str]) -> None:
    sites = list(zip(args[::2], args[1::2]))
    for index, labels in sites:
        t, off, right = misses(index, labels)
        print(f"{labels}: threshold {t:.3f}")
        print(f"  off-topic, nothing admitted ({len(off)}): {[round(s, 3) for s in off]}")
        print(
            f"  answerable, best is right, nothing admitted ({len(right)}): "
            f"{[round(s, 3) for s in right]}"
        )
        for share in (0.25, 0.5, 0.6, 0.75):
            p = share * t
            print(
                f"  floor {share:.2f} x threshold = {p:.3f}: proposes for "
                f"{sum(s >= p for s in off)}/{len(off)} off-topic, "
                f"{sum(s >= p for s in right)}/{len(right)} right answers"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
