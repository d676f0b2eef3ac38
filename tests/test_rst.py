"""reStructuredText through docutils (issue 23): section titles are heading trails, Sphinx's
directives and roles never fail a file or leave markup, code stays code, offsets and lines
hold; a file docutils cannot parse, or docutils missing, is read as text with one warning."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO, run_cli

SAMPLE = REPO / "tests" / "data" / "sphinx_api.rst"
FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
MARKUP = re.compile(r"^\s*\.\. [\w:.+-]+::|:[\w.+-]+(?::[\w.+-]+)?:`", re.M)
ADORNMENT = re.compile(r"^([=\-~^\"'#*+<>:._])\1{2,}\s*$")


def _doc():
    from ragsift.sources.discovery import SourceFile
    from ragsift.sources.loader import load_document

    st = SAMPLE.stat()
    return load_document(SourceFile(SAMPLE, "sphinx_api.rst", st.st_size, st.st_mtime))


def test_the_rendered_text_keeps_meaning_and_drops_markup():
    doc = _doc()
    assert doc.format == "rst" and not doc.warnings
    text = doc.text
    assert "# Flask API" in text and "## Application Object" in text
    assert "### Configuration Handling" in text
    assert "Build URLs\nwith url_for and flask.url_for" in text
    assert "create the app with\nFlask, and read the routing guide." in text
    assert "plain words" in text
    assert "class Flask" in text and "WSGI application" in text
    assert "Added in version 2.0. Support for async views." in text
    assert "Changed in version 2.2." in text
    assert "```\napp = Flask(__name__)\n \napp.run()\n```" in text  # the :: literal block
    assert "```python\n" in text and 'return "Hello"' in text
    assert "Note: Set SECRET_KEY before using sessions." in text
    assert "Warning: Never run the debugger in production." in text
    assert "DEBUG | enables debug" in text and "second item, see Flask" in text
    for gone in (
        ":members:",
        "maxdepth",
        "quickstart",
        "module:: flask",
        "single:",
        "Sphinx-style API page",
        "some-directive-nobody-knows",
        "|project|",
    ):
        assert gone not in text, gone
    assert not MARKUP.search(FENCE.sub("", text))
    assert not any(ADORNMENT.match(line) for line in text.splitlines())


def test_headings_are_trails_and_lines_point_into_the_rst_file():
    doc = _doc()
    source = SAMPLE.read_text(encoding="utf-8").splitlines()
    at = doc.text.index("Use the Flask.route decorator")
    assert doc.headings_at(at) == ("Flask API", "Routing")
    assert doc.headings_at(doc.text.index("DEBUG |")) == (
        "Flask API",
        "Application Object",
        "Configuration Handling",
    )
    for phrase, needle in (
        ("Use the Flask.route decorator", "Use the :meth:"),
        ('return "Hello"', 'return "Hello"'),
        ("Never run the debugger", "Never run the debugger"),
        ("app = Flask(__name__)", "app = Flask(__name__)"),
    ):
        line = doc.line_at(doc.text.index(phrase))
        assert needle in source[line - 1], (phrase, line, source[line - 1])


def test_chunks_of_the_defaults_hold_offsets_trails_and_no_markup():
    out = run_cli("chunk", str(SAMPLE), "--tokenizer", "cl100k", "--size", "64")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    doc = _doc()
    assert len(rows) > 3
    for r in rows:
        assert doc.text[r["start"] : r["end"]] == r["text"]
        assert r["headings"] and r["headings"][0] == "Flask API"
        assert not ADORNMENT.match(r["text"].splitlines()[0])
        assert not MARKUP.search(FENCE.sub("", r["text"]))
        assert 1 <= r["line_start"] <= r["line_end"] <= len(SAMPLE.read_text().splitlines())


def test_a_file_docutils_cannot_parse_is_read_as_text_with_one_warning(monkeypatch):
    """docutils itself raising (simulated: its failures are rare and version-specific)."""
    from ragsift.sources import rst

    def broken(text):
        raise ValueError("docutils could not parse it (SystemMessage: boom)")

    monkeypatch.setattr(rst, "_doctree", broken)
    doc = _doc()
    assert doc.format == "rst" and doc.text == SAMPLE.read_text(encoding="utf-8")
    assert doc.warnings == (
        "docutils could not parse it (SystemMessage: boom); read as plain text",
    )


def test_without_docutils_rst_is_read_as_text_with_one_warning(tmp_path):
    stub = tmp_path / "stub" / "docutils"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('hidden for this test')\n")
    proc = run_cli(
        "chunk",
        str(SAMPLE),
        "fixtures/sourdough.rst",
        "--tokenizer",
        "cl100k",
        env={"PYTHONPATH": str(stub.parent)},
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "docutils" in line]
    assert len(warnings) == 1 and "pip install docutils" in warnings[0]
    assert ".. autoclass:: Flask" in proc.stdout  # today's text reading


@pytest.mark.parametrize(
    "text",
    [
        "Title\n=====\n\n.. code-block::\n",
        "`unclosed\n\n.. |x|\n",
        "=====\n\nno title above\n\n* list\ntext\n",
        "",
    ],
)
def test_odd_rst_never_fails(text, tmp_path):
    f = tmp_path / "odd.rst"
    f.write_text(text + "\nSome words.\n", encoding="utf-8")
    proc = run_cli("chunk", str(f), "--tokenizer", "cl100k")
    assert proc.returncode == 0, proc.stderr
    assert "Some words." in proc.stdout


@pytest.mark.parametrize("size", [48, 64, 96, 128])
def test_a_code_block_that_fits_is_never_cut(size):
    """Literal and ``code-block`` blocks stay whole in the default (recursive) strategy when
    they fit the budget (issue 23: "never cut inside one that fits"); a longer one is cut as
    any text. Checked at several sizes, so a block lands on a chunk boundary in some of
    them."""
    from ragsift.chunkers import make_chunker
    from ragsift.chunkers.outline import scan
    from ragsift.ingest.records import prepared

    doc = _doc()
    chunker = make_chunker("recursive", tokenizer="cl100k", size=size)
    chunks = chunker.chunk(prepared(chunker, doc))
    fences = scan(doc.text).fences
    assert fences
    fitting = [(a, b) for a, b in fences if chunker.counter.count(doc.text[a:b]) <= size]
    assert fitting, "the fixture needs a code block that fits"
    for a, b in fitting:
        b = a + len(doc.text[a:b].rstrip())  # a chunk ends at its last non-space character
        holders = [c for c in chunks if c.start < b and a < c.end]
        assert len(holders) == 1, (size, doc.text[a:b][:60], [(c.start, c.end) for c in holders])
        assert holders[0].start <= a and b <= holders[0].end


def _rendered_lines(text: str) -> list[tuple[str, int]]:
    """Each rendered line of ``text`` with the source line it says it comes from."""
    from ragsift.sources.rst import parse_rst

    doc = parse_rst(text, "t.rst")
    return list(zip(doc.text.split("\n"), doc.lines.values))


def test_repeated_table_rows_each_map_to_their_own_line():
    """docutils gives a row no line; its cells' paragraphs have theirs: identical rows (which
    a search for the row's words put at the first of them) each say their own line, after a
    long block too (which such a search did not reach past)."""
    rows = "".join("yes    no\n" + ("\n" if k % 3 == 2 else "") for k in range(12))
    text = (
        "Intro::\n\n"
        + "".join(f"    code {i}\n" for i in range(80))
        + "\n"
        + "=====  =====\na      b\n=====  =====\n"
        + rows
        + "=====  =====\n\nAfter.\n"
    )
    source = text.splitlines()
    said = [line for rendered, line in _rendered_lines(text) if rendered == "yes | no"]
    expected = [n for n, line in enumerate(source, start=1) if line.startswith("yes")]
    assert len(expected) == 12 and said == expected
    assert ("a | b", source.index("a      b") + 1) in _rendered_lines(text)


def test_a_code_block_whose_first_row_repeats_above_it_maps_to_its_own_lines():
    """``make`` in one ``::`` block and ``make`` / ``make install`` in the next, two lines
    apart: the second block's rows point at their own lines, not at the first block's (every
    row of a block is matched, not only its first); doctest and nested blocks too."""
    text = (
        "Run this::\n\n    make\n\nand then this::\n\n    make\n    make install\n"
        "    echo done\n\n>>> make\n1\n\n- item::\n\n      make\n      make install\n"
    )
    source = text.splitlines()
    said = _rendered_lines(text)
    for row in ("make install", "echo done", ">>> make"):
        want = [n for n, line in enumerate(source, start=1) if line.strip() == row]
        assert [line for rendered, line in said if rendered.strip() == row] == want, row
    makes = [line for rendered, line in said if rendered.strip() == "make"]
    assert makes == [n for n, line in enumerate(source, start=1) if line.strip() == "make"]


def test_a_grid_table_with_rows_of_several_lines_maps_each_line():
    """A row of several lines starts at its first (an empty first cell there too), its
    rendered lines say the lines after it and none past the row's last: never the next
    row's or the separator's."""
    text = """Grid
