"""Hybrid retrieval: fusion arithmetic (pure, hand-computed answers) and, on a real index, the
FTS5 side kept in step with the chunks and lexical-only hits identifiable as such."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from ragsift.retrieval.engine import rank
from ragsift.retrieval.hybrid import (
    FusedCandidate,
    Fusion,
    convex_scores,
    fuse,
    normalize,
    rrf_scores,
)

# ---- fusion math: pure arithmetic, answers computed by hand -------------------------------


def test_rrf_sums_reciprocal_ranks():
    fused = rrf_scores([["a", "b", "c"], ["c", "a"]], rrf_k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["a"] > fused["c"] > fused["b"]


def test_rrf_weights_and_k_zero():
    fused = rrf_scores([["a"], ["b"]], rrf_k=0, weights=[2.0, 1.0])
    assert fused == {"a": 2.0, "b": 1.0}
    with pytest.raises(ValueError):
        rrf_scores([["a"]], weights=[1.0, 2.0])


def test_minmax_and_tmm_normalisation():
    assert normalize({"a": 0.2, "b": 0.6, "c": 0.4}) == pytest.approx(
        {"a": 0.0, "b": 1.0, "c": 0.5}
    )
    # tmm: from the theoretical minimum (-1 for a cosine) to the observed maximum
    assert normalize({"a": 0.0, "b": 1.0}, "tmm", -1.0) == pytest.approx({"a": 0.5, "b": 1.0})
    assert normalize({"a": 3.0, "b": 3.0}) == {"a": 1.0, "b": 1.0}
    assert normalize({}) == {}


def test_convex_combination_counts_a_missing_side_as_zero():
    fused = convex_scores({"a": 0.9, "b": 0.5}, {"b": 10.0, "c": 2.0}, alpha=0.25)
    # dense minmax: a=1, b=0; lexical minmax: b=1, c=0
    assert fused["a"] == pytest.approx(0.25 * 1.0)
    assert fused["b"] == pytest.approx(0.75 * 1.0)
    assert fused["c"] == pytest.approx(0.0)
    assert convex_scores({"a": 1.0}, {"b": 1.0}, alpha=1.0) == {"a": 1.0, "b": 0.0}
    with pytest.raises(ValueError):
        convex_scores({}, {}, alpha=1.5)


def test_fuse_rrf_marks_sources_and_keeps_cosine_of_lexical_only():
    dense = [(1, 0.80), (2, 0.70), (3, 0.60)]
    lexical = [(4, 9.0), (2, 5.0)]  # BM25, larger is better (the backend contract)
    cosines = {1: 0.80, 2: 0.70, 3: 0.60, 4: 0.15}
    out = fuse(dense, lexical, Fusion(fusion="rrf", rrf_k=60), dense_score_of=cosines.get)
    by_id = {c.rowid: c for c in out}
    assert [c.rowid for c in out] == [2, 1, 4, 3]  # 2 is on both sides
    assert [c.fused_rank for c in out] == [1, 2, 3, 4]
    assert by_id[2].fused_score == pytest.approx(1 / 62 + 1 / 62)
    assert by_id[2].source == "both" and by_id[2].lexical_rank == 2
    assert by_id[4].lexical_only and by_id[4].source == "lexical"
    assert by_id[4].dense_score == pytest.approx(0.15)  # a lexical-only hit shows its cosine
    assert by_id[4].lexical_score == pytest.approx(9.0) and by_id[4].lexical_rank == 1
    assert by_id[3].source == "dense" and by_id[3].lexical_score is None
    # 1 and 4 tie in RRF (1/61 each): the cosine breaks the tie
    assert by_id[1].fused_score == pytest.approx(by_id[4].fused_score)


def test_fuse_convex_uses_real_cosine_for_lexical_only():
    dense = [(1, 0.9), (2, 0.5)]
    lexical = [(3, 4.0), (2, 2.0)]
    out = fuse(dense, lexical, Fusion(fusion="convex", alpha=0.5), dense_score_of={3: 0.7}.get)
    by_id = {c.rowid: c for c in out}
    # dense minmax over {0.9, 0.5, 0.7}: 1, 0, .5; lexical minmax over {4, 2}: 3->1, 2->0
    assert by_id[1].fused_score == pytest.approx(0.5)
    assert by_id[2].fused_score == pytest.approx(0.0)
    assert by_id[3].fused_score == pytest.approx(0.5 * 0.5 + 0.5)
    assert out[0].rowid == 3


def test_fusion_rejects_unknown_settings():
    with pytest.raises(ValueError):
        Fusion(fusion="max")
    with pytest.raises(ValueError):
        Fusion(alpha=1.5)


def test_fusion_is_the_only_home_of_the_defaults():
    import inspect

    from ragsift.evaluation.config import EvalConfig
    from ragsift.retrieval import hybrid

    f = Fusion()
    assert (f.fusion, f.alpha, f.norm, f.rrf_k, f.depth) == ("relevance", 0.6, "minmax", 60, 1000)
    assert inspect.signature(hybrid.rrf_scores).parameters["rrf_k"].default == f.rrf_k
    assert inspect.signature(hybrid.fuse).parameters["fusion"].default == f
    assert EvalConfig().fusion_settings() == f


class _MemoryBackend:
    """The two candidate questions of the backend contract over hand-made lists."""

    def __init__(self, cosines, lexical, paths):
        self.cos = cosines  # rowid -> cosine
        self.lex = lexical  # [(rowid, bm25 larger-is-better)], best first
        self.path = paths  # rowid -> path
        self.calls = []

    def dense_candidates(self, qvecs, n, paths=None):
        ok = [r for r in self.cos if paths is None or self.path[r] in paths]
        best = sorted(ok, key=lambda r: (-self.cos[r], r))[:n]
        return [[(r, self.cos[r]) for r in best] for _ in qvecs]

    def cosines(self, qvec, rowids):
        return [self.cos.get(r) for r in rowids]

    def lexical_candidates(self, text, n, paths=None):
        self.calls.append((text, n, None if paths is None else sorted(paths)))
        return [(r, s) for r, s in self.lex if paths is None or self.path[r] in paths][:n]

    def unit_evidence(self, rowids):
        return {}  # hand-made cosines, no units: the engine ranks by the aggregate alone

    def page_titles(self, rowids):
        return {}  # hand-made rows: no headings, no title evidence

    def lexical_ceiling(self, text):
        return 10.0  # above every BM25 of the hand-made list


def test_engine_hybrid_fuses_what_the_backend_returns():
    b = _MemoryBackend(
        {1: 0.9, 2: 0.8, 3: 0.1, 4: 0.7, 5: 0.2},
        [(3, 8.0), (4, 2.0)],
        {1: "a", 2: "a", 3: "b", 4: "a", 5: "a"},
    )
    q = np.zeros((1, 2), np.float32)
    # each side gives max(depth, n) = 3 candidates
    # convex 0.5 minmax over dense {1, 2, 4} and lexical {3, 4}: 1 and 3 tie at 0.5 (the
    # cosine breaks it), then 2 (0.4375); 4 (0.375) is cut
    convex = Fusion(fusion="convex", alpha=0.5, depth=2)  # eval's comparison fusion
    (out,) = rank(b, ["q"], q, mode="hybrid", n=3, fusion=convex)
    assert [c.rowid for c in out] == [1, 3, 2] and b.calls == [("q", 3, None)]
    assert out[1].source == "lexical" and out[1].dense_score == pytest.approx(0.1)
    assert out[1].lexical_share == pytest.approx(0.8)
    assert out[0].source == "dense" and out[0].lexical_rank is None
    (wide,) = rank(b, ["q"], q, mode="hybrid", n=10, fusion=convex)
    assert {c.rowid for c in wide} == {1, 2, 3, 4, 5}
    assert next(c for c in wide if c.rowid == 4).source == "both"
    assert len(rank(b, ["q"], q, mode="hybrid", n=1, fusion=convex)[0]) == 1
    (filtered,) = rank(b, ["q"], q, mode="hybrid", n=10, fusion=convex, paths=["a"])
    assert 3 not in {c.rowid for c in filtered} and b.calls[-1][2] == ["a"]
    (lexical,) = rank(b, ["q"], q, mode="lexical", n=10)
    assert [c.rowid for c in lexical] == [3, 4] and [c.lexical_rank for c in lexical] == [1, 2]
    (dense,) = rank(b, ["q"], q, mode="dense", n=2)
    assert [(c.rowid, c.source) for c in dense] == [(1, None), (2, None)]
    # the default hybrid order is the relevance score's, and it is the score each carries
    (scored,) = rank(b, ["q"], q, mode="hybrid", n=10, fusion=Fusion(depth=2))
    assert [c.score for c in scored] == sorted((c.score for c in scored), reverse=True)
    assert [c.fused_rank for c in scored] == list(range(1, len(scored) + 1))


def test_fused_candidate_as_dict():
    c = FusedCandidate(7, 0.5, 1, 0.3, 4, 2.0, 1, ("lexical",))
    d = c.as_dict()
    assert d["source"] == "lexical" and d["dense_score"] == 0.3 and not math.isnan(d["fused_score"])


# ---- on a real index: the FTS5 side follows the chunks through updates and deletions --------


@pytest.fixture(scope="module")
def embedder():
    from ragsift.embedders import load_embedder

    return load_embedder()


def _build(folder, index, embedder):
    from ragsift.chunkers import make_chunker
    from ragsift.ingest import BuildRequest, build_index

    chunker = make_chunker("recursive", tokenizer="cl100k", size=40, min_chars=0)
    return build_index(BuildRequest.of(index, [str(folder)], chunker=chunker, embedder=embedder))


def _lexical(index, query: str) -> list[dict]:
    """Chunk records of every lexical hit, checked against the vectors and chunks tables."""
    from ragsift.index import open_index

    with open_index(index, "r") as store:
        rowids, _ = store.load_matrix()
        hits = store.lexical_search(query, 50)
        ids = [r for r, _ in hits]
        assert set(ids) <= set(rowids.tolist()), "a lexical hit without a vector"
        records = store.chunks(ids)
        assert [r["rowid"] for r in records] == ids, "a lexical hit without a chunk"
        return records


def test_fts_index_follows_updates_and_deletions(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fruit.md").write_text("Apples and pears grow in the orchard.\n\nPlums too.\n")
    (docs / "zoo.md").write_text("The zebra grazes on the savanna.\n\nLions sleep all day.\n")
    index = tmp_path / "index.db"
    _build(docs, index, embedder)
    assert [r["path"].endswith("zoo.md") for r in _lexical(index, "zebra")] == [True]
    assert len(_lexical(index, "orchard")) == 1

    # a changed file: its old text leaves the lexical index, its new text is found
    (docs / "zoo.md").write_text("The quokka smiles on Rottnest Island.\n\nLions sleep all day.\n")
    _build(docs, index, embedder)
    assert _lexical(index, "zebra") == []
    (hit,) = _lexical(index, "quokka")
    assert "quokka" in hit["text"] and hit["path"].endswith("zoo.md")
    assert len(_lexical(index, "lions")) == 1  # unchanged text is not duplicated

    # a deleted file: none of its chunks can come back
    (docs / "fruit.md").unlink()
    _build(docs, index, embedder)
    assert _lexical(index, "orchard") == [] and _lexical(index, "plums") == []
    paths = {r["path"].rsplit("/", 1)[-1] for r in _lexical(index, "quokka lions plums pears")}
    assert paths == {"zoo.md"}


def _cats_dogs_log_index(tmp_path, embedder):
    """Three one-line documents: "zq7x" is findable only by its words (in log.md)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cats.md").write_text("Cats purr when they are happy and content.\n")
    (docs / "dogs.md").write_text("Dogs wag their tails when they are excited.\n")
    (docs / "log.md").write_text("Reference code zq7x appeared in the build log.\n")
    index = tmp_path / "index.db"
    _build(docs, index, embedder)
    return index


