"""Markdown parsed in bounded pieces: markdown-it's block tokens of a long text, piece by
piece (``token_pieces``), so that time and memory grow linearly with the text (issue 30).
``markdown.parse_markdown`` and ``markdown.render_markdown_tables`` read the pieces; a
stretch that cannot be cut past the bound raises ``BlockBound`` (the file is then read as
plain text, with one warning).
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_right
from collections.abc import Callable
from functools import cache
from importlib import import_module
from typing import Any


@cache
def parser() -> Any:
    """markdown-it with block rules only at the core level: heading trails, tables and line
    maps come from block tokens, and inline parsing (most of a full parse's time) runs only on
    the few inline tokens whose text is read (``markdown._parse_inline``)."""
    from markdown_it import MarkdownIt  # imported here: `ragsift --help` must stay fast

    return MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])


def block_tokens(text: str) -> tuple[list[Any], dict]:
    """markdown-it's block tokens of ``text`` and the parse ``env`` (link references)."""
    env: dict = {}
    return parser().parse(text, env), env


# Bounded work per file (issue 30): markdown-it keeps ~400 bytes per token (a table cell is
# three, a list item five), ~170x the bytes of a table, so a long text is parsed in pieces of
# about PIECE_CHARS, cut where a block starts at the top level, and each piece's tokens are
# dropped once read. A stretch with no such place longer than MAX_BLOCK_LINES lines or
# MAX_BLOCK_CHARS characters outside fences (a 100k-row table, a tight list; a fence is one
# token however long) is not parsed: BlockBound.
#
# A table is such a stretch however long, so a table of more than PIECE_ROWS lines is cut
# between rows as well (``_table_cuts``): a piece ends at its first row past PIECE_ROWS lines,
# and the next piece is parsed with the table's header and delimiter rows before its rows
# (those two lines are not the file's: their tokens have no ``map`` and their table_open has
# ``meta["continues"]``). Every row's tokens are those of the whole table's; a reader of the
# pieces takes the header once (``markdown.render_markdown_tables`` joins the parts of a table).
PIECE_CHARS = 64 * 1024
PIECE_ROWS = 50  # ~14 tokens a row of four cells, ~400 bytes each: ~300 KiB of tokens a piece
MAX_BLOCK_LINES = 4_000
MAX_BLOCK_CHARS = 1024 * 1024
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
# HTML blocks that may hold blank lines (CommonMark types 1-5) and what ends each
_HTML_OPEN = (
    (
        re.compile(r" {0,3}<(script|pre|style|textarea)(\s|>|$)", re.IGNORECASE),
        re.compile(r"</(script|pre|style|textarea)>", re.IGNORECASE),
    ),
    (re.compile(r" {0,3}<!--"), re.compile(r"-->")),
    (re.compile(r" {0,3}<\?"), re.compile(r"\?>")),
    (re.compile(r" {0,3}<![A-Za-z]"), re.compile(r">")),
    (re.compile(r" {0,3}<!\[CDATA\["), re.compile(r"\]\]>")),
)
_REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)


class BlockBound(ValueError):
    """A stretch of a markdown text that cannot be cut is past the bound; ``str`` says where."""


def _cut_lines(text: str, starts: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    """0-based lines where a piece may start: a line at column 0 after a blank line, outside
    a fence or an HTML block that may hold blank lines, and not a fence's first line (an
    HTML block before a fence is read with it: ``markdown_html``). And, per line, how many
    lines and characters before it are outside fences: a fence is one token however long,
    so its lines do not count towards the bound."""
    cuts: list[int] = []
    parsed, parsed_chars = [0], [0]
    fence: str | None = None
    html_end: re.Pattern[str] | None = None
    blank_before = False
    n = len(starts)
    for k in range(n):
        line = text[starts[k] : starts[k + 1] if k + 1 < n else len(text)].rstrip("\r\n")
        blank = not line.strip()
        parsed.append(parsed[-1] + (fence is None))
        parsed_chars.append(parsed_chars[-1] + (len(line) if fence is None else 0))
        if fence is not None:
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) < 4
                and stripped.startswith(fence)
                and not stripped.strip(fence[0])
            ):
                fence = None
        elif html_end is not None:
            if html_end.search(line):
                html_end = None
        else:
            # the first character after up to three spaces: every pattern below needs a
            # fence's or a tag's there (tested first: most lines are neither)
            lead = line[:4].lstrip(" ")[:1]
            opened = _FENCE_OPEN.match(line) if lead == "`" or lead == "~" else None
            if opened and opened.group(1)[0] == "`" and "`" in line[opened.end() :]:
                opened = None  # (a backtick fence's info string holds no backtick)
            if k and blank_before and not blank and not line[0].isspace() and not opened:
                cuts.append(k)
            if opened:
                fence = opened.group(1)
            elif lead == "<":
                for start, end in _HTML_OPEN:
                    m = start.match(line)
                    if m and not end.search(line, m.end()):
                        html_end = end
                        break
        blank_before = blank
    return cuts, parsed, parsed_chars


