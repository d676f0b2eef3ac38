"""Markdown structure a chunker needs: ATX headings, code fences, heading trails.

A small line scanner, not a markdown parser: ATX headings (``#`` to ``######`` at the start
of a line, up to three spaces of indent) outside fenced code blocks, and the fenced blocks
themselves (``` or ~~~, closed by a fence of the same character at least as long; an
unclosed fence runs to the end). Setext headings and headings inside lists are the
parser's business (``ragsift.sources``): a ``Document`` that carries a ``headings`` map is
trusted over this scan.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragsift.sources.markdown import without_attribute_list

if TYPE_CHECKING:
    from ragsift.sources.document import Document

_CANDIDATE = re.compile(r"(?m)^ {0,3}(?:(`{3,}|~{3,})|(#{1,6})(?=[ \t\r\n]|$))")
_CLOSING_HASHES = re.compile(r"[ \t]+#+[ \t]*$|^#+[ \t]*$")
PAGE_BREAK = re.compile(r"<page_break\s+page\s*=\s*[\"']?(\d+)[\"']?\s*/?>", re.IGNORECASE)


@dataclass(frozen=True)
class Heading:
    start: int  # offset of the first ``#``
    line_start: int
    level: int
    title: str


@dataclass(frozen=True)
class Outline:
    headings: tuple[Heading, ...]
    fences: tuple[tuple[int, int], ...]  # [start, end) of whole fenced blocks


def scan(text: str) -> Outline:
    headings: list[Heading] = []
    fences: list[tuple[int, int]] = []
    open_fence: tuple[str, int, int] | None = None  # (char, length, start)
    n = len(text)
    for m in _CANDIDATE.finditer(text):
        fence = m.group(1)
        line_start = text.rfind("\n", 0, m.start()) + 1
        if open_fence is not None:
            if fence and fence[0] == open_fence[0] and len(fence) >= open_fence[1]:
                eol = text.find("\n", m.end())
                if not text[m.end() : eol if eol >= 0 else n].strip():
                    end = n if eol < 0 else eol + 1
                    fences.append((open_fence[2], end))
                    open_fence = None
            continue
        if fence:
            if fence[0] == "`" and "`" in text[m.end() : _eol(text, m.end())]:
                continue  # not a fence: backticks in the info string
            open_fence = (fence[0], len(fence), line_start)
            continue
        hashes = m.group(2)
        eol = _eol(text, m.end())
        title = text[m.end() : eol].strip()
        title = _CLOSING_HASHES.sub("", title).strip() if "#" in title else title
        title = without_attribute_list(title)  # ``## Install {#install}``: "Install"
        headings.append(Heading(m.start(2), line_start, len(hashes), title))
    if open_fence is not None:
        fences.append((open_fence[2], n))
    return Outline(tuple(headings), tuple(fences))


def _eol(text: str, p: int) -> int:
    e = text.find("\n", p)
    return len(text) if e < 0 else (e - 1 if e > 0 and text[e - 1] == "\r" else e)


class Trails:
    """Heading trail at any offset, from a ``Document``'s map or an ATX scan."""

    def __init__(self, text: str, doc: Document | None, outline: Outline | None) -> None:
        self.text = text
        if doc is not None and doc.headings is not None and len(doc.headings):
            self.starts = list(doc.headings.starts)
            self.values = [tuple(v or ()) for v in doc.headings.values]
        else:
            outline = outline if outline is not None else scan(text)
            self.starts, self.values = [], []
            stack: list[tuple[int, str]] = []
            for h in outline.headings:
                while stack and stack[-1][0] >= h.level:
                    stack.pop()
                stack.append((h.level, h.title))
                self.starts.append(h.line_start)
                self.values.append(tuple(t for _, t in stack))

    def __bool__(self) -> bool:
        return bool(self.starts)

    def at(self, offset: int) -> tuple[str, ...]:
        """The trail in force at ``offset``; a chunk that starts with a heading line does not
        repeat that heading (it is in the chunk's text)."""
        k = bisect_right(self.starts, offset) - 1
        if k < 0:
            return ()
        trail = self.values[k]
        if trail and not self.text[self.starts[k] : offset].strip():
            return trail[:-1]
        return trail
