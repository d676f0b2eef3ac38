"""One request value for a search (issue 39, item 1): ``SearchRequest`` is checked when it is
made, its floor is resolved once, and the value the front end built reaches the engine
unchanged. Real model, real index (the fixtures' one, shared with tests/test_query_cli.py)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

import ragsift.api as rs
from ragsift.errors import RagsiftError
from ragsift.retrieval.request import SearchRequest
from tests.test_query_cli import fixture_index


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"k": 0}, "k"),
        ({"reject_window": -1}, "reject_window"),
        ({"max_chars": 0}, "max_chars"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": "none"}, "threshold"),
        ({"mode": "sparse"}, "mode"),
        ({"span": "page"}, "span"),
        # the order the CLI has always reported two bad values in: the threshold before k
        ({"threshold": 2.0, "k": 0}, "threshold"),
        ({"mode": "sparse", "threshold": 2.0}, "mode"),
    ],
)
def test_a_request_is_checked_when_it_is_made(options, param):
    with pytest.raises(RagsiftError) as caught:
        SearchRequest(**options)
    assert caught.value.param == param


def test_a_request_is_frozen_and_its_threshold_typed():
    request = SearchRequest(threshold=1)
    assert request.threshold == 1.0 and isinstance(request.threshold, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.k = 5  # type: ignore[misc]
    assert SearchRequest().mode == rs.DEFAULT_MODE and SearchRequest().threshold == rs.AUTO
    with pytest.raises(ValueError, match="resolve"):
        _ = SearchRequest().strategy  # no floor yet


def test_keywords_and_the_request_are_the_same_search(index):
    with rs.open_index(index) as ix:
        by_keywords = ix.query("when do bees swarm", k=2, threshold=None, reject_window=4)
        request = SearchRequest(k=2, threshold=None, reject_window=4)
        by_request = ix.query("when do bees swarm", request)
        # keywords beside a request are set on it
        beside = ix.query("when do bees swarm", SearchRequest(k=9), k=2, threshold=None,
                          reject_window=4)  # fmt: skip
    assert by_keywords.as_dict() == by_request.as_dict() == beside.as_dict()
    assert len(by_keywords.candidates) == 6 and len(by_keywords.admitted) == 2


def test_an_unknown_keyword_names_the_call(index):
    with rs.open_index(index) as ix:
        for call in (ix.query, ix.explain, ix.search):
            with pytest.raises(TypeError, match=rf"{call.__name__}\(\) .*'colour'"):
                call("bees", colour="red")
        with pytest.raises(TypeError, match="SearchRequest, not int"):
            ix.query("bees", 5)


def test_the_floor_is_resolved_once_and_the_request_reaches_the_engine(index, monkeypatch):
    from ragsift.retrieval import engine, threshold

    resolved, seen = [], []
    resolve = threshold.resolve_threshold
    retrieve = engine.retrieve

    def counted(*args, **kwargs):
        resolved.append(args[0])
        return resolve(*args, **kwargs)

    def spy(backend, queries, qvecs, request, **kwargs):
        seen.append(request)
        return retrieve(backend, queries, qvecs, request, **kwargs)

    monkeypatch.setattr(threshold, "resolve_threshold", counted)
    monkeypatch.setattr("ragsift.retrieval.search.retrieve", spy)
    with rs.open_index(index) as ix:
        request = ix.prepare(k=2, mode="lexical")
        assert resolved == ["auto"] and request.floor.origin == "default"
        found = ix.search(["when do bees swarm", "sourdough starter"], request)
        # a prepared request is taken as it is: no second resolution, the same value below
        assert resolved == ["auto"] and seen == [request] and seen[0] is request
        assert found.threshold == request.floor
        assert [r.threshold for r in found.results] == [request.floor.value] * 2
        assert all(r.mode == "lexical" and r.k == 2 for r in found.results)
        resolved.clear()
        ix.query("when do bees swarm", k=2)  # from keywords: resolved once
        assert resolved == ["auto"]


def test_explain_shows_three_units_unless_told(index):
    with rs.open_index(index) as ix:
        record = ix.explain("when do bees swarm", threshold=None)
        fewer = ix.explain("when do bees swarm", SearchRequest(threshold=None, units=1))
    assert record["attributions"] and all(len(a["units"]) <= 3 for a in record["attributions"])
    assert any(len(a["units"]) > 1 for a in record["attributions"])
    assert all(len(a["units"]) <= 1 for a in fewer["attributions"])


def test_the_request_module_loads_no_numpy():
    code = (
        "import sys\n"
        "from ragsift.retrieval.request import SearchRequest\n"
        "SearchRequest(k=2, threshold=0.3, mode='dense', span='best')\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_required_request_needs_a_floor_and_one_that_is_not_searches_without(tmp_path):
    """A model nobody measured (MiniLM's files under another name, never calibrated): a
    search refuses with the policy's error (exit 2) unless its request says the answer needs
    no floor (``required=False``), the one field ``Index.search``, ``Index.threshold`` and the
    searcher read it from."""
    import shutil

    from ragsift.embedders import DEFAULT_MODEL_DIR
    from ragsift.embedders.weights import default_weights_path
    from ragsift.errors import EXIT_USAGE

    other = tmp_path / "other-model"
    shutil.copytree(DEFAULT_MODEL_DIR, other)
    shutil.copy(default_weights_path(), other / "model.onnx")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bees.md").write_text("Honey bees swarm in late spring.\n")
    path = tmp_path / "other.db"
    rs.build(path, [docs], model=str(other))  # the API never calibrates by itself
    with rs.open_index(path, model=str(other)) as ix:
        with pytest.raises(RagsiftError, match="no measured threshold") as refused:
            ix.query("when do bees swarm")
        assert refused.value.exit_code == EXIT_USAGE
        request = ix.prepare()  # completing a request never refuses: the search does
        assert request.floor.source is None and request.required
        with pytest.raises(RagsiftError, match="no measured threshold"):
            request.check_floor(ix.settings)
        with pytest.raises(RagsiftError, match="no measured threshold"):
            ix.threshold()
        assert ix.threshold(required=False).source is None
        found = ix.search("when do bees swarm", required=False)
        assert found.threshold.source is None and found.results[0].threshold is None
        assert found.results[0].admitted  # no floor: the top k are admitted


def test_an_mcp_call_resolves_the_floor_once(index, monkeypatch):
    from ragsift.mcp_server.service import Service
    from ragsift.retrieval import threshold

    resolved = []
    resolve = threshold.resolve_threshold

    def counted(*args, **kwargs):
        resolved.append(args[0])
        return resolve(*args, **kwargs)

    service = Service(index)
    try:
        monkeypatch.setattr(threshold, "resolve_threshold", counted)
        record = service.search(query="when do bees swarm", k=2)
        assert resolved == ["auto"] and record["threshold"] == record["floor"]
        resolved.clear()
        stricter = service.explain(query="when do bees swarm", threshold=0.99)
        # the server's floor once; the call's own number is taken as given
        assert resolved == ["auto", 0.99] and stricter["threshold"] == 0.99
    finally:
        service.close()


def test_errors_come_in_the_order_they_always_did(index):
    """A closed index, then the query, then its options (the request), whichever call."""
    ix = rs.open_index(index)
    for call in (ix.query, ix.search):
        with pytest.raises(RagsiftError, match="the query is empty"):
            call("  ", k=0)
    with pytest.raises(RagsiftError, match="the query is empty"):
        ix.query_many(["bees", ""], k=0)
    with pytest.raises(RagsiftError) as bad:
        ix.query("bees", k=0, mode="sparse")
    assert bad.value.param == "mode"
    ix.close()
    for call in (ix.query, ix.search, ix.explain):
        with pytest.raises(RagsiftError, match="closed"):
            call("bees", k=0)
    with pytest.raises(RagsiftError, match="closed"):
        ix.query_many(["bees"], k=0)
