"""Threshold tuning: the sweep metrics on hand-made judged queries (pure arithmetic, so no
model), the queries-file parser, and ``ragsift tune`` end to end on the fixture index."""

from __future__ import annotations

import json

import pytest
from records import retrieval as build_retrieval

from ragsift.errors import RagsiftError
from ragsift.retrieval.topk import TopK
from ragsift.tuning import (
    Judged,
    Objective,
    Relevant,
    analyse,
    judge,
    load_queries,
    metrics_at,
    ranking_metrics,
    threshold_grid,
)


def J(scores, matched, n_relevant, chars=None):
    return Judged(
        query="q",
        scores=tuple(scores),
        chars=tuple(chars or [10] * len(scores)),
        matched=tuple(frozenset(m) for m in matched),
        n_relevant=n_relevant,
    )


JUDGED = [
    # answerable: relevant item 0 at rank 1 (0.8), item 1 at rank 3 (0.5)
    J([0.8, 0.6, 0.5, 0.2], [{0}, set(), {1}, set()], 2),
    # answerable: the relevant chunk scores low (0.35)
    J([0.55, 0.35, 0.3], [set(), {0}, set()], 1),
    # unanswerable: ideally nothing admitted
    J([0.45, 0.4], [set(), set()], 0),
]


def test_metrics_at_thresholds():
    r = metrics_at(JUDGED, 0.7, k=3)
    # admitted: q1 {0.8}; q2 none; q3 none
    assert (r.precision, r.recall) == (1.0, pytest.approx(1 / 3))
    assert r.empty == pytest.approx(2 / 3) and r.empty_answerable == pytest.approx(1 / 2)
    r = metrics_at(JUDGED, 0.42, k=3)
    # admitted: q1 {0.8, 0.6, 0.5} (2 relevant), q2 {0.55} (0), q3 {0.45} (0)
    assert r.precision == pytest.approx(2 / 5) and r.recall == pytest.approx(2 / 3)
    assert r.admitted_per_query == pytest.approx(5 / 3)
    none = metrics_at(JUDGED, None, k=3)
    assert none.recall == pytest.approx(1.0) and none.empty == 0.0


def test_char_budget_counts_in_the_sweep():
    r = metrics_at([J([0.9, 0.8], [set(), {0}], 1, chars=[50, 50])], None, k=2, max_chars=60)
    assert r.recall == 0.0 and r.precision == 0.0


def test_ranking_metrics_count_each_item_once():
    # two chunks of the same relevant document: the second gains nothing
    m = ranking_metrics([J([0.9, 0.8, 0.7], [{0}, {0}, {1}], 2)], k=3)
    ideal = 1 + 1 / 1.5849625007211562
    assert m["recall@3"] == 1.0
    assert m["ndcg@3"] == pytest.approx((1 + 1 / 2) / ideal)
    assert ranking_metrics([J([0.9], [set()], 0)], k=3)["answerable_queries"] == 0


def test_objective_parse_and_choose():
    assert str(Objective.parse("recall@precision=0.8")) == "recall@precision=0.8"
    for bad in ("recall", "recall@recall=0.5", "f1@precision=2", "precision@recall=x"):
        with pytest.raises(RagsiftError):
            Objective.parse(bad)
    rep = analyse(
        JUDGED,
        TopK(k=3, threshold=None, reject_window=1, max_chars=None),
        objective=Objective.parse("f1"),
        thresholds=[i / 100 for i in range(20, 90, 5)],
    )
    best = max(r.f1 for r in rep.rows)
    assert rep.recommended.f1 == best
    strict = Objective.parse("recall@precision=0.99").choose(rep.rows)
    assert strict.precision >= 0.99
    assert Objective("precision", "recall", 1.01).choose(rep.rows) is None


def test_ties_go_to_the_middle_of_the_plateau():
    rep = analyse(
        [J([0.8, 0.1], [{0}, set()], 1)],
        TopK(k=1, threshold=None, reject_window=1, max_chars=None),
        objective=Objective(),
        thresholds=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
    )
    assert rep.recommended.threshold == 0.5  # F1 is 1.0 from 0.2 to 0.8
    json.dumps(rep.as_dict())


def test_grid_spans_the_scores():
    grid = threshold_grid(JUDGED, k=3)
    assert grid[0] <= 0.3 and grid[-1] > 0.8 and len(grid) < 80


