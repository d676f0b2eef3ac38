"""A long markdown file's pieces are parsed only when they may hold a heading or HTML the
reader reduces (issue 40, item 7): ``<name>``s that are no HTML element (``--output
<file>``, WikiText's ``<unk>``) and ``&name;`` that is no character reference do not make a
piece parsed, and the document is the one a parse of every piece gives."""

import random

import pytest

from ragsift.sources import markdown
from ragsift.sources.markdown import may_have_edits

PLAIN = "the quick brown fox jumps over the lazy dog and the <file> or <unk> it names".split()

# each may change the text (an edit) or must be parsed as HTML: the superset test says yes
EDITS = [
    "Entities &amp; and &#42; here.",
    "A named reference &copy; alone.",
    "A numeric one &#x2014; alone.",
    "A <span>tag</span> inline.",
    "A comment <!-- gone --> inline.",
    "<?php echo 1; ?>",
    "<![CDATA[ x ]]>",
    "A custom <my-el>element</my-el>.",
    "<unk>\ntext &amp and more",  # an HTML block (a tag alone on its line): html.parser
    "<menuitem>\nlabel &copy here",  # an HTML block by name (no element of is_element's)
    "<menuitem\nx=1>\n&copy here",  # the same, its first line no whole tag
    "> <div>\n> quoted &lt block",
    "- <aside>\n  listed",
    '<a title="x>y">\ncontinued &gt',
]
# none of these changes the text: the superset test says no
TEXT = [
    "Use --output <file> to write it.",
    "The <unk> token and <unk> again.",
    " <unk> M Harrel , Telegram",
    "Growth Factor &bgr;1 and C/EBP&egr; levels",
    "p < 0.05 & q > 1, x<y and R&D",
    "<x\0y>\nnot a tag &amp",
    "<unk> starts this line and goes on",
]


@pytest.mark.parametrize("text", EDITS)
def test_what_may_be_reduced_is_parsed(text):
    assert may_have_edits(text)
    assert may_have_edits("plain words\n" + text.replace("\n", "\r\n") + "\nmore")


@pytest.mark.parametrize("text", TEXT)
def test_text_that_only_looks_like_html_is_not(text):
    assert not may_have_edits(text)
    assert not may_have_edits("plain words\n" + text + "\nmore")


def _long(rng: random.Random, size: int, rare: list[str]) -> str:
    out: list[str] = []
    total = 0
    while total < size:
        if rng.random() < 0.03:
            part = rng.choice(rare)
        else:
            part = " ".join(rng.choices(PLAIN, k=rng.randint(5, 60)))
        out.append(part)
        total += len(part) + 2
    return "\n\n".join(out)


def both_sides(monkeypatch, text: str):
    """The document with pieces declined by the test, and with every piece parsed; and how
    many pieces were declined."""
    original = markdown.token_pieces
    declined = []

    def counting(text, starts, need=None):
        def asked(src):
            declined.append(not need(src))
            return not declined[-1]

        return original(text, starts, asked)

    with monkeypatch.context() as m:
        m.setattr(markdown, "token_pieces", counting)
        skipped = markdown.parse_markdown(text, "a.md")
    with monkeypatch.context() as m:
        m.setattr(markdown, "token_pieces", lambda text, starts, need=None: original(text, starts))
        whole = markdown.parse_markdown(text, "a.md")
    return skipped, whole, sum(declined)


@pytest.mark.parametrize("seed", range(4))
def test_declined_pieces_read_the_same_document(monkeypatch, seed):
    rng = random.Random(seed)
    rare = EDITS + TEXT + ["# A heading", "Setext\n------", "```\n<div>&amp;\n```"]
    text = _long(rng, 300_000, rare)
    if seed % 2:
        text = text.replace("\n", "\r\n")
    skipped, whole, declined = both_sides(monkeypatch, text)
    assert skipped == whole


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("item", EDITS)
def test_one_reduction_among_placeholders_is_read(monkeypatch, item, crlf):
    """Each reduction alone in a long file of placeholders: its piece is parsed (the file
    reads as when every piece is), the others are not."""
    rng = random.Random(7)
    before, after = _long(rng, 150_000, TEXT), _long(rng, 150_000, TEXT)
    text = f"{before}\n\n{item}\n\n{after}"
    if crlf:
        text = text.replace("\n", "\r\n")
    skipped, whole, declined = both_sides(monkeypatch, text)
    assert whole.text != text  # the item is reduced: a piece declined wrongly would show
    assert skipped == whole
    assert declined >= 3


def test_placeholders_alone_leave_their_pieces_unparsed(monkeypatch):
    text = _long(random.Random(1), 300_000, TEXT)
    skipped, whole, declined = both_sides(monkeypatch, text)
    assert skipped == whole and skipped.text == text
    assert declined >= 4  # every piece: nothing in them is a heading or HTML to reduce


def test_the_html_block_names_is_element_does_not_know_are_listed():
    from markdown_it.common.html_blocks import block_names

    from ragsift.sources.html import is_element

    names = {*block_names, "script", "pre", "style", "textarea"}
    assert {n for n in names if not is_element(n)} == markdown.BLOCK_NAMES_NOT_ELEMENTS


def test_placeholder_lines_need_no_markdown_it(monkeypatch):
    def fail(line):
        raise AssertionError(f"markdown-it asked about {line!r}")

    monkeypatch.setattr(markdown, "_opens_html_block", fail)
    assert not may_have_edits(" <unk> M Harrel , Telegram\n<file> and <x>y\n- <unk> z")
