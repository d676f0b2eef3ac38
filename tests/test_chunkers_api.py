"""Chunker options, errors, rule sets and per-strategy behaviour (examples, not properties)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragsift.chunkers import (
    CharChunker,
    HeadingChunker,
    MarkdownChunker,
    RecursiveChunker,
    RecursiveLevel,
    RecursiveRules,
    SentenceChunker,
    TokenChunker,
    get_counter,
    make_chunker,
)
from ragsift.errors import RagsiftError
from ragsift.sources.document import Document, OffsetMap

REPO = Path(__file__).resolve().parent.parent
CL100K = get_counter("cl100k")
PROSE = (
    "The tide pools fill twice a day. Each pool is a small world that must survive sun, rain "
    "and changing salt. A careful visitor sees more in an hour than in a day at an aquarium. "
)


# -- make_chunker: options and usage errors ------------------------------------------------


@pytest.mark.parametrize(
    "strategy,options,message",
    [
        ("sentence", {"size": 10, "overlap": 10}, "less than size"),
        ("tokens", {"size": 5, "overlap": 7}, "less than size"),
        ("chars", {"max_chars": 100, "overlap": 100}, "less than max_chars"),
        ("heading", {"max_chars": 500, "min_chars": 500}, "less than max_chars"),
        ("paragraph", {"max_chars": 300, "min_chars": 900}, "less than max_chars"),
        ("tokens", {"max_level": 3}, "it takes: size, overlap"),
        ("whole", {"size": 3}, "it takes: prefix"),
        ("recursive", {"rules": "nope"}, "shipped rule set"),
        ("recursive", {"include_delim": "none"}, "prev or next"),
        (
            "recursive",
            {"size": 3, "prefix": "a long prefix that takes many tokens"},
            "prefix takes",
        ),
        ("heading", {"max_level": 9}, "between 1 and 6"),
        ("bogus", {}, "unknown chunking strategy"),
    ],
)
def test_invalid_combinations_are_usage_errors(strategy, options, message):
    with pytest.raises(RagsiftError) as err:
        make_chunker(strategy, **options)
    assert message in err.value.message
    assert err.value.exit_code == 2


def test_every_strategy_from_make_chunker_has_the_interface():
    for strategy in (
        "recursive",
        "sentence",
        "markdown",
        "heading",
        "paragraph",
        "chars",
        "tokens",
        "whole",
    ):
        ch = make_chunker(strategy)
        assert ch.name == strategy
        assert ch.options()["strategy"] == strategy
        assert ch.options()["tokenizer"] == "cl100k"
        assert hasattr(ch, "budget")
        assert ch.chunk("") == [] and ch.chunk(" \n ") == []
        assert ch.chunk_batch([PROSE, ""]) == [ch.chunk(PROSE), []]
        json.dumps(ch.options())  # options go into the index settings


def test_budgets():
    assert make_chunker("recursive", size=100).budget == 100
    assert make_chunker("heading").budget is None
    assert make_chunker("heading", size=200).budget == 200
    assert make_chunker("heading", tokenizer="chars", size=700).max_chars == 700
    assert make_chunker("whole").budget is None


# -- rule sets ---------------------------------------------------------------------------


def test_shipped_rule_sets():
    default = RecursiveRules.named("default")
    # + the implied token level = the five levels of the issue, with line breaks inside prose
    # ranked below sentence ends (issue 28)
    assert len(default) == 5
    assert default.levels[0].delimiters == ("\n\n", "\r\n", "\n", "\r")
    assert not default.levels[0].soft_breaks and default.levels[2].delimiters == (
        "\r\n",
        "\n",
        "\r",
    )
    assert default.levels[-1].whitespace
    markdown = RecursiveRules.named("markdown")
    assert "\n## " in markdown.levels[0].delimiters
    assert markdown.levels[0].include_delim == "next"


def test_rules_from_json_and_toml(tmp_path):
    spec = {"levels": [{"delimiters": ["|"]}, {"whitespace": True}]}
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(spec))
    ch = RecursiveChunker(size=6, rules=str(path), min_chars=0)
    text = "alpha beta gamma | delta epsilon zeta | eta theta"
    chunks = ch.chunk(text)
    assert chunks[0].text.endswith("|")
    if sys.version_info >= (3, 11):
        toml = tmp_path / "rules.toml"
        toml.write_text('[[levels]]\ndelimiters = ["|"]\n[[levels]]\nwhitespace = true\n')
        assert RecursiveChunker(size=6, rules=str(toml), min_chars=0).chunk(text) == chunks


@pytest.mark.parametrize(
    "content,message",
    [
        ("{", "invalid JSON"),
        ('{"levels": []}', "non-empty list"),
        ('{"levels": [{"delimiters": ["a"], "whitespace": true}]}', "not both"),
        ('{"levels": [{"separators": ["a"]}]}', "unknown key"),
        ('{"levels": [{"delimiters": ["a"], "include_delim": "both"}]}', "prev or next"),
    ],
)
def test_bad_rules_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(RagsiftError) as err:
        RecursiveRules.load(str(path))
    assert message in err.value.message


def test_rules_as_data():
    rules = RecursiveRules((RecursiveLevel((";",)), RecursiveLevel(whitespace=True)))
    ch = RecursiveChunker(size=5, rules=rules, min_chars=0)
    assert ch.options()["rules"]["levels"][0] == {"delimiters": [";"], "include_delim": "prev"}
    assert all(c.tokens <= 5 for c in ch.chunk("one two; three four five; six " * 5))


# -- recursive -----------------------------------------------------------------------------


def test_recursive_levels_and_whole_paragraphs():
    text = "\n\n".join([PROSE] * 6)
    chunks = RecursiveChunker(size=100).chunk(text)
    assert all(c.text.endswith(".") for c in chunks)  # paragraph cuts only
    assert all(c.level == 0 for c in chunks)
    long = PROSE * 10
    deep = RecursiveChunker(size=40).chunk(long)
    assert {c.level for c in deep[1:]} == {1}  # sentence cuts inside one big paragraph
    word = RecursiveChunker(size=16).chunk("x" * 5000)
    assert {c.level for c in word[1:]} == {5}  # hard token cuts
    assert all(c.tokens <= 16 for c in word)


def test_recursive_min_chars_merges_short_pieces_forward():
    text = "Intro\n\n" + PROSE * 3
    chunks = RecursiveChunker(size=40, min_chars=24).chunk(text)
    assert chunks[0].text.startswith("Intro\n\nThe tide")


def test_retain_headers_from_markdown_text_and_from_a_document_map():
    md = "# Guide\n\n## Install\n\n" + PROSE * 4 + "\n\n## Use\n\n" + PROSE
    ch = RecursiveChunker(size=48, retain_headers=True, prefix="search: ")
    chunks = ch.chunk(md)
    assert any(c.context == "search: Guide > Install\n\n" for c in chunks)
    assert all(c.tokens == CL100K.count(c.context + c.text) <= 48 for c in chunks)
    text = "Tide pools\n" + PROSE * 3
    doc = Document(
        text=text,
        path="p.html",
        format="html",
        lines=OffsetMap.of_lines(text),
        headings=OffsetMap((0, 11), (("Tide pools",), ("Tide pools",))),
    )
    chunks = RecursiveChunker(size=40, retain_headers=True).chunk(doc)
    assert chunks[-1].context == "Tide pools\n\n"


# -- sentence ------------------------------------------------------------------------------


def test_sentence_short_fragments_and_overlap():
    text = "We use e.g. small words. " * 3 + "Then a longer closing sentence ends here. "
    ch = SentenceChunker(size=12, min_chars_per_sentence=12)
    cuts, _ = ch.boundaries(text)
    assert all(not text[:b].endswith("e.g. ") for b in cuts)
    over = SentenceChunker(size=30, overlap=10).chunk(PROSE * 4)
    assert any(b.start < a.end for a, b in itertools.pairwise(over))


def test_sentence_min_sentences_budget_wins_unless_oversize():
    text = PROSE * 4
    strict = SentenceChunker(size=30, min_sentences=3)
    assert all(c.tokens <= 30 for c in strict.chunk(text))
    assert strict.stats.short > 0
    loose = SentenceChunker(size=30, min_sentences=3, allow_oversize=True)
    chunks = loose.chunk(text)
    assert any(c.tokens > 30 for c in chunks)
    assert all(c.text.count(". ") + c.text.endswith(".") >= 3 for c in chunks[:-1])


def test_sentence_include_delim_modes():
    text = "One sentence here! Two sentence there? Three."
    prev = [c.text for c in SentenceChunker(size=5, min_chars_per_sentence=0).chunk(text)]
    assert prev[0] == "One sentence here!"
    nxt = [
        c.text
        for c in SentenceChunker(size=5, min_chars_per_sentence=0, include_delim="next").chunk(text)
    ]
    assert nxt[1].startswith("! Two")
    none = [
        c.text
        for c in SentenceChunker(size=5, min_chars_per_sentence=0, include_delim="none").chunk(text)
    ]
    assert none[:2] == ["One sentence here", "Two sentence there"]


# -- markdown, heading, paragraph ------------------------------------------------------------


def test_markdown_context_fences_tables_pages():
    fence = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(12)) + "\n```\n"
    md = (
        "# Guide\n\n## Setup\n\n" + PROSE + "\n\n" + fence + "\n<page_break page=2>\n\n"
        "## Data\n\n| name | born |\n|---|---|\n| Ada | 1815 |\n| Alan | 1912 |\n\n" + PROSE
    )
    ch = MarkdownChunker(size=90, page_break_tags=True)
    doc = ch.prepare(Document.from_text(md, "g.md", "markdown"))
    assert "1. name: Ada; born: 1815" in doc.text
    assert doc.page_at(len(doc.text) - 1) == 2 and doc.page_at(0) == 1
    chunks = ch.chunk(doc)
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert c.tokens == CL100K.count(c.context + c.text) <= 90
        assert c.text.count("```") in (0, 2), "a fence that fits was cut"
    assert any(c.context == "Guide > Setup\n\n" for c in chunks)
    assert any(c.text.startswith("## Data") and c.context == "Guide\n\n" for c in chunks)


def test_markdown_cuts_an_oversized_fence():
    fence = "```\n" + "\n".join(f"line {i} of code" for i in range(200)) + "\n```\n"
    chunks = MarkdownChunker(size=64).chunk("# Code\n\n" + fence)
    assert len(chunks) > 3 and all(c.tokens <= 64 for c in chunks)


def test_heading_sections_and_forward_floor():
    body = "Body text of a section that is long enough to stand on its own. " * 5
    md = f"# A\n\nTiny.\n\n## B\n\n{body}\n\n## C\n\n{body}\n\n## D\n\nShort end."
    chunks = HeadingChunker(max_chars=1000, min_chars=100).chunk(md)
    texts = [c.text for c in chunks]
    assert texts[0].startswith("# A") and "## B" in texts[0]  # short section merged forward
    assert texts[1].startswith("## C")
    assert texts[-1].endswith("Short end.") and "## D" in texts[-1]  # short tail merged back
    split = HeadingChunker(max_chars=1000, max_level=1).chunk(md)
    assert len(split) == 1


def test_paragraph_packs_up_to_max_chars():
    text = "\n\n".join(["A paragraph of moderate length, about sixty characters long."] * 20)
    chunks = make_chunker("paragraph", max_chars=300).chunk(text)
    assert all(len(c.text) <= 300 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)


# -- windows -------------------------------------------------------------------------------


def test_chars_windows_overlap_and_fold_back():
    text = ("word " * 500).strip() + " end of text"
    chunks = CharChunker(max_chars=200, overlap=50).chunk(text)
    for a, b in itertools.pairwise(chunks):
        assert a.start < b.start < a.end  # overlap, never before the previous start
        assert not text[b.start - 1].strip()  # starts at a word
    assert all(len(c.text) <= 200 + 49 for c in chunks)
    assert len(chunks[-1].text) >= 50


def test_tokens_windows_exact_offsets_with_overlap():
    text = "Ünïcödé 😀 tokens " * 200
    ch = TokenChunker(size=32, overlap=8)
    chunks = ch.chunk(text)
    for a, b in itertools.pairwise(chunks):
        assert 0 <= b.start < a.end
        assert text[b.start : b.end] == b.text
    assert all(c.tokens <= 32 for c in chunks)


# -- CLI -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--strategy", "recursive", "--rules", "markdown", "--retain-headers"],
        ["--strategy", "sentence", "--size", "64", "--overlap", "8"],
        ["--strategy", "markdown", "--size", "128", "--page-break-tags"],
        ["--strategy", "heading", "--max-chars", "600", "--max-level", "3"],
        ["--strategy", "paragraph", "--max-chars", "400", "--min-chars", "50"],
        ["--strategy", "chars", "--max-chars", "300", "--overlap", "30"],
        ["--strategy", "tokens", "--size", "64", "--overlap", "16"],
        ["--strategy", "whole"],
        ["--strategy", "recursive", "--unit", "chars", "--size", "300"],
    ],
)
def test_cli_every_strategy(args):
    from ragsift.cli import app
    from ragsift.ingest import iter_documents

    texts = {d.path: d.text for d in iter_documents([str(REPO / "fixtures")])}
    result = CliRunner().invoke(app, ["chunk", str(REPO / "fixtures"), *args])
    assert result.exit_code == 3, result.output  # the fixtures include bad files
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert records
    checked = 0
    for r in records:
        text = texts.get(r["path"])
        if text is not None and "markdown" not in args:
            assert text[r["start"] : r["end"]] == r["text"]
            checked += 1
    assert checked or "markdown" in args


def test_cli_usage_error_names_the_options():
    from ragsift.cli import app

    result = CliRunner().invoke(
        app, ["chunk", str(REPO / "fixtures"), "--strategy", "tokens", "--max-chars", "10"]
    )
    assert result.exit_code == 2
    assert "it takes: --size, --overlap" in result.output
