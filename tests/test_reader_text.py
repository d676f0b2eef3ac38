"""Index what a reader reads (issue 28, point 5).

A. Raw HTML inside markdown is reduced to its text: tags of HTML elements, comments and
   ``<script>``/``<style>`` with their content go, character references are decoded; code
   spans and fenced code that show HTML as code keep it; a terminal block wrapped in a raw
   HTML element (``<div class="termy">``) is that element's HTML and is reduced too.
   ``document.text[start:end] == chunk.text`` and the line map still points at source lines.
B. A line break inside a hard-wrapped prose paragraph ranks below a sentence end (rule level
   ``soft_breaks: false``), so the default strategy cuts a paragraph longer than the budget at
   a sentence end within reach, in markdown and reStructuredText alike; line breaks between
   list items, in tables and code still come first.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.chunkers import RecursiveChunker, make_chunker
from ragsift.chunkers.rules import RecursiveRules
from ragsift.errors import RagsiftError

# what a documentation site's markdown holds (typer's docs: termy blocks, badges, <abbr>,
# <kbd>, <details>), plus code that shows HTML as code
SITE = """\
<p align="center">
  <a href="https://typer.tiangolo.com"><img src="logo.png" alt="Typer"></a>
</p>
<p align="center">
    <em>Typer, build great CLIs. Easy to code. Based on Python type hints.</em>
</p>

# First &amp; <b>simplest</b> steps

Hit <kbd>TAB</kbd> for completion, with 100% <abbr title="tested">coverage</abbr>.
Use `--output <file>` or --output <file>; the tag `<div>` is code and so is `&amp;`.
One line<br>another line, a <a href="https://x.org">link</a> &lt;angle&gt; &#39;q&#39; &#x2014; end.
<!-- a comment that spans
two lines and says secret --> after the comment.

<div class="termy">

```console
$ typer main.py
<font color="#4E9A06">Hello</font> <b>World</b> &apos;quoted&apos; &lt;str&gt;
<font color="#A5A5A1">╰──────────────╯</font>
```

</div>

<details>
<summary>Why a summary?</summary>
Because &amp; so, said <span style="color: green;">the docs</span>.
</details>

<script>
document.write("<b>never</b> alert");
</script>
<style>p { color: red }</style>

```html
<div class="shown">code &amp; <b>more</b></div>
```

| option | what <i>it</i> does |
| --- | --- |
| <code>--name</code> | the &lt;name&gt; to greet |

- an item with <em>emphasis</em>
  and a second line with <u>underline</u>

> quoted <i>text</i> &amp; more

Setext <i>title</i>
===================

