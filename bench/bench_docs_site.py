"""Admission on a real documentation site the score was never fitted on (issue 21), this tree
against another one side by side: questions, one- and two-word keyword queries (page titles)
and off-topic queries, each labelled with the pages that answer it.

The site: typer's documentation (https://github.com/fastapi/typer, commit 9a7b2e83, its
`docs/` folder: 75 markdown pages), indexed with the defaults from inside the checkout so the
stored paths are `docs/...`; the labels are `bench/docs_site_typer.jsonl` (written for this
benchmark). Two more sites, each with its own labels: Flask (https://github.com/pallets/flask,
commit 2ac89889, `docs/`: reStructuredText, `bench/docs_site_flask.jsonl`) and Click
(https://github.com/pallets/click, commit 2c8cd3ac, `docs/`: 37 markdown pages,
`bench/docs_site_click.jsonl`, issue 41 item 7: 12 questions written before any ranking was
seen, two of them the issue's first-hit misses "several commands under one program" and
``click.echo``; Flask's "custom 404 page" is the third). A query is answered when an admitted hit
(k 3, the default threshold in force) is one of its pages; an off-topic query is falsely
admitted when anything is admitted.

    cd TYPER_CHECKOUT && ragsift embed docs -i /tmp/typer.db
    .venv/bin/python bench/bench_docs_site.py /tmp/typer.db bench/docs_site_typer.jsonl
    PYTHONPATH=OLD_TREE .venv/bin/python bench/bench_docs_site.py /tmp/typer.db bench/docs_site_typer.jsonl

A site's checkout can be its `docs/` folder at that commit, e.g. Click's from a clone of it:

    git -C CLICK_CLONE archive 2c8cd3ac docs | tar -x -C /tmp/site-click
    cd /tmp/site-click && ragsift embed docs -i /tmp/click.db

Rows with ``"kind": "identifier"`` (issue 28: one identifier as the query, ``url_for``,
``typer.echo``, ``--install-completion``, labelled with the pages that document it) are left
out of the numbers above and reported on their own line: first hit right, the rank-1
candidate (default mode) one of its pages.

Rows with ``"kind": "near-topic"`` (``relevant`` empty: a question near the site's subject that
its docs do not answer, another framework's feature or a neighbouring tool's, written from the
site's table of contents before any query was run) are asked with the others but counted on
their own: "near-topic admitted X/N", a query admitted when anything is; each admitted one goes
to stderr with its pages, scores and ``title_share``. The off-topic count (falsely admitted) does
not include them.
"""

from __future__ import annotations

import json
import sys


def score(ix, rows: list[dict], k: int = 3) -> dict:
    """Ask every label row (``query``, ``relevant``: the pages that answer it, none for an
    off-topic query) of the open index ``ix`` (``ragsift.api.Index``) at the threshold in force,
    k 3, and tally: answered / n_ans, keyword queries (``"kind": "keyword"``, or without a kind
    one or two words) keyword_ok / keyword, falsely admitted false / n_una, first hit right
    first_right (the rank-1 candidate, admitted or not, one of the query's pages), threshold;
    near-topic rows (``"kind": "near-topic"``) apart from the off-topic ones: admitted near /
    n_near. Misses and false admissions go to stderr. ``bench/bench_docs_site_i18n.py`` calls
    it."""
    results = ix.query_many([r["query"] for r in rows], k=k)
    answered = false = keyword = keyword_ok = near = 0
    for row, r in zip(rows, results):
        got = [c.path for c in r.admitted]
        if row["relevant"]:
            ok = any(p in row["relevant"] for p in got)
            answered += ok
            if row["kind"] == "keyword" if "kind" in row else len(row["query"].split()) <= 2:
                keyword += 1
                keyword_ok += ok
            if not ok:
                best = f"best {r.best.score:.3f} {r.best.path}" if r.best else ""
                print(f"  missed: {row['query']!r} -> {got[:3]} {best}", file=sys.stderr)
        elif row.get("kind") == "near-topic":
            near += bool(got)
            if got:
                print(
                    f"  admitted for a near-topic query: {row['query']!r} -> "
                    + "; ".join(_hit(c) for c in r.admitted[:3]),
                    file=sys.stderr,
                )
        elif got:
            false += 1
            print(
                f"  admitted for an off-topic query: {row['query']!r} -> {got[:3]}", file=sys.stderr
            )
    # first hit right: the rank-1 candidate (admitted or not) is one of the query's pages
    first_right = sum(
        bool(r.candidates) and r.candidates[0].path in row["relevant"]
        for row, r in zip(rows, results)
        if row["relevant"]
    )
    n_ans = sum(1 for r in rows if r["relevant"])
    n_near = sum(1 for r in rows if not r["relevant"] and r.get("kind") == "near-topic")
    return {
        "answered": answered,
        "n_ans": n_ans,
        "keyword": keyword,
        "keyword_ok": keyword_ok,
        "false": false,
        "n_una": len(rows) - n_ans - n_near,
        "first_right": first_right,
        "threshold": results[0].threshold if results else None,
        "near": near,
        "n_near": n_near,
    }


def _hit(c) -> str:
    """One admitted hit for stderr: its page, score and title share (None where the tree has no
    title evidence or the candidate was past the titled ones)."""
    share = getattr(c, "title_share", None)
    return f"{c.path} {c.score:.3f} title_share {'-' if share is None else f'{share:.2f}'}"


def main(index: str, labels: str) -> None:
    import ragsift
    import ragsift.api as rs

    with open(labels, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    idents = [r for r in rows if r.get("kind") == "identifier"]
    rows = [r for r in rows if r.get("kind") != "identifier"]
    with rs.open_index(index) as ix:
        t = score(ix, rows)
        ident_results = ix.query_many([r["query"] for r in idents], k=3) if idents else []
    answered, n_ans, first_right = t["answered"], t["n_ans"], t["first_right"]
    print(
        f"ragsift {ragsift.__version__} ({ragsift.__file__.rsplit('/ragsift/', 1)[0]}): "
        f"threshold {t['threshold']}: answered {answered}/{n_ans} "
        f"({100 * answered / n_ans:.0f}%; keyword queries {t['keyword_ok']}/{t['keyword']}), "
        f"falsely admitted {t['false']}/{t['n_una']}; first hit right {first_right}/{n_ans} "
        f"({100 * first_right / n_ans:.0f}%)"
    )
    if idents:
        first = 0
        for row, r in zip(idents, ident_results):
            top = r.candidates[0].path if r.candidates else None
            first += top in row["relevant"]
            print(
                f"  identifier {row['query']!r}: {'right' if top in row['relevant'] else 'WRONG'}"
                f" first hit {top}",
                file=sys.stderr,
            )
        print(f"identifier queries: first hit right {first}/{len(idents)}")
    if t["n_near"]:
        print(f"near-topic admitted {t['near']}/{t['n_near']}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