def test_a_lexical_only_hit_is_identifiable(tmp_path, embedder):
    from ragsift.index import open_index

    index = _cats_dogs_log_index(tmp_path, embedder)
    query = "purring felines zq7x"
    with open_index(index, "r") as store:
        rowids, matrix = store.load_matrix()
        qvec = embedder.embed_query(query)
        scores = matrix @ qvec
        records = {r.rowid: r for r in store.chunk_records(rowids.tolist())}
        # each side gives max(depth, n) = 2; convex fusion puts cats (best cosine) and log
        # (best BM25) at 0.5 each, dogs below
        (fused,) = rank(store, [query], qvec[None, :], mode="hybrid", n=2, fusion=Fusion(depth=1))
    by_path = {records[c.rowid].path.rsplit("/", 1)[-1]: c for c in fused}
    assert set(by_path) == {"cats.md", "log.md"}
    cat, log = by_path["cats.md"], by_path["log.md"]
    assert cat.source == "dense" and cat.lexical_rank is None
    assert log.lexical_rank == 1 and log.lexical_score > 0
    # its cosine is reported beside the relevance score the threshold applies to
    assert log.dense_score == pytest.approx(float(scores[list(rowids).index(log.rowid)]), abs=1e-6)
    assert 0.0 < log.score < 1.0 and log.lexical_share > 0


