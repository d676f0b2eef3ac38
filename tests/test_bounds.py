"""Bounded work per document (issue 30, item 5): no timing here (a busy machine must not fail
them); what is pinned is how the work is divided and how much memory it allocates
(``tracemalloc``: allocations, not time, so the same on any machine).

- A long ``.rst`` is given to docutils in pieces (``sources.rst_pieces``) whose rendered
  text, line map and heading trails are those of the whole parse, offsets exact.
- A long markdown text is given to markdown-it in pieces; the same document as one parse.
- Past a bound (a stretch that cannot be cut, nesting too deep) the file is read as plain
  text with one warning line naming it.
- A long table within the bound is cut between its rows (rst simple and grid tables, GFM
  tables): the same document as the whole table, and pieces that slice the file.
- Tables and deep nesting: peak memory under 20x the file's bytes for every format.
"""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

import pytest

from ragsift.sources import markdown as md
from ragsift.sources import markdown_pieces as md_pieces
from ragsift.sources import rst_pieces
from ragsift.sources.loader import load_document
from ragsift.sources.sourcefile import SourceFile
from tests.conftest import run_cli

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "honey",
    "garden",
    "index",
    "query",
    "token",
    "section",
    "vector",
    "model",
]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))).capitalize() + "."


def _sphinx_like(sections: int, seed: int = 30) -> str:
    """A Sphinx-shaped page: a title, sections and subsections, lists, code, notes, roles,
    references to titles of other sections and a substitution defined at the end."""
    rng = random.Random(seed)
    out = ["=========\nThe guide\n=========\n\n", "Intro |project| text.\n\n"]
    for k in range(sections):
        title = f"Section {k}"
        out.append(
            f"{title}\n{'=' * len(title)}\n\n{_sentence(rng)} See `Section {max(k - 3, 0)}`_"
            f" and :func:`run_{k}`.\n\n"
        )
        for j in range(2):
            sub = f"Part {k}.{j}"
            out.append(f"{sub}\n{'-' * len(sub)}\n\n{_sentence(rng)} {_sentence(rng)}\n\n")
            out.append(f"* {_sentence(rng)}\n* {_sentence(rng)}\n\n")
            if j:
                out.append(f".. code-block:: python\n\n   def f{k}():\n\n       return {k}\n\n")
            else:
                out.append(f".. note::\n\n   {_sentence(rng)}\n\n")
            out.append(f"1. first\n2. second\n\n{_sentence(rng)} |project| again.\n\n")
    out.append(".. |project| replace:: Ragsift\n")
    return "".join(out)


def _load(path: Path):
    data = path.read_bytes()
    return load_document(SourceFile(path=path, relpath=path.name, size=len(data), mtime=0.0), data)