def token_pieces(
    text: str, starts: tuple[int, ...], need: Callable[[str], bool] | None = None
) -> Any:
    """``(tokens, env)`` of ``text`` piece by piece (see ``PIECE_CHARS``), each token's
    ``map`` in lines of the whole text; ``env`` holds the whole text's link references.
    One piece, as before, when the text is short and holds no long table. Raises
    ``BlockBound``. ``need(source)``: whether a piece (of several) is parsed at all; the
    pieces it declines are not yielded (``markdown.parse_markdown`` parses only pieces that may hold a
    heading or raw HTML: most of a long document holds neither, issue 40 item 7)."""
    n = len(starts)
    if len(text) <= PIECE_CHARS and (n <= PIECE_ROWS or _TABLE_HEAD.search(text) is None):
        yield block_tokens(text)
        return
    cuts, parsed, parsed_chars = _cut_lines(text, starts)
    bounds = [0, *cuts, n]

    def at(line: int) -> int:
        return starts[line] if line < n else len(text)

    if len(text) > PIECE_CHARS:
        _check_block_bound(bounds, parsed, parsed_chars, at)
    tables = _table_cuts(text, starts, cuts) if "|" in text else []  # (first row, last
    # row, header line) of each table that may be cut
    firsts = [lo for lo, _, _ in tables]

    def table_head(line: int) -> int | None:
        """The header line of the table ``line`` may cut, if it is one of its rows."""
        k = bisect_right(firsts, line) - 1
        return tables[k][2] if k >= 0 and line <= tables[k][1] else None

    pieces: list[tuple[int, int]] = []
    first = 0
    for line in heapq.merge(bounds[1:], *(range(lo, hi + 1) for lo, hi, _ in tables)):
        if line > first and (
            at(line) - at(first) >= PIECE_CHARS
            or line == n
            or (line - first >= PIECE_ROWS and table_head(line) is not None)
        ):
            pieces.append((first, line))
            first = line

    def source(a: int, b: int) -> tuple[str, int]:
        """The text of lines a to b to parse, and the line of the file its line 0 is: a
        piece that starts in a table starts with its header and delimiter rows."""
        head = table_head(a) if a else None
        if head is None:
            return text[at(a) : at(b)], a
        return text[at(head) : at(head + 2)] + text[at(a) : at(b)], a - 2

    env = _references(text, pieces, source)
    for a, b in pieces:
        part: dict = {}
        src, shift = source(a, b)
        if need is not None and not need(src):
            continue
        tokens = parser().parse(src, part)
        del src
        _map_to_file(tokens, a, shift)
        yield tokens, (env if env else part)


def _check_block_bound(
    bounds: list[int], parsed: list[int], parsed_chars: list[int], at: Callable[[int], int]
) -> None:
    """Raise ``BlockBound`` for the first stretch between two cut lines (``bounds``) that
    holds more lines or characters outside fences (``parsed``, ``parsed_chars``: per line,
    how many before it) than the bound; ``at(line)``: the offset a line starts at."""
    for a, b in zip(bounds, bounds[1:]):
        if (
            parsed[b] - parsed[a] > MAX_BLOCK_LINES
            or parsed_chars[b] - parsed_chars[a] > MAX_BLOCK_CHARS
        ):
            raise BlockBound(
                f"lines {a + 1}-{b} are one block of {b - a:,} lines ({at(b) - at(a):,} "
                f"characters), past the markdown reader's bound of {MAX_BLOCK_LINES:,} lines "
                f"or {MAX_BLOCK_CHARS // 1024:,} KiB per block"
            )