The end.
"""

HTML_TAG = re.compile(
    r"</?(?:p|a|img|em|b|i|u|kbd|abbr|br|font|div|details|summary|span|"
    r"script|style|code)\b[^>]*>|<!--|-->"
)
ENTITY = re.compile(r"&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);")
SHOWN_CODE = ('```html\n<div class="shown">code &amp; <b>more</b></div>\n```', "`<div>`", "`&amp;`")


def _load(tmp_path, name: str, text: str, newline: str = "\n"):
    from ragsift.sources.discovery import SourceFile
    from ragsift.sources.loader import load_document

    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    st = path.stat()
    return load_document(SourceFile(path, name, st.st_size, st.st_mtime)), path


def _outside_code(text: str, start: int = 0, end: int | None = None) -> str:
    """``text[start:end]`` without the code that shows HTML (``SHOWN_CODE``, found in the
    whole ``text``: a chunk may hold part of it)."""
    end = len(text) if end is None else end
    keep = [True] * (end - start)
    for shown in SHOWN_CODE:
        for newline in ("\n", "\r\n"):
            for m in re.finditer(re.escape(shown.replace("\n", newline)), text):
                for k in range(max(m.start(), start), min(m.end(), end)):
                    keep[k - start] = False
    return "".join(ch for ch, kept in zip(text[start:end], keep) if kept)


# -- A: raw HTML ---------------------------------------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_raw_html_never_reaches_a_chunk_and_offsets_and_lines_hold(tmp_path, newline):
    doc, path = _load(tmp_path, "site.md", SITE, newline)
    source = path.read_bytes().decode("utf-8").splitlines()
    text = doc.text
    assert not HTML_TAG.search(_outside_code(text)), HTML_TAG.search(_outside_code(text))
    assert not ENTITY.search(_outside_code(text))
    for kept in (
        "Typer, build great CLIs.",
        "Hit TAB for completion, with 100% coverage.",
        "One line another line, a link <angle> 'q' \u2014 end.",
        " after the comment.",
        "$ typer main.py\nHello World 'quoted' <str>\n╰──────────────╯",
        "Why a summary?",
        "Because & so, said the docs.",
        "--output <file>;",
        "| --name | the <name> to greet |",
        "an item with emphasis",
        "and a second line with underline",
        "quoted text & more",
        "Setext title\n===",
    ):
        assert kept.replace("\n", newline) in text, kept
    for gone in ("secret", "alert", "color: red", "color: green", "logo.png", "4E9A06"):
        assert gone not in text
    for shown in SHOWN_CODE:  # code that shows HTML keeps it verbatim
        assert shown.replace("\n", newline) in text
    # every word of the reduced text is on the source line the line map names
    for m in re.finditer(r"[A-Za-z]{3,}", text):
        line = doc.line_at(m.start())
        assert m.group() in source[line - 1], (m.group(), line, source[line - 1])
    # headings are found as before, at the start of their (reduced) lines
    assert set(doc.headings.values) == {("First & simplest steps",), ("Setext title",)}
    assert all(s == 0 or text[s - 1] == "\n" for s in doc.headings.starts)
    for strategy, size in (
        ("recursive", 24),
        ("recursive", 200),
        ("markdown", 40),
        ("sentence", 30),
    ):
        chunker = make_chunker(strategy, size=size, tokenizer="cl100k")
        prepared = chunker.prepare(doc)
        chunks = chunker.chunk(prepared)
        assert len(chunks) > (1 if size < 100 else 0)
        for c in chunks:
            assert prepared.text[c.start : c.end] == c.text
            outside = _outside_code(prepared.text, c.start, c.end)
            assert not HTML_TAG.search(outside), (strategy, c.text)
            assert not ENTITY.search(outside), (strategy, c.text)
            first = re.search(r"[A-Za-z]{3,}", c.text)
            if first and strategy != "markdown":  # (its table rows hold their headers)
                line = prepared.line_at(c.start + first.start())
                assert first.group() in source[line - 1]


def test_code_shows_html_unless_a_raw_element_wraps_a_terminal_block(tmp_path):
    """Code shows HTML as code; a page without HTML stays byte for byte; rst text (already
    what a reader reads) is left alone; a terminal block inside ``<div>``/``</div>`` is
    reduced."""
    from ragsift.sources.markdown import parse_markdown

    plain = "# Title\n\nA < b and c > d, a & b, x<y.\n\n```\n<b>code</b>\n```\n"
    doc, _ = _load(tmp_path, "plain.md", plain)
    assert doc.text == plain
    rst = (
        "Title\n=====\n\nUse the ``<script>`` tag and ``&amp;`` in HTML; a <b> shown as "
        "text stays.\n"
    )
    doc, _ = _load(tmp_path, "page.rst", rst)
    assert doc.format == "rst"
    assert "Use the <script> tag and &amp; in HTML; a <b> shown as text stays." in doc.text

    wrapped_code = "<div>\n\n```python\nx = '<b>y</b>'\n```\n\n</div>\n"
    assert "x = '<b>y</b>'" in parse_markdown(wrapped_code, "t.md").text
    not_wrapped = "```console\n$ run <b>x</b>\n```\n\n<div>\n\n```console\n$ <b>y</b>\n```\n"
    text = parse_markdown(not_wrapped, "t.md").text  # the second block is not closed by </div>
    assert "$ run <b>x</b>" in text and "$ <b>y</b>" in text
    termy = '<div class="termy">\n\n```\n$ <b>run</b> &amp;\n```\n\n</div>\n'
    assert "$ run &" in parse_markdown(termy, "t.md").text


# -- B: hard-wrapped prose -----------------------------------------------------------------

SENTENCES = [
    "The hive is opened on a warm and calm afternoon when most foragers are out.",
    "Every frame of the brood box is lifted, read and put back in its place.",
    "A queen that lays well leaves a compact pattern of capped brood in the middle.",
    "Queen cells along the bottom bar mean the colony is getting ready to swarm.",
    "Stores at the top corners tell the keeper how much honey the bees have left.",
    "Notes are written down at once, because one inspection looks much like the next.",
] * 3


def _wrapped(width: int = 72) -> str:
    import textwrap

    return textwrap.fill(" ".join(SENTENCES), width)


def _starts_mid_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    if not before or "\n\n" in text[len(before) : start].replace("\r", ""):
        return False
    return text[start].islower() or not before.endswith((".", "!", "?", ":"))


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("size", [40, 64, 100])
def test_a_hard_wrapped_markdown_paragraph_is_cut_at_sentence_ends(tmp_path, newline, size):
    page = (
        "# Inspections\n\n" + _wrapped() + "\n\n- first step. Then more\n"
        "- second step. Then more\n- third step. Then more\n\n```\n"
        + "\n".join(f"x{i} = 1. # note. more" for i in range(40))
        + "\n```\n"
    )
    doc, _ = _load(tmp_path, "hive.md", page, newline)
    chunks = make_chunker("recursive", size=size, tokenizer="cl100k").chunk(doc)
    text = doc.text
    para = (text.index("The hive"), text.index("- first"))
    prose = [c for c in chunks if para[0] <= c.start < para[1]]
    assert len(prose) >= 3
    for c in chunks:
        assert text[c.start : c.end] == c.text
    assert not [c.text[:30] for c in prose if _starts_mid_sentence(text, c.start)]
    # line breaks between list items and inside code still come first
    for c in chunks:
        if c.start >= para[1]:
            assert c.start == 0 or text[c.start - 1] == "\n", c.text[:40]


@pytest.mark.parametrize("size", [40, 64, 100])
def test_a_hard_wrapped_rst_paragraph_is_cut_at_sentence_ends(tmp_path, size):
    page = "Inspections\n===========\n\n" + _wrapped(79) + "\n\n* one item\n* two items\n"
    doc, _ = _load(tmp_path, "hive.rst", page)
    assert doc.format == "rst"
    chunks = make_chunker("recursive", size=size, tokenizer="cl100k").chunk(doc)
    text = doc.text
    prose = [c for c in chunks if c.start >= text.index("The hive")]
    assert len(prose) >= 3
    assert not [c.text[:30] for c in prose if _starts_mid_sentence(text, c.start)]
    for c in chunks:
        assert text[c.start : c.end] == c.text
        word = re.search(r"[A-Za-z]+", c.text)
        assert word.group() in page.splitlines()[doc.line_at(c.start + word.start()) - 1]


def test_soft_breaks_are_the_line_breaks_inside_prose():
    from ragsift.chunkers.levels import soft_break

    assert soft_break("a sentence that wraps", "onto the next line.")
    assert soft_break("- an item that wraps", "  onto the next line.")
    assert soft_break("> a quote that wraps", "> onto the next line.")
    for before, after in [
        ("a line", ""),
        ("", "a line"),
        ("end of list", "- item"),
        ("intro", "1. item"),
        ("intro", "# Heading"),
        ("## Heading", "body"),
        ("hard break  ", "next"),
        ("hard break\\", "next"),
        ("| a | b |", "| c | d |"),
        ("a | b", "c | d"),
        ("text", "```"),
        ("```python", "code"),
        ("Title", "====="),
        ("text", "> quote"),
        ("text", "---"),
    ]:
        assert not soft_break(before, after), (before, after)


def test_a_paragraph_written_on_one_line_keeps_its_line_break(tmp_path):
    """Text with a paragraph per line and no blank lines (WikiText, chroma-dev's wikitexts):
    a line longer than any hard wrap (``WRAP_MAX``) ends its paragraph, so the chunker cuts
    at those line breaks first, as it did before soft breaks (on main before WRAP_MAX the
    whole article was one paragraph cut at sentence ends: chroma-dev recall fell 3 points)."""
    from ragsift.chunkers.levels import WRAP_MAX, soft_break

    long_line = " ".join(SENTENCES)[: WRAP_MAX + 20]
    assert not soft_break(long_line, "The next paragraph starts here.")
    assert soft_break(long_line[:WRAP_MAX], "the wrapped line goes on.")
    paragraphs = [" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(6)]
    assert all(len(p) > WRAP_MAX for p in paragraphs)
    doc, _ = _load(tmp_path, "wiki.md", " = Title = \n" + "\n".join(paragraphs) + "\n")
    text = doc.text
    chunks = make_chunker("recursive", size=len(paragraphs[0]) // 3, tokenizer="chars").chunk(doc)
    starts = {c.start for c in chunks}
    # every paragraph after the first is a chunk start (the cut falls at the line break, not
    # before it at a sentence end of the paragraph above; the short title line reads with
    # the first paragraph)
    at = [text.index(p) for p in paragraphs[1:]]
    assert set(at) <= starts


def test_the_prose_break_level_skips_soft_breaks_and_breaks_inside_fences():
    from ragsift.chunkers.levels import ProseBreakLevel

    text = "one\nsoft two\n\n- item\n- item two\nprose\nmore\n```\ncode\nmore code\n```\nend\n"
    prev = ProseBreakLevel(["\n\n", "\r\n", "\n", "\r"])
    # not: one|soft, item two|prose, prose|more (a lazy continuation line is prose too)
    want = [13, 14, 21, 43, 47, 52, 62, 66, 70]
    got, hi = [], len(text)
    while (b := prev.last_in(text, 0, 0, hi)) > 0:
        got.append(b)
        hi = b - 1
    assert sorted(got) == want
    nxt = ProseBreakLevel(["\n"], "next")
    assert nxt.last_in(text, 0, 0, text.index("more\n```")) == text.index("\n- item two")
    assert nxt.first_in(text, 0, 0, len(text)) == text.index("\n\n")
    assert prev.first_in(text, 0, 0, len(text)) == text.index("\n\n") + 1


_LINES = [
    "a line of prose that wraps",
    "on to the next line.",
    "",
    "- an item",
    "  more",
    "1. first",
    "# Heading",
    "```",
    "x = 1. y",
    "| a | b |",
    "> quoted",
    "> more quoted",
    "hard break  ",
    "====",
    "x" * 1500,
    "- " + "y" * 1200,
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_LINES), max_size=12), st.data())
def test_the_walk_back_over_line_breaks_finds_what_the_general_search_finds(lines, data):
    from ragsift.chunkers.levels import ProseBreakLevel

    text = "\n".join(lines)
    level = ProseBreakLevel(["\n\n", "\r\n", "\n", "\r"])
    lo = data.draw(st.integers(0, len(text)))
    hi = data.draw(st.integers(lo, len(text)))
    assert level._last_lf(text, lo, hi) == level._last_any(text, 0, lo, hi)


def test_soft_breaks_is_rule_data():
    default = RecursiveRules.named("default")
    assert [lv.soft_breaks for lv in default.levels] == [False, True, True, True, True]
    assert default.levels[0].to_dict()["soft_breaks"] is False
    assert "soft_breaks" not in default.levels[1].to_dict()
    assert RecursiveRules.from_dict(default.to_dict()) == RecursiveRules(default.levels, "default")
    assert RecursiveRules.named("markdown").levels[2].soft_breaks is False
    with pytest.raises(RagsiftError, match="soft_breaks"):
        RecursiveRules.from_dict([{"whitespace": True, "soft_breaks": False}])
    with pytest.raises(RagsiftError, match="soft_breaks"):
        RecursiveRules.from_dict([{"delimiters": ["\n"], "soft_breaks": "no"}])
    # a rule set without the key keeps every line break at its level (the 0.3 behaviour)
    plain = RecursiveChunker(
        size=30, tokenizer="cl100k", rules=[{"delimiters": ["\n"]}, {"delimiters": [". "]}]
    )
    chunks = plain.chunk(_wrapped())
    assert all(c.end == len(_wrapped()) or _wrapped()[c.end] == "\n" for c in chunks)