def _rst(tmp_path: Path, text: str, name: str = "doc.rst"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return _load(path)


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- reStructuredText ---------------------------------------------------------------------


def test_a_long_rst_is_parsed_in_bounded_pieces_as_the_whole_would_be(tmp_path, monkeypatch):
    from ragsift.sources import rst

    text = _sphinx_like(60)
    monkeypatch.setattr(rst_pieces, "PIECE_CHARS", 10**9)
    monkeypatch.setattr(rst_pieces, "PIECE_LINES", 10**9)
    whole = _rst(tmp_path, text)
    given: list[int] = []
    real = rst._doctree
    monkeypatch.setattr(rst, "_doctree", lambda t: given.append(len(t)) or real(t))
    monkeypatch.setattr(rst_pieces, "PIECE_CHARS", 2048)
    cut = _rst(tmp_path, text)
    assert len(given) >= 10 and max(given) < 2048 + 1500, given  # a piece and a stub list
    assert not cut.warnings
    assert cut.text == whole.text  # references across pieces render as in the whole parse
    assert "Ragsift again" in cut.text and "`Section" not in cut.text
    assert cut.lines == whole.lines and cut.headings == whole.headings
    assert cut.headings.at(cut.text.index("Part 41.1")) == ("The guide", "Section 41", "Part 41.1")


def test_pieces_slice_the_file_exactly_and_start_at_the_top_level():
    text = _sphinx_like(40)
    parts = rst_pieces.pieces(text, 1500)
    assert len(parts) > 10
    lines = text.splitlines(keepends=True)
    bounds = [p.first_line for p in parts] + [len(lines)]
    assert bounds[0] == 0 and bounds == sorted(set(bounds))
    for p, end in zip(parts, bounds[1:]):
        own = "".join(lines[p.first_line : end])
        assert p.text.startswith(own)  # the file's lines, then any stub targets
        assert not p.text[:1].isspace()  # never inside an indented block
        stubs = p.text[len(own) :]
        assert all(s.startswith(".. ") for s in stubs.split("\n\n") if s.strip()), stubs


def test_rst_chunks_slice_the_document_exactly(tmp_path, monkeypatch):
    from ragsift.chunkers import make_chunker
    from ragsift.ingest.records import prepared

    monkeypatch.setattr(rst_pieces, "PIECE_CHARS", 2048)
    doc = _rst(tmp_path, _sphinx_like(30))
    chunker = make_chunker("recursive", tokenizer="chars", size=300)
    chunks = chunker.chunk(prepared(chunker, doc))
    assert len(chunks) > 20
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text


def _simple_table(rows: int) -> str:
    out = [
        "Data\n====\n\nThe rows.\n\n",
        "=====  =======  =====\nid     name     value\n",
        "=====  =======  =====\n",
    ]
    out += [f"{i:<5}  {WORDS[i % len(WORDS)]:<7}  {i * 7 % 1000}\n" for i in range(rows)]
    out.append("=====  =======  =====\n\nAfter the table.\n")
    return "".join(out)


def test_past_the_block_bound_an_rst_is_read_as_text_with_one_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(rst_pieces, "MAX_BLOCK_LINES", 50)
    monkeypatch.setattr(rst_pieces, "PIECE_LINES", 20)
    text = _simple_table(80)
    doc = _rst(tmp_path, text)
    assert doc.text == text and doc.headings is None
    assert len(doc.warnings) == 1
    assert doc.warnings[0].startswith("lines 6-90 are one block of 85 lines")
    assert doc.warnings[0].endswith("read as plain text")


def test_a_table_within_the_bound_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(rst_pieces, "PIECE_LINES", 20)
    doc = _rst(tmp_path, _simple_table(40))
    assert not doc.warnings
    assert "39 | fox | 273" in doc.text and "=====" not in doc.text


def test_nesting_past_the_depth_bound_is_read_as_text(tmp_path):
    text = "".join("  " * i + f"- item {i}\n\n" for i in range(40))
    doc = _rst(tmp_path, text)
    assert doc.text == text
    assert doc.warnings == (
        f"line {2 * rst_pieces.MAX_DEPTH + 3} is nested more than "
        f"{rst_pieces.MAX_DEPTH} indentation levels deep, past the "
        f"reStructuredText reader's bound of {rst_pieces.MAX_DEPTH}; "
        "read as plain text",
    )


def test_list_markers_on_one_line_count_as_nesting(tmp_path):
    """``- - - … x``: each marker opens a list inside the last, as indentation would (100 of
    them parsed at 4.3 MB for 202 bytes, past MAX_DEPTH); a table row of list-table
    (``* - cell``) and a few markers stay parsed."""
    deep = _rst(tmp_path, "- " * (rst_pieces.MAX_DEPTH + 2) + "x\n")
    assert deep.text.startswith("- - -") and len(deep.warnings) == 1
    assert "nested more than" in deep.warnings[0]
    shallow = _rst(tmp_path, "Title\n=====\n\n- - - x\n\n* - cell\n  - other\n", "s.rst")
    assert not shallow.warnings and "x" in shallow.text and "# Title" in shallow.text


def test_the_cli_names_a_file_past_the_bound_in_one_line(tmp_path):
    rows = rst_pieces.MAX_BLOCK_LINES + 1
    (tmp_path / "big.rst").write_text(_simple_table(rows), encoding="utf-8")
    (tmp_path / "small.rst").write_text(_simple_table(10), encoding="utf-8")
    out = run_cli("chunk", "--tokenizer", "chars", str(tmp_path))
    assert out.returncode == 0, out.stderr
    lines = out.stderr.strip().splitlines()
    warned = [line for line in lines if "warning" in line]
    assert len(warned) == 1, lines
    assert "big.rst" in warned[0] and "read as plain text" in warned[0]
    assert f"lines 6-{rows + 10} are one block of {rows + 5:,} lines" in warned[0]
    assert "2 files, 2 parsed, 0 skipped" in lines[-1]


def test_a_table_dense_rst_holds_one_bounded_doctree_at_a_time(tmp_path, monkeypatch):
    """Tables of 60 rows (a whole parse: ~300x the bytes of a table, all alive at once):
    each piece's doctree has at most a piece's nodes, whatever the file's size, and is freed
    as soon as it is rendered, without waiting for the cyclic collector."""
    import gc
    import weakref

    from ragsift.sources import rst

    trees: list[tuple[list[weakref.ref], int]] = []  # (some of its nodes, its node count)
    real = rst._doctree

    def recording(text):
        tree = real(text)
        nodes = list(tree.findall())[1:]  # (the document's empty shell stays with its parser)
        trees.append(([weakref.ref(n) for n in nodes[::20] if not isinstance(n, str)], len(nodes)))
        return tree

    monkeypatch.setattr(rst, "_doctree", recording)
    most: list[int] = []
    for tables in (20, 80):
        text = "".join(
            f"Table {k}\n\n" + _simple_table(60).split("\n\n", 2)[2] + "\n" for k in range(tables)
        )
        trees.clear()
        gc.disable()
        try:
            doc = _rst(tmp_path, text)
            assert all(r() is None for refs, _ in trees for r in refs)  # freed at once
        finally:
            gc.enable()
        assert not doc.warnings and len(trees) >= tables * 64 // rst_pieces.PIECE_LINES
        most.append(max(n for _, n in trees))
    assert most[1] <= most[0] * 1.1, most  # a piece's nodes, not the file's


def test_a_giant_rst_table_stays_under_20x_its_bytes(tmp_path):
    text = _simple_table(20_000)  # past the bound: read as text
    path = tmp_path / "giant.rst"
    path.write_text(text, encoding="utf-8")
    peak = _peak(lambda: _load(path))
    assert peak < 20 * len(text), (peak, len(text))


# -- long tables, cut between rows (issue 30) ----------------------------------------------


def _whole_and_cut(tmp_path, monkeypatch, text: str):
    """The document of ``text`` with its tables parsed whole, and as the reader parses it."""
    monkeypatch.setattr(rst_pieces, "PIECE_ROWS", 10**9)
    whole = _rst(tmp_path, text)
    monkeypatch.undo()
    return whole, _rst(tmp_path, text)


def _long_simple_table(rows: int, continued: bool = True) -> str:
    """A simple table with a header, rows that go on over lines whose first column is blank,
    blank lines between some rows, and cells with inline literals and roles (``continued``;
    else a line a row)."""
    out = [
        "Data\n====\n\nThe rows, see :func:`load`.\n\n",
        "=======  ================  ======\nid       name              value\n",
        "=======  ================  ======\n",
    ]
    for i in range(rows):
        out.append(f"r{i:04d}    {WORDS[i % 12]:<16}  {i * 7}\n")
        if i % 7 == 3 and continued:
            out.append(f"         {'``' + WORDS[(i + 5) % 12] + '`` more':<16}  and more\n")
        if i % 11 == 5 and continued:
            out.append(f"         :func:`f{i}`\n\n")
    out.append("=======  ================  ======\n\nAfter the table.\n\nEnd\n---\n\nDone.\n")
    return "".join(out)


def _long_grid_table(rows: int) -> str:
    """A grid table with a header and rows of one to three lines."""

    def line(a: str, b: str) -> str:
        return f"| {a:<6} | {b:<14} |\n"

    sep = "+--------+----------------+\n"
    out = ["Grid\n====\n\n", sep, line("id", "text"), sep.replace("-", "=")]
    for i in range(rows):
        out.append(line(f"g{i:04d}", WORDS[i % 12]))
        for k in range(i % 3):
            out.append(line("", f"line {k} of {i}"))
        out.append(sep)
    out.append("\nAfter the grid.\n")
    return "".join(out)


@pytest.mark.parametrize("make", [_long_simple_table, _long_grid_table])
def test_a_long_rst_table_is_cut_between_rows_as_the_whole_would_be(tmp_path, monkeypatch, make):
    text = make(600)
    whole, cut = _whole_and_cut(tmp_path, monkeypatch, text)
    parts = rst_pieces.pieces(text)
    assert len(parts) >= 600 // rst_pieces.PIECE_ROWS  # (cut between its rows)
    assert (cut.text, cut.lines, cut.headings) == (whole.text, whole.lines, whole.headings)
    assert not cut.warnings and cut.text.count("id | ") == 1  # the header once
    if make is _long_simple_table:
        assert "r0597 | section | 4179" in cut.text
        assert "r0003 | fox\ntoken more | 21\nand more" in cut.text  # (a row on two lines)
    else:
        assert "g0599 | model" in cut.text and "g0599 | model line 0 of 599" not in cut.text


def test_table_pieces_slice_the_file_exactly():
    """Each piece is the file's lines from ``first_line + lead`` on; its ``lead`` lines (a
    simple table's border) and what ends a piece cut in a table (the border, or the grid's
    row separator) are what make its rows a table."""
    for text in (_long_simple_table(300), _long_grid_table(300)):
        lines = text.splitlines(keepends=True)
        parts = rst_pieces.pieces(text)
        starts = [p.first_line + p.lead for p in parts] + [len(lines)]
        assert starts[0] == 0 and starts == sorted(set(starts))
        assert any(p.lead for p in parts) == text.startswith("Data")
        for p, end in zip(parts, starts[1:]):
            head = p.text.splitlines(keepends=True)[: p.lead]
            assert all(rst_pieces._TABLE_BORDER.match(h) for h in head)
            own = "".join(lines[p.first_line + p.lead : end])
            rest = p.text[len("".join(head)) :]
            assert rest.startswith(own)
            closing = rest[len(own) :]
            if closing:  # (a piece cut in a table; the last piece ends as the file does)
                assert closing in (lines[5], "+--------+----------------+\n")
            else:
                assert p is parts[-1]


def test_rows_that_repeat_or_follow_a_long_block_are_cut_as_the_whole_would_be(
    tmp_path, monkeypatch
):
    """Each row says the lines docutils numbers its cells with, cut or whole: rows that
    repeat (which a search for a row's words found at the first of them) and a table after
    a long block are cut, and give the whole table's document."""
    repeated = "=====  =====\na      b\n=====  =====\n" + "yes    no\n" * 200 + "=====  =====\n"
    after_code = (
        "Code::\n\n"
        + "".join(f"    line {i}\n" for i in range(100))
        + "\n"
        + _long_simple_table(200).split("\n\n", 2)[2]
    )
    grid = _long_grid_table(200).replace("g0", "gg").replace("| gg", "| g0", 1)
    for text in (repeated, after_code, grid):
        assert len(rst_pieces.pieces(text)) > 3
        whole, cut = _whole_and_cut(tmp_path, monkeypatch, text)
        assert (cut.text, cut.lines, cut.headings) == (whole.text, whole.lines, whole.headings)
    source = text.splitlines()
    rendered = cut.text.split("\n")
    for k, line in enumerate(rendered[: len(cut.lines.values)]):  # (rows of 1 to 3 lines)
        if line.startswith(("gg", "line ")):
            assert line.split(" | ")[-1] in source[cut.lines.values[k] - 1], line


def test_a_table_docutils_may_number_nothing_in_a_row_of_is_parsed_whole(tmp_path, monkeypatch):
    """A row whose only cell is a comment, or a grid row with no words: docutils numbers
    nothing in it, and the renderer searches for it near the block before, which a piece
    does not see: not cut, the same document. So is any table of a document with
    footnotes (pieces would number them each from 1)."""
    import re

    # (rows that would start a piece: r0032, g0015)
    comment = re.sub(r"(?m)^r0032 .*$", ".. c", _long_simple_table(200))
    blank_row = re.sub(r"(?m)^\| g0015 .*$", "|        |                |", _long_grid_table(200))
    footnotes = (
        "Before [#]_.\n\n" + _long_simple_table(200) + "\nAfter [#]_.\n\n.. [#] A.\n.. [#] B.\n"
    )
    for text in (comment, blank_row, footnotes):
        assert max(p.text.count("\n") for p in rst_pieces.pieces(text)) > 250  # (whole)
        whole, cut = _whole_and_cut(tmp_path, monkeypatch, text)
        assert (cut.text, cut.lines) == (whole.text, whole.lines)


def test_long_tables_of_random_cells_are_cut_as_the_whole_would_be(tmp_path, monkeypatch):
    """Simple and grid tables of random cells (words, literals, roles, emphasis, references,
    substitutions, empty cells, rows of several lines, repeated rows), cut every few rows:
    the whole table's document."""
    rng = random.Random(30)
    cells = [
        "",
        "",
        "x",
        "``lit``",
        ":func:`f`",
        "*em*",
        "**st** x",
        "`ref`_",
        "|s|",
        "\\",
        "a `ref`_ b",
        "word, (x)",
        *WORDS,
    ]
    cut_tables = 0
    for _ in range(12):
        rows = []
        for _i in range(rng.randint(20, 60)):
            block = [[rng.choice(cells) for _ in range(3)] for _ in range(rng.randint(1, 3))]
            if rows and rng.random() < 0.3:
                block = rows[-1]
            rows.append(block)
        if rng.random() < 0.5:
            border = "  ".join(["=" * 12] * 3) + "\n"
            table = [border, "a             b             c\n", border]
            for block in rows:
                block[0][0] = block[0][0].strip() or "z"
                for k, row in enumerate(block):
                    table.append(
                        "  ".join(
                            f"{c if k == 0 or j else '':<12}" for j, c in enumerate(row)
                        ).rstrip()
                        + "\n"
                    )
            table.append(border)
        else:
            sep = "+" + "+".join(["-" * 14] * 3) + "+\n"
            table = [sep, "| a            | b            | c            |\n", sep.replace("-", "=")]
            for block in rows:
                table += ["|" + "|".join(f" {c:<12} " for c in row) + "|\n" for row in block]
                table.append(sep)
        text = (
            "Title\n=====\n\nIntro |s|.\n\n"
            + "".join(table)
            + "\nAfter.\n\n.. _ref: https://example.com\n.. |s| replace:: Ragsift\n"
        )
        monkeypatch.setattr(rst_pieces, "PIECE_ROWS", 8)
        cut_tables += len(rst_pieces.pieces(text)) > 1
        monkeypatch.undo()
        monkeypatch.setattr(rst_pieces, "PIECE_ROWS", 10**9)
        whole = _rst(tmp_path, text)
        monkeypatch.setattr(rst_pieces, "PIECE_ROWS", 8)
        cut = _rst(tmp_path, text)
        monkeypatch.undo()
        assert (cut.text, cut.lines, cut.headings) == (whole.text, whole.lines, whole.headings)
        assert not cut.warnings
    assert cut_tables >= 10


def test_the_target_scan_finds_what_one_pattern_did():
    """``_targets`` (two patterns that start with a literal, searched fast) finds the names
    one MULTILINE pattern with docutils' start rule finds, tried at every position."""
    import re

    # an inline target starts a text or follows whitespace, an opener or a delimiter
    # (docutils' rule: ``[1]_`ref`_`` defines nothing)
    old = re.compile(
        r"^\.\. _(`[^`]+`|[^:`\n][^:\n]*):|(?:(?<![\s\S])|(?<=[\s'\"(<\[{\-/:]))"
        r"_`([^`\n]+)`",
        re.MULTILINE,
    )
    bits = [
        ".. _",
        ".. |",
        "_`",
        "`",
        ":",
        "\n",
        " ",
        "a",
        "B",
        "x y",
        "_",
        "|",
        "é",
        "\r\n",
        ".. _`a\nb`:",
        "w_`v`",
        "]",
        "(",
        "-",
        ".",
    ]
    rng = random.Random(30)
    for _ in range(20_000):
        text = "".join(rng.choice(bits) for _ in range(rng.randint(0, 14)))
        assert rst_pieces._targets(text) == {
            rst_pieces._name(m.group(1) or m.group(2)) for m in old.finditer(text)
        }, text


def _peak_collected(fn) -> int:
    """``_peak`` after a full collection: the collector's later passes (and so the peak,
    which counts the cycles not yet freed) come at the same allocations every run."""
    import gc

    gc.collect()
    return _peak(fn)


@pytest.mark.parametrize("rows", [2_000, 3_900])
def test_an_rst_table_within_the_bound_is_parsed_in_bounded_pieces(tmp_path, rows):
    """Before: a table within the bound was parsed whole (2,000 rows: 283x its bytes in the
    bench). Cut, no piece holds more than PIECE_ROWS of its rows."""
    text = _long_simple_table(rows, continued=False)
    path = tmp_path / "t.rst"
    path.write_text(text, encoding="utf-8")
    _load(path)  # (docutils' first use: its caches)
    assert max(p.text.count("\n") for p in rst_pieces.pieces(text)) < 2 * rst_pieces.PIECE_ROWS
    assert _peak_collected(lambda: _load(path)) < 40 * len(text)


def test_an_rst_table_within_the_bound_stays_under_20x_its_bytes(tmp_path):
    """Cut between rows, and each piece's parser freed at once (``rst._release_parser``:
    docutils' state machine and states are cycles the collector would free late)."""
    text = _long_simple_table(2_000, continued=False)
    path = tmp_path / "t.rst"
    path.write_text(text, encoding="utf-8")
    _load(path)
    assert _peak_collected(lambda: _load(path)) < 20 * len(text)


# -- markdown -----------------------------------------------------------------------------


def _markdown(sections: int, seed: int = 5) -> str:
    rng = random.Random(seed)
    out = ["# Guide [intro][ref]\n\nSome <b>bold</b> text &amp; more.\n\n"]
    for k in range(sections):
        out.append(
            f"## Part {k}\n\n{_sentence(rng)}\n\n| a | b |\n|---|---|\n"
            f"| {k} | x <i>y</i> |\n| {k + 1} | z |\n\n"
            f"```\n# not a heading {k}\n\n\nstill code\n```\n\n"
            f"- {_sentence(rng)}\n\n  {_sentence(rng)}\n- item\n\n<!-- a comment\n\n"
            f"# inside it -->\n\nSetext {k}\n---------\n\n"
        )
    out.append("[ref]: https://example.com\n")
    return "".join(out)


def _parsed_sources(monkeypatch) -> list[str]:
    """Every text the markdown reader's parser parses from now on (the real parser parses
    it), in order."""
    seen: list[str] = []
    real = md_pieces.parser()

    class Recording:
        def __getattr__(self, name):
            return getattr(real, name)

        def parse(self, src, env=None):
            seen.append(src)
            return real.parse(src, env)

    monkeypatch.setattr(md_pieces, "parser", lambda: Recording())
    return seen


def test_a_long_markdown_is_parsed_in_pieces_as_the_whole_would_be(monkeypatch):
    text = _markdown(80)
    monkeypatch.setattr(md_pieces, "PIECE_CHARS", 10**9)
    whole = md.parse_markdown(text, "a.md")
    whole_tables = md.render_markdown_tables(whole)
    monkeypatch.setattr(md_pieces, "PIECE_CHARS", 2048)
    parsed = _parsed_sources(monkeypatch)
    cut = md.parse_markdown(text, "a.md")
    cut_tables = md.render_markdown_tables(cut)
    sizes = [len(src) for src in parsed]
    assert len(sizes) > 10 and max(sizes) < 4096
    assert not cut.warnings
    assert (cut.text, cut.lines, cut.headings) == (whole.text, whole.lines, whole.headings)
    assert (cut_tables.text, cut_tables.lines, cut_tables.headings) == (
        whole_tables.text,
        whole_tables.lines,
        whole_tables.headings,
    )
    assert cut.headings.at(cut.text.index("Setext 70")) == ("Guide intro", "Setext 70")
    assert "<b>" not in cut.text and "not a heading 3" in cut.text


def _md_table(rows: int) -> str:
    return "# Data\n\nIntro.\n\n| id | name | value |\n|---|---|---|\n" + "".join(
        f"| {i} | {WORDS[i % len(WORDS)]} | {i * 7} |\n" for i in range(rows)
    )


def test_past_the_block_bound_a_markdown_file_is_read_as_text(monkeypatch):
    monkeypatch.setattr(md_pieces, "PIECE_CHARS", 1024)
    text = _md_table(md_pieces.MAX_BLOCK_LINES + 1)
    doc = md.parse_markdown(text, "t.md")
    assert doc.text == text and doc.headings is None
    assert len(doc.warnings) == 1 and doc.warnings[0].startswith(
        f"lines 5-{md_pieces.MAX_BLOCK_LINES + 7} are one block of {md_pieces.MAX_BLOCK_LINES + 3:,} lines"
    )
    assert md.render_markdown_tables(doc) is doc


@pytest.mark.parametrize("kind", ["table", "table rendered", "nested lists", "quotes"])
def test_markdown_tables_and_nesting_stay_under_20x_their_bytes(kind):
    if kind.startswith("table"):
        text = _md_table(20_000)
    elif kind == "nested lists":
        text = "# Deep\n\n" + "".join("  " * i + f"- item {i}\n" for i in range(2_000))
    else:
        text = "# Deep\n\n" + ">" * 50_000 + " quoted\n"
    md.parse_markdown("# warm\n", "w.md")

    def run():
        doc = md.parse_markdown(text, "t.md")
        if kind == "table rendered":
            md.render_markdown_tables(doc)

    assert _peak(run) < 20 * len(text)


def _md_long_table(rows: int) -> str:
    """A table whose rows start with | or a letter, with inline markup, HTML and a link to a
    reference defined after it."""
    out = ["# Data\n\nIntro.\n\n| id | name | note |\n|:---|---:|---|\n"]
    for i in range(rows):
        note = "<b>bold</b> &amp; [ref][r]" if i % 5 == 0 else f"`code {i}`" if i % 5 == 1 else ""
        out.append(
            f"| {i} | {WORDS[i % 12]} | {note} |\n"
            if i % 4
            else f"r{i} | {WORDS[i % 12]} \\| x | {note}\n"
        )
    out.append("\n## After\n\ntext\n\n[r]: https://example.com\n")
    return "".join(out)


def test_a_long_markdown_table_is_cut_between_rows_as_the_whole_would_be(monkeypatch):
    text = _md_long_table(500)
    monkeypatch.setattr(md_pieces, "PIECE_ROWS", 10**9)
    whole = md.parse_markdown(text, "t.md")
    whole_tables = md.render_markdown_tables(whole)
    monkeypatch.undo()
    parsed = _parsed_sources(monkeypatch)
    cut = md.parse_markdown(text, "t.md")
    cut_tables = md.render_markdown_tables(cut)
    assert sum(src.startswith("| id | name") for src in parsed) >= 500 // md_pieces.PIECE_ROWS
    assert max(src.count("\n") for src in parsed) <= md_pieces.PIECE_ROWS + 3
    for a, b in ((whole, cut), (whole_tables, cut_tables)):
        assert (b.text, b.lines, b.headings, b.pages, b.warnings) == (
            a.text,
            a.lines,
            a.headings,
            a.pages,
            a.warnings,
        )
    assert "<b>" not in cut.text and "bold & [ref][r]" in cut.text
    assert "500. id: 499; name: query" in cut_tables.text  # numbered on across the pieces


def test_a_markdown_table_cut_gives_its_rows_tokens_once():
    """A piece that starts in a table is parsed with the table's header and delimiter rows
    first: those tokens have no map; the table's rows and cells have their own lines."""
    text = _md_long_table(200)
    starts = md.OffsetMap.of_lines(text).starts
    pieces = list(md_pieces.token_pieces(text, starts))
    assert len(pieces) >= 200 // md_pieces.PIECE_ROWS
    rows = [
        tok.map[0]
        for tokens, _ in pieces
        for tok in tokens
        if tok.type == "tr_open" and tok.map is not None
    ]
    assert rows == sorted(set(rows)) and len(rows) == 201  # the header once, every row once
    for tokens, _ in pieces[1:]:
        if tokens[0].type == "table_open":
            assert tokens[0].meta.get("continues")
            assert all(
                t.map is None
                for t in tokens[
                    1 : tokens.index(next(t for t in tokens if t.type == "thead_close")) + 1
                ]
            )


@pytest.mark.parametrize("rows", [2_000, 3_900])
def test_a_markdown_table_within_the_bound_stays_under_20x_its_bytes(rows):
    """Before: parsed whole, 130x its bytes (the bench's 2,000 rows). (Rendered as lists by
    ``render_markdown_tables``, its own ~600 bytes a row come on top: 26x for these rows of
    ~20 bytes, 17x for the bench's of ~40.)"""
    text = _md_table(rows)
    md.parse_markdown("# warm\n\n| a |\n|---|\n| b |\n", "w.md")
    assert _peak_collected(lambda: md.parse_markdown(text, "t.md")) < 20 * len(text)


# -- HTML and JSON ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["table", "nested", "unclosed", "main"])
def test_html_tables_and_nesting_stay_under_20x_their_bytes(kind):
    """``main``: a page with a content root, so the layout pass runs first (past
    ``html_layout.EVENTS_MAX`` both passes stream: the page is not held as events)."""
    from ragsift.sources.html import parse_html

    if kind == "main":
        text = (
            "<nav>menu</nav><main><h1>Data</h1><table>"
            + "".join(f"<tr><td>{i}</td><td>{WORDS[i % 12]}</td></tr>\n" for i in range(20_000))
            + "</table></main>"
        )
    elif kind == "table":
        text = (
            "<h1>Data</h1><table>"
            + "".join(f"<tr><td>{i}</td><td>{WORDS[i % 12]}</td></tr>\n" for i in range(20_000))
            + "</table>"
        )
    elif kind == "nested":
        text = "<body>" + "<div>" * 20_000 + "deep" + "</div>" * 20_000
    else:
        text = "<body>" + "<div><ul><li>x " * 20_000
    assert _peak(lambda: parse_html(text, "t.html")) < 20 * len(text)


@pytest.mark.parametrize("kind", ["objects", "lines"])
def test_json_rows_stay_under_20x_their_bytes(kind):
    import json

    from ragsift.sources.json_reader import parse_json

    rows = [{"id": i, "name": WORDS[i % 12], "value": i * 7} for i in range(20_000)]
    if kind == "objects":
        text = json.dumps(rows)
    else:
        text = "".join(json.dumps(r) + "\n" for r in rows)
    peak = _peak(lambda: parse_json(text, "t.json", lines_format=kind == "lines"))
    assert peak < 20 * len(text)


def test_a_long_fence_does_not_count_towards_the_markdown_bound(monkeypatch):
    """A fence is one token however long: 5,000 lines of code leave the file parsed."""
    monkeypatch.setattr(md_pieces, "PIECE_CHARS", 1024)
    text = (
        "# Title\n\n```python\n" + "x = 1\n" * (md_pieces.MAX_BLOCK_LINES + 1000) + "```\n\n"
        "## After\n\ntext\n"
    )
    doc = md.parse_markdown(text, "t.md")
    assert not doc.warnings
    assert doc.headings.at(text.index("text")) == ("Title", "After")
