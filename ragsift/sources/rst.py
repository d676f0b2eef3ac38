"""reStructuredText (and Sphinx sources) parsed by docutils, the format's own parser.

``parse_rst`` renders the doctree as the text a reader sees, laid out as markdown, so an
``.rst`` file gets heading trails and heading-first chunking exactly as a markdown file does
(the trails are those ``parse_markdown`` gives the rendered text, built from the headings
the renderer wrote, their titles read by ``markdown.heading_titles``). A long file is
parsed in pieces (``rst_pieces``: bounded work and memory per piece, the same text):

- section titles become ``#`` headings (one ``#`` per nesting level), without their
  adornment lines;
- paragraphs, lists, definition and field lists, tables (a row per line, cells joined by
  ``|``), admonitions (``Note: …``), footnotes and block quotes keep their text; roles render
  as their text (``:func:`url_for``` → ``url_for``, ``:class:`~flask.Flask``` → ``Flask``,
  ``:ref:`routing <url-routing>``` → ``routing``), references as their title;
- literal blocks (``::``) and ``code-block``/``code``/``sourcecode`` stay code, fenced; their
  blank lines hold one space, so a chunker that cuts at blank lines never cuts inside one
  that fits its budget;
- Sphinx's own directives, which docutils does not know, never fail a file and never leave
  markup: an object description (``autoclass``, ``autofunction``, ``py:function``, …) keeps
  its signature line (``class flask.Flask``) and its content; ``versionadded`` and kin become
  ``Added in version 2.0.``; pure markup (``toctree``, ``index``, ``currentmodule``,
  ``highlight``, options such as ``:members:``) is dropped; an unknown directive or role is
  dropped or reduced to its text (docutils is taught them by ``rst_sphinx``). Comments,
  targets and substitution definitions are dropped.

Offsets: ``Document.text`` is the rendered text (chunk offsets and the invariant
``document.text[start:end] == text`` hold in it); the line map points every rendered line at
the ``.rst`` line it comes from. A file docutils cannot parse, or past ``rst_pieces``'
bounds, is read as plain text with one warning; without docutils installed, the same
(``loader.py``).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace
from functools import cache
from itertools import accumulate
from typing import Any

from ragsift.sources.document import Document, OffsetMap
from ragsift.sources.rst_sphinx import register_sphinx, role_text

_ROLE_MARKUP = re.compile(r":(?:[\w.+-]+:)?[\w.+-]+:`([^`]*)`")
_DIRECTIVE_MARKUP = re.compile(r"^\.\. [\w:.+-]+::.*$", re.MULTILINE)
_OPTION_LINE = re.compile(r"\s*:[\w.+-]+:( |$)")  # a directive's option, under its line


def parse_rst(
    text: str,
    path: str,
    *,
    source: str = "",
    encoding: str = "utf-8",
    warnings: tuple[str, ...] = (),
) -> Document:
    """The ``Document`` of an ``.rst`` file (see the module docstring). Raises ``ValueError``
    when docutils cannot make a doctree of it (the loader then reads it as text)."""
    from ragsift.sources.markdown import heading_titles, page_map, parse_markdown
    from ragsift.sources.rst_parallel import rendered as rendered_pieces
    from ragsift.sources.rst_pieces import pieces

    rendered_lines: list[str] = []
    line_of: list[int] = []
    heads: list[int] = []  # indexes of the heading lines in rendered_lines
    parts = pieces(text)  # parsed one at a time: bounded work and memory each
    for piece, (p_lines, p_line_of, p_heads) in zip(
        parts,
        rendered_pieces([(p.text, p.depth) for p in parts], render_piece, len(text), __name__),
    ):
        heads += [len(rendered_lines) + k for k in p_heads]
        rendered_lines += p_lines
        line_of += [n + piece.first_line for n in p_line_of]
    rendered = _Renderer.joined(rendered_lines, line_of)
    starts = tuple(
        accumulate((len(rendered_lines[i]) + 1 for i in range(len(rendered_lines) - 1)), initial=0)
    )
    del line_of[len(starts) :]
    lines = OffsetMap(starts, tuple(line_of))
    del line_of  # (the map's tuple holds them: the list would double a long file's peak)
    titles = heading_titles([rendered_lines[k] for k in heads])
    if titles is None:  # (a title markdown does not read as one heading: as before)
        doc = parse_markdown(
            rendered, path, source=source, encoding=encoding, warnings=warnings, html=False
        )
        return replace(doc, format="rst", lines=lines)
    # the heading trails as parse_markdown gives them for the rendered text, from the
    # headings the renderer wrote (no markdown parse of the whole text)
    trail_starts: list[int] = []
    trails: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for k, (level, title) in zip(heads, titles):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        trail = tuple(t for _, t in stack)
        if trail_starts and trail_starts[-1] == starts[k]:
            trails[-1] = trail
        else:
            trail_starts.append(starts[k])
            trails.append(trail)
    return Document(
        text=rendered,
        path=path,
        format="rst",
        source=source,
        encoding=encoding,
        lines=lines,
        pages=page_map(rendered),
        headings=OffsetMap(tuple(trail_starts), tuple(trails)) if trails else None,
        warnings=warnings,
    )


def render_piece(text: str, depth: int) -> tuple[list[str], list[int], list[int]]:
    """One piece's rendered lines, the piece's line each comes from, and which lines are
    section titles (``depth``: the nesting depth of its first title). A pure function of
    its arguments: ``rst_parallel`` runs it in either of two processes."""
    out = _Renderer(text)
    tree = _doctree(text)
    out.children(tree, depth)
    _release(tree)
    return out.lines, out.line_of, out.heads


def _doctree(text: str) -> Any:
    from docutils.core import publish_doctree
    from docutils.parsers.rst import Parser

    parser = Parser()
    try:
        return publish_doctree(text, settings=_settings(), parser=parser)
    except Exception as exc:
        raise ValueError(
            f"docutils could not parse it ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None
    finally:
        _release_parser(parser)


def _release_parser(parser: Any) -> None:
    """Free a piece's parser now: its state machine and its states point at each other, a
    cycle of ~15 KB a piece that the collector frees late, so a long table's pieces piled
    up (bench/RESULTS.md, "Bounded work per document"). (The nested machines docutils keeps
    in its class-wide cache are shared by every parse: left alone.)"""
    machine = getattr(parser, "statemachine", None)
    if machine is None or machine.states is None:
        return
    for state in machine.states.values():
        vars(state).clear()  # (its transitions hold its bound methods: another cycle)
    vars(machine).clear()
    parser.statemachine = None


def _settings() -> Any:
    """docutils' settings for one piece: a copy of ``_base_settings`` with its own warning
    stream. Building them is docutils' option parser (a tenth of a piece's parse when done
    per call); no configuration file (``docutils.conf``) is read, so the text renders the
    same in every folder."""
    import copy
    import io

    settings = copy.copy(_base_settings())
    settings.warning_stream = io.StringIO()
    return settings


@cache
def _base_settings() -> Any:
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.readers.standalone import Reader
    from docutils.writers.null import Writer

    from ragsift.sources.rst_pieces import MAX_LINE_CHARS

    register_sphinx()
    settings = get_default_settings(Reader, Parser, Writer)
    for key, value in {
        "report_level": 5,
        "halt_level": 5,
        "file_insertion_enabled": False,
        "raw_enabled": False,
        "doctitle_xform": False,
        "sectsubtitle_xform": False,
        "input_encoding": "unicode",
        "syntax_highlight": "none",
        "traceback": True,
        "line_length_limit": MAX_LINE_CHARS,
    }.items():
        setattr(settings, key, value)
    return settings


def _release(tree: Any) -> None:
    """Free a rendered doctree now: its nodes point at their parent and document, the
    document at its nodes (ids, names), so it is a cycle that only the cyclic collector
    frees, and between its rare full passes every piece's tree stayed alive (~300x the bytes
    of a table). Emptying each node's attributes breaks the cycles."""
    for node in list(tree.findall()):
        vars(node).clear()
    vars(tree).clear()