def test_relevant_matching_and_judge():
    recs = [
        {"rowid": 1, "id": "a.md#0", "path": "a.md", "text": "x", "start": 0, "end": 100},
        {"rowid": 2, "id": "a.md#1", "path": "a.md", "text": "y", "start": 100, "end": 200},
        {"rowid": 3, "id": "b.md#0", "path": "b.md", "text": "z", "start": 0, "end": 50},
    ]
    r = build_retrieval(
        TopK(k=3),
        query="q",
        scores=[0.9, 0.5, 0.4],
        records=recs,
        dimensions=3,
        model="m",
        searched=3,
    )
    a0, a1, b0 = r.candidates
    span = Relevant(path="a.md", start=150, end=160)
    assert not span.matches(a0) and span.matches(a1) and not span.matches(b0)
    assert not Relevant(path="a.md", start=100, end=100).matches(a0)  # end-exclusive
    assert Relevant(ref="b.md").matches(b0) and Relevant(ref="a.md#1").matches(a1)
    assert Relevant(id="a.md#0").matches(a0) and Relevant(path="b.md").matches(b0)
    from ragsift.tuning import LabelledQuery

    j = judge(r, LabelledQuery("q", (span, Relevant(ref="b.md"))))
    assert j.matched == (frozenset(), frozenset({0}), frozenset({1}))


