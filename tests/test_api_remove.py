"""`ragsift.api.remove` checks its patterns as strictly as `ragsift rm` checks its arguments:
no pattern, an empty one or an invalid glob removes nothing and raises; a plain string is one
pattern, not its characters (before, `remove(index, [])` and `remove(index, "zz/none*.md")`
removed every document)."""

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
