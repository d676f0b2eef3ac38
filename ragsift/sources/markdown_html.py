"""Raw HTML in markdown, reduced to the text a reader sees (``parse_markdown``'s last step).

markdown-it-py finds the HTML (its ``html_block`` tokens, and the ``html_inline`` and entity
tokens of inline parsing, whose positions in the source are recorded as they are parsed);
``sources.html.fragment_edits`` (the standard library's ``html.parser``) says what each piece
of it reduces to. The result is a list of edits, ``(start, end, replacement)`` in the file's
offsets, sorted and disjoint:

- tags of HTML elements go (``<font color=x>$ typer main.py</font>`` → ``$ typer main.py``;
  a block or line-break tag between two words leaves a space); a ``<name>`` that is no HTML
  element is text (``--output <file>``, ``<str>``);
- comments, ``<script>``/``<style>`` with their content, declarations go entirely;
- character references are decoded (``&amp;`` → ``&``, ``&lt;`` → ``<``, ``&#39;`` → ``'``);
- code spans, indented code and fenced code show HTML as code: kept verbatim, except a fenced
  block of terminal output (no language, or console, bash, sh, shell, text, …) that is the
  whole content of a raw HTML element (``<div class="termy">``, blank line, the fence, blank
  line, ``</div>``): a page renders that block as the element's HTML (terminal widgets colour
  it with ``<font>`` and ``<b>``), so it is reduced as HTML.

Nothing else changes: markdown syntax, line breaks and the text between tags stay, so the
line map still points each piece of text at its source line. Whatever cannot be located in
the source exactly (an inline token whose text markdown-it changed, e.g. a tab it expanded) is
left as it is.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache
from typing import Any

from ragsift.sources.document import OffsetMap
from ragsift.sources.html import SPACED, fragment_edits, is_element
from ragsift.sources.html_layout import DROP

Edit = tuple[int, int, str]

# fence languages of terminal sessions and plain output (a fence of any other language shows
# code, HTML included, verbatim)
TERMINAL_LANGUAGES = frozenset(
    (
        "",
        "console",
        "terminal",
        "shell-session",
        "sh-session",
        "bash",
        "sh",
        "shell",
        "zsh",
        "text",
        "txt",
        "plain",
        "plaintext",
        "output",
        "ansi",
    )
)
_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")


@cache
def _inline_parser() -> Any:
    """markdown-it for inline parsing that records, on each ``html_inline`` and entity token,
    where it lies in the inline source (``meta["src"]``)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    for rule in md.inline.ruler.__rules__:
        if rule.name in ("html_inline", "entity"):
            md.inline.ruler.at(rule.name, _recording(rule.fn))
    return md


