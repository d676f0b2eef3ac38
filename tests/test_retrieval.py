"""Retrieval unit tests: the TopK admission rule, the record, exact search order, attribution.

These use hand-made score lists and matrices on purpose: the strategy is pure arithmetic over
scores, and exact search is arithmetic over a matrix, so a model would only add noise and
seconds. The CLI tests (tests/test_query_cli.py) run the real model on a real index.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records import retrieval as build_retrieval

from ragsift.embedders.evidence import EVIDENCE_KIND
from ragsift.errors import RagsiftError
from ragsift.index.backend import ChunkRecord
from ragsift.index.dense import DenseMatrix, top_order
from ragsift.retrieval import attribution as attr
from ragsift.retrieval.request import SearchRequest
from ragsift.retrieval.search import Searcher
from ragsift.retrieval.topk import (
    BELOW_THRESHOLD,
    OVER_CHAR_BUDGET,
    OVER_K,
    TopK,
    admission,
)

# -- admission ------------------------------------------------------------------------------

scores_st = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=0, max_size=40)


@st.composite
def ranked(draw):
    scores = sorted(draw(scores_st), reverse=True)
    chars = draw(st.lists(st.integers(0, 400), min_size=len(scores), max_size=len(scores)))
    k = draw(st.integers(1, 8))
    threshold = draw(st.one_of(st.none(), st.floats(-1, 1, allow_nan=False)))
    max_chars = draw(st.one_of(st.none(), st.integers(1, 1500)))
    return scores, chars, k, threshold, max_chars


@settings(max_examples=400, deadline=None)
@given(ranked(), st.integers(0, 40), st.integers(0, 40))
def test_reject_window_never_changes_admission(case, w1, w2):
    scores, chars, k, threshold, max_chars = case

    def admitted(window):
        strat = TopK(k=k, threshold=threshold, reject_window=window, max_chars=max_chars)
        n = strat.fetch
        reasons = strat.decide(scores[:n], chars[:n])
        return [i for i, r in enumerate(reasons) if r is None]

    full = [
        i
        for i, r in enumerate(
            admission(scores, chars, k=k, threshold=threshold, max_chars=max_chars)
        )
        if r is None
    ]
    assert admitted(w1) == admitted(w2) == full


@settings(max_examples=300, deadline=None)
@given(scores_st, st.integers(1, 6), st.floats(-1, 1), st.integers(0, 30), st.integers(0, 30))
def test_window_independence_holds_in_any_order(scores, k, threshold, w1, w2):
    # a fused (hybrid) order is not sorted by the score the floor applies to
    chars = [10] * len(scores)

    def admitted(window):
        n = k + window
        return [
            i
            for i, r in enumerate(admission(scores[:n], chars[:n], k=k, threshold=threshold))
            if r is None
        ]

    assert admitted(w1) == admitted(w2)
    assert all(scores[i] >= threshold for i in admitted(w1))


@settings(max_examples=400, deadline=None)
@given(ranked())
def test_admission_invariants(case):
    scores, chars, k, threshold, max_chars = case
    reasons = admission(scores, chars, k=k, threshold=threshold, max_chars=max_chars)
    adm = [i for i, r in enumerate(reasons) if r is None]
    # a prefix of at most k, nothing below the floor, within the character budget
    assert adm == list(range(len(adm)))
    assert len(adm) <= k
    if threshold is not None:
        assert all(scores[i] >= threshold for i in adm)
        if scores and scores[0] < threshold:
            assert adm == []
        # every candidate below the floor says so
        assert all(reasons[i] == BELOW_THRESHOLD for i, s in enumerate(scores) if s < threshold)
    if max_chars is not None:
        assert sum(chars[i] for i in adm) <= max_chars
    assert all(r in (None, BELOW_THRESHOLD, OVER_K, OVER_CHAR_BUDGET) for r in reasons)


def test_reasons_are_specific():
    scores = [0.9, 0.8, 0.7, 0.6, 0.3]
    assert admission(scores, [10] * 5, k=2, threshold=0.5) == [
        None,
        None,
        OVER_K,
        OVER_K,
        BELOW_THRESHOLD,
    ]
    # the budget stops admission at the first chunk that does not fit; no skipping ahead
    assert admission(scores, [10, 50, 5, 5, 5], k=4, threshold=0.5, max_chars=30) == [
        None,
        OVER_CHAR_BUDGET,
        OVER_CHAR_BUDGET,
        OVER_CHAR_BUDGET,
        BELOW_THRESHOLD,
    ]
    # no fallback to a weak match
    assert admission([0.58, 0.55], [1, 1], k=3, threshold=0.7) == [BELOW_THRESHOLD] * 2
    assert admission([0.58, 0.55], [1, 1], k=3, threshold=None) == [None, None]
    assert admission([float("nan")], [1], k=3, threshold=0.1) == [BELOW_THRESHOLD]


@pytest.mark.parametrize(
    "kwargs", [{"k": 0}, {"reject_window": -1}, {"max_chars": 0}, {"threshold": float("inf")}]
)
def test_topk_rejects_bad_options(kwargs):
    with pytest.raises(RagsiftError):
        TopK(**kwargs)


def _records(n, text="x" * 10):
    return [
        {
            "rowid": i,
            "id": f"doc{i % 3}.md#{i}",
            "path": f"doc{i % 3}.md",
            "text": text,
            "start": 0,
            "end": len(text),
            "line_start": i + 1,
            "line_end": i + 2,
            "headings": ["A", "B"],
            "page": None,
            "truncated": 7 if i == 0 else 0,
        }
        for i in range(n)
    ]


def test_record_carries_hybrid_evidence():
    rec = dict(_records(1)[0], dense_score=0.41, lexical_score=7.5, lexical_rank=1, fused_rank=1)
    r = build_retrieval(
        TopK(k=1, threshold=0.4),
        query="q",
        scores=[0.41],
        records=[rec],
        dimensions=4,
        model="m",
        searched=1,
        mode="hybrid",
    )
    c = r.candidates[0].as_dict()
    assert (c["dense_score"], c["lexical_score"], c["lexical_rank"], c["fused_rank"]) == (
        0.41,
        7.5,
        1,
        1,
    )
    assert r.as_dict()["mode"] == "hybrid"


def test_hint_names_the_best_admissible_cosine_in_fused_order():
    # hybrid order: a lexical-only hit with a low cosine can come first; the hint must quote
    # the best cosine among the k admissible positions, and its suggestion must admit it
    from ragsift.cli._common import flag_name
    from ragsift.retrieval.topk import outcome_hint

    r = build_retrieval(
        TopK(k=3, threshold=0.6),
        query="q",
        scores=[-0.1, 0.45, 0.3, 0.58],
        records=_records(4),
        dimensions=4,
        model="m",
        searched=4,
        mode="hybrid",
    )
    assert not r.admitted
    assert r.best is r.candidates[1] and r.best.score == pytest.approx(0.45)
    hint = outcome_hint(r)
    assert hint is not None and hint.startswith(
        "nothing cleared the threshold 0.60: best candidate 0.450"
    )
    assert "`threshold=0.45` would admit 1" in hint  # the API's words (the CLI's: below)
    assert "`--threshold 0.45` would admit 1" in outcome_hint(r, flag_name)


def test_record_as_dict_is_json_and_complete():
    r = build_retrieval(
        TopK(k=2, threshold=0.5, reject_window=2),
        query="q",
        scores=[0.9, 0.6, 0.55, 0.2, 0.1],
        records=_records(5),
        dimensions=4,
        model="m",
        searched=5,
    )
    d = json.loads(json.dumps(r.as_dict()))
    assert (d["considered"], d["admitted"], d["rejected"]) == (4, 2, 2)
    assert d["candidates_complete"] is False and d["corpus_empty"] is False
    assert d["strategy"] == "topk" and d["k"] == 2 and d["threshold"] == 0.5
    assert len(d["query_hash"]) == 16
    c0, c2, c3 = d["candidates"][0], d["candidates"][2], d["candidates"][3]
    assert c0["admitted"] and c0["rank"] == 1 and c0["reason"] is None and c0["truncated"] == 7
    assert c2["reason"] == OVER_K and c3["reason"] == BELOW_THRESHOLD
    for key in (
        "id",
        "score",
        "rank",
        "admitted",
        "reason",
        "path",
        "page",
        "headings",
        "line_start",
        "line_end",
        "dense_score",
        "lexical_score",
        "lexical_rank",
        "fused_rank",
    ):
        assert key in c0
    assert r.candidates[0].location == "doc0.md:1-2"
    assert r.candidates[0].margin(0.5) == pytest.approx(0.4)
    small = build_retrieval(
        TopK(k=2, reject_window=5),
        query="q",
        scores=[0.3],
        records=_records(1),
        dimensions=4,
        model="m",
        searched=1,
    )
    assert small.candidates_complete is True


# -- exact search -------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-5, 5), min_size=1, max_size=60), st.integers(1, 70), st.integers(0, 20)
)
def test_top_order_is_a_prefix_of_the_total_order(values, n, extra):
    # small integers force many ties: argpartition must not decide them
    scores = np.array(values, dtype=np.float32)
    rowids = np.arange(len(values), dtype=np.int64)[::-1].copy()
    expected = sorted(range(len(values)), key=lambda i: (-values[i], rowids[i]))
    got = top_order(scores, n, rowids).tolist()
    assert got == expected[:n]
    assert top_order(scores, n + extra, rowids).tolist()[: len(got)] == got


class FakeStore:
    """An in-memory stand-in for IndexStore with a hand-made matrix: the backend contract's
    read side (dense candidates through ``ragsift.index.dense``, no lexical side)."""

    def __init__(self, matrix, paths):
        self.matrix = np.asarray(matrix, dtype=np.float32)
        self.rows = {
            100 + i: ChunkRecord(
                rowid=100 + i,
                path=p,
                index=i,
                text=f"chunk {i}",
                start=0,
                end=7,
                line_start=1,
                line_end=1,
            )
            for i, p in enumerate(paths)
        }
        rowids = np.array(sorted(self.rows), dtype=np.int64)
        self.dense = DenseMatrix(
            rowids, self.matrix, lambda ps: [r for r, rec in self.rows.items() if rec.path in ps]
        )

    def settings(self):
        return {"model": "fake", "dimensions": self.matrix.shape[1] if self.matrix.size else 3}

    def load(self):
        pass

    def count(self, paths=None):
        return sum(1 for r in self.rows.values() if paths is None or r.path in paths)

    def dense_candidates(self, qvecs, n, paths=None):
        return self.dense.candidates(qvecs, n, paths)

    def cosines(self, qvec, rowids):
        return self.dense.cosines(qvec, rowids)

    def lexical_candidates(self, text, n, paths=None):
        return []

    def unit_evidence(self, rowids):
        return {}  # a hand-made matrix has no units: the engine ranks by the aggregate

    def page_titles(self, rowids):
        return {}  # hand-made rows: no headings, no title evidence

    def chunk_records(self, rowids):
        return [self.rows[r] for r in rowids if r in self.rows]

    def paths(self):
        return sorted({r.path for r in self.rows.values()})


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_searcher_exact_order_filter_and_nan():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((50, 8)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    m[7] = np.nan  # a broken vector never ranks
    paths = ["docs/a.md" if i % 2 else "notes/b.txt" for i in range(50)]
    s = Searcher(FakeStore(m, paths))
    q = _unit(rng.standard_normal(8))
    dense = SearchRequest(k=3, threshold=None, reject_window=5, mode="dense")
    r = s.retrieve("q", dense, qvec=q)
    ref = np.nan_to_num(m @ q, nan=-np.inf)
    expected = [100 + i for i in np.argsort(-ref, kind="stable")[:8]]
    assert [c.rowid for c in r.candidates] == expected
    assert [c.dense_score for c in r.candidates] == pytest.approx(sorted(ref, reverse=True)[:8])
    assert [c.score for c in r.candidates] == sorted((c.score for c in r.candidates), reverse=True)
    assert r.searched == 50 and len(r.admitted) == 3
    f = s.retrieve("q", replace(dense, reject_window=40, path="docs/*"), qvec=q)
    assert f.searched == 25 and all(c.path.startswith("docs/") for c in f.candidates)
    assert f.candidates_complete and len(f.candidates) == 25
    (cos,) = s.store.cosines(q, [f.candidates[0].rowid])
    assert cos == f.candidates[0].dense_score  # the same kernel: bit-identical
    none = s.retrieve("q", SearchRequest(threshold=None, mode="dense", path="nowhere/*"), qvec=q)
    assert none.searched == 0 and none.candidates == () and not none.corpus_empty


def test_searcher_batch_equals_single():
    rng = np.random.default_rng(2)
    m = rng.standard_normal((40, 6)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    s = Searcher(FakeStore(m, ["a.md"] * 40))
    qs = rng.standard_normal((5, 6)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    strat = SearchRequest(k=2, threshold=0.1, reject_window=3, mode="dense")
    batch = s.retrieve_many([str(i) for i in range(5)], strat, qvecs=qs)
    for i in range(5):
        one = s.retrieve(str(i), strat, qvec=qs[i])
        assert [c.rowid for c in one.candidates] == [c.rowid for c in batch[i].candidates]


def test_searcher_empty_index():
    s = Searcher(FakeStore(np.zeros((0, 3)), []))
    r = s.retrieve(
        "q", SearchRequest(threshold=None, mode="dense"), qvec=np.ones(3, dtype=np.float32)
    )
    assert r.corpus_empty and r.candidates == () and r.as_dict()["considered"] == 0


# -- attribution ----------------------------------------------------------------------------


class UnitsStore:
    """The one backend call attribution makes (``unit_evidence``), over units encoded from
    hand-made vectors: no model is needed to test how stored units are ranked, and the test
    must show that attribution embeds nothing (there is no embedder here at all)."""

    def __init__(self, blobs):
        self.blobs = blobs
        self.asked = []

    def unit_evidence(self, rowids):
        self.asked.append(list(rowids))
        return {r: self.blobs[r] for r in rowids if r in self.blobs}


def _cand(text, path="a.md", cid="a.md#0", rowid=1):
    return build_retrieval(
        TopK(k=1),
        query="q",
        scores=[0.9],
        records=[{"rowid": rowid, "id": cid, "path": path, "text": text}],
        dimensions=4,
        model="test",
        searched=1,
    ).candidates[0]


def test_attribution_ranks_the_stored_units_and_shares_sum_to_one():
    from ragsift.embedders import evidence

    text = "Cats sleep all day. Rockets reach orbit quickly. Dogs bark at night."
    bounds = [(0, 19), (20, 48), (49, 68)]
    vecs = np.array([[1, 0, 0, 0], [0.6, 0.8, 0, 0], [0, 0, 1, 0]], np.float32)
    store = UnitsStore({1: evidence.encode(bounds, vecs)})
    [a] = attr.attribute(store, np.array([0, 1, 0, 0], np.float32), [_cand(text)], top=3)
    assert a.total_units == 3 and a.best.text == "Rockets reach orbit quickly."
    assert text[a.best.start : a.best.end] == a.best.text
    assert a.best.score == pytest.approx(0.8, abs=0.01)
    assert [u.rank for u in a.units] == [1, 2, 3]
    assert sum(u.share for u in a.units) == pytest.approx(1.0)
    assert a.method == attr.METHOD and store.asked == [[1]]


def test_attribution_of_a_chunk_without_units_is_empty():
    store = UnitsStore({})
    [a] = attr.attribute(store, np.ones(4, np.float32), [_cand("anything")])
    assert a.units == () and a.total_units == 0 and a.best is None


def test_shares_math():
    assert attr.shares([0.5, 0.25, -0.3]) == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert attr.shares([-0.1, 0.0]) == [0.0, 0.0]
    assert attr.shares([]) == []
    assert not any(math.isnan(x) for x in attr.shares([0.0]))


def test_parallel_scan_equals_single(monkeypatch):
    from ragsift.index import dense

    rng = np.random.default_rng(3)
    m = rng.standard_normal((1001, 16)).astype(np.float32)
    q = rng.standard_normal(16).astype(np.float32)
    single = dense.dot_rows(m, q)
    monkeypatch.setattr(dense, "PARALLEL_MIN_ROWS", 10)
    monkeypatch.setattr(dense, "_cores", lambda: 3)
    assert np.allclose(dense.dot_rows(m, q), single, atol=1e-5)
    assert np.allclose(single, m @ q, atol=1e-5)


def test_einsum_fallback_equals_vecdot(monkeypatch):
    from ragsift.index import dense

    rng = np.random.default_rng(4)
    m = rng.standard_normal((300, 8)).astype(np.float32)
    q = rng.standard_normal(8).astype(np.float32)
    fast = dense.dot_rows(m, q)
    monkeypatch.delattr(np, "vecdot", raising=False)
    assert np.allclose(dense.dot_rows(m, q), fast, atol=1e-5)


def test_model_mismatch_is_refused_and_preload_raises_on_use(monkeypatch):
    import ragsift.embedders
    from ragsift.retrieval import search

    class Other:
        fingerprint = "other/384/abc"
        name = "other"

    monkeypatch.setattr(
        ragsift.embedders, "load_embedder", lambda model_dir=None, options=None: Other()
    )
    with pytest.raises(RagsiftError, match="Pass model with the folder") as err:
        search.embedder_for(
            {"model": "minilm", "model_fingerprint": "minilm/384/def", "evidence": EVIDENCE_KIND}
        )
    # the way out in the CLI's words (issue 39, item 2: the API's message names the parameter)
    from ragsift.cli._common import flag_name

    assert "Pass --model with the folder" in err.value.worded(flag_name)
    assert (
        search.embedder_for({"model_fingerprint": "other/384/abc", "evidence": EVIDENCE_KIND}).name
        == "other"
    )

    store = FakeStore(np.eye(3, dtype=np.float32), ["a.md"] * 3)
    store.settings = lambda: {"model_fingerprint": "minilm/384/def", "evidence": EVIDENCE_KIND}
    s = Searcher(store, preload_embedder=True)  # the failure surfaces when the model is used
    with pytest.raises(RagsiftError, match="was built with model"):
        s.embed_queries(["q"])


def test_threshold_argument_is_typed():
    """The engine takes "auto", None or a number in [0, 1]; not a bool, not text (issue 30)."""
    from ragsift.retrieval.threshold import check_threshold

    assert check_threshold("auto") == "auto" and check_threshold(None) is None
    assert check_threshold(0) == 0.0 and check_threshold(0.42) == 0.42
    for bad in (True, False, "0.5", "none", 1.5, -0.1, float("nan"), [0.3]):
        with pytest.raises(RagsiftError) as err:
            check_threshold(bad)
        assert err.value.param == "threshold"


def test_threshold_flag_parsing():
    from ragsift.cli.query import threshold_arg

    assert threshold_arg(None) == threshold_arg("auto") == threshold_arg(" AUTO ") == "auto"
    assert threshold_arg("none") is threshold_arg("OFF") is None
    assert threshold_arg("0.42") == 0.42
    with pytest.raises(RagsiftError, match="--threshold must be a number, 'none' or 'auto'"):
        threshold_arg("high")
