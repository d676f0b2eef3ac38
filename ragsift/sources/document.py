"""``Document``: the text a chunker sees, plus provenance maps back to the original file.

All provenance uses one mechanism, ``OffsetMap``: sorted character offsets in
``Document.text`` with the value that holds from that offset on (a line number in the
original file, a page number, a heading trail). For plain text and markdown without raw HTML
``text`` is the file's own text; for converted formats (HTML, PDF, JSON, reStructuredText,
markdown whose raw HTML is reduced to its text) it is the converted text and the line map
still points at lines of the original file.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any


@dataclass(frozen=True)
class OffsetMap:
    """Piecewise-constant map: character offset → value. ``starts`` is sorted ascending."""

    starts: tuple[int, ...] = ()
    values: tuple[Any, ...] = ()

    def at(self, offset: int, default: Any = None) -> Any:
        i = bisect_right(self.starts, offset) - 1
        return self.values[i] if i >= 0 else default

    def __len__(self) -> int:
        return len(self.starts)

    @classmethod
    def of_lines(cls, text: str, first_line: int = 1) -> OffsetMap:
        """Line numbers of ``text`` itself (``\\n``, ``\\r\\n`` and lone ``\\r`` end a line)."""
        n = len(text)
        # linear (a search per line for a character that is absent was quadratic); without
        # "\r", str.split is ~10x faster than a regex scan of every character
        if "\r" not in text:
            starts = list(accumulate((len(line) + 1 for line in text.split("\n")[:-1]), initial=0))
            if len(starts) > 1 and starts[-1] >= n:
                starts.pop()
        else:
            starts = [0]
            starts += [k for m in _NEWLINE.finditer(text) if (k := m.end()) < n]
        return cls(tuple(starts), tuple(range(first_line, first_line + len(starts))))


_NEWLINE = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class Document:
    """A parsed file. ``path`` is the display path (relative to the root it was found under,
    ``-`` for stdin) and is what chunk ids are built from."""

    text: str
    path: str
    format: str = "text"  # markdown | text | html | json | pdf | rst
    source: str = ""  # the file system path it was read from ("" for stdin / in-memory)
    encoding: str = "utf-8"
    lines: OffsetMap = field(default_factory=OffsetMap)
    pages: OffsetMap | None = None
    headings: OffsetMap | None = None  # values are tuple[str, ...] heading trails
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_text(cls, text: str, path: str = "<text>", fmt: str = "text") -> Document:
        return cls(text=text, path=path, format=fmt, lines=OffsetMap.of_lines(text))

    def line_at(self, offset: int) -> int | None:
        return self.lines.at(offset, None) if len(self.lines) else None

    def page_at(self, offset: int) -> int | None:
        return self.pages.at(offset, None) if self.pages is not None else None

    def headings_at(self, offset: int) -> tuple[str, ...]:
        if self.headings is None:
            return ()
        return self.headings.at(offset, ()) or ()
