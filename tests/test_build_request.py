"""One request value for a build (issue 39): ``BuildRequest`` is checked once when it is made,
``api.build`` takes it as it is or builds it from its keywords (the same run either way), and
the embedder options and the chunker sized for them are given once."""

from __future__ import annotations

import os
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest

import ragsift.api as rs
from ragsift.embedders.options import EmbedderOptions
from ragsift.errors import RagsiftError
from ragsift.ingest import BuildHooks, BuildRequest, WalkRules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_the_embedder_options_are_the_ones_an_index_records():
    from ragsift.embedders.binding import EMBEDDER_OPTIONS

    assert tuple(f.name for f in fields(EmbedderOptions)) == EMBEDDER_OPTIONS
    options = EmbedderOptions.of({"max_length": 128, "pooling": None})
    assert options.as_dict() == {"max_length": 128}
    assert EmbedderOptions().as_dict() == {}


def test_a_request_is_checked_once_and_frozen(tmp_path):
    with pytest.raises(RagsiftError, match="engine must be one of local, ray, not 'spark'"):
        BuildRequest.of(tmp_path / "i.db", ["docs"], engine="spark")
    with pytest.raises(TypeError, match="'colour'"):
        BuildRequest.of(tmp_path / "i.db", ["docs"], colour="red")
    with pytest.raises(TypeError, match="'colour'"):  # unknown even with a None value
        BuildRequest.of(tmp_path / "i.db", ["docs"], colour=None)
    with pytest.raises(RagsiftError, match="build needs at least one path"):
        BuildRequest.of(tmp_path / "i.db", [])
    request = BuildRequest.of(
        tmp_path / "i.db",
        tmp_path / "docs",  # one path, not its characters
        include=["*.md"],
        root=".",
        max_length=128,
        prune=False,
    )
    assert request.index == str(tmp_path / "i.db")
    assert request.paths == (str(tmp_path / "docs"),)
    assert request.walk == WalkRules(include=("*.md",), root=os.getcwd())
    assert request.embedder_options == EmbedderOptions(max_length=128)
    assert request.prune is False and request.rebuild is False and request.engine == "local"
    with pytest.raises(FrozenInstanceError):
        request.rebuild = True  # type: ignore[misc]
    later = request.later()  # a watch's later runs: never a rebuild, a busy writer waited for
    assert later.rebuild is False and later.wait is True and later.paths == request.paths


def test_the_chunker_is_sized_from_the_request_own_embedder_options(tmp_path):
    """``chunking`` gives the chunker's options only: ``max_length`` and ``passage_prefix``
    are the request's embedder options, given once, and size the chunker as embed's default
    chunker does for them."""
    request = BuildRequest.of(
        tmp_path / "i.db",
        ["docs"],
        chunking={"strategy": "recursive", "tokenizer": "model"},
        max_length=64,
        passage_prefix="passage: ",
    )
    want = rs.embed_chunker(None, max_length=64, passage_prefix="passage: ")
    assert request.chunker.budget == want.budget < 64
    assert request.embedder_options.as_dict() == {"max_length": 64, "passage_prefix": "passage: "}
    # chunk JSON lines on stdin are chunked already: no chunker
    stdin = BuildRequest.of(tmp_path / "i.db", ["-"], chunking={"strategy": "recursive"})
    assert stdin.chunker is None and stdin.reads_stdin


def test_build_takes_a_request_as_it_is_or_its_keywords(tmp_path):
    """The same run from a request and from the keywords it was made of: same summary counts,
    same chunks; the hooks travel beside the request."""
    docs = [str(FIXTURES / "beekeeping")]
    skipped: list = []
    by_keywords = rs.build(tmp_path / "a.db", docs, include=["*.md"], on_skip=skipped.append)
    request = BuildRequest.of(tmp_path / "b.db", docs, include=["*.md"])
    by_request = rs.build(request=request, on_skip=skipped.append)
    assert by_keywords.chunks == by_request.chunks > 0
    assert by_keywords.discovered == by_request.discovered
    with rs.open_index(tmp_path / "a.db") as a, rs.open_index(tmp_path / "b.db") as b:
        assert [r.text for r in a.records()] == [r.text for r in b.records()]
    with pytest.raises(TypeError, match="request alone"):
        rs.build(tmp_path / "c.db", request=request)
    with pytest.raises(TypeError, match="request alone"):
        rs.build(request=request, include=["*.rst"])
    with pytest.raises(TypeError, match="an index and paths, or a request"):
        rs.build(tmp_path / "c.db")


def test_build_index_reports_through_its_hooks(tmp_path):
    from ragsift.ingest import build_index

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nBees make honey.\n", encoding="utf-8")
    (folder / "broken.json").write_text("{ not json", encoding="utf-8")
    skipped: list = []
    summary = build_index(
        BuildRequest.of(tmp_path / "i.db", [str(folder)]), BuildHooks(on_skip=skipped.append)
    )
    assert [s.path for s in skipped] == [s.path for s in summary.skipped] != []
    assert summary.index["documents"] == 1
