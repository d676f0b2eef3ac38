"""Which part of an HTML page is its content, and which is the site's chrome around it.

A page built by a documentation generator (Sphinx, mkdocs, rustdoc, mdBook, Docusaurus) wraps
each page's text in the same chrome: a site navigation, a search box, theme toggles, a help
popup, "Edit this page", previous/next links, heading permalinks ("¶"). Read as text, the
chrome comes first and becomes the first chunk and its heading trail (mdBook: "Keyboard
shortcuts Press ← or → … Auto Light Rust Coal Navy Ayu"), and it repeats on every page.

The rules (``reader: html`` in the index's reader fingerprint changes with them):

- **The content root.** The first ``<main>`` (or ``role="main"``) element holding at least
  ``MAIN_SHARE`` of the page's text is the scope; inside it (or the page, without one) the
  ``<article>`` holding the most text is the root if it holds at least ``ARTICLE_SHARE`` of
  the scope's text (a blog index of many articles keeps the scope). Outside the root nothing
  is read. No root: the whole page.
- **Chrome, dropped wherever it stands:** ``nav``, ``button``, ``select``, ``form``,
  ``dialog``, ``search``, ``footer``; ARIA roles navigation, search, banner, contentinfo,
  menu, menubar, toolbar, dialog; ``aria-hidden="true"``; breadcrumbs (a class holding
  "breadcrumb") and DocBook's previous/next bars (``navheader``, ``navfooter``, ``docnav``); heading permalinks and source links (``a`` of a class in ``LINK_CLASSES``:
  "¶", "§", "#", rustdoc's "Source"); skip links (``a href="#…"`` of a class "skip…").
- ``header`` and ``aside`` are content inside a root (a Docusaurus page's title is in a
  ``header``; docutils writes footnotes and topics as ``aside``); without a root an
  ``aside`` is dropped, and a ``header`` unless it holds the page's ``h1``.

Text is measured here by a first, lighter pass (``layout``), run only when the page has a
``<main>``, ``<article>``, ``<header>`` or a ``role`` attribute; the reader then skips what
the layout excludes. A page up to ``EVENTS_MAX`` characters is tokenized once for both
passes; a larger one is parsed twice, streaming (``passes``), so memory stays bounded. Measured on real builds (bench/RESULTS.md, "HTML page chrome").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

MAIN_SHARE = 0.10  # a <main> with less of the page's text is not trusted to be the content
ARTICLE_SHARE = 0.5  # the article must hold at least half of the scope's text

CHROME_TAGS = frozenset({"nav", "button", "select", "form", "dialog", "search", "footer"})
CHROME_ROLES = frozenset(
    {"navigation", "search", "banner", "contentinfo", "menu", "menubar", "toolbar", "dialog"}
)
# links beside a heading or an item: permalinks ("¶", "§", "#"; rustdoc's "Source")
LINK_CLASSES = frozenset(
    {
        "headerlink",  # Sphinx, mkdocs(-material)
        "hash-link",  # Docusaurus
        "anchor",  # rustdoc items
        "doc-anchor",  # rustdoc headings ("§")
        "src",  # rustdoc "Source"
        "anchorjs-link",
        "header-anchor",
        "anchor-link",
    }
)
# classes of chrome anywhere: breadcrumbs (rustdoc, Sphinx themes), rustdoc's "Expand
# description" toggle labels, DocBook's previous/next bars (XSL: navheader/navfooter;
# Publican: docnav)
_CHROME_CLASS = re.compile(r"breadcrumb|^(?:hideme|navheader|navfooter|docnav)$", re.I)
_SKIP_LINK = re.compile(r"\bskip", re.I)
_NEEDS_LAYOUT = re.compile(r"<(?:main|article|header|aside)\b|\brole\s*=", re.I)
# elements whose content is never text (the reader drops them with what they hold), and the
# void elements (never closed): shared by both passes and ``html``'s reader
DROP = frozenset({"script", "style", "noscript", "template", "title", "svg", "math"})
VOID = frozenset(
    {
        "br",
        "hr",
        "img",
        "input",
        "meta",
        "link",
        "area",
        "base",
        "col",
        "embed",
        "source",
        "track",
        "wbr",
    }
)


def is_chrome(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an element is page chrome wherever it stands (the rules above)."""
    if tag in CHROME_TAGS:
        return True
    values = dict(attrs)
    role = values.get("role")
    if role and not CHROME_ROLES.isdisjoint(role.lower().split()):
        return True
    if (values.get("aria-hidden") or "").lower() == "true":
        return True
    classes = (values.get("class") or "").lower().split()
    if any(_CHROME_CLASS.search(c) for c in classes):
        return True
    if tag == "a":
        if not LINK_CLASSES.isdisjoint(classes):
            return True
        href = values.get("href") or ""
        if href.startswith("#") and any(_SKIP_LINK.match(c) for c in classes):
            return True
    return False


@dataclass
class Layout:
    """What the reader keeps: ``root`` is the ordinal (0-based, among start tags) of the
    content root, None for the whole page; ``headers_kept``: ordinals of ``header`` elements
    that hold the page's ``h1`` (kept without a root)."""

    root: int | None = None
    headers_kept: frozenset[int] = field(default_factory=frozenset)


@dataclass
class _Candidate:
    kind: str  # "main", "article" or "header"
    text: int = 0
    has_h1: bool = False
    inside: tuple[int, ...] = ()  # the ordinals of the candidates it stands in


