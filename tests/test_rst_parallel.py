"""A long .rst rendered by this process and a helper process gives the one-process document
(``ragsift.sources.rst_parallel``). No timing: the tests make the parent wait until the
helper has taken a piece, so both surely render, on any machine load."""

from __future__ import annotations

import sys

import pytest

from ragsift.sources import rst, rst_parallel, rst_pieces
from tests.test_bounds import _sphinx_like


@pytest.fixture()
def small_pieces(monkeypatch):
    monkeypatch.setattr(rst_pieces, "PIECE_CHARS", 2048)
    monkeypatch.setattr(rst_parallel, "cpus", lambda: 2)


def _one_process(text: str, monkeypatch) -> object:
    with monkeypatch.context() as m:
        m.setattr(rst_parallel, "PARALLEL_CHARS", 10**12)
        return rst.parse_rst(text, "guide.rst")


def test_two_processes_render_the_document_one_process_renders(small_pieces, monkeypatch):
    text = _sphinx_like(60)
    alone = _one_process(text, monkeypatch)
    here: list[int] = []
    real = rst.render_piece
    monkeypatch.setattr(rst, "render_piece", lambda t, d: here.append(1) or real(t, d))
    monkeypatch.setattr(rst_parallel, "PARALLEL_CHARS", 0)
    real_rendered = rst_parallel.rendered
    monkeypatch.setattr(
        rst_parallel,
        "rendered",
        lambda parts, render, size, module: real_rendered(
            parts, render, size, module, helper_first=True
        ),
    )
    both = rst.parse_rst(text, "guide.rst")
    count = len(rst_pieces.pieces(text))
    assert count >= 10
    assert 0 < len(here) < count  # this process rendered some pieces, the helper the others
    assert both.text == alone.text
    assert both.lines == alone.lines and both.headings == alone.headings


def test_a_helper_that_cannot_run_leaves_the_work_to_this_process(small_pieces, monkeypatch):
    text = _sphinx_like(30)
    alone = _one_process(text, monkeypatch)
    monkeypatch.setattr(rst_parallel, "PARALLEL_CHARS", 0)
    monkeypatch.setattr(sys, "executable", "/bin/false")  # starts, then exits at once
    assert rst.parse_rst(text, "guide.rst").text == alone.text
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")  # cannot start
    assert rst.parse_rst(text, "guide.rst").lines == alone.lines


def test_the_helper_is_stopped_when_the_parent_stops_early(small_pieces, monkeypatch):
    parts = [(p.text, p.depth) for p in rst_pieces.pieces(_sphinx_like(30))]
    monkeypatch.setattr(rst_parallel, "PARALLEL_CHARS", 0)
    started: list[rst_parallel._Helper] = []
    real_start = rst_parallel._Helper.start
    monkeypatch.setattr(
        rst_parallel._Helper,
        "start",
        classmethod(lambda cls, p, m: started.append(real_start(p, m)) or started[-1]),
    )
    it = rst_parallel.rendered(parts, rst.render_piece, 10**9, "ragsift.sources.rst")
    next(it)
    it.close()  # (an exception in the consumer, a KeyboardInterrupt: the same finally)
    assert started and started[0].proc.returncode is not None
