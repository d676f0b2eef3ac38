"""Markdown: the file's text as a reader reads it, with heading trails and pages.

``parse_markdown`` keeps ``text`` as the file's own text (after decoding), except raw HTML,
which is reduced to its text (``markdown_html``: tags and comments go, entities are decoded,
code that shows HTML keeps it); a file without raw HTML is kept byte for byte. Chunk offsets
are into that text; the line map points every piece of it at its line in the file. Headings
come from markdown-it-py's block tokens (ATX and setext, top level only, not inside lists or
quotes); a heading's trail starts at the first character of its line. A title leaves out a
trailing attribute list (``## Install {#install}``: ``HEADING_ATTRIBUTES``); the text keeps
it, as the file has it. Page numbers come from ``<page_break page=N>`` tags anywhere in the
text (``page_break`` is no HTML element: the tags stay): page 1 before the first tag, page N
from the tag's ``<`` on. A file without tags has no page map.

``render_markdown_tables`` is an optional conversion for the markdown chunker: GFM tables
become numbered lists (a row per line, ``"1. name: Ada; born: 1815"``), which embed and cite
better than pipes. Its result is a new ``Document`` whose offsets are in the converted text,
whose line map still points at the original lines (each rendered row at its table row's line)
and whose heading and page maps are moved to the converted offsets.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import replace
from functools import cache
from typing import Any

from ragsift.sources.document import Document, OffsetMap
from ragsift.sources.markdown_pieces import BlockBound, block_tokens, parser, token_pieces

# Every line a top-level heading can start on: an ATX ``#`` or a setext underline (``===`` or
# ``---`` alone on its line) after at most three spaces (a tab or more spaces make it code).
# A superset test: text with no such line has no headings, and markdown-it need not run.
# (searched in "\n" + text: a pattern that starts with a line break scans fast; without "\r"
# in the text, one that starts with the literal "\n" scans ~10x faster than the class)
HEADING_LINE = re.compile(r"[\r\n] {0,3}(?:#|(?:=+|-+)[ \t]*(?:[\r\n]|\Z))")
_HEADING_LINE_LF = re.compile(r"\n {0,3}(?:#|(?:=+|-+)[ \t]*(?:\n|\Z))")
_HEADING_FIRST_LINE = re.compile(r" {0,3}(?:#|(?:=+|-+)[ \t]*(?:[\r\n]|\Z))")
# a tag of HTML (a letter, "/", "!" or "?" after "<") or a character reference: a file
# without one has no raw HTML to reduce
_MAY_HAVE_HTML = re.compile(r"<[A-Za-z/!?]|&(?:#|[A-Za-z][A-Za-z0-9]*;)")
# What can make ``markdown_html.reader_edits`` change a piece of a long file (a superset
# test; issue 40, item 7): a line that opens an HTML block (markdown-it's own start
# conditions, tried on every line whose first character after indentation and container
# markers is "<"), or anywhere (``_EDIT_AT``) a character reference markdown-it decodes, a comment,
# declaration, processing instruction or CDATA, or a tag whose name is an HTML element
# (``html.is_element``). Other ``<name>``s in running text are text (``--output <file>``,
# WikiText's ``<unk>``), and ``&name;`` with no such entity stays as it is.
_LINE_LT = re.compile(r"\n[ \t>*+\-0-9.)]*<")
_LINE_LT_CR = re.compile(r"[\r\n][ \t>*+\-0-9.)]*<")
_FIRST_LINE_LT = re.compile(r"[ \t>*+\-0-9.)]*<")
_LINE_END = re.compile(r"[\r\n]")
# the names of markdown-it's HTML blocks (its ``common.html_blocks.block_names``, and
# script, pre, style, textarea) that ``html.is_element`` does not know (a test compares)
BLOCK_NAMES_NOT_ELEMENTS = frozenset({"menuitem"})
_TAG_START = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)")
_EDIT_AT = re.compile(r"&(?:#|([A-Za-z][A-Za-z0-9]*);)|<(?:[!?]|/?([A-Za-z][A-Za-z0-9-]*))")
PAGE_BREAK = re.compile(r"<page_break\s+page\s*=\s*[\"']?(\d+)[\"']?\s*/?>", re.IGNORECASE)
# A heading's attribute list (VitePress and markdown-it-attrs, mkdocs' attr_list, Pandoc,
# MyST): one well-formed ``{...}`` (or ``{:...}``) of ``#id``, ``.class`` and ``key=value``
# items at the end of a heading's text, ``## Install {#install}``. It is markup (the anchor a
# site links to), not the title: the trail leaves it out. ``{foo}`` (no such item), braces
# before the end and a heading of nothing else stay as they are (``_title_source``).
_ATTR_ITEM = (  # (``-``: Pandoc's shorthand for ``.unnumbered``, ``# Preface {-}``)
    r"""(?:#[^\s{}"'=]+|\.[^\s{}"'=#.]+|[A-Za-z_:][\w:.-]*=(?:"[^"]*"|'[^']*'|[^\s{}"']+)|-)"""
)
HEADING_ATTRIBUTES = re.compile(rf"\{{:?[ \t]*{_ATTR_ITEM}(?:[ \t]+{_ATTR_ITEM})*[ \t]*\}}\Z")


