"""The Python API checks its arguments as strictly as the CLI (issue 23): `remove` with no
pattern, an empty one or an invalid glob removes nothing and raises, and a plain string is one
pattern, not its characters (before, `remove(index, [])` and `remove(index, "zz/none*.md")`
removed every document); `build` with no path or an unknown option, an empty query, a closed
index raise clear errors; a lone surrogate in a query is searched, not a tokenizer error."""

from __future__ import annotations

import shutil

import pytest

import ragsift.api as rs
from ragsift.errors import RagsiftError
from tests.test_query_cli import fixture_index


@pytest.fixture
def index(tmp_path_factory, tmp_path) -> str:
    copy = tmp_path / "copy.db"
    shutil.copy(fixture_index(tmp_path_factory), copy)
    return str(copy)


def _paths(index: str) -> list[str]:
    with rs.open_index(index) as ix:
        return [d.path for d in ix.documents()]


@pytest.mark.parametrize("patterns", [[], (), [""], ["  "], ["[z-a]"], [None], 7])
def test_bad_patterns_raise_and_remove_nothing(index, patterns):
    before = _paths(index)
    with pytest.raises(RagsiftError):
        rs.remove(index, patterns)
    assert _paths(index) == before


def test_a_string_is_one_pattern(index):
    before = _paths(index)
    assert rs.remove(index, "zz/nomatch*.md") == []
    assert _paths(index) == before
    removed = rs.remove(index, "fixtures/recipes.json")
    assert [d.path for d in removed] == ["fixtures/recipes.json"]
    assert _paths(index) == [p for p in before if p != "fixtures/recipes.json"]


def test_build_needs_a_path_and_known_options(tmp_path):
    idx = tmp_path / "new.db"
    with pytest.raises(RagsiftError, match="at least one path"):
        rs.build(idx, [])
    with pytest.raises(TypeError, match="colour"):
        rs.build(idx, ["fixtures/sourdough.rst"], colour="red")
    assert not idx.exists()
    summary = rs.build(idx, "fixtures/sourdough.rst")  # one path, not its characters
    assert summary.chunks > 0 and _paths(str(idx)) == ["fixtures/sourdough.rst"]


def test_queries_documents_and_a_closed_index(index):
    ix = rs.open_index(index)
    with pytest.raises(RagsiftError, match="empty"):
        ix.query("  ")
    with pytest.raises(RagsiftError, match="empty"):
        ix.explain("")
    with pytest.raises(TypeError):
        ix.query_many("bees")
    with pytest.raises(RagsiftError, match="invalid glob"):
        ix.query("bees", path="[z-a]")
    assert [d.path for d in ix.documents("*beekeeping*")] == ["fixtures/beekeeping/handbook.md"]
    r = ix.query("when do honey bees \ud800 swarm")
    assert "\ufffd" in r.query and r.admitted
    ix.close()
    for call in (lambda: ix.query("bees"), ix.documents, lambda: ix.threshold(),
                 lambda: ix.settings):
        with pytest.raises(RagsiftError, match="closed"):
            call()
