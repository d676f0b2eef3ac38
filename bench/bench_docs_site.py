"""Admission on a real documentation site the score was never fitted on (issue 21), this tree
against another one side by side: questions, one- and two-word keyword queries (page titles)
and off-topic queries, each labelled with the pages that answer it.

The site: typer's documentation (https://github.com/fastapi/typer, commit 9a7b2e83, its
`docs/` folder: 75 markdown pages), indexed with the defaults from inside the checkout so the
stored paths are `docs/...`; the labels are `bench/docs_site_typer.jsonl` (written for this
benchmark). A query is answered when an admitted hit (k 3, the default threshold in force) is
one of its pages; an off-topic query is falsely admitted when anything is admitted.

    cd TYPER_CHECKOUT && ragsift embed docs -i /tmp/typer.db     (Flask: pallets/flask 2ac89889)
    .venv/bin/python bench/bench_docs_site.py /tmp/typer.db bench/docs_site_typer.jsonl
    PYTHONPATH=OLD_TREE .venv/bin/python bench/bench_docs_site.py /tmp/typer.db bench/docs_site_typer.jsonl

Rows with ``"kind": "identifier"`` (issue 28: one identifier as the query, ``url_for``,
``typer.echo``, ``--install-completion``, labelled with the pages that document it) are left
out of the numbers above and reported on their own line: first hit right, the rank-1
candidate (default mode) one of its pages.
"""

from __future__ import annotations

import json
import sys


def main(index: str, labels: str) -> None:
    import ragsift
    import ragsift.api as rs

    rows = [json.loads(line) for line in open(labels, encoding="utf-8") if line.strip()]
    idents = [r for r in rows if r.get("kind") == "identifier"]
    rows = [r for r in rows if r.get("kind") != "identifier"]
    answered = false = keyword = keyword_ok = 0
    with rs.open_index(index) as ix:
        results = ix.query_many([r["query"] for r in rows], k=3)
        ident_results = ix.query_many([r["query"] for r in idents], k=3) if idents else []
    for row, r in zip(rows, results):
        got = [c.path for c in r.admitted]
        if row["relevant"]:
            ok = any(p in row["relevant"] for p in got)
            answered += ok
            if len(row["query"].split()) <= 2:
                keyword += 1
                keyword_ok += ok
            if not ok:
                best = f"best {r.best.score:.3f} {r.best.path}" if r.best else ""
                print(f"  missed: {row['query']!r} -> {got[:3]} {best}", file=sys.stderr)
        elif got:
            false += 1
            print(f"  admitted for an off-topic query: {row['query']!r} -> {got[:3]}",
                  file=sys.stderr)
    # first hit right: the rank-1 candidate (admitted or not) is one of the query's pages
    first_right = sum(bool(r.candidates) and r.candidates[0].path in row["relevant"]
                      for row, r in zip(rows, results) if row["relevant"])
    n_ans = sum(1 for r in rows if r["relevant"])
    n_una = len(rows) - n_ans
    print(f"ragsift {ragsift.__version__} ({ragsift.__file__.rsplit('/ragsift/', 1)[0]}): "
          f"threshold {results[0].threshold}: answered {answered}/{n_ans} "
          f"({100 * answered / n_ans:.0f}%; keyword queries {keyword_ok}/{keyword}), falsely "
          f"admitted {false}/{n_una}; first hit right {first_right}/{n_ans} "
          f"({100 * first_right / n_ans:.0f}%)")
    if idents:
        first = 0
        for row, r in zip(idents, ident_results):
            top = r.candidates[0].path if r.candidates else None
            first += top in row["relevant"]
            print(f"  identifier {row['query']!r}: {'right' if top in row['relevant'] else 'WRONG'}"
                  f" first hit {top}", file=sys.stderr)
        print(f"identifier queries: first hit right {first}/{len(idents)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
