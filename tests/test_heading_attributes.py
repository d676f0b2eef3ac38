"""A heading's trailing attribute list (VitePress ``{#id}``, mkdocs attr_list ``{ #id }`` and
``{: #id .cls }``, Pandoc/MyST ``{#id .cls key=value}``) is markup, not the title: the markdown
reader leaves it out of the heading trail (and so of a chunk's ``headings`` and ``context``),
while the document's text stays the file's text, offsets and all."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragsift.sources.formats import reader_fingerprint
from ragsift.sources.markdown import heading_titles, parse_markdown
from ragsift.sources.markdown_pieces import PIECE_CHARS


def _titles(text: str, **kwargs) -> list[str]:
    doc = parse_markdown(text, "a.md", **kwargs)
    assert doc.text == text  # the file's text, attribute lists and all
    assert doc.headings is not None
    return [trail[-1] for trail in doc.headings.values]


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("## Install {#install}", "Install"),  # VitePress, Pandoc
        ("## Install { #install }", "Install"),  # mkdocs attr_list
        ("# Title {: #id .cls }", "Title"),  # attr_list's "{:" form
        ("# Title {:#id}", "Title"),
        ('## Options {#opts .wide data-x=1 title="a {b} c"}', "Options"),
        ("## Preface {.unnumbered}", "Preface"),
        ("# Preface {-}", "Preface"),  # Pandoc's shorthand for .unnumbered
        ("# Preface {- #pre}", "Preface"),
        ("## Size {width=100}", "Size"),
        ("## 响应式基础 {#reactivity-fundamentals}", "响应式基础"),
        ("## 响应式基础{#reactivity-fundamentals}", "响应式基础"),
        ("## リアクティビティーの基礎 {#reactivity-fundamentals}", "リアクティビティーの基礎"),
        ("## 事件 {#事件}", "事件"),
        ("## *Emphasised* `code` {#x}", "Emphasised code"),
        ("## Closed {#closed} ##", "Closed"),  # (markdown's closing sequence first)
    ],
)
def test_a_trailing_attribute_list_is_left_out_of_the_title(line, title):
    assert _titles(line + "\n\nBody.\n") == [title]


@pytest.mark.parametrize(
    "line",
    [
        "## The {foo} placeholder",  # braces mid-title
        "## Use {foo}",  # no #id, .class or key=value item
        "## {#only}",  # nothing but the braces
        "## { #only }",
        "## A {#x} b",  # not at the end
        "## Escaped \\{#x}",  # an escaped brace is text ("Escaped {#x}")
        "## Empty {}",
        "## Hash alone {#}",
        "## Unclosed {#x",
        "## Two words {#a b}",  # "b" is no item
        "## Range {1-2}",  # "1-2" is no item
        "## Minus {--}",
    ],
)
def test_braces_that_are_not_an_attribute_list_stay(line):
    (title,) = _titles(line + "\n\nBody.\n")
    assert title == " ".join(line.lstrip("#").split()).replace("\\{", "{")
    assert "{" in title


def test_only_the_last_attribute_list_goes():
    assert _titles("## Twice {#a} {#b}\n") == ["Twice {#a}"]


def test_trails_are_clean_and_offsets_stay_where_the_heading_lines_start():
    text = (
        "# 指南 {#guide}\n\n序。\n\n"
        "## 响应式基础 {#reactivity-fundamentals}\n\n正文。\n\n"
        "Setext {#setext .cls}\n======\n\n"
        "### Install { #install }\n\nText.\n"
    )
    doc = parse_markdown(text, "a.md")
    assert doc.text == text
    assert doc.headings is not None
    assert list(doc.headings.values) == [
        ("指南",),
        ("指南", "响应式基础"),
        ("Setext",),
        ("Setext", "Install"),
    ]
    assert list(doc.headings.starts) == [
        text.index("# 指南"),
        text.index("## 响应式"),
        text.index("Setext"),
        text.index("### Install"),
    ]
    before = parse_markdown(text.replace(" {#", " {x").replace("{ #", "{ x"), "a.md")
    assert before.headings is not None
    assert doc.headings.starts == before.headings.starts  # (braces of text: same places)
    assert doc.lines == before.lines


def test_a_file_with_raw_html_has_clean_trails_and_its_html_reduced():
    text = "# Guide <small>v2</small> {#guide}\n\n<b>Bold</b> text.\n"
    doc = parse_markdown(text, "a.md")
    assert doc.headings is not None
    assert list(doc.headings.values) == [("Guide v2",)]
    assert doc.text == "# Guide v2 {#guide}\n\nBold text.\n"  # (only the HTML is reduced)


def test_a_long_file_read_in_pieces_has_clean_trails_in_every_piece():
    section = "## Part {n} {{#part-{n}}}\n\n" + "Words of a paragraph. " * 40 + "\n\n"
    text = "# Book {#book}\n\n" + "".join(section.format(n=n) for n in range(400))
    assert len(text) > 3 * PIECE_CHARS
    doc = parse_markdown(text, "a.md")
    assert doc.text == text
    assert doc.headings is not None
    assert list(doc.headings.values) == [("Book",)] + [("Book", f"Part {n}") for n in range(400)]


def test_rst_titles_keep_their_braces():
    # an rst title's "{#id}" is its text: sources.rst reads titles through heading_titles
    # and, where those do not read as headings, parse_markdown(html=False); neither strips
    assert heading_titles(["# Config {#id}", "## Plain"]) == [(1, "Config {#id}"), (2, "Plain")]
    assert _titles("# Config {#id}\n\nBody.\n", html=False) == ["Config {#id}"]


def test_rst_reader_keeps_a_title_with_braces():
    from ragsift.sources.rst import parse_rst

    doc = parse_rst("Config {#id}\n============\n\nBody.\n", "a.rst")
    assert doc.headings is not None
    assert list(doc.headings.values) == [("Config {#id}",)]


def test_the_markdown_reader_number_is_raised_so_indexes_re_read_markdown():
    assert reader_fingerprint("markdown").split()[:2] == ["markdown", "6"]


def test_ragsift_chunk_shows_the_clean_headings(tmp_path):
    from ragsift.cli import app

    page = tmp_path / "page.md"
    page.write_text(
        "# 指南 {#guide}\n\n序言。\n\n## 响应式基础 {#reactivity-fundamentals}\n\n"
        + "正文。" * 30
        + "\n\n## The {foo} placeholder\n\nBody.\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app, ["chunk", str(page), "--strategy", "markdown", "--size", "48", "--tokenizer", "chars"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    trails = [row["headings"] for row in rows]
    assert ["指南", "响应式基础"] in trails
    assert ["指南", "The {foo} placeholder"] in trails
    for row in rows:
        assert "{#" not in " ".join(row["headings"]) and "{#" not in row["context"]
        # offsets into the file's own text, which keeps the attribute lists
        assert page.read_text(encoding="utf-8")[row["start"] : row["end"]] == row["text"]
    assert any("{#reactivity-fundamentals}" in row["text"] for row in rows)
    # a chunk that starts under the heading (not with it) has the trail in its context
    assert any(row["context"] == "指南 > 响应式基础\n\n" for row in rows)


def test_the_chunkers_own_scan_of_plain_text_leaves_the_list_out_too():
    """Text with no heading map (a ``.txt``, markdown read as plain text past the block bound)
    gets its trails from the chunkers' own scan (``chunkers.outline``): the same rule."""
    from ragsift.chunkers.outline import scan

    outline = scan("# Guide {#guide}\n\n## Install { #install } ##\n\n## The {foo} way\n")
    assert [h.title for h in outline.headings] == ["Guide", "Install", "The {foo} way"]
