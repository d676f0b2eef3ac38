"""``heading`` and ``paragraph``: sections and paragraphs under a character cap, with a floor.

``heading``: every ATX heading up to ``max_level`` starts a new chunk (headings inside code
fences do not count; a ``Document`` without ATX headings but with a heading map, such as
HTML, uses the map). A section over ``max_chars`` is packed by paragraph (blank lines),
then lines, then words, then hard-cut. The floor ``min_chars`` (default
``min(250, max_chars / 4)``): a section whose own text (below its heading) is under the floor
is not cut off but merges FORWARD into the next chunk, a short last section merges
backward when the result fits, and a heading is never a chunk on its own. Why: a short
heading+preamble chunk concentrates its topic's vocabulary with none of its substance and
outscores the body it announces (measured elsewhere: a 180-character heading chunk beat its
own section's 1,032-character body).

``paragraph``: the same without the headings: paragraphs packed greedily up to ``max_chars``,
oversized ones cut at lines, words, then hard, the same floor.

Both take an optional token ``size`` as a second cap (in the chunker's counter units; the
``budget``). With ``--unit chars`` and no ``max_chars``, ``size`` is the character cap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsift.chunkers.base import Chunk, TokenCounter
from ragsift.chunkers.common import BaseChunker
from ragsift.chunkers.levels import DelimLevel, RegexLevel, SortedLevel, WhitespaceLevel
from ragsift.chunkers.outline import scan
from ragsift.chunkers.packer import Packer, first_nonspace
from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from ragsift.sources.document import Document

BLANK_LINE = r"(?:\r\n|\n|\r)[ \t]*(?:\r\n|\n|\r)"


def _caps(
    tokenizer: Any, max_chars: int | None, min_chars: int | None, size: int | None, strategy: str
) -> tuple[int, int, int | None]:
    if getattr(tokenizer, "name", tokenizer) == "chars" and max_chars is None and size:
        max_chars, size = size, None
    max_chars = 1000 if max_chars is None else max_chars
    if max_chars < 1:
        raise RagsiftError(
            "{strategy}: {max_chars} must be at least 1",
            param="max_chars",
            values={"strategy": strategy},
        )
    if min_chars is None:
        min_chars = min(250, max_chars // 4)
    elif min_chars >= max_chars:
        raise RagsiftError(
            "{min_chars} {lo} must be less than {max_chars} {hi} (the floor is the "
            "smallest chunk worth keeping)",
            param="min_chars",
            values={"lo": min_chars, "hi": max_chars},
        )
    if min_chars < 0:
        raise RagsiftError(
            "{strategy}: {min_chars} must be at least 0",
            param="min_chars",
            values={"strategy": strategy},
        )
    return max_chars, min_chars, size


def _inner_levels() -> list[Any]:
    return [RegexLevel(BLANK_LINE, at="end"), DelimLevel(["\n", "\r"]), WhitespaceLevel()]


class HeadingChunker(BaseChunker):
    name = "heading"

    def __init__(
        self,
        *,
        tokenizer: str | TokenCounter = "cl100k",
        max_chars: int | None = None,
        min_chars: int | None = None,
        max_level: int = 6,
        size: int | None = None,
    ) -> None:
        if not 1 <= max_level <= 6:
            raise RagsiftError("heading: {max_level} must be between 1 and 6", param="max_level")
        max_chars, min_chars, size = _caps(tokenizer, max_chars, min_chars, size, "heading")
        super().__init__(
            tokenizer,
            {"max_chars": max_chars, "min_chars": min_chars, "max_level": max_level, "size": size},
        )
        self.max_chars, self.min_chars, self.max_level = max_chars, min_chars, max_level
        self.budget = size

    def heading_starts(self, text: str, doc: Document | None, max_level: int = 6) -> list[int]:
        """Where headings (up to ``max_level``) start: the ``#`` of ATX lines, else the map."""
        found = [h.start for h in scan(text).headings if h.level <= max_level]
        if not found and doc is not None and doc.headings is not None:
            found = sorted(
                {
                    first_nonspace(text, p)
                    for p, v in zip(doc.headings.starts, doc.headings.values)
                    if v and len(v) <= max_level
                }
            )
        return [p for p in found if p < len(text)]

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        every = self.heading_starts(text, doc)
        starts = every if self.max_level == 6 else self.heading_starts(text, doc, self.max_level)
        packer = Packer(
            _inner_levels(),
            budget=self.budget,
            max_chars=self.max_chars,
            min_chars=self.min_chars,
            mandatory=SortedLevel(starts, len(text)),
            heading_floor=True,
            tail_min=self.min_chars,
            stats=self.stats,
        )
        return packer.pack(text, index, headings=frozenset(every))


class ParagraphChunker(BaseChunker):
    name = "paragraph"

    def __init__(
        self,
        *,
        tokenizer: str | TokenCounter = "cl100k",
        max_chars: int | None = None,
        min_chars: int | None = None,
        size: int | None = None,
    ) -> None:
        max_chars, min_chars, size = _caps(tokenizer, max_chars, min_chars, size, "paragraph")
        super().__init__(tokenizer, {"max_chars": max_chars, "min_chars": min_chars, "size": size})
        self.max_chars, self.min_chars = max_chars, min_chars
        self.budget = size
        self._packer = Packer(
            _inner_levels(),
            budget=size,
            max_chars=max_chars,
            min_chars=min_chars,
            tail_min=min_chars,
            stats=self.stats,
        )

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        return self._packer.pack(text, index)