def test_searcher_builds_the_retrieval_record_in_every_mode(tmp_path, embedder):
    from ragsift.index import open_index
    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.search import Searcher

    index = _cats_dogs_log_index(tmp_path, embedder)
    with open_index(index, "r") as store:
        request = SearchRequest(k=2, threshold=0.3, reject_window=5)
        searcher = Searcher(store, embedder=embedder)
        r = searcher.retrieve("purring felines zq7x", replace(request, fusion=Fusion(depth=1)))
        dense_only = searcher.retrieve("purring felines zq7x", replace(request, mode="dense"))
        lexical = replace(request, mode="lexical")
        lex = searcher.retrieve("zq7x", lexical)
        filtered = searcher.retrieve("zq7x cats", replace(lexical, path="*cats.md"))
    # fetch = k + window = 7 > depth 1: each side is widened to 7 so the record is complete
    assert r.mode == "hybrid" and [c.fused_rank for c in r.candidates] == [1, 2, 3]
    assert r.candidates_complete
    log = next(c for c in r.candidates if c.path.endswith("log.md"))
    assert log.lexical_rank == 1 and log.lexical_score > 0
    # every mode reports the cosine (dense_score) beside its own relevance score, which the
    # threshold applies to: a weak hit is rejected as below-threshold, visibly
    cosine = {c.path: c.dense_score for c in dense_only.candidates}
    assert log.dense_score == cosine[log.path]
    assert (log.admitted, log.reason) == (
        log.score >= 0.3,
        None if log.score >= 0.3 else "below-threshold",
    )
    assert [c.path.rsplit("/", 1)[-1] for c in lex.candidates] == ["log.md"]
    assert lex.candidates[0].lexical_rank == 1
    assert [c.path.rsplit("/", 1)[-1] for c in filtered.candidates] == ["cats.md"]
    assert filtered.searched == 1


