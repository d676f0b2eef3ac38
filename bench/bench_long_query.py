"""A pasted traceback with a question after it (issue 41, item 2): what is admitted when the
model reads the query's first 256 tokens (before) and when its dense side is given the
query's ``dense_view`` (after), side by side in one process on one index.

The cases, ``bench/long_query_flask.jsonl``: three real tracebacks of a small Flask app run
through Flask's test client (``TemplateNotFound``, the session without a secret key, a
``url_for`` ``BuildError``; 2.7-4.1k characters, paths renamed), each with two questions,
labelled with the Flask documentation pages that answer them before anything was run
(pallets/flask 2ac89889, ``docs/``):

    cd FLASK_CHECKOUT && RAGSIFT_NO_PROJECT=1 ragsift embed docs -i /tmp/flask.db
    .venv/bin/python bench/bench_long_query.py /tmp/flask.db bench/long_query_flask.jsonl

A case is answered when an admitted hit (k 3, the threshold in force) is one of its pages;
first right: the rank-1 candidate is one of them. "before" switches the view off
(``search.dense_view`` returns None: the model cuts the query itself, as before issue 41).
"""

from __future__ import annotations

import json
import sys


def main(index: str, cases_file: str) -> None:
    import ragsift.api as api
    import ragsift.retrieval.search as search

    with open(cases_file, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    real = search.dense_view
    for label, view in (("before", lambda *a: None), ("after", real)):
        search.dense_view = view
        answered = first = 0
        with api.open_index(index) as ix:
            for c in cases:
                query = c["traceback"] + "\n" + c["question"] + "\n"
                r = ix.search(query, k=3).results[0]
                got = [h.path for h in r.admitted]
                ok = any(p in c["relevant"] for p in got)
                top = r.candidates[0] if r.candidates else None
                answered += ok
                first += bool(top and top.path in c["relevant"])
                print(
                    f"  {label} {c['question'][:40]!r}: admitted {got}; first "
                    f"{top.path if top else None} {top.score if top else 0:.3f}",
                    file=sys.stderr,
                )
        print(f"{label}: answered {answered}/{len(cases)}, first hit right {first}/{len(cases)}")
    search.dense_view = real


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