def test_load_queries(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text(
        '{"query": "a", "relevant": ["x.md", {"path": "y.md", "start": 1, "end": 5}]}'
        '\n\n{"query": "b", "relevant": []}\n',
        encoding="utf-8",
    )
    qs = load_queries(p)
    assert [q.query for q in qs] == ["a", "b"] and len(qs[0].relevant) == 2
    for bad, msg in (
        ('{"query": 1}', ":1"),
        ("nope", "not JSON"),
        ('{"query": "a", "relevant": [{"start": 1, "end": 2}]}', "path"),
        ('{"query": "a", "relevant": [{"path": "a", "start": 3}]}', "start"),
        ("", "no queries"),
    ):
        p.write_text(bad + "\n", encoding="utf-8")
        with pytest.raises(RagsiftError, match=msg):
            load_queries(p)
    with pytest.raises(RagsiftError, match="cannot read"):
        load_queries(tmp_path / "missing.jsonl")


# -- end to end: the real model on the fixture index --------------------------------------------


@pytest.fixture(scope="session")
def labelled(tmp_path_factory):
    from tests.test_query_cli import fixture_index

    index = fixture_index(tmp_path_factory)
    queries = tmp_path_factory.getbasetemp() / "labelled.jsonl"
    rows = [
        {"query": "when do honey bees swarm", "relevant": ["fixtures/beekeeping/handbook.md"]},
        {"query": "how often to feed a sourdough starter", "relevant": ["fixtures/sourdough.rst"]},
        {
            "query": "animals living in rock pools",
            "relevant": [{"path": "fixtures/tidepools.html"}],
        },
        {"query": "quantum chromodynamics lattice gauge theory", "relevant": []},
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return index, str(queries)


def test_tune_cli_recommends_a_threshold(labelled):
    from tests.conftest import run_cli

    index, queries = labelled
    proc = run_cli("tune", "--index", index, "--queries", queries, env={"COLUMNS": "120"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "threshold sweep" in out and "recommended threshold" in out
    assert "precision (P), recall (R)" in out and "relevant" in out and "irrelevant" in out
    proc = run_cli(
        "tune",
        "-i",
        index,
        "--queries",
        queries,
        "--json",
        "-k",
        "2",
        "--optimize",
        "recall@precision=0.5",
    )
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["k"] == 2 and rep["queries"] == 4 and rep["objective"] == "recall@precision=0.5"
    assert rep["recommended"]["precision"] >= 0.5
    assert rep["ranking"]["answerable_queries"] == 3
    assert rep["sweep"] and rep["distributions"]["relevant"]


def test_tune_cli_bad_queries_file_exits_2(labelled, tmp_path):
    from tests.conftest import run_cli

    index, _ = labelled
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x", "relevant": [{"start": 1}]}\n', encoding="utf-8")
    proc = run_cli("tune", "-i", index, "--queries", str(bad))
    assert proc.returncode == 2 and "bad.jsonl:1" in proc.stderr
    proc = run_cli("tune", "-i", index, "--queries", str(bad), "--optimize", "speed")
    assert proc.returncode == 2 and "--optimize" in proc.stderr


def test_tune_and_eval_share_one_definition_of_each_metric():
    """eval's threshold table and tune's sweep are the same function (ragsift.metrics): on the
    same labelled top-k lists (each relevant candidate its own item) they agree exactly,
    including the tie rule (a score equal to the threshold is admitted)."""
    from ragsift import metrics

    top = [
        [(0.8, True), (0.5, False), (0.4, True)],
        [(0.45, False), (0.3, False), (0.2, False)],
        [(0.5, True), (0.5, False), (0.1, False)],
    ]
    rows = metrics.threshold_sweep(top, [0.0, 0.4, 0.5, 0.9])
    js = [
        Judged(
            query="",
            scores=tuple(s for s, _ in q),
            chars=(0,) * 3,
            matched=tuple(frozenset({i}) if r else frozenset() for i, (_, r) in enumerate(q)),
            n_relevant=sum(r for _, r in q),
        )
        for q in top
    ]
    for row in rows:
        t = metrics_at(js, row["threshold"], k=3)
        assert (row["precision"], row["recall"], row["f1"], row["empty"], row["answered"]) == (
            round(t.precision, 4),
            round(t.recall, 4),
            round(t.f1, 4),
            round(t.empty, 4),
            round(t.answered, 4),
        )
    at_half = rows[2]  # 0.5 admits 0.8 and both 0.5 scores (ties admitted): 2 of 4 relevant
    assert (at_half["precision"], at_half["recall"], at_half["empty"]) == (0.5, 0.6667, 0.3333)


def test_after_tune_save_the_nothing_admitted_hint_no_longer_says_to_run_it(labelled, tmp_path):
    """Issue 41 item 6: after `tune --save`, a query that admits nothing still said "or tune a
    threshold on your own questions and keep it: `ragsift tune --save`", which is what was
    just done. Now it says the threshold in force was tuned, and how to change it."""
    import shutil

    from ragsift.cli._common import flag_name
    from ragsift.retrieval.hints import TUNE_NOTE, TUNED_NOTE
    from tests.conftest import run_cli

    # the notes name an action; the CLI words it as the command line
    tune_note, tuned_note = TUNE_NOTE.worded(flag_name)[2:], TUNED_NOTE.worded(flag_name)[2:40]
    assert (
        tune_note == "or tune a threshold on your own questions and keep it: `ragsift tune --save`"
    )

    index, queries = labelled
    copy = tmp_path / "tuned.db"
    shutil.copy(index, copy)
    # a weak match: its best candidate (~0.10) is under the threshold both before (0.17) and
    # after tuning (the middle of the plateau from 0.12 up), above where off-topic ones score
    off_topic = "winter preparations"
    before = run_cli("query", off_topic, "-i", str(copy))
    assert before.returncode == 1 and tune_note in before.stderr, before.stderr
    saved = run_cli("tune", "-i", str(copy), "--queries", queries, "--save")
    assert saved.returncode == 0, saved.stderr
    for command in ("query", "explain"):
        proc = run_cli(command, off_topic, "-i", str(copy), env={"COLUMNS": "200"})
        assert proc.returncode == 1, proc.stderr
        said = proc.stderr + proc.stdout
        assert "nothing cleared the threshold" in said, said
        assert tune_note not in said and tuned_note in said, said
    record = json.loads(run_cli("explain", off_topic, "-i", str(copy), "--json").stdout)
    assert record["threshold_from"] == "tuned"
    assert tuned_note in record["hints"][0] and tune_note not in record["hints"][0]


def test_tune_at_80_columns_shows_every_column_header_whole(labelled):
    """Issue 41 item 6: at 80 columns the headers were cut ("nothing (answerabl…",
    "admitted/q…") and the ranking line wrapped inside a phrase ("over 3" / "answerable
    queries")."""
    from rich.cells import cell_len

    from tests.conftest import run_cli

    index, queries = labelled
    proc = run_cli("tune", "--index", index, "--queries", queries, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    top = lines[: next(i for i, line in enumerate(lines) if line.startswith("┡"))]
    header = " ".join(top)
    for words in ("threshold", "precision", "recall", "F1", "nothing", "(answerable)"):
        assert words in header, top
    assert "admitted" in header and "per query" in header and "…" not in header, top
    assert any("over 3 answerable queries" in line for line in lines[:4]), lines[:4]
    table = lines[: next(i for i, line in enumerate(lines) if line.startswith("└")) + 1]
    assert all(cell_len(line) <= 80 for line in table), table
