"""The one relevance score (issue 21): it orders the candidates and holds the threshold.

Property tests drive the engine's own ordering (``engine.order_candidates``, the hybrid/lexical path;
``relevance.score_array``, every mode) with arbitrary evidence and check the order/gate
invariants; CLI tests on the real fixture index (real model) check the hint's exactness, the
migration of a threshold saved by an older release, and that `explain` shows the evidence."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.test_query_cli import fixture_index

cosines = st.floats(-1.0, 1.0, allow_nan=False)
bm25s = st.floats(0.0, 50.0, allow_nan=False, exclude_min=True)


@st.composite
def candidate_lists(draw):
    """A dense list (cosine descending) and a lexical list (BM25 descending) over overlapping
    rowids, the cosine of every lexical-only one, and a ceiling above every BM25."""
    ids = draw(st.lists(st.integers(1, 60), min_size=1, max_size=25, unique=True))
    cos = {r: draw(cosines) for r in ids}
    dense_ids = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
    lex_ids = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
    if not dense_ids and not lex_ids:
        dense_ids = ids[:1]
    dense = sorted(((r, cos[r]) for r in dense_ids), key=lambda x: (-x[1], x[0]))
    lexical = sorted(((r, draw(bm25s)) for r in lex_ids), key=lambda x: (-x[1], x[0]))
    ceiling = max([s for _, s in lexical], default=0.0) * draw(st.floats(1.0, 3.0))
    return dense, lexical, {r: cos[r] for r in ids}, ceiling


@settings(max_examples=150, deadline=None)
@given(
    candidate_lists(),
    st.sampled_from(["hybrid", "lexical"]),
    st.integers(1, 6),
    st.none() | st.floats(0.0, 1.0),
    st.none() | st.integers(1, 400),
    st.text("ab ", min_size=1, max_size=12),
    st.randoms(use_true_random=False),
)
def test_order_and_gate_agree_for_any_evidence(lists, mode, k, threshold, max_chars, query, rnd):
    """Whatever the evidence: the engine's order is by score; no rejected candidate outscores
    an admitted one except ``over-k``/``over-char-budget``, and an ``over-k`` one never does;
    every below-threshold candidate scores under the threshold and every admitted one at or
    above it."""
    from ragsift.retrieval.engine import Evidence, order_candidates
    from ragsift.retrieval.hybrid import Fusion
    from ragsift.retrieval.topk import BELOW_THRESHOLD, OVER_K, admission

    dense, lexical, cos, ceiling = lists
    ranked = order_candidates(mode, query, Evidence(dense, lexical, cos, ceiling, {}), 50, Fusion())
    scores = [c.score for c in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    chars = [rnd.randint(1, 200) for _ in ranked]
    reasons = admission(scores, chars, k=k, threshold=threshold, max_chars=max_chars)
    admitted = [s for s, r in zip(scores, reasons) if r is None]
    assert len(admitted) <= k
    for s, r in zip(scores, reasons):
        if r is None:
            assert threshold is None or s >= threshold
        elif r == BELOW_THRESHOLD:
            assert threshold is not None and s < threshold
            assert all(s <= a for a in admitted)
        elif r == OVER_K:
            assert all(s <= a for a in admitted)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(cosines, st.floats(0.0, 1.0)), min_size=1, max_size=30),
    st.sampled_from(["dense", "lexical", "hybrid"]),
    st.integers(1, 40),
)
def test_each_mode_keeps_its_own_sides_order(evidence, mode, words):
    """Within one query the score rises with the cosine (dense), with the BM25 share
    (lexical), and with both together (hybrid): a mode never reorders its own side's list."""
    import numpy as np

    from ragsift.retrieval.relevance import score_array

    cos = np.array([c for c, _ in evidence])
    share = np.array([s for _, s in evidence])
    p = score_array(mode, cos, share, words)
    key = cos if mode == "dense" else share if mode == "lexical" else None
    for i in range(len(evidence)):
        for j in range(len(evidence)):
            if key is not None and key[i] > key[j]:
                assert p[i] >= p[j]
            if key is None and cos[i] >= cos[j] and share[i] >= share[j]:
                assert p[i] >= p[j]


