"""Chunker invariants, on every strategy: hypothesis on adversarial text, plus real corpora.

- ``text[start:end] == chunk.text``; chunks in order; disjoint unless overlap was asked for;
  together they cover every non-whitespace character;
- no chunk over the budget (``count(context + text) <= size``), no empty or whitespace-only
  chunk, ``tokens`` equals a fresh count of ``context + text``;
- deterministic, and ``chunk_batch`` equals chunking one by one.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsift.chunkers import (
    CharChunker,
    HeadingChunker,
    MarkdownChunker,
    ParagraphChunker,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
    WholeChunker,
    get_counter,
    make_chunker,
)
from ragsift.sources.document import Document

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO.parent / "shared" / "eval" / "chroma-dev" / "corpora"
CL100K = get_counter("cl100k")

FRAGMENTS = [
    "word",
    "Hello",
    "the",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\r\n\r\n",
    "\r",
    "\t",
    ". ",
    "! ",
    "? ",
    ",",
    ";",
    ":",
    "—",
    "...",
    "e.g.",
    "(",
    ")",
    '"',
    "'s",
    "don't",
    "<|endoftext|>",
    "<|fim_prefix|>",
    "日本語のテキストです。",
    "中文句子",
    "😀",
    "👩‍👩‍👧",
    "e\u0301",
    "\u0301\u0302",
    "\u00a0",
    "\u3000",
    "12345",
    "3.14",
    "x" * 40,
    "https://example.com/a?b=c",
    "# Title\n",
    "## Section two\n",
    "### Deep\n",
    "```\ncode line\n# not a heading\n```\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "<page_break page=2>",
    "- item\n",
    "Ünïcödé",
    "ß",
    "İ",
]
TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=50).map(
    "".join
)
SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("RAGSIFT_HYPOTHESIS_EXAMPLES", "1200")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def check(
    text: str,
    chunks,
    chunker,
    *,
    overlap: bool = False,
    covers: bool = True,
    counter=CL100K,
    slack: int = 0,
    source=None,
) -> None:
    """Assert every invariant of ``chunks`` cut from ``text``."""
    covered = bytearray(len(text))
    prev = None
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text.strip(), f"whitespace-only chunk {c!r}"
        assert c.tokens == counter.count(c.context + c.text), c
        if chunker.budget is not None:
            assert c.tokens <= chunker.budget or len(c.text) == 1, (c.tokens, chunker.budget, c)
        max_chars = getattr(chunker, "max_chars", None)
        if max_chars is not None:
            assert len(c.text) <= max_chars + slack, (len(c.text), max_chars)
        if prev is not None:
            assert c.start > prev.start
            assert c.end > prev.end
            if not overlap:
                assert c.start >= prev.end
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
        prev = c
    if covers:
        missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
        assert not missing, f"uncovered characters at {missing[:5]}: {text[missing[0]]!r}"
    assert chunker.chunk(text if source is None else source) == chunks  # deterministic


# -- counters ------------------------------------------------------------------------------


@SETTINGS
@given(TEXTS)
def test_offsets_match_tiktoken_and_attach_split_characters(text):
    offsets = CL100K.offsets(text)
    enc = CL100K.encoding
    tokens = enc.encode_ordinary(text)
    assert len(offsets) == len(tokens)
    if tokens:
        assert offsets[0] == 0
        assert offsets == sorted(offsets)
        _, expected = enc.decode_with_offsets(tokens)
        assert offsets == expected


@settings(max_examples=600, deadline=None, derandomize=True)
@given(TEXTS, st.data(), st.sampled_from(["", "doc: ", "Guide > Install\n\n", "\n"]))
def test_exact_count_equals_fresh_count_for_any_range(text, data, context):
    if not text:
        return
    index = CL100K.index(text)
    s = data.draw(st.integers(0, len(text) - 1))
    e = data.draw(st.integers(s + 1, len(text)))
    assert index.exact(context, s, e) == CL100K.count(context + text[s:e])


def test_special_tokens_are_ordinary_text():
    text = "before <|endoftext|> after <|fim_middle|>"
    assert CL100K.count(text) == len(CL100K.encoding.encode_ordinary(text))
    for c in RecursiveChunker(size=8).chunk(text * 20):
        assert c.tokens <= 8


def test_char_counter_and_unknown_name():
    from ragsift.errors import RagsiftError

    chars = get_counter("chars")
    assert chars.count("héllo") == 5
    assert chars.offsets("abc") == [0, 1, 2]
    with pytest.raises(RagsiftError):
        get_counter("gpt2")


# -- every strategy under hypothesis --------------------------------------------------------


@SETTINGS
@given(TEXTS, st.integers(8, 80))
def test_recursive(text, size):
    ch = RecursiveChunker(size=size)
    check(text, ch.chunk(text), ch)


def test_recursive_overlap_on_prose():
    # overlapped chunks start on a word boundary inside the previous chunk (the packer keeps
    # overlap where chunks end at the top rule level, here paragraphs)
    text = "\n\n".join(f"Paragraph {i} talks about bees and honey in summer." for i in range(99))
    ch = RecursiveChunker(size=40, overlap=12)
    chunks = ch.chunk(text)
    pairs = list(itertools.pairwise(chunks))
    assert sum(b.start < a.end for a, b in pairs) >= len(pairs) - 1
    for a, b in pairs:
        assert b.start > a.start and b.end > a.end
        assert text[b.start - 1].isspace()
    check(text, chunks, ch, overlap=True)


@SETTINGS
@given(TEXTS, st.integers(8, 80), st.integers(1, 7))
def test_recursive_overlap(text, size, overlap):
    ch = RecursiveChunker(size=size, overlap=overlap)
    check(text, ch.chunk(text), ch, overlap=True)


@SETTINGS
@given(TEXTS, st.integers(24, 80), st.sampled_from(["default", "markdown"]))
def test_recursive_headers_prefix_rules(text, size, rules):
    ch = RecursiveChunker(size=size, rules=rules, retain_headers=True, prefix="doc: ")
    chunks = ch.chunk(text)
    check(text, chunks, ch)
    assert all(c.context.startswith("doc: ") for c in chunks)


@SETTINGS
@given(
    TEXTS,
    st.integers(8, 60),
    st.integers(0, 7),
    st.sampled_from(["prev", "next", "none"]),
    st.integers(1, 3),
)
def test_sentence(text, size, overlap, include_delim, min_sentences):
    ch = SentenceChunker(
        size=size, overlap=overlap, include_delim=include_delim, min_sentences=min_sentences
    )
    check(text, ch.chunk(text), ch, overlap=overlap > 0, covers=include_delim != "none")


@SETTINGS
@given(TEXTS, st.integers(24, 90))
def test_markdown(text, size):
    ch = MarkdownChunker(size=size, prefix="p: ", page_break_tags=True)
    check(text, ch.chunk(text), ch)
    doc = ch.prepare(Document.from_text(text, "x.md", "markdown"))
    check(doc.text, ch.chunk(doc), ch, source=doc)


@SETTINGS
@given(TEXTS, st.integers(40, 400), st.integers(1, 6))
def test_heading(text, max_chars, max_level):
    ch = HeadingChunker(max_chars=max_chars, max_level=max_level)
    chunks = ch.chunk(text)
    check(text, chunks, ch)
    for c in chunks:
        lines = c.text.strip().splitlines()
        at_line_start = not text[text.rfind("\n", 0, c.start) + 1 : c.start].strip()
        alone = len(lines) == 1 and at_line_start and re.match(r" {0,3}#{1,6}(?:[ \t]|$)", lines[0])
        # the one allowed case: a document ending in a heading that cannot merge backward
        assert not alone or c is chunks[-1], f"a heading alone: {c.text!r}"


@SETTINGS
@given(TEXTS, st.integers(20, 400), st.sampled_from([None, 12, 40]))
def test_paragraph(text, max_chars, size):
    ch = ParagraphChunker(max_chars=max_chars, size=size)
    check(text, ch.chunk(text), ch)


@SETTINGS
@given(TEXTS, st.integers(60, 300), st.integers(0, 59))
def test_chars(text, max_chars, overlap):
    ch = CharChunker(max_chars=max_chars, overlap=overlap)
    check(text, ch.chunk(text), ch, overlap=overlap > 0, slack=49)


@SETTINGS
@given(TEXTS, st.integers(4, 64), st.integers(0, 3))
def test_tokens(text, size, overlap):
    ch = TokenChunker(size=size, overlap=overlap)
    check(text, ch.chunk(text), ch, overlap=overlap > 0)


@SETTINGS
@given(TEXTS)
def test_whole(text):
    ch = WholeChunker()
    chunks = ch.chunk(text)
    check(text, chunks, ch)
    assert len(chunks) == (1 if text.strip() else 0)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(TEXTS, max_size=5))
def test_batch_equals_one_by_one(texts):
    for ch in (RecursiveChunker(size=16), SentenceChunker(size=16, overlap=4)):
        assert ch.chunk_batch(texts) == [ch.chunk(t) for t in texts]


# -- edge cases named in the issue ------------------------------------------------------


EDGE_TEXTS = {
    "no delimiters": "abcdefghij" * 3000,
    "one 100,000-char word": "a" * 100_000,
    "random word": "".join("qwertyuiopasdfghjklzxcvbnm"[(i * 7919) % 26] for i in range(100_000)),
    "cjk": "日本語の文章は空白を使わずに書かれます。" * 400,
    "emoji and marks": "😀👩‍👩‍👧e\u0301\u0302 " * 800,
    "crlf": "Line one.\r\nLine two is here.\r\n\r\nNew paragraph. " * 300,
    "special tokens": "<|endoftext|> text <|im_start|>" * 500,
}


@pytest.mark.parametrize("name", list(EDGE_TEXTS))
@pytest.mark.parametrize(
    "strategy", ["recursive", "sentence", "markdown", "heading", "paragraph", "chars", "tokens"]
)
def test_edge_cases(name, strategy):
    text = EDGE_TEXTS[name]
    ch = make_chunker(strategy, size=128)
    check(text, ch.chunk(text), ch, overlap=strategy == "chars", slack=49)


# -- real corpora -----------------------------------------------------------------------


def _fixture_documents():
    from ragsift.ingest import iter_documents

    return list(iter_documents([str(REPO / "fixtures")]))


REAL_CONFIGS = [
    ("recursive", {}),
    ("recursive", {"size": 64, "retain_headers": True}),
    ("recursive", {"size": 96, "rules": "markdown"}),
    ("sentence", {"size": 64}),
    ("sentence", {"size": 64, "overlap": 16}),
    ("recursive", {"size": 64, "overlap": 16}),
    ("markdown", {"size": 128}),
    ("heading", {}),
    ("heading", {"max_chars": 400}),
    ("paragraph", {"max_chars": 300}),
    ("chars", {}),
    ("tokens", {"size": 64, "overlap": 8}),
    ("whole", {}),
]


@pytest.mark.parametrize("strategy,options", REAL_CONFIGS)
def test_fixture_corpus(strategy, options):
    ch = make_chunker(strategy, **options)
    docs = _fixture_documents()
    assert docs, "the fixture corpus is empty"
    for doc in docs:
        doc = ch.prepare(doc)
        check(
            doc.text,
            ch.chunk(doc),
            ch,
            overlap="overlap" in options or strategy == "chars",
            slack=49,
            source=doc,
        )


@pytest.mark.parametrize("strategy,options", REAL_CONFIGS[:8])
def test_chroma_dev_corpora(strategy, options):
    files = sorted(CORPORA.glob("*.md"))
    if not files:
        pytest.skip(f"{CORPORA} is absent: the shared evaluation corpora are not checked out")
    ch = make_chunker(strategy, **options)
    for path in files:
        text = path.read_text(encoding="utf-8")
        check(text, ch.chunk(text), ch, overlap="overlap" in options)


def test_model_counter():
    # the embedder's WordPiece counter: sizes in the unit that decides model truncation
    counter = get_counter("model")
    assert counter.name == "model"
    text = (REPO / "fixtures" / "lantern" / "guide.md").read_text(encoding="utf-8")
    for strategy in ("recursive", "sentence", "markdown", "tokens"):
        ch = make_chunker(strategy, tokenizer=counter, size=64)
        check(text, ch.chunk(text), ch, counter=counter)
