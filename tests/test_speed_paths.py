"""Issue 13: the fast paths give exactly what the slow ones gave.

- ``OffsetMap.of_lines`` (one regex scan) against the old per-line search, on adversarial
  line endings;
- ``parse_markdown``/``render_markdown_tables`` (block-level parse, inline parsing only for
  headings and table cells) against markdown-it's full parse, on headings and cells full of
  inline markup, escapes, entities and reference links.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.sources.document import OffsetMap
from ragsift.sources.markdown import inline_text, parse_markdown, render_markdown_tables


def _old_of_lines(text: str) -> tuple[int, ...]:
    """The pre-issue-13 algorithm, kept as the reference."""
    starts = [0]
    i, n = 0, len(text)
    while True:
        a, b = text.find("\n", i), text.find("\r", i)
        j = b if a < 0 else a if b < 0 else min(a, b)
        if j < 0:
            break
        k = j + 2 if text.startswith("\r\n", j) else j + 1
        if k >= n:
            break
        starts.append(k)
        i = k
    return tuple(starts)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "b", " ", "\n", "\r", "\r\n", "\u2028", "\x0b"]), max_size=60
    ).map("".join)
)
def test_of_lines_matches_the_per_line_search(text):
    m = OffsetMap.of_lines(text, first_line=3)
    assert m.starts == _old_of_lines(text)
    assert m.values == tuple(range(3, 3 + len(m.starts)))


TRICKY = """\
[ref]: https://example.com "Title"

# The *emphasised* `code` title with [a link][ref] and \\*escapes\\* &amp; entities

Body text that **is not** needed for headings.

Setext with <b>html</b> and ![an image](x.png)
==============================================

## A [broken link][nowhere] and a [[wiki]] and <https://auto.link>

| name *em* | `code` | [link][ref] |
| --- | :-: | --- |
| Ada **L** | x\\|y | &copy; [r][ref] |
|  | only *middle* |  |

> # quoted heading (not top level)

- # listed heading (not top level)

### Trailing hashes ###
#### _under_scores_ and __strong__\r\n
text\r
"""


def _full_parse_trails(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(1-based source line, trail) of every top-level heading, by a full parse."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out, stack = [], []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0:
            level = int(tok.tag[1:])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, inline_text(tokens[i + 1])))
            out.append((tok.map[0] + 1, tuple(t for _, t in stack)))
    return out


def _trails(doc) -> list[tuple[int, tuple[str, ...]]]:
    """(source line, trail) of a parsed document's heading map; each heading starts a line of
    ``doc.text`` (which is the file's text with raw HTML reduced, issue 28)."""
    if not doc.headings:
        return []
    line_starts = set(OffsetMap.of_lines(doc.text).starts)
    assert all(s in line_starts for s in doc.headings.starts)
    return [(doc.line_at(s), v) for s, v in zip(doc.headings.starts, doc.headings.values)]


def test_heading_trails_match_the_full_parse():
    doc = parse_markdown(TRICKY, "t.md")
    got = _trails(doc)
    assert got == _full_parse_trails(TRICKY)
    assert got[0][1] == ("The emphasised code title with a link and *escapes* & entities",)
    assert len(got) == 5


def test_table_rendering_reads_inline_cells_as_the_full_parse_did():
    out = render_markdown_tables(parse_markdown(TRICKY, "t.md"))
    assert "1. name em: Ada L; code: x|y; link: © r\n2. code: only middle\n" in out.text


_LINES = [
    "# a",
    "## b *c*",
    "  ### d",
    "    # code",
    "\t# tab",
    "e",
    "===",
    " ---",
    "--- x",
    "- item",
    "- # in list",
    "> # quoted",
    "```",
    "~~~",
    "<div>",
    "",
    "",
    "[r]: /u",
    "#nospace",
    "f | g",
    "--- |",
    "text\\",
    "  ==  ",
    "#",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_LINES), max_size=14), st.sampled_from(["\n", "\r\n", "\r"]))
def test_heading_trails_match_the_full_parse_on_random_markdown(lines, newline):
    text = newline.join(lines)
    doc = parse_markdown(text, "t.md")
    got = _trails(doc)
    # the full parse keeps the last of several headings that start at one offset
    want = dict(_full_parse_trails(text))
    assert got == list(want.items())


def test_the_cl100k_char_tables_match_a_per_token_count():
    from ragsift.chunkers.counters import get_counter

    counter = get_counter("cl100k")
    starts, mid = counter._char_tables()
    want_starts, want_mid = [0] * len(starts), [0] * len(mid)
    for data, rank in counter.encoding._mergeable_ranks.items():  # the old per-token loop
        want_starts[rank] = sum(1 for b in data if b & 0xC0 != 0x80)
        want_mid[rank] = int((data[0] & 0xC0) == 0x80)
    assert starts.tolist() == want_starts and mid.tolist() == want_mid
    assert sum(want_mid) > 0 and max(want_starts) > 1


_PIECES = [
    "word",
    " ",
    "\n",
    "\r\n",
    "  ",
    "!",
    "#",
    "'s",
    "é",
    "日本",
    "\u200b",
    "12345",
    "<|endoftext|>",
    "\t",
    "\n\n",
    "x\n",
    " \n",
    "...",
    "🙂",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=80).map("".join),
    st.integers(min_value=2, max_value=5),
)
def test_threaded_encoding_gives_the_tokens_of_one_encode(text, threads):
    from ragsift.chunkers.counters import get_counter
    from ragsift.chunkers.encode import encode_all

    enc = get_counter("cl100k").encoding
    want = enc.encode_to_numpy(text, disallowed_special=()).tolist()
    assert encode_all(enc, text, min_chars=0, threads=threads).tolist() == want
