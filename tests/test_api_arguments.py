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
    for call in (
        lambda: ix.query("bees"),
        ix.documents,
        lambda: ix.threshold(),
        lambda: ix.settings,
    ):
        with pytest.raises(RagsiftError, match="closed"):
            call()


# -- library errors in library words (issue 22 point 5); the CLI says its flags -------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "k must be at least 1 (got 0)"),
        ({"reject_window": -1}, "reject_window must be 0 or more (got -1)"),
        ({"max_chars": 0}, "max_chars must be at least 1 (got 0)"),
        ({"threshold": 1.5}, "threshold 1.5: the relevance score lies between 0 and 1"),
        (
            {"threshold": "abc"},
            "threshold must be a number between 0 and 1, None or 'auto', not 'abc'",
        ),
        (
            {"threshold": True},
            "threshold must be a number between 0 and 1, None or 'auto', not True",
        ),
        ({"mode": "sparse"}, "mode must be dense, lexical or hybrid, not 'sparse'"),
        ({"span": "all"}, "span must be chunk or best, not 'all'"),
    ],
)
def test_api_errors_name_the_parameters_as_the_api_does(index, kwargs, message):
    with rs.open_index(index) as ix, pytest.raises(RagsiftError) as err:
        ix.query("when do honey bees swarm", **kwargs)
    assert err.value.message == message
    assert err.value.param == next(iter(kwargs))


@pytest.mark.parametrize(
    "strategy, options, message",
    [
        (
            "tokens",
            {"size": 100, "overlap": 600},
            "overlap 600 must be at least 0 and less than size 100",
        ),
        (
            "tokens",
            {"min_chars": 5},
            "strategy tokens does not take min_chars (it takes: size, overlap)",
        ),
        (
            "heading",
            {"min_chars": 50, "max_chars": 10},
            "min_chars 50 must be less than max_chars 10",
        ),
        ("sentence", {"delimiters": [""]}, "sentence: delimiters must be non-empty strings"),
        ("recursive", {"include_delim": "none"}, "recursive: include_delim must be prev or next"),
    ],
)
def test_chunker_errors_name_the_keyword_arguments(strategy, options, message):
    from ragsift.chunkers import make_chunker

    with pytest.raises(RagsiftError) as err:
        make_chunker(strategy, tokenizer="chars", **options)
    assert err.value.message.startswith(message)
    assert " --" not in err.value.message and not err.value.message.startswith("-")


@pytest.mark.parametrize(
    "args, line",
    [
        (
            [
                "chunk",
                "fixtures/sourdough.rst",
                "-s",
                "tokens",
                "--overlap",
                "600",
                "--size",
                "100",
            ],
            "--overlap 600 must be at least 0 and less than --size 100",
        ),
        (
            ["chunk", "fixtures/sourdough.rst", "-s", "tokens", "--min-chars", "5"],
            "--strategy tokens does not take --min-chars (it takes: --size, --overlap)",
        ),
        (
            ["chunk", "fixtures/sourdough.rst", "-s", "sentence", "--delimiter="],
            "sentence: --delimiter values must be non-empty strings",
        ),
        (
            [
                "chunk",
                "fixtures/sourdough.rst",
                "-s",
                "heading",
                "--min-chars",
                "50",
                "--max-chars",
                "10",
            ],
            (
                "--min-chars 50 must be less than --max-chars 10 (the floor is the smallest "
                "chunk worth keeping)"
            ),
        ),
        (
            ["query", "bees", "--mode", "sparse"],
            "--mode must be dense, lexical or hybrid, not 'sparse'",
        ),
        (
            ["query", "bees", "--threshold", "1.5"],
            "--threshold 1.5: the relevance score lies between 0 and 1",
        ),
        (["explain", "bees", "--span", "all"], "--span must be chunk or best, not 'all'"),
    ],
)
def test_the_cli_says_the_same_errors_in_its_flags(index, args, line):
    from tests.conftest import run_cli

    if args[0] != "chunk":
        args = [*args, "-i", index]
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stderr == f"ragsift: {line}\n"


def test_errors_carry_their_parameter_and_each_front_end_names_it():
    """No text is rewritten: the error holds the parameter names as fields (issue 29)."""
    err = RagsiftError(
        "{overlap} {o} must be less than {size} {s}", param="overlap", values={"o": 6, "s": 5}
    )
    assert (
        err.param == "overlap" and err.message == str(err) == "overlap 6 must be less than size 5"
    )
    assert err.worded(lambda n: f"--{n}") == "--overlap 6 must be less than --size 5"
    plain = RagsiftError("config x.toml: mode must be one of {dense}")  # no param: as written
    assert (
        plain.worded(lambda n: "--" + n)
        == plain.message
        == "config x.toml: mode must be one of {dense}"
    )