def may_have_headings(text: str) -> bool:
    r"""``HEADING_LINE.search("\n" + text)``, without copying the text."""
    if _HEADING_FIRST_LINE.match(text):
        return True
    return (HEADING_LINE if "\r" in text else _HEADING_LINE_LF).search(text) is not None


def may_have_edits(text: str) -> bool:
    """Whether ``reader_edits`` may change ``text`` (a piece): ``False`` only when it surely
    finds nothing to reduce (see ``_EDIT_AT``)."""
    for mark in "<&":  # (each "<" and "&" looked at: faster than a regex scan of the text)
        at = text.find(mark)
        while at >= 0:
            m = _EDIT_AT.match(text, at)
            if m is not None:
                entity, tag = m.groups()
                if entity is not None:
                    if entity in _entity_names():
                        return True
                elif tag is None or _is_element(tag):
                    return True
            at = text.find(mark, at + 1)
    # no element's tag, comment or the like anywhere: a line that starts with "<" opens an
    # HTML block only by a name markdown-it knows and is_element does not, or as a whole tag
    # alone on its line (then markdown-it, imported only here, says whether it does)
    first = _FIRST_LINE_LT.match(text)
    rest = (_LINE_LT_CR if "\r" in text else _LINE_LT).finditer(text)
    for m in ([first] if first else []) + list(rest):
        end = _LINE_END.search(text, m.end())
        line = text[m.end() - 1 : end.start() if end else len(text)].replace("\0", "\ufffd")
        name = _TAG_START.match(line)
        if name is not None and name.group(1).lower() in BLOCK_NAMES_NOT_ELEMENTS:
            return True
        if line.rstrip().endswith(">") and _opens_html_block(line):
            return True
    return False


@cache
def _entity_names() -> frozenset[str]:
    """The names of the character references markdown-it decodes (``&name;``)."""
    from html.entities import html5

    return frozenset(name.rstrip(";") for name in html5)


def _is_element(name: str) -> bool:
    from ragsift.sources.html import is_element

    return is_element(name)


def _opens_html_block(line: str) -> bool:
    """Whether markdown-it opens an HTML block at ``line`` (from its ``<`` on)."""
    from markdown_it.rules_block.html_block import HTML_SEQUENCES

    return any(start.search(line) for start, _, _ in HTML_SEQUENCES)


def _title_source(tok: Any, attributes: bool = True) -> Any:
    """A heading's inline token, without a trailing attribute list (``HEADING_ATTRIBUTES``,
    matched in its source: an escaped ``\\{`` is text) when ``attributes``: a copy, the
    parse's own token is left as it is (``markdown_html`` reads the tokens)."""
    if not attributes or tok.type != "inline":
        return tok
    title = without_attribute_list(tok.content)
    return tok if title is tok.content else tok.copy(content=title)


def without_attribute_list(source: str) -> str:
    """A heading's source text without one trailing attribute list (``HEADING_ATTRIBUTES``),
    the same string where it has none, where the list is escaped (``\\{``) or where it is all
    the heading holds. The markdown reader's trails and the chunkers' own scan of text read
    as plain text (``chunkers.outline``) both ask this."""
    if not source.endswith("}"):
        return source
    m = HEADING_ATTRIBUTES.search(source)
    if m is None:
        return source
    title = source[: m.start()]
    if title.endswith("\\") or not title.strip():
        return source
    return title.rstrip()


def _parse_inline(inline_tokens: list[Any], env: dict) -> None:
    """Fill ``children`` of the given inline tokens exactly as a full parse would (the core
    ``inline`` and ``text_join`` rules, with the document's link references in ``env``)."""
    if not inline_tokens:
        return
    from markdown_it.rules_core import inline, text_join
    from markdown_it.rules_core.state_core import StateCore

    state = StateCore("", parser(), env)
    state.tokens = inline_tokens
    inline(state)
    text_join(state)


