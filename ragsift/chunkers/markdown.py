"""``markdown``: heading-aware chunks whose context is their heading trail.

Algorithm: ``prepare(doc)`` renders GFM tables as numbered ``header: value`` lists
(``ragsift.sources.render_markdown_tables``; the pipeline records that converted document, so
offsets index its text) and, with ``page_break_tags``, makes sure the document has a page
map from ``<page_break page=N>`` tags (page 1 before the first tag). ``chunk`` then packs with
the shared ``Packer`` preferring, in order: a heading (or a page-break tag, with
``page_break_tags``), a blank line, a line break, a sentence end, a space, and last a token.
Cuts never fall inside a fenced code block unless the block alone exceeds the budget. A
heading is never a chunk on its own.

Context: ``prefix`` + the h1–h6 heading trail in force at the chunk's start (without the
heading the chunk itself starts with), e.g. ``"Guide > Install\\n\\n"``; its tokens come out
of the budget (a trail never takes more than half of it: outer headings go first), so
``tokens(context + text) <= size`` always.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ragsift.chunkers.base import DEFAULT_SIZE, Chunk, TokenCounter
from ragsift.chunkers.common import BaseChunker
from ragsift.chunkers.levels import DelimLevel, RegexLevel, SortedLevel, WhitespaceLevel
from ragsift.chunkers.outline import PAGE_BREAK, scan
from ragsift.chunkers.packer import Packer
from ragsift.chunkers.sections import BLANK_LINE

if TYPE_CHECKING:
    from ragsift.sources.document import Document


class MarkdownChunker(BaseChunker):
    name = "markdown"

    def __init__(
        self,
        *,
        tokenizer: str | TokenCounter = "cl100k",
        size: int = DEFAULT_SIZE,
        prefix: str = "",
        page_break_tags: bool = False,
    ) -> None:
        super().__init__(
            tokenizer, {"size": size, "prefix": prefix, "page_break_tags": page_break_tags}
        )
        self._check_prefix(prefix, size)
        self.size = self.budget = size
        self.prefix = prefix
        self.page_break_tags = page_break_tags

    def prepare(self, doc: Document) -> Document:
        from ragsift.sources import render_markdown_tables
        from ragsift.sources.document import OffsetMap

        out = render_markdown_tables(doc)
        if self.page_break_tags and out.pages is None:
            starts, pages = [0], [1]
            for m in PAGE_BREAK.finditer(out.text):
                if starts[-1] == m.start():
                    pages[-1] = int(m.group(1))
                else:
                    starts.append(m.start())
                    pages.append(int(m.group(1)))
            out = replace(out, pages=OffsetMap(tuple(starts), tuple(pages)))
        return out

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        outline = scan(text)
        tops = {h.start for h in outline.headings}
        if self.page_break_tags:
            tops.update(m.start() for m in PAGE_BREAK.finditer(text))
        starts = sorted(tops)
        n = len(text)
        levels = [
            SortedLevel(starts, n),
            RegexLevel(BLANK_LINE, at="end"),
            DelimLevel(["\n", "\r"]),
            DelimLevel([". ", "! ", "? "]),
            WhitespaceLevel(),
        ]
        context = self.context_fn(text, doc, self.prefix, True, self.size, outline)
        avail = self.size - (self.counter.count(self.prefix) if self.prefix else 0)
        protected = [(a, b) for a, b in outline.fences if index.approx(a, b) <= avail]
        packer = Packer(levels, budget=self.size, heading_floor=True, stats=self.stats)
        return packer.pack(
            text,
            index,
            context=context,
            protected=protected,
            headings=frozenset(h.start for h in outline.headings),
        )
