"""Cold-query work moved off the critical path (issue 13) without changing a result: the
lexical lists fetched while the model loads (``engine.lexical_ahead``, ``Searcher(prefetch=)``)
and the binary-search row lookup of ``DenseMatrix.cosines``. Real model, real index."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_engine import QUERIES
from tests.test_query_cli import fixture_index


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "dense"])
def test_prefetched_lexical_lists_give_the_same_retrievals_and_are_used(index, mode):
    from ragsift.index import open_index
    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.search import Searcher

    request = SearchRequest(k=5, threshold=None, reject_window=5, mode=mode)
    with open_index(index, "r") as store:
        plain = Searcher(store).retrieve_many(QUERIES, request)
        calls: list[str] = []
        original = store.lexical_candidates

        def counted(text, n, paths=None):
            calls.append(text)
            return original(text, n, paths)

        store.lexical_candidates = counted
        searcher = Searcher(store, preload_embedder=True, prefetch=QUERIES, request=request)
        fetched_ahead = list(calls)
        ahead = searcher.retrieve_many(QUERIES, request)
        assert ahead == plain and any(r.admitted or r.rejected for r in plain)
        if mode == "dense":
            assert calls == []
        else:  # every query fetched once, before the search, and never again
            assert sorted(fetched_ahead) == sorted(QUERIES) and calls == fetched_ahead
        # only the first search uses them; a later one asks the index again, same answer
        again = searcher.retrieve_many(QUERIES, request)
        assert again == plain
        if mode != "dense":
            assert len(calls) == 2 * len(QUERIES)


def test_prefetched_lists_are_not_used_under_a_path_filter(index):
    from ragsift.index import open_index
    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.search import Searcher

    with open_index(index, "r") as store:
        glob = next(p for p in store.paths() if "bee" in p)
        request = SearchRequest(k=5, threshold=None, reject_window=5, path=glob)
        plain = Searcher(store).retrieve_many(QUERIES, request)
        ahead = Searcher(store, prefetch=QUERIES, request=request).retrieve_many(QUERIES, request)
        assert ahead == plain
        assert any(r.candidates for r in ahead)
        assert all(c.path == glob for r in ahead for c in r.candidates)


def test_cosines_find_rows_by_binary_search_in_any_row_order():
    """Rows in ascending and in shuffled block order, ids missing, duplicates, nothing asked:
    each cosine is the matrix row's product with the query, None for an unknown id."""
    from ragsift.index.dense import DenseMatrix, dot_rows

    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((50, 8)).astype(np.float32)
    q = rng.standard_normal(8).astype(np.float32)
    for rowids in (np.arange(10, 60), rng.permutation(np.arange(100, 150))):
        dm = DenseMatrix(rowids, matrix, lambda paths: [])
        wanted = [int(rowids[7]), 5, int(rowids[0]), int(rowids[49]), 10**9, int(rowids[7])]
        got = dm.cosines(q, wanted)
        where = {int(r): i for i, r in enumerate(rowids.tolist())}
        expect = [
            None if where.get(r) is None else float(dot_rows(matrix[[where[r]]], q)[0])
            for r in wanted
        ]
        assert got == expect and got[1] is None and got[4] is None
        assert dm.cosines(q, []) == []
        assert dm.cosines(q, [1, 2]) == [None, None]
    empty = DenseMatrix(np.empty(0, np.int64), np.empty((0, 8), np.float32), lambda p: [])
    assert empty.cosines(q, [1]) == [None]


def test_numpy_is_imported_before_the_model_thread_starts(index):
    """Two threads importing numpy for the first time at once can get its partially initialised
    C module (an ImportError a cold `query` would report as an internal error): the
    Searcher imports it on the calling thread before the model thread (onnxruntime imports
    numpy) starts. Checked in a fresh interpreter, where nothing has imported numpy yet."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from ragsift.index import open_index\n"
        "from ragsift.retrieval import search\n"
        "assert 'numpy' not in sys.modules\n"
        "seen = []\n"
        "real = search.embedder_for\n"
        "def watched(*a, **k):\n"
        "    seen.append('numpy' in sys.modules)\n"
        "    return real(*a, **k)\n"
        "search.embedder_for = watched\n"
        f"with open_index({index!r}, 'r') as store:\n"
        "    s = search.Searcher(store, preload_embedder=True, prefetch=['bees'])\n"
        "    assert s.embedder is not None\n"
        "print(seen)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[True]"