def _recording(fn: Any) -> Any:
    def rule(state: Any, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        found = fn(state, silent)
        if found and not silent and len(state.tokens) > count:
            state.tokens[-1].meta = {**(state.tokens[-1].meta or {}), "src": (start, state.pos)}
        return found

    return rule


def reader_edits(text: str, lines: OffsetMap, tokens: list[Any], env: dict) -> list[Edit]:
    """The edits that reduce the raw HTML of a markdown ``text`` (block ``tokens`` of
    ``parse_markdown``'s parser, ``lines`` its line map) to its text."""
    starts = lines.starts or (0,)
    edits: list[Edit] = []
    inline, cells = [], set()
    depth = 0  # inside a table
    for tok in tokens:
        depth += tok.type == "table_open"
        depth -= tok.type == "table_close"
        if tok.type == "inline" and tok.map is not None:
            if depth:
                cells.add(id(tok))  # every cell: a row's cells are found left to right
                inline.append(tok)
            elif "<" in tok.content or "&" in tok.content:
                inline.append(tok)
    _parse([t for t in inline if "<" in t.content or "&" in t.content], env)
    cell_from: dict[int, int] = {}
    for tok in inline:
        edits += _inline_edits(text, starts, tok, cell_from if id(tok) in cells else None)
    block_of: dict[int, tuple[int, int]] = {}  # html_block index -> (left open, closed outer)
    for i, tok in enumerate(tokens):
        if tok.type == "html_block" and tok.map is not None:
            begin = _content_start(text, starts, tok.map[0], tok.content.split("\n", 1)[0])
            if begin < 0:
                continue
            end = _line_start(text, starts, tok.map[1])
            found, left_open, closed_outer = fragment_edits(text[begin:end], begin)
            edits += found
            block_of[i] = (left_open, closed_outer)
    for i, tok in enumerate(tokens):
        if (
            tok.type == "fence"
            and tok.map is not None
            and 0 < i < len(tokens) - 1
            and block_of.get(i - 1, (0, 0))[0]
            and block_of.get(i + 1, (0, 0))[1]
            and tok.info.strip().split(" ")[0].lower() in TERMINAL_LANGUAGES
        ):
            first = tok.map[0] + 1
            body = tok.content.count("\n")
            begin = _line_start(text, starts, first)
            end = _line_start(text, starts, first + body)
            edits += fragment_edits(text[begin:end], begin)[0]
    edits.sort()
    out: list[Edit] = []
    for e in edits:  # disjoint by construction; kept safe against an overlap all the same
        if not out or e[0] >= out[-1][1]:
            out.append(e)
    return out


def _parse(inline_tokens: list[Any], env: dict) -> None:
    if not inline_tokens:
        return
    from markdown_it.rules_core import inline
    from markdown_it.rules_core.state_core import StateCore

    for tok in inline_tokens:
        tok.children = []  # (a heading's were parsed for its trail: parsed again, recorded)
    state = StateCore("", _inline_parser(), env)
    state.tokens = inline_tokens
    inline(state)


def _line_start(text: str, starts: tuple[int, ...], line0: int) -> int:
    return starts[line0] if line0 < len(starts) else len(text)


def _line_text(text: str, starts: tuple[int, ...], line0: int) -> tuple[int, str]:
    """Offset and text (without its line break) of 0-based line ``line0``."""
    a = _line_start(text, starts, line0)
    b = _line_start(text, starts, line0 + 1)
    return a, text[a:b].rstrip("\r\n")


def _content_start(text: str, starts: tuple[int, ...], line0: int, content: str) -> int:
    """Where a token's content line ``content`` starts in source line ``line0``: the line
    minus its indent and container markers (``>``, list items). -1 when it is not there."""
    a, line = _line_text(text, starts, line0)
    for candidate in (line, line.rstrip(" \t")):
        if candidate.endswith(content):
            return a + len(candidate) - len(content)
    k = line.find(content)  # an ATX heading with a closing sequence, a table cell
    return a + k if content and k >= 0 else -1


def _locate(
    text: str, starts: tuple[int, ...], tok: Any, cell_from: dict[int, int] | None
) -> list[int] | None:
    """The source offset of each line of an inline token's content, or None when a line is
    not found verbatim in its source line (the token is then left as it is). A table row's
    cells are found left to right: ``cell_from`` holds where the row's previous cell ended."""
    rows = tok.content.split("\n")
    if len(rows) > tok.map[1] - tok.map[0]:
        return None
    if cell_from is not None:
        a, line = _line_text(text, starts, tok.map[0])
        k = line.find(tok.content, cell_from.get(tok.map[0], 0)) if tok.content else -1
        if k < 0:
            return None
        cell_from[tok.map[0]] = k + len(tok.content)
        return [a + k]
    found = []
    for k, row in enumerate(rows):
        at = _content_start(text, starts, tok.map[0] + k, row)
        if at < 0:
            return None
        found.append(at)
    return found


def _inline_edits(
    text: str, starts: tuple[int, ...], tok: Any, cell_from: dict[int, int] | None
) -> list[Edit]:
    spans = [c for c in tok.children or [] if "src" in (c.meta or {})]
    if not spans and cell_from is None:
        return []
    rows = _locate(text, starts, tok, cell_from)  # (a cell moves its row's cursor on)
    if not spans:
        return []
    if rows is None:
        return []
    row_starts = [0]
    for row in tok.content.split("\n")[:-1]:
        row_starts.append(row_starts[-1] + len(row) + 1)

    def source(offset: int) -> int:
        k = bisect_right(row_starts, offset) - 1
        return rows[k] + offset - row_starts[k]

    edits: list[tuple[int, int, str, bool]] = []
    k = 0
    while k < len(spans):
        c = spans[k]
        a, b = c.meta["src"]
        k += 1
        if c.type == "html_inline":
            m = _TAG_NAME.match(c.content)
            if m is None:  # a comment, declaration, processing instruction, CDATA
                edits.append((a, b, "", False))
                continue
            closing, name = m.group(1) == "/", m.group(2).lower()
            if not is_element(name):
                continue
            if not closing and name in DROP and not c.content.endswith("/>"):
                close = next(
                    (
                        j
                        for j in range(k, len(spans))
                        if spans[j].type == "html_inline"
                        and spans[j].content.lower().startswith(f"</{name}")
                    ),
                    None,
                )
                if close is not None:  # the element and everything in it
                    b = spans[close].meta["src"][1]
                    k = close + 1
            edits.append((a, b, "", name in SPACED))
        elif c.info == "entity" and c.content != c.markup:
            edits.append((a, b, c.content, False))
    out: list[Edit] = []
    content = tok.content
    j = 0
    while j < len(edits):
        a, b, rep, spaced = edits[j]
        j += 1
        while not rep and j < len(edits) and edits[j][0] == b and not edits[j][2]:
            b, spaced = edits[j][1], spaced or edits[j][3]
            j += 1
        if (
            not rep
            and spaced
            and a > 0
            and b < len(content)
            and not content[a - 1].isspace()
            and not content[b].isspace()
        ):
            rep = " "
        sa, sb = source(a), source(b)
        if text[sa:sb].replace("\r", "") != content[a:b]:  # not where we thought: leave it
            continue
        out.append((sa, sb, rep))
    return out