====

+------+-------------+-------+
| id   | text        | more  |
+======+=============+=======+
| r1   | one         | x     |
|      | two         |       |
|      | three       |       |
+------+-------------+-------+
|      | empty first | y     |
| r2   | four        |       |
+------+-------------+-------+
| r1   | one         | x     |
|      | two         |       |
|      | three       |       |
+------+-------------+-------+
| r3   | a           | b     |
|      |             | c     |
|      |             | d     |
+------+-------------+-------+

After.
"""
    got = [(r, n) for r, n in _rendered_lines(text) if r]
    assert got == [
        ("# Grid", 1),
        ("id | text | more", 5),
        ("r1 | one", 7),
        ("two", 8),
        ("three | x", 9),
        ("r2 | empty first", 11),
        ("four | y", 12),
        ("r1 | one", 14),
        ("two", 15),
        ("three | x", 16),
        ("r3 | a | b", 18),
        ("c", 19),
        ("d", 20),
        ("After.", 23),
    ]


def test_a_csv_table_rows_are_found_by_their_words():
    """docutils numbers a ``csv-table``'s cells from 1 whatever its line: its rows are
    found by their words, as any block whose line is not known."""
    text = 'Intro.\n\n.. csv-table:: Data\n   :header: "h1", "h2"\n\n   "c1", "c2"\n   "c3", "c4"\n'
    got = dict(_rendered_lines(text))
    assert (got["h1 | h2"], got["c1 | c2"], got["c3 | c4"]) == (4, 6, 7)


def test_what_docutils_cannot_parse_keeps_its_words_on_their_lines():
    """A malformed table, an unknown directive and a code block with Sphinx's options
    (`:caption:`) were dropped with docutils' error message: every word a reader reads was
    lost without a warning. Their text is kept, each line mapped to its own source line."""
    text = (
        "Title\n=====\n\nBefore.\n\n"
        "+-------+--------+\n| a     | b      |\n+-------+--------+\n"
        "| honey | bees  swarm |\n+-------+--------+\n\n"
        ".. unknowndirective:: arg\n   :opt: 1\n\n   Important words inside.\n\n"
        "   .. nested-unknown::\n\n      Deeper words.\n\n"
        ".. code-block:: python\n   :caption: ``app.py``\n   :emphasize-lines: 2\n\n"
        "   app = Flask(__name__)\n   app.run()\n\nAfter.\n"
    )
    rows = _rendered_lines(text)
    src = text.splitlines()
    for row, line in rows:
        if row.strip() and not row.startswith(("#", "```")):
            assert row.strip() in src[line - 1], (row, line)
    rendered = "\n".join(r for r, _ in rows)
    assert "| honey | bees  swarm |" in rendered
    assert "Important words inside." in rendered and "Deeper words." in rendered
    assert "```python\napp = Flask(__name__)\napp.run()\n```" in rendered
    assert ":opt:" not in rendered and "unknowndirective" not in rendered
    assert ":caption:" not in rendered


def test_a_line_past_docutils_limit_is_read_as_text_with_one_warning(tmp_path):
    """docutils parses nothing of a file with a line over 10,000 characters (the document
    came out empty, no warning): it is read as plain text, with one line saying why."""
    from ragsift.sources.discovery import SourceFile
    from ragsift.sources.loader import load_document

    path = tmp_path / "long.rst"
    path.write_text(
        "Title\n=====\n\nA paragraph.\n\n" + "word " * 2_500 + "\n\nAfter.\n", encoding="utf-8"
    )
    st = path.stat()
    doc = load_document(SourceFile(path, "long.rst", st.st_size, st.st_mtime))
    assert "After." in doc.text and doc.text.count("word") == 2_500
    assert len(doc.warnings) == 1 and "10,000" in doc.warnings[0]
    assert "read as plain text" in doc.warnings[0]