def parse_markdown(
    text: str,
    path: str,
    *,
    source: str = "",
    encoding: str = "utf-8",
    warnings: tuple[str, ...] = (),
    html: bool = True,
) -> Document:
    """The ``Document`` of a markdown file (see the module docstring). ``html=False`` keeps
    the text as it is and the heading titles whole, attribute lists too (``sources.rst`` hands
    over text that is already what a reader reads; ``heading_titles`` reads them so too)."""
    lines = OffsetMap.of_lines(text)
    attributes = html  # (text already as a reader reads it has no markup in its headings)
    html = html and _MAY_HAVE_HTML.search(text) is not None
    heads: list[tuple[Any, str]] = []  # (heading_open, its title)
    edits: list[tuple[int, int, str]] = []
    if html or may_have_headings(text):
        try:
            # a piece without a line that may be a heading, and without HTML that may be
            # reduced (an element's tag, a comment, a character reference, a line that may
            # open an HTML block), has no heading and nothing to reduce: it is not parsed
            if html:
                need = lambda src: may_have_headings(src) or may_have_edits(src)  # noqa: E731
            else:
                need = may_have_headings
            for tokens, env in token_pieces(text, lines.starts or (0,), need):
                found = [
                    (tok, _title_source(tokens[i + 1], attributes) if i + 1 < len(tokens) else None)
                    for i, tok in enumerate(tokens)
                    if tok.type == "heading_open" and tok.level == 0 and tok.map is not None
                ]
                _parse_inline([t for _, t in found if t is not None], env)
                heads += [(tok, inline_text(t) if t is not None else "") for tok, t in found]
                if html:
                    from ragsift.sources.markdown_html import reader_edits

                    edits += reader_edits(text, lines, tokens, env)
        except BlockBound as exc:  # read as text: no trail; its raw HTML still reduced
            heads, edits = [], _plain_html_edits(text) if html else []
            html = False
            warnings = (*warnings, f"{exc}; read as plain text")
    starts: list[int] = []
    trails: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for tok, title in heads:
        level = int(tok.tag[1:])
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        offset = _line_offset(lines, tok.map[0])
        trail = tuple(t for _, t in stack)
        if starts and starts[-1] == offset:
            trails[-1] = trail
        else:
            starts.append(offset)
            trails.append(trail)
    doc = Document(
        text=text,
        path=path,
        format="markdown",
        source=source,
        encoding=encoding,
        lines=lines,
        pages=page_map(text),
        headings=OffsetMap(tuple(starts), tuple(trails)) if starts else None,
        warnings=warnings,
    )
    if edits:
        return _edited(doc, edits)
    return doc


def _plain_html_edits(text: str) -> list[tuple[int, int, str]]:
    """The raw HTML of a markdown text read as plain text (past the block bound) reduced as a
    reader sees it (``html.fragment_edits``, over the whole text: code shows no HTML then),
    in time linear in the text (the standard library's ``html.parser``): a 1 MiB inlined
    image (``<img src="data:...">``) on one line is what puts a file past the bound, and
    read as text it was chunked and embedded, 750,000 tokens of base64 (issue 40)."""
    from ragsift.sources.html import fragment_edits

    return fragment_edits(text)[0]


def _edited(doc: Document, edits: list[tuple[int, int, str]]) -> Document:
    """``doc`` with its text edited (sorted, disjoint ``(start, end, replacement)``) and every
    map moved to the new offsets. A line start inside an edit moves to the edit's end, so
    where an edit took out a line break the text after it still names its own line."""
    text = doc.text
    pieces: list[str] = []
    runs: list[tuple[int, int, int]] = []  # (old start, new start, new length): kept or edit
    pos = new = 0
    for a, b, rep in [*edits, (len(text), len(text), "")]:
        if a > pos:
            runs.append((pos, new, a - pos))
            pieces.append(text[pos:a])
            new += a - pos
        if b > a or rep:
            runs.append((a, new, len(rep)))
            pieces.append(rep)
            new += len(rep)
        pos = b
    run_starts = [r[0] for r in runs]

    def moved(offset: int) -> int:
        k = bisect_right(run_starts, offset) - 1
        if k < 0:
            return offset
        old, start, length = runs[k]
        return start + min(offset - old, length)

    def remap(m: OffsetMap | None) -> OffsetMap | None:
        if m is None:
            return None
        return _dedupe([(moved(s), v) for s, v in zip(m.starts, m.values)])

    return replace(
        doc,
        text="".join(pieces),
        lines=remap(doc.lines) or doc.lines,
        headings=remap(doc.headings),
        pages=remap(doc.pages),
    )