class _Forward(HTMLParser):
    """``html.parser`` driving another object's ``handle_*`` callbacks, with ``target.line``
    set to the source line of each text."""

    def __init__(self, target: object) -> None:
        super().__init__(convert_charrefs=True)
        self.target = target
        self.handle_starttag = target.handle_starttag  # type: ignore[method-assign]
        self.handle_startendtag = target.handle_startendtag  # type: ignore[method-assign]
        self.handle_endtag = target.handle_endtag  # type: ignore[method-assign]

    def handle_data(self, data: str) -> None:
        self.target.line = self.getpos()[0]
        self.target.handle_data(data)


def feed(text: str, target: object) -> None:
    """Parse ``text``, calling ``target``'s ``handle_starttag``/``handle_startendtag``/
    ``handle_endtag``/``handle_data`` as ``HTMLParser`` does. Streaming: nothing of the page
    is kept but what the target keeps. Raises what ``HTMLParser`` raises."""
    parser = _Forward(target)
    parser.feed(text)
    parser.close()


# A page of up to this many characters that needs the layout pass is tokenized once and its
# events replayed by both passes (the events take 35-70x the page's bytes: 18 MB at most); a
# larger one is parsed twice, streaming, so that a huge page stays within 20x its bytes
# (tests/test_bounds.py). Measured on the handbook's 127 pages with a <main> added: twice
# streaming cost 1.36x the CPU of one tokenization replayed.
EVENTS_MAX = 256 * 1024

START, STARTEND, END, DATA = range(4)


class _Recorder:
    def __init__(self) -> None:
        self.line = 0
        self.events: list[tuple] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.events.append((START, tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.events.append((STARTEND, tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.events.append((END, tag, None))

    def handle_data(self, data: str) -> None:
        self.events.append((DATA, data, self.line))


def _replay(events: list[tuple], target: object) -> None:
    start, startend, end = target.handle_starttag, target.handle_startendtag, target.handle_endtag
    data = target.handle_data
    for kind, a, b in events:
        if kind == DATA:
            target.line = b
            data(a)
        elif kind == START:
            start(a, b)
        elif kind == END:
            end(a)
        else:
            startend(a, b)


def passes(text: str) -> Callable[[object], None]:
    """How to run a pass over ``text`` (``run(target)``, as ``feed``): a page that needs the
    layout pass and is at most ``EVENTS_MAX`` characters is tokenized once, here, and replayed
    to each pass; any other page is parsed by each pass, streaming. Raises what
    ``HTMLParser`` raises."""
    if len(text) > EVENTS_MAX or not _NEEDS_LAYOUT.search(text):
        return lambda target: feed(text, target)
    recorder = _Recorder()
    feed(text, recorder)
    events = recorder.events
    return lambda target: _replay(events, target)


class _Measure:
    """The first pass: the text (non-space characters outside chrome) in each candidate."""

    def __init__(self) -> None:
        self.line = 0
        self.ordinal = -1
        self.stack: list[tuple[str, int, bool]] = []  # (tag, ordinal, hides)
        self.hidden = 0
        self.raw: list[str] = []
        self.open: list[int] = []  # candidates open, outermost first
        self.candidates: dict[int, _Candidate] = {}
        self.total = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.ordinal += 1
        if self.raw or tag in DROP:
            if tag in DROP and tag not in VOID:
                self.raw.append(tag)
            return
        if tag in VOID:
            return
        hides = is_chrome(tag, attrs)
        self.hidden += hides
        kind = None
        if tag == "main" or "main" in (dict(attrs).get("role") or "").lower().split():
            kind = "main"
        elif tag in ("article", "header"):
            kind = tag
        elif tag == "h1":
            for o in self.open:
                self.candidates[o].has_h1 = True
        if kind is not None and not self.hidden:
            self.candidates[self.ordinal] = _Candidate(kind, inside=tuple(self.open))
            self.open.append(self.ordinal)
        self.stack.append((tag, self.ordinal, hides))

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.ordinal += 1  # as in the reader: counted, nothing opened

    def handle_endtag(self, tag: str) -> None:
        if self.raw:
            if tag == self.raw[-1]:
                self.raw.pop()
            return
        if not any(t == tag for t, _, _ in self.stack):
            return
        while self.stack:
            t, o, hides = self.stack.pop()
            self.hidden -= hides
            if self.open and self.open[-1] == o:
                self.open.pop()
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.raw or self.hidden:
            return
        n = len(data) - sum(data.count(c) for c in " \n\t\r")
        if n <= 0:
            return
        self.total += n
        for o in self.open:
            self.candidates[o].text += n


def layout(text: str, run: Callable[[object], None] | None = None) -> Layout:
    """The content root of an HTML page and the headers to keep (the rules above); ``run``:
    how to pass over the page (``passes``), default ``feed``."""
    if not _NEEDS_LAYOUT.search(text):
        return Layout()
    measure = _Measure()
    try:
        (run or (lambda target: feed(text, target)))(measure)
    except Exception:
        return Layout()
    cands = measure.candidates
    mains = [
        o
        for o, c in cands.items()
        if c.kind == "main" and c.text and c.text >= MAIN_SHARE * measure.total
    ]
    scope = mains[0] if mains else None
    scope_text = cands[scope].text if scope is not None else measure.total
    articles = [
        o for o, c in cands.items() if c.kind == "article" and (scope is None or scope in c.inside)
    ]
    root = scope
    if articles:
        best = max(articles, key=lambda o: cands[o].text)
        if cands[best].text and cands[best].text >= ARTICLE_SHARE * scope_text:
            root = best
    kept = frozenset(o for o, c in cands.items() if c.kind == "header" and c.has_h1)
    return Layout(root=root, headers_kept=kept)