def test_lexical_ceiling_bounds_every_bm25(index):
    """The store's BM25 ceiling is above every chunk's BM25 for the query (so the share is in
    [0, 1)), counts a word the index lacks, and is the same from the postings and from the
    FTS5 scan."""
    from ragsift.index import lexical, open_index
    from ragsift.index.store import query_words

    with open_index(index, "r") as store:
        for q in ("honey bees swarm", "sourdough starter feeding flour", "bees zzqxv"):
            hits = store.lexical_candidates(q, 100)
            ceiling = store.lexical_ceiling(q)
            assert hits and all(0 < s < ceiling for _, s in hits)
            out: dict = {}
            lexical.scan(store.db, query_words(q), 5, None, out)
            assert math.isclose(out["ceiling"], ceiling, rel_tol=1e-9)
        assert store.lexical_ceiling("bees zzqxv") > store.lexical_ceiling("bees")
        assert store.lexical_ceiling("!!!") == 0.0


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


HINT = re.compile(r"best candidate (\d\.\d{3}) at .*; `--threshold (\d\.\d\d)` would admit (\d+)")


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_no_hit_hint_is_exact_for_the_score_shown(index, mode):
    """When nothing clears the floor, the hint names the best candidate's score and a
    threshold; that threshold admits exactly the number the hint says, and the best hit
    admitted then has the score the hint showed."""
    q = "when do honey bees swarm"
    proc = run_cli("query", q, "-i", index, "--mode", mode, "--threshold", "0.99")
    assert proc.returncode == 1, proc.stderr
    m = HINT.search(proc.stderr)
    assert m, proc.stderr
    shown, suggestion, n = float(m.group(1)), m.group(2), int(m.group(3))
    again = run_cli("query", q, "-i", index, "--mode", mode, "--threshold", suggestion, "--json")
    assert again.returncode == 0, again.stderr
    hits = [json.loads(line) for line in again.stdout.splitlines()]
    assert len(hits) == n >= 1
    assert round(max(h["score"] for h in hits), 3) == shown
    assert all(h["score"] >= float(suggestion) for h in hits)


def test_threshold_saved_by_an_older_release_is_ignored_with_one_warning(index, tmp_path):
    """A `tune --save` threshold from ragsift < 0.2 (a cosine, no "score" kind) is not applied
    to the relevance score: one warning line asks to re-tune and the measured default
    applies; a threshold saved for this score is applied as before."""
    from ragsift.index import open_index
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS, SCORE_KIND

    copy = tmp_path / "old.db"
    shutil.copy(index, copy)
    old = {"value": 0.99, "queries": 4, "k": 3, "mode": "hybrid", "objective": "f1"}
    with open_index(str(copy), "w") as store:
        store.set_settings(tuned_threshold=old)
    proc = run_cli("explain", "when do honey bees swarm", "-i", str(copy), "--json")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "re-run" in line]
    assert len(warnings) == 1 and "ragsift tune" in warnings[0], proc.stderr
    record = json.loads(proc.stdout)
    assert record["threshold"] == DEFAULT_THRESHOLDS["hybrid"]
    assert record["threshold_source"] == "model default"

    # one tuned on an earlier relevance score (ragsift 0.3-0.5: relevance-2) is ignored too
    with open_index(str(copy), "w") as store:
        store.set_settings(tuned_threshold={**old, "score": "relevance-2"})
    proc = run_cli("explain", "when do honey bees swarm", "-i", str(copy), "--json")
    warnings = [line for line in proc.stderr.splitlines() if "re-run" in line]
    assert len(warnings) == 1 and "relevance-2" in warnings[0], proc.stderr
    assert json.loads(proc.stdout)["threshold"] == DEFAULT_THRESHOLDS["hybrid"]

    with open_index(str(copy), "w") as store:
        store.set_settings(tuned_threshold={**old, "value": 0.05, "score": SCORE_KIND})
    proc = run_cli("explain", "when do honey bees swarm", "-i", str(copy), "--json")
    assert proc.returncode == 0 and "re-run" not in proc.stderr, proc.stderr
    record = json.loads(proc.stdout)
    assert record["threshold"] == 0.05 and record["threshold_source"] == "tuned"