def page_map(text: str) -> OffsetMap | None:
    """Page numbers from ``<page_break page=N>`` tags; ``None`` when there are none."""
    starts, pages = [0], [1]
    for m in PAGE_BREAK.finditer(text):
        if starts[-1] == m.start():
            pages[-1] = int(m.group(1))
        else:
            starts.append(m.start())
            pages.append(int(m.group(1)))
    return OffsetMap(tuple(starts), tuple(pages)) if len(starts) > 1 else None


def _line_offset(lines: OffsetMap, line0: int) -> int:
    """Character offset of 0-based line ``line0`` (markdown-it's ``token.map`` numbering)."""
    if not lines.starts:
        return 0
    return lines.starts[min(line0, len(lines.starts) - 1)]


def _with_markup(inline_tokens: list[Any]) -> list[Any]:
    """The inline tokens whose text inline parsing can change: those with a character that
    stops markdown-it's ``text`` rule (every other inline rule starts at one). A cell
    without one parses to a single text token of its content, which ``inline_text`` gives
    unparsed too (a giant table's cells are mostly such: a parse each was most of its time).
    """
    stops = getattr(parser().inline, "terminator_re", None)
    if stops is None or parser().options.get("linkify"):
        return inline_tokens
    search = stops.search
    return [t for t in inline_tokens if search(t.content) is not None]


def inline_text(tok: Any, html_as_text: bool = False) -> str:
    """Plain text of an inline token: text and code spans, markup dropped (``html_as_text``:
    inline HTML kept as text)."""
    if tok.type != "inline":
        return ""
    if tok.children:
        kept = ("text", "code_inline", "html_inline") if html_as_text else ("text", "code_inline")
        text = "".join(
            c.content if c.type in kept else " " if c.type in ("softbreak", "hardbreak") else ""
            for c in tok.children
        )
        return " ".join(text.split()) or " ".join(tok.content.split())
    return " ".join(tok.content.split())


def heading_titles(lines: list[str]) -> list[tuple[int, str]] | None:
    """``(level, title)`` of each ATX heading line (``"## Usage *now*"`` -> ``(2, "Usage
    now")``) as ``parse_markdown`` reads it, in one parse; None when the lines do not read as
    as many headings (``sources.rst``, which knows where its headings are, asks only this).
    As with ``parse_markdown(..., html=False)``, a trailing ``{#id}`` stays in the title: an
    rst title's braces are its text."""
    if not lines:
        return []
    tokens, env = block_tokens("\n\n".join(lines) + "\n")
    found = [
        i
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open" and tok.level == 0 and i + 1 < len(tokens)
    ]
    if len(found) != len(lines):
        return None
    _parse_inline([tokens[i + 1] for i in found], env)
    return [(int(tokens[i].tag[1:]), inline_text(tokens[i + 1])) for i in found]


def render_markdown_tables(doc: Document) -> Document:
    """Rewrite GFM tables in a markdown ``doc`` as numbered lists of ``header: value`` pairs.

    Each body row becomes one line, ``"N. h1: v1; h2: v2"`` (empty cells are left out; a
    cell under an empty header keeps just its value); the header and delimiter rows go.
    Tables without body rows and tables nested in lists or quotes are left as they are.

    The returned ``Document`` has the converted ``text``; its ``lines`` map points each
    rendered row at the original line of that row and every other line at its original
    line; ``headings`` and ``pages`` are moved to the converted offsets (a value that started
    inside a table starts where the table's list starts). ``doc`` is returned unchanged when
    it has no table. Offsets of chunks cut from the result refer to the result's text.
    """
    text = doc.text
    if "|" not in text:  # markdown-it's table rule needs a "|" in the header row
        return doc
    try:
        tables = _found_tables(text)
    except BlockBound:  # parse_markdown said so already: the text stays as it is
        return doc
    tables = [table for table in tables if table[2]]  # (a table without body rows stays)
    if not tables:
        return doc
    new_text, segments, new_lines = _tables_as_lists(text, tables)
    seg_starts = [s[0] for s in segments]

    def translate(offset: int) -> tuple[int, bool]:
        k = bisect_right(seg_starts, offset) - 1
        orig, new, replaced = segments[max(k, 0)]
        return (new, True) if replaced else (new + offset - orig, False)

    for start, value in zip(doc.lines.starts, doc.lines.values):
        new, replaced = translate(start)
        if not replaced:
            new_lines.append((new, value))

    def moved(m: OffsetMap | None) -> OffsetMap | None:
        if m is None:
            return None
        return _dedupe([(translate(s)[0], v) for s, v in zip(m.starts, m.values)])

    return replace(
        doc,
        text=new_text,
        lines=_dedupe(sorted(new_lines, key=lambda p: p[0])),
        headings=moved(doc.headings),
        pages=moved(doc.pages),
    )