def test_searcher_mode_dispatches_to_the_fusion(tmp_path, embedder):
    from ragsift.index import open_index
    from ragsift.retrieval.hybrid import Fusion
    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.search import Searcher

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cats.md").write_text("Cats purr when they are happy and content.\n")
    (docs / "log.md").write_text("Reference code zq7x appeared in the build log.\n")
    index = tmp_path / "index.db"
    _build(docs, index, embedder)
    request = SearchRequest(k=1, threshold=None, reject_window=0)
    with open_index(index, "r") as store:
        searcher = Searcher(store, embedder=embedder)
        dense = searcher.retrieve("purring felines zq7x", replace(request, mode="dense"))
        hybrid = replace(request, mode="hybrid", fusion=Fusion(depth=1))
        fused = searcher.retrieve("purring felines zq7x", hybrid)
    assert dense.mode == "dense" and dense.candidates[0].source is None
    assert fused.mode == "hybrid" and fused.candidates[0].source in ("both", "dense", "lexical")
    assert fused.as_dict()["candidates"][0]["source"] == fused.candidates[0].source


def test_explain_shows_a_lexical_only_hit(tmp_path, embedder, monkeypatch):
    """Through the CLI: more chunks than the dense side's depth, one of which only the
    lexical side can find; `explain --mode hybrid` marks it, with its cosine and BM25 rank.
    The default depth (1,000) is lowered to 100 for this test only, so the index needs 111
    chunks rather than 1,001 embedded with the real model, and α is 0.5 so that the one exact
    match ties the best cosine at the top (at the default 0.6 the 110 near-synonyms outrank
    it); the marking itself depends on neither."""
    import functools

    from typer.testing import CliRunner

    from ragsift.chunkers import make_chunker
    from ragsift.cli import app
    from ragsift.ingest import BuildRequest, build_index
    from ragsift.retrieval import engine

    # the default Fusion of a request without one (``SearchRequest.fusion`` None)
    monkeypatch.setattr(engine, "Fusion", functools.partial(Fusion, alpha=0.5, depth=100))

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(110):  # one chunk each, close to the query in meaning, sharing no word
        (docs / f"cat{i:03d}.md").write_text(f"Cats meow and kittens snuggle, cozy pet {i}.\n")
    (docs / "log.md").write_text("Reference code zq7x appeared in the build log.\n")
    index = str(tmp_path / "index.db")
    chunker = make_chunker("recursive", tokenizer="cl100k")
    build_index(BuildRequest.of(index, [str(docs)], chunker=chunker, embedder=embedder))
    query = "purring felines zq7x"
    # a window wide enough to show every candidate: the lexical-only hit is ranked by its
    # relevance score among them (its one word of three is weak evidence beside 110 close cats)
    args = [
        "explain",
        query,
        "--index",
        index,
        "--mode",
        "hybrid",
        "--threshold",
        "none",
        "--reject-window",
        "90",
    ]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["mode"] == "hybrid" and record["searched"] > 100  # more than the depth
    (log,) = [c for c in record["candidates"] if c["path"].endswith("log.md")]
    assert log["source"] == "lexical" and log["lexical_rank"] == 1
    assert 0 < log["score"] < 1 and log["lexical_share"] > 0  # the relevance score
    assert all(c["source"] == "dense" for c in record["candidates"] if c is not log)
    human = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert human.exit_code == 0, human.output
    assert "mode hybrid" in human.output and "lexical only" in human.output


@pytest.mark.parametrize("how", [Fusion(), Fusion(fusion="rrf"), Fusion(alpha=0.3, norm="tmm")])
def test_fuse_limit_is_the_head_of_the_whole_order(how):
    """``fuse(..., limit=k)`` (what the engine asks for) returns exactly the first k of the
    whole fused order, ties included (many equal scores, so the tie rule decides)."""
    import random

    rng = random.Random(7)
    for _ in range(30):
        dense = sorted(
            ((i, round(rng.random(), 1)) for i in rng.sample(range(60), 25)), key=lambda x: -x[1]
        )
        lexical = sorted(
            ((i, float(rng.randint(0, 3))) for i in rng.sample(range(60), 25)), key=lambda x: -x[1]
        )
        cos = {i: round(rng.random(), 1) for i in range(60)}
        whole = fuse(dense, lexical, how, dense_score_of=cos.get)
        for k in (0, 1, 5, 13, len(whole), len(whole) + 5):
            assert fuse(dense, lexical, how, dense_score_of=cos.get, limit=k) == whole[:k]