def test_explain_shows_the_evidence_of_each_score(index):
    """`explain --json` carries, for every candidate, the score and what it came from (the
    cosine, the BM25 and its share of the ceiling, each side's rank); the table shows them."""
    proc = run_cli("explain", "when do honey bees swarm", "-i", index, "--json")
    assert proc.returncode == 0, proc.stderr
    cands = json.loads(proc.stdout)["candidates"]
    assert [c["score"] for c in cands] == sorted((c["score"] for c in cands), reverse=True)
    matched = [c for c in cands if c["lexical_rank"] is not None]
    assert matched and all(0 < c["lexical_share"] < 1 and c["lexical_score"] > 0 for c in matched)
    assert all(c["dense_score"] is not None for c in cands)
    assert any(c["dense_rank"] is not None for c in cands)
    best = cands[0]
    text = run_cli("explain", "when do honey bees swarm", "-i", index, env={"COLUMNS": "80"}).stdout
    assert f"cos {best['dense_score']:.2f}" in text
    assert f"unit {best['unit_score']:.2f} · cos" in text  # the best unit beside the aggregate
    assert f"lex {best['lexical_share']:.2f} #{best['lexical_rank']}" in text
    wide = run_cli(
        "explain", "when do honey bees swarm", "-i", index, env={"COLUMNS": "160"}
    ).stdout
    assert "unit · cos" in wide and "lexical" in wide
    assert f"{best['unit_score']:.2f} · {best['dense_score']:.2f}" in wide


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_python_api_orders_and_gates_on_the_modes_score(index, mode):
    """`Index.query` ranks by the mode's relevance score, applies the mode's measured default
    to it, and `Index.threshold(mode=)` names the same value."""
    import ragsift.api as rs
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS

    with rs.open_index(index) as ix:
        assert ix.threshold(mode=mode).value == DEFAULT_THRESHOLDS[mode]
        r = ix.query("when do honey bees swarm", mode=mode, reject_window=20)
        assert r.threshold == DEFAULT_THRESHOLDS[mode] and r.mode == mode
        scores = [c.score for c in r.candidates]
        assert scores == sorted(scores, reverse=True)
        assert all(c.score >= r.threshold for c in r.admitted)
        assert all(c.reason != "below-threshold" or c.score < r.threshold for c in r.rejected)
        assert all(c.dense_score is not None for c in r.candidates)


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
@pytest.mark.parametrize("threshold", ["none", "0", "0.05"])
def test_explain_json_never_has_a_rejected_row_above_an_admitted_one(index, mode, threshold):
    """On the real record: no over-k (or below-threshold) row outscores an admitted hit, and
    admitted hits are the top of the order."""
    proc = run_cli(
        "explain",
        "when do honey bees swarm",
        "-i",
        index,
        "--json",
        "--mode",
        mode,
        "--threshold",
        threshold,
        "-k",
        "2",
    )
    assert proc.returncode == 0, proc.stderr
    cands = json.loads(proc.stdout)["candidates"]
    admitted = [c["score"] for c in cands if c["admitted"]]
    assert admitted and [c["admitted"] for c in cands[: len(admitted)]] == [True] * len(admitted)
    for c in cands:
        if c["reason"] in ("over-k", "below-threshold"):
            assert c["score"] <= min(admitted), c