class _Renderer:
    """The doctree as markdown-shaped lines, each with the source line it comes from."""

    def __init__(self, source: str) -> None:
        self.src = source.splitlines()
        self.plain: list[str | None] = [None] * len(self.src)  # _plain of a line, on demand
        self.lines: list[str] = []
        self.line_of: list[int] = []
        self.heads: list[int] = []  # indexes in ``lines`` of the section titles
        self.last = 1

    @staticmethod
    def joined(lines: list[str], line_of: list[int]) -> str:
        """The rendered text of ``lines`` without trailing blank lines (``line_of`` is
        trimmed to match)."""
        while lines and not lines[-1].strip():
            lines.pop()
            line_of.pop()
        return "\n".join(lines) + "\n"

    # -- output ------------------------------------------------------------------------------
    def block(
        self,
        text: str,
        line: int | None,
        prefix: str = "",
        hang: str = "",
        *,
        exact: bool = False,
        span: tuple[int, int] | None = None,
    ) -> None:
        """Append a block (its lines from ``line`` on), then a blank line. ``exact``: ``line``
        is known (code), else it is a hint that ``_locate`` checks against the source.
        ``span``: the block's first and last source lines are known (a table row's:
        ``_row_spans``), its lines say the lines from the first on, none past the last."""
        rows = text.split("\n") if exact else [r.rstrip() for r in text.split("\n")]
        while rows and not rows[-1].strip():
            rows.pop()
        if not rows:
            return
        if span is not None:
            start, end = span
        else:
            start = max(1, line or self.last) if exact else self._locate(rows[0], line)
            end = max(len(self.src), 1)
        for i, row in enumerate(rows):
            self.lines.append((prefix if i == 0 else hang) + row)
            self.line_of.append(min(start + i, end))
        self.lines.append("")
        self.line_of.append(self.line_of[-1])
        self.last = start

    def _locate(self, first: str, hint: int | None) -> int:
        """The source line a rendered block starts on: docutils' line when it holds the
        block's first words, else the nearest line near it that does, else the hint."""
        hint = hint or self.last
        words = _plain(first)[:24]
        if not words:
            return max(1, hint)
        if 1 <= hint <= len(self.src) and words in self._plain_line(hint):
            return hint  # (the nearest there can be: most blocks)
        lo, hi = max(1, min(hint, self.last) - 60), min(len(self.src), hint + 60)
        best = None
        for n in range(lo, hi + 1):
            if words in self._plain_line(n) and (best is None or abs(n - hint) < abs(best - hint)):
                best = n
        return best or max(1, hint)

    def _plain_line(self, n: int) -> str:
        plain = self.plain[n - 1]
        if plain is None:
            plain = self.plain[n - 1] = _plain(self.src[n - 1])
        return plain

    # -- nodes -------------------------------------------------------------------------------
    def children(self, node: Any, depth: int, prefix: str = "") -> None:
        for child in node.children:
            self.node(child, depth, prefix)

    def node(self, n: Any, depth: int, prefix: str = "") -> None:
        from docutils import nodes

        tag = n.tagname
        if tag == "system_message":
            self._failed_source(n, prefix)
            return
        if isinstance(
            n,
            (
                nodes.comment,
                nodes.target,
                nodes.substitution_definition,
                nodes.pending,
                nodes.raw,
                nodes.image,
                nodes.transition,
                nodes.decoration,
                nodes.Invisible,
            ),
        ):
            return
        if tag == "section":
            self._section(n, depth, prefix)
        elif tag == "topic" and "contents" in n.get("classes", ()):
            return  # a generated table of contents
        elif isinstance(n, (nodes.literal_block, nodes.doctest_block)):
            self._code(n, prefix)
        elif isinstance(n, (nodes.paragraph, nodes.rubric, nodes.caption, nodes.attribution)):
            self.block(_inline(n), n.line, prefix, prefix)
        elif isinstance(n, (nodes.bullet_list, nodes.enumerated_list)):
            for i, item in enumerate(n.children, start=1):
                mark = "- " if tag == "bullet_list" else f"{i}. "
                self._item(item, depth, prefix, mark)
        elif isinstance(n, nodes.definition_list):
            self._definition_list(n, depth, prefix)
        elif isinstance(n, nodes.field_list):
            self._field_list(n, prefix)
        elif isinstance(n, nodes.Admonition):
            self._admonition(n, depth, prefix)
        elif isinstance(n, nodes.table):
            rows = list(n.findall(nodes.row))
            for row, span in zip(rows, self._row_spans(rows)):
                cells = [" ".join(_inline(p) for p in entry.children) for entry in row.children]
                self.block(" | ".join(cells), None, prefix, prefix, span=span)
        elif isinstance(n, (nodes.footnote, nodes.citation)):
            label = n.next_node(nodes.label)
            body = " ".join(_inline(c) for c in n.children if c is not label)
            self.block(f"[{_inline(label) if label else ''}] {body}", n.line, prefix, prefix)
        elif isinstance(n, nodes.line_block):
            self.block(
                "\n".join(_inline(line) for line in n.findall(nodes.line)), n.line, prefix, prefix
            )
        elif isinstance(n, nodes.option_list):
            self._option_list(n, prefix)
        elif isinstance(n, (nodes.title, nodes.subtitle)):
            self.block(_inline(n), n.line, prefix, prefix)
        elif isinstance(n, nodes.Element):
            self.children(n, depth, prefix)  # containers, block quotes, topics, sidebars
        else:
            text = n.astext().strip()  # loose text
            if text:
                self.block(_strip_markup(text), self.last, prefix, prefix)

    def _section(self, n: Any, depth: int, prefix: str) -> None:
        """A section: its title as a ``#`` heading (one ``#`` per nesting level, at most six),
        then its content a level deeper."""
        from docutils import nodes

        title = n.next_node(nodes.title)
        if title is not None:
            self.heads.append(len(self.lines))
            self.block(
                "#" * min(depth + 1, 6) + " " + _inline(title),
                (title.line or 1) - 1 if title.line else None,
            )
        for child in n.children:
            if child is not title:
                self.node(child, depth + 1, prefix)

    def _code(self, n: Any, prefix: str) -> None:
        """A literal or doctest block, fenced (its language from its classes); its blank
        lines hold one space."""
        code = n.astext()
        lang = next((c for c in n.get("classes", ()) if c not in ("code", "literal-block")), "")
        start = n.get("ragsift_start") or self._code_start(n, code)
        body = "\n".join(line if line.strip() else " " for line in code.split("\n"))
        self.block(
            f"```{lang}\n{body}\n```",
            start - 1 if start else None,
            prefix,
            prefix,
            exact=start is not None,
        )

    def _definition_list(self, n: Any, depth: int, prefix: str) -> None:
        """Each term on its own line, its definition indented under it."""
        from docutils import nodes

        for item in n.children:
            for part in item.children:
                if isinstance(part, nodes.term):
                    self.block(_inline(part), part.line, prefix, prefix)
                elif isinstance(part, nodes.definition):
                    self.children(part, depth, prefix + "  ")

    def _field_list(self, n: Any, prefix: str) -> None:
        """Each field as ``name: text``."""
        for field in n.children:
            name = _inline(field.children[0]) if field.children else ""
            body = field.children[1] if len(field.children) > 1 else None
            text = " ".join(_inline(p) for p in body.children) if body is not None else ""
            self.block(f"{name}: {text}".strip(), field.line, prefix, prefix + "  ")

    def _admonition(self, n: Any, depth: int, prefix: str) -> None:
        """An admonition as ``Word: its first paragraph``, then the rest of its content (a
        generic ``admonition``: its title for the word); with no content, ``Word.``."""
        from docutils import nodes

        tag = n.tagname
        word = n.get("ragsift_word")
        if word is None:
            word = tag.replace("_", " ").capitalize() if tag != "admonition" else ""
        title = n.next_node(nodes.title)
        if title is not None and tag == "admonition":
            word = _inline(title)
        first = True
        for child in n.children:
            if child is title:
                continue
            if first and isinstance(child, nodes.paragraph):
                self.block(
                    f"{word}: {_inline(child)}" if word else _inline(child),
                    child.line,
                    prefix,
                    prefix,
                )
            else:
                self.node(child, depth, prefix)
            first = False
        if first and word:
            self.block(word + ".", n.line, prefix, prefix)

    def _option_list(self, n: Any, prefix: str) -> None:
        """Each option as its flags, two spaces, its description."""
        for item in n.children:
            opts = _inline(item.children[0]) if item.children else ""
            desc = " ".join(_inline(c) for c in item.children[1:])
            self.block(f"{opts}  {desc}".strip(), item.line, prefix, prefix)

    def _failed_source(self, message: Any, prefix: str) -> None:
        """What docutils could not parse keeps its words: an error's source block (a
        malformed table, an unknown directive) is rendered as text, not dropped with the
        message: its lines as they are, less directive lines (``.. name::``) and their
        options, each run of lines between blank ones dedented and mapped to its own source
        lines. Messages with no source (warnings, info) render as nothing."""
        from docutils import nodes

        block = message.next_node(nodes.literal_block)
        if message.get("level", 0) < 3 or block is None:
            return
        rows = block.astext().split("\n")
        first = next((i for i, row in enumerate(rows) if _plain(row)), None)
        if first is None:
            return
        start = self._locate(rows[first], message.get("line")) - first
        kept: list[tuple[int, str]] = []  # (source line, row) of the rows a reader reads
        markup = False
        for i, row in enumerate(rows):
            if _DIRECTIVE_MARKUP.match(row.strip()) or (markup and _OPTION_LINE.match(row)):
                markup = True
                continue
            markup = False
            kept.append((start + i, row.rstrip()))
        group: list[tuple[int, str]] = []
        for line, row in [*kept, (0, "")]:
            if row.strip() and (not group or line == group[-1][0] + 1):
                group.append((line, row))
                continue
            if group:
                text = textwrap.dedent("\n".join(r for _, r in group))
                self.block(_strip_markup(text), max(1, group[0][0]), prefix, prefix, exact=True)
            group = [(line, row)] if row.strip() else []

    def _item(self, item: Any, depth: int, prefix: str, mark: str) -> None:
        from docutils import nodes

        first = True
        for child in item.children:
            if first and isinstance(child, nodes.paragraph):
                self.block(_inline(child), child.line, prefix + mark, prefix + " " * len(mark))
            else:
                self.node(child, depth, prefix + " " * len(mark))
            first = False

    def _row_spans(self, rows: list[Any]) -> list[tuple[int, int] | None]:
        """Each table row's first and last source lines, or None where they are not known
        (then ``_locate`` searches for the row's words near the block before, as for any
        block). docutils gives a row no line, but numbers what its cells hold: a paragraph
        says its first line (in a row of several lines too), and its text how many lines it
        has. Not trusted for a table whose rows do not say lines one after the other, after
        the table's own (a ``csv-table``: docutils numbers each cell from 1): none of its
        rows has one then."""
        from docutils import nodes

        spans = [self._span(row) for row in rows]
        by_table: dict[int, list[int]] = {}  # (a table in a cell: its rows on their own)
        tables: dict[int, Any] = {}
        for k, row in enumerate(rows):
            table = row.parent
            while table is not None and not isinstance(table, nodes.table):
                table = table.parent
            by_table.setdefault(id(table), []).append(k)
            tables[id(table)] = table
        for key, ks in by_table.items():
            known = [spans[k] for k in ks if spans[k] is not None]
            after = getattr(tables[key], "line", None) or 0
            if known and (
                known[0][0] <= after
                or known[-1][1] > len(self.src)
                or any(a[1] >= b[0] for a, b in zip(known, known[1:]))
            ):
                for k in ks:
                    spans[k] = None
        return spans

    @staticmethod
    def _span(node: Any) -> tuple[int, int] | None:
        """The first and last source lines of what ``node`` holds that docutils numbers (its
        own line left out: a table row has none), system messages left out; None when it
        holds nothing numbered."""
        from docutils import nodes

        first = last = None
        for child in node.children:
            if isinstance(child, nodes.system_message) or not isinstance(child, nodes.Element):
                continue
            inner = _Renderer._span(child)
            if child.line:
                end = child.line
                if isinstance(child, nodes.paragraph):  # (its text: its lines, joined)
                    end += child.rawsource.count("\n")
                inner = (
                    (min(child.line, inner[0]), max(end, inner[1])) if inner else (child.line, end)
                )
            if inner:
                first = inner[0] if first is None else min(first, inner[0])
                last = inner[1] if last is None else max(last, inner[1])
        return None if first is None else (first, last)

    def _code_start(self, n: Any, code: str) -> int | None:
        """The source line a code block starts on. docutils numbers an indented (``::``) or
        doctest block by its first line and a directive's block by the line after it, so the
        start is looked for near both: first where every row of the block matches the source
        (stripped), else where its first row does (the nearest; a block whose first row
        repeats just above it, ``make`` then ``make`` / ``make install``, no longer lands on
        the earlier one)."""
        line = n.line
        if not line:
            return None
        rows = [row.strip() for row in code.split("\n")]
        guess = line - len(rows)
        span = range(max(1, guess - 3), min(len(self.src), line + 1) + 1)

        def near(at: int) -> tuple[int, int]:
            return min(abs(at - line), abs(at - guess)), at

        whole = [
            at
            for at in span
            if at + len(rows) - 1 <= len(self.src)
            and all(self.src[at + i - 1].strip() == row for i, row in enumerate(rows))
        ]
        if whole:
            return min(whole, key=near)
        first = rows[0]
        found = [at for at in span if first and self.src[at - 1].strip() == first]
        return min(found, key=near) if found else max(1, guess)