def _references(
    text: str, pieces: list[tuple[int, int]], source: Callable[[int, int], tuple[str, int]]
) -> dict:
    """The ``env`` holding the link references of the whole text when it is parsed in
    several pieces (``source(a, b)``: a piece's text), else an empty one."""
    env: dict = {}
    if len(pieces) > 1 and _REFERENCE_DEFINITION.search(text):
        for a, b in pieces:  # a reference may be used before (or in another piece than) where
            part: dict = {}  # it is defined: the whole text's, first definition first
            src = source(a, b)[0]
            if "]:" not in src:  # (every definition, in any container, holds "]:")
                continue
            parser().parse(src, part)
            for key, value in part.get("references", {}).items():
                env.setdefault("references", {}).setdefault(key, value)
    return env


def _map_to_file(tokens: list[Any], a: int, shift: int) -> None:
    """Make the ``map`` of a piece's tokens lines of the file: the piece is the file's lines
    from ``a`` on, parsed from line ``shift`` (``a - 2`` when it starts in a table: its
    header and delimiter rows were put before it)."""
    if shift != a:  # the header's tokens are not the file's: no map (the table's rows
        tokens[0].meta["continues"] = True  # and cells are, and the table goes on)
        for tok in tokens[1:]:
            tok.map = None
            if tok.type == "thead_close":
                break
        tokens[0].map = [a - shift, tokens[0].map[1]]
    for tok in tokens:
        if tok.map is not None:
            tok.map = [tok.map[0] + shift, tok.map[1] + shift]


# a table's header line followed by its delimiter row (markdown-it's test, loosely): a text
# without one has no table
_TABLE_HEAD = re.compile(r"\|[^\n]*\n {0,3}[-:|][-:| \t]*\r?(?:\n|$)")
# a row that surely goes on its table: at column 0, and not the start of a block that ends
# a table (a fence, quote, rule, list, HTML block or heading: markdown-it's terminators)
_TABLE_ROW = re.compile(r"[|A-Za-z]")


def _table_cuts(text: str, starts: tuple[int, ...], cuts: list[int]) -> list[tuple[int, int, int]]:
    """The lines where a table longer than ``PIECE_ROWS`` lines may be cut, as ``(first,
    last, header line)`` (each row after its first body row, while every row so far starts
    with ``|`` or a letter at column 0). Only a table whose header starts a block at the top
    level (a cut point, or the first line), as markdown-it reads it, and whose rows leave
    markdown-it's count of cells it fills in far from its bound (a cut starts the count
    again)."""
    from markdown_it.common.utils import mdTrim
    from markdown_it.rules_block.table import escapedSplit

    limit = getattr(import_module("markdown_it.rules_block.table"), "MAX_AUTOCOMPLETED_CELLS", None)
    n = len(starts)

    def line(k: int) -> str:
        return text[starts[k] : starts[k + 1] if k + 1 < n else len(text)].rstrip("\r\n")

    def columns(k: int) -> int:
        found = escapedSplit(mdTrim(line(k)))
        if found and found[0] == "":
            found.pop(0)
        if found and found[-1] == "":
            found.pop()
        return len(found)

    found: list[tuple[int, int, int]] = []
    for head in [0, *cuts]:
        if head + 2 >= n or "|" not in line(head):
            continue
        end = head + 2
        while end < n and mdTrim(line(end)):  # (the table ends at or before a blank line)
            end += 1
        if end - head <= PIECE_ROWS:
            continue
        tokens = parser().parse(text[starts[head] : starts[head + 3]], {})
        if not tokens or tokens[0].type != "table_open" or tokens[0].map != [0, 3]:
            continue  # (not a table, or its first row is not one of its rows)
        width = sum(1 for tok in tokens if tok.type == "th_open")
        filled, last = 0, head + 2
        for k in range(head + 2, end):
            if limit is not None:
                filled += width - columns(k)
                if abs(filled) > limit // 2:  # (past half the bound: the table is not cut)
                    break
            if last == k - 1 and _TABLE_ROW.match(line(k)):
                last = k
        else:
            if last > head + 2:
                found.append((head + 3, last, head))
    return found
