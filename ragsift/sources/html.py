"""HTML: the visible text, via the standard library's ``html.parser``.

What is kept: text outside ``script``, ``style``, ``noscript``, ``template``, ``title`` and
``head`` metadata; whitespace collapsed as a browser does (kept inside ``pre``); block
elements end lines (paragraphs, headings, lists, tables and sections are separated by a
blank line; ``li``, ``tr``, ``br``, ``dt``/``dd`` by a line break; table cells by ``" | "``).
Headings ``h1``–``h6`` give the heading trails. The line map points every run of words at
the line of the HTML source it came from (``HTMLParser.getpos`` plus the newlines inside the
text), so citations name lines of the original file. A best-effort reader, not a browser: CSS visibility is ignored.

``fragment_edits`` reduces HTML found inside another format (raw HTML in markdown) in place:
the edits that remove its tags and decode its character references, the text between them
left as it is, so offsets and lines around it stay exact.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from html.parser import HTMLParser

from ragsift.errors import NotADocument, SkipFile
from ragsift.sources.document import Document, OffsetMap
from ragsift.sources.html_layout import DROP, VOID, Layout, feed, is_chrome, layout, passes

_PARAGRAPH = frozenset(
    {
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "dl",
        "table",
        "pre",
        "blockquote",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "figure",
        "form",
        "address",
        "details",
        "fieldset",
        "hr",
        "body",
    }
)
_LINE = frozenset(
    {
        "div",
        "li",
        "tr",
        "br",
        "dt",
        "dd",
        "figcaption",
        "summary",
        "caption",
        "thead",
        "tbody",
        "tfoot",
        "legend",
        "option",
    }
)
_CELL = frozenset({"td", "th"})
_SPACE = re.compile(r"[ \t\n\r\f\v]+")


class _TextExtractor:
    """The reader's pass over a page, driven by ``html_layout.feed``."""

    def __init__(self, page: Layout | None = None, *, chrome: bool = True) -> None:
        self.line = 1  # the source line of the text being handled (set by ``feed``)
        self.page = page or Layout()
        self.chrome = chrome  # False: no element is page chrome (every visible text is read)
        self.ordinal = -1  # start tags seen (``html_layout`` counts them the same way)
        # open elements, as their tags (a deep page holds tens of thousands: one str each);
        # the depths of those that hide their content (chrome) and of the content root
        self.stack: list[str] = []
        self.hiders: list[int] = []
        self.root_depth = -1
        self.in_root = self.page.root is None  # the whole page when there is no root
        self.out: list[str] = []
        self.length = 0
        self.line_starts: list[int] = []
        self.line_values: list[int] = []
        self.pending_breaks = 0  # newlines owed before the next text
        self.pending_space = False
        self.at_line_start = True
        self.drop: list[str] = []  # open dropped elements
        self.pre = 0
        self.pre_fresh = False  # a newline right after <pre> is not content (HTML spec)
        self.heading_stack: list[tuple[int, str]] = []
        self.heading: tuple[int, int, list[str]] | None = None  # (level, offset, words)
        self.heading_starts: list[int] = []
        self.heading_trails: list[tuple[str, ...]] = []
        self.cell_in_row = 0

    # -- output ------------------------------------------------------------------------
    def _break(self, n: int) -> None:
        if self.length:
            self.pending_breaks = max(self.pending_breaks, n)
        self.pending_space = False

    def _emit(self, s: str, line: int) -> None:
        if self.pending_breaks:
            # Text from <pre> may already end with a newline; count it towards the break.
            owed = self.pending_breaks - self._trailing_newlines()
            if owed > 0:
                self.out.append("\n" * owed)
                self.length += owed
            self.pending_breaks = 0
            self.at_line_start = True
            self.pending_space = False
        elif self.pending_space and not self.at_line_start:
            self.out.append(" ")
            self.length += 1
        self.pending_space = False
        if self.at_line_start or (self.line_values and self.line_values[-1] != line):
            if self.line_starts and self.line_starts[-1] == self.length:
                self.line_values[-1] = line
            else:
                self.line_starts.append(self.length)
                self.line_values.append(line)
        if self.heading is not None and self.heading[1] < 0:
            self.heading = (self.heading[0], self.length, self.heading[2])
        self.out.append(s)
        self.length += len(s)
        self.at_line_start = s.endswith("\n")

    # -- parser callbacks ----------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.ordinal += 1
        if tag in DROP:
            if tag not in VOID:
                self.drop.append(tag)
            return
        if self.drop:
            return
        if tag not in VOID:
            is_root = self.ordinal == self.page.root
            hides = self.chrome and (
                is_chrome(tag, attrs)
                or (
                    self.page.root is None
                    and (
                        tag == "aside"
                        or (tag == "header" and self.ordinal not in self.page.headers_kept)
                    )
                )
            )
            if hides:
                self.hiders.append(len(self.stack))
            if is_root:
                self.root_depth = len(self.stack)
                self.in_root = True
            # interned: the parser makes a new string for every tag, and an unclosed page
            # keeps tens of thousands open (52 bytes each instead of a shared one)
            self.stack.append(sys.intern(tag))
        if self.hiders or not self.in_root:
            return
        self._block(tag)
        if tag == "pre":
            self.pre += 1
            self.pre_fresh = True
        elif tag in _CELL:
            if self.cell_in_row:
                self.pending_space = False
                self._emit_sep(" | ")
            self.cell_in_row += 1
        elif tag == "tr":
            self.cell_in_row = 0
        elif tag[:1] == "h" and tag[1:].isdigit() and len(tag) == 2 and "1" <= tag[1] <= "6":
            self.heading = (int(tag[1]), -1, [])

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.ordinal += 1
        if not self.drop and tag not in DROP and not self.hiders and self.in_root:
            self._block(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.drop:
            if tag == self.drop[-1]:
                self.drop.pop()
            return
        if tag in VOID:
            return
        shown = not self.hiders and self.in_root
        if tag in self.stack:
            while self.stack:
                t = self.stack.pop()
                depth = len(self.stack)
                if self.hiders and self.hiders[-1] == depth:
                    self.hiders.pop()
                if depth == self.root_depth:
                    self.root_depth = -1
                    self.in_root = False  # the root is closed: nothing after it is read
                if t == tag:
                    break
        if not shown:
            return
        self._block(tag)
        if tag == "pre" and self.pre:
            self.pre -= 1
        elif self.heading is not None and tag == f"h{self.heading[0]}":
            self._close_heading()

    def handle_data(self, data: str) -> None:
        if self.drop or not data or self.hiders or not self.in_root:
            return
        line = self.line
        if self.pre:
            self._pre_text(data, line)
            return
        # Collapse whitespace, but keep each word's source line for the line map.
        pos = 0
        for m in _SPACE.finditer(data):
            if m.start() > pos:
                self._word(data[pos : m.start()], line)
            line += data.count("\n", m.start(), m.end())
            self.pending_space = True
            pos = m.end()
        if pos < len(data):
            self._word(data[pos:], line)

    # -- helpers -------------------------------------------------------------------------
    def _trailing_newlines(self) -> int:
        count = 0
        for piece in reversed(self.out):
            stripped = piece.rstrip("\n")
            count += len(piece) - len(stripped)
            if stripped or count >= 2:
                break
        return count

    def _word(self, word: str, line: int) -> None:
        self._emit(word, line)
        if self.heading is not None:
            self.heading[2].append(word)

    def _emit_sep(self, sep: str) -> None:
        if not self.at_line_start and not self.pending_breaks and self.length:
            self.out.append(sep)
            self.length += len(sep)

    def _pre_text(self, data: str, line: int) -> None:
        if self.pre_fresh:
            self.pre_fresh = False
            if data.startswith(("\r\n", "\n")):
                data = data[2:] if data.startswith("\r\n") else data[1:]
                line += 1
        for piece in data.splitlines(keepends=True):
            self._emit(piece, line)
            if piece.endswith(("\n", "\r")):
                line += 1

    def _block(self, tag: str) -> None:
        if tag in _PARAGRAPH:
            self._break(2)
        elif tag in _LINE:
            self._break(1)
        elif tag in _CELL:
            self.pending_space = True

    def _close_heading(self) -> None:
        assert self.heading is not None
        level, offset, words = self.heading
        self.heading = None
        title = " ".join(" ".join(words).split())
        if offset < 0 or not title:
            return
        while self.heading_stack and self.heading_stack[-1][0] >= level:
            self.heading_stack.pop()
        self.heading_stack.append((level, title))
        self.heading_starts.append(offset)
        self.heading_trails.append(tuple(t for _, t in self.heading_stack))


# Template syntax (Jinja/Django/Liquid/Nunjucks, ERB/EJS): an opener and its closer.
_TEMPLATE_PAIRS = {"{%": "%}", "{{": "}}", "{#": "#}", "<%": "%>"}


def template_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each template construct, in order, outermost only. Linear: each
    kind's next opener is looked up once per construct passed, and a kind whose closer is not
    found is not looked for again."""
    nxt = {o: text.find(o) for o in _TEMPLATE_PAIRS}
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        live = [(i, o) for o, i in nxt.items() if i >= 0]
        if not live:
            return out
        start, opener = min(live)
        end = text.find(_TEMPLATE_PAIRS[opener], start + 2)
        if end < 0:
            nxt[opener] = -1  # never closed: no later one of its kind closes either
            continue
        pos = end + 2
        out.append((start, pos))
        for o, i in nxt.items():
            if 0 <= i < pos:
                nxt[o] = text.find(o, pos)


def template_weight(text: str) -> tuple[int, int, int]:
    """``(constructs, syntax, visible)``: the template constructs of an HTML file, their
    characters, and the visible text's non-space characters once they are removed."""
    if "{%" not in text and "{{" not in text and "{#" not in text and "<%" not in text:
        return 0, 0, 0
    spans = template_spans(text)
    syntax = sum(b - a for a, b in spans)
    if not syntax:
        return 0, 0, 0
    pieces, at = [], 0
    for a, b in spans:
        pieces.append(text[at:a])
        at = b
    pieces.append(text[at:])
    parser = _TextExtractor()
    try:
        feed(" ".join(pieces), parser)
    except Exception:
        return len(spans), syntax, len(text)  # unreadable as HTML: not judged a template
    visible = sum(len(p) - p.count(" ") - p.count("\n") for p in parser.out)
    return len(spans), syntax, visible


# What a template counts as among a run's ignored files (``NotADocument.kind``): the
# summary's ``1 ignored: HTML template``.
TEMPLATE = "HTML template"


def template_reason(text: str) -> str | None:
    """Why an HTML file is a template rather than a document (None: it is a document).

    A template is a file whose template syntax outweighs its text: the characters of its
    ``{% %}``/``{{ }}``/``{# #}``/``<% %>`` constructs are at least those of the visible text
    around them (``template_weight``). Measured (bench/bench_html_templates.py, RESULTS "HTML
    page chrome"): the 180 theme templates with template syntax of mkdocs, mkdocs-material,
    Sphinx, Furo and the RTD theme have 5.5 to 6,236 times more template syntax than text
    (one, Furo's error page ``layout.html``, 0.15: kept), the 4,470 built pages measured at
    most 0.01 (a ``{{`` in a code example). A page with none is never a template."""
    constructs, syntax, visible = template_weight(text)
    if not syntax or syntax < visible:
        return None
    return (
        f"a template, not a document ({constructs} template tags, {syntax:,} characters "
        f"of them against {visible:,} of text)"
    )


def _extract(run: Callable[[object], None], page: Layout | None) -> _TextExtractor:
    parser = _TextExtractor(page, chrome=page is not None)
    run(parser)
    return parser


def parse_html(
    text: str,
    path: str,
    *,
    source: str = "",
    encoding: str = "utf-8",
    warnings: tuple[str, ...] = (),
) -> Document:
    skip = template_reason(text)
    if skip:
        raise NotADocument(skip, TEMPLATE)
    try:
        run = passes(text)
        page = layout(text, run)
        parser = _extract(run, page)
        if not "".join(parser.out).strip():
            # the rules left nothing (a page that is all links): every visible text
            parser = _extract(run, None)
    except Exception as exc:
        raise SkipFile(f"unparsable HTML: {exc}") from None
    if parser.heading is not None:
        parser._close_heading()
    out = "".join(parser.out)
    if not out.strip():
        raise SkipFile("empty (no visible text in HTML)")
    if not out.endswith("\n"):
        out += "\n"
    return Document(
        text=out,
        path=path,
        format="html",
        source=source,
        encoding=encoding,
        lines=OffsetMap(tuple(parser.line_starts), tuple(parser.line_values)),
        headings=(
            OffsetMap(tuple(parser.heading_starts), tuple(parser.heading_trails))
            if parser.heading_starts
            else None
        ),
        warnings=warnings,
    )


# -- HTML inside another format (raw HTML in markdown) -------------------------------------

# The elements of HTML (and the obsolete ones old pages and terminal captures still use). A
# tag of one of these, or of a custom element (a name with "-"), is markup; any other
# ``<name>`` is text its writer meant to show (``--output <file>``, ``<str>``, ``<TAB>``).
HTML_ELEMENTS = frozenset(
    (
        "a abbr acronym address area article aside audio b base basefont bdi bdo big blink "
        "blockquote body br button canvas caption center cite code col colgroup data datalist dd "
        "del details dfn dialog dir div dl dt em embed fieldset figcaption figure font footer form "
        "frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd "
        "label legend li link main map mark marquee math menu meta meter nav nobr noframes "
        "noscript object ol optgroup option output p param picture pre progress q rp rt ruby s "
        "samp script search section select slot small source span strike strong style sub "
        "summary sup svg table tbody td template textarea tfoot th thead time title tr track tt "
        "u ul var video wbr"
    ).split()
)
# a removed tag of one of these between two words leaves a space ("one<br>two" → "one two")
SPACED = _PARAGRAPH | _LINE | _CELL | {"img", "input", "button", "select", "textarea"}


def is_element(name: str) -> bool:
    """Whether ``<name>`` is an HTML element's tag (not text that looks like one)."""
    name = name.lower()
    return name in HTML_ELEMENTS or ("-" in name and name[:1].isalpha())


class _Events(HTMLParser):
    """``html.parser`` as a tokenizer: the start (line, column) and kind of every construct,
    in order; they tile the input, so each ends where the next starts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.events: list[tuple[tuple[int, int], str, str]] = []

    def _add(self, kind: str, name: str = "") -> None:
        self.events.append((self.getpos(), kind, name))

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._add("start", tag)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self._add("startend", tag)

    def handle_endtag(self, tag: str) -> None:
        self._add("end", tag)

    def handle_data(self, data: str) -> None:
        self._add("data")

    def handle_entityref(self, name: str) -> None:
        self._add("ref")

    def handle_charref(self, name: str) -> None:
        self._add("ref")

    def handle_comment(self, data: str) -> None:
        self._add("markup")

    def handle_decl(self, decl: str) -> None:
        self._add("markup")

    def handle_pi(self, data: str) -> None:
        self._add("markup")

    def unknown_decl(self, data: str) -> None:
        self._add("markup")


def fragment_edits(fragment: str, base: int = 0) -> tuple[list[tuple[int, int, str]], int, int]:
    """How to reduce an HTML ``fragment`` (found at offset ``base`` of a text) to its text.

    Returns ``(edits, left_open, closed_outer)``: ``edits`` are ``(start, end, replacement)``
    in the text's offsets, sorted and disjoint: tags of HTML elements, comments, declarations
    and processing instructions go (``""``, or ``" "`` where a block or line-break element
    stood between two words), the content of ``script``, ``style``, ``svg`` and kin goes with
    its tags, character references are decoded (``&amp;`` → ``&``, ``&#39;`` → ``'``); the
    text between tags stays as it is, newlines included. ``left_open``: elements the fragment
    opened and did not close; ``closed_outer``: end tags of elements it did not open.
    """
    from html import unescape

    parser = _Events()
    try:
        parser.feed(fragment)
        parser.close()
    except Exception:
        return [], 0, 0
    line_starts = [0]
    line_starts += [m.end() for m in re.finditer("\n", fragment)]
    starts = [
        line_starts[min(line, len(line_starts)) - 1] + col for (line, col), _, _ in parser.events
    ]
    edits: list[tuple[int, int, str, bool]] = []
    stack: list[str] = []
    closed_outer = 0
    drop: list[str] = []  # open elements whose content goes
    for k, (_, kind, name) in enumerate(parser.events):
        a = starts[k]
        b = starts[k + 1] if k + 1 < len(starts) else len(fragment)
        if a >= b:
            continue
        if drop:
            if kind == "end" and name == drop[-1]:
                drop.pop()
            elif kind == "start" and name in DROP:
                drop.append(name)
            edits.append((a, b, "", False))
            continue
        if kind == "ref":
            raw = fragment[a:b]
            text = unescape(raw)
            if text != raw:
                edits.append((a, b, text, False))
        elif kind == "markup":
            edits.append((a, b, "", False))
        elif kind in ("start", "startend", "end") and is_element(name):
            edits.append((a, b, "", name in SPACED))
            if kind == "start" and name in DROP:
                drop.append(name)
            elif kind == "start" and name not in VOID:
                stack.append(name)
            elif kind == "end" and name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name) :]
            elif kind == "end" and name not in VOID:
                closed_outer += 1
    return _spaced(fragment, edits, base), len(stack), closed_outer


def _spaced(
    text: str, edits: list[tuple[int, int, str, bool]], base: int
) -> list[tuple[int, int, str]]:
    """Adjacent removals merged; a merged removal that held a spacing element and stands
    between two non-space characters becomes one space. Offsets moved by ``base``."""
    out: list[tuple[int, int, str]] = []
    k = 0
    while k < len(edits):
        a, b, rep, spaced = edits[k]
        k += 1
        if rep:
            out.append((base + a, base + b, rep))
            continue
        while k < len(edits) and edits[k][0] == b and not edits[k][2]:
            b = edits[k][1]
            spaced = spaced or edits[k][3]
            k += 1
        if (
            spaced
            and 0 < a
            and b < len(text)
            and not text[a - 1].isspace()
            and not text[b].isspace()
        ):
            rep = " "
        out.append((base + a, base + b, rep))
    return out