def _inline(node: Any) -> str:
    """A node's text with inline markup rendered: roles as their text, unknown roles (a
    docutils ``problematic`` node) reduced to their text."""
    from docutils import nodes

    parts: list[str] = []
    for child in node.children if isinstance(node, nodes.Element) else [node]:
        if isinstance(child, nodes.problematic):
            parts.append(_strip_markup(child.astext()))
        elif isinstance(child, (nodes.footnote_reference, nodes.citation_reference)):
            parts.append(f"[{child.astext()}]")
        elif isinstance(child, (nodes.system_message, nodes.target, nodes.image)):
            continue
        elif isinstance(child, nodes.Element):
            parts.append(_inline(child))
        else:
            parts.append(child.astext())
    return "".join(parts)


def _strip_markup(text: str) -> str:
    text = _ROLE_MARKUP.sub(lambda m: role_text(m.group(1)), text)
    return _DIRECTIVE_MARKUP.sub("", text)


_NON_WORD = re.compile(r"[\W_]+")


def _plain(line: str) -> str:
    """A line without markup or punctuation, lower-cased: to find a rendered block's source."""
    line = _ROLE_MARKUP.sub(lambda m: role_text(m.group(1)), line)
    return _NON_WORD.sub(" ", line).strip().lower()


if __name__ == "__main__":  # the helper process of a long file (rst_parallel.serve)
    from ragsift.sources.rst_parallel import serve

    serve(render_piece)