def _found_tables(text: str) -> list[tuple[int, int, list[tuple[str, int]]]]:
    """The top-level GFM tables of ``text``: each one's start and end offsets and its body
    rows (``_table_rows``). A table that a piece of ``token_pieces`` continues is one
    table. Raises ``BlockBound`` as ``token_pieces`` does."""
    line_starts = OffsetMap.of_lines(text).starts
    # (orig_start, orig_end, replacement lines [(text, original line number)])
    tables: list[tuple[int, int, list[tuple[str, int]]]] = []
    for tokens, env in token_pieces(text, line_starts or (0,)):
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == "table_open" and tok.level == 0 and tok.map:
                j = i
                while tokens[j].type != "table_close":
                    j += 1
                _parse_inline(_with_markup([t for t in tokens[i:j] if t.type == "inline"]), env)
                rows = _table_rows(tokens[i : j + 1])
                end_line = tok.map[1]
                end = line_starts[end_line] if end_line < len(line_starts) else len(text)
                if tok.meta.get("continues") and tables:  # (the rest of the previous
                    start, _, before = tables.pop()  # piece's last table: token_pieces)
                    before.extend(rows)
                    rows = before
                else:
                    start = _line_offset(OffsetMap(line_starts), tok.map[0])
                tables.append((start, end, rows))
                i = j
            i += 1
    return tables


def _tables_as_lists(
    text: str, tables: list[tuple[int, int, list[tuple[str, int]]]]
) -> tuple[str, list[tuple[int, int, bool]], list[tuple[int, Any]]]:
    """``text`` with each of ``tables`` replaced by its numbered rows; the segments that
    translate offsets (``(orig_start, new_start, replaced?)``) and the new text's line map
    pairs for the rows (``(new_start, original line)``)."""
    pieces: list[str] = []
    # Segments for translating offsets: (orig_start, new_start, replaced?)
    segments: list[tuple[int, int, bool]] = []
    new_lines: list[tuple[int, Any]] = []
    pos = new_len = 0

    def copy(upto: int) -> None:
        nonlocal pos, new_len
        if upto > pos:
            segments.append((pos, new_len, False))
            pieces.append(text[pos:upto])
            new_len += upto - pos
            pos = upto

    for start, end, rows in tables:
        copy(start)
        segments.append((start, new_len, True))
        block = text[start:end]
        newline = "\r\n" if "\r\n" in block else "\n"
        for n, (row, line_no) in enumerate(rows, 1):
            new_lines.append((new_len, line_no))
            piece = f"{n}. {row}"
            if n < len(rows) or block.endswith(("\n", "\r")):
                piece += newline
            pieces.append(piece)
            new_len += len(piece)
        pos = end
    copy(len(text))
    return "".join(pieces), segments, new_lines


def _dedupe(pairs: list[tuple[int, Any]]) -> OffsetMap:
    """Sorted ``(start, value)`` pairs; of equal starts the last one holds."""
    out_s: list[int] = []
    out_v: list[Any] = []
    for s, v in pairs:
        if out_s and out_s[-1] == s:
            out_v[-1] = v
        else:
            out_s.append(s)
            out_v.append(v)
    return OffsetMap(tuple(out_s), tuple(out_v))


def _table_rows(tokens: list[Any]) -> list[tuple[str, int]]:
    """Body rows of one table as ``("h: v; h2: v2", original 1-based line)``."""
    headers: list[str] = []
    rows: list[tuple[str, int]] = []
    in_head = False
    current: list[str] = []
    row_line = 0
    for _k, tok in enumerate(tokens):
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open":
            current = []
            row_line = (tok.map[0] + 1) if tok.map else row_line + 1
        elif tok.type == "inline":  # (the text is a reader's: a "<b>" left in it is text)
            current.append(inline_text(tok, html_as_text=True))
        elif tok.type == "tr_close":
            if in_head:
                headers = current
                continue
            pairs = []
            for c, cell in enumerate(current):
                head = headers[c] if c < len(headers) else ""
                if cell:
                    pairs.append(f"{head}: {cell}" if head else cell)
            if pairs:
                rows.append(("; ".join(pairs), row_line))
    return rows
