"""Window strategies: ``tokens`` (fixed token windows), ``chars`` (character windows) and
``whole`` (one chunk per document).

``tokens``: windows of ``size`` tokens of the document's own tokenization, stepping by
``size - overlap``, cut exactly on token boundaries (a token that starts inside a multi-byte
character starts at that character), so offsets are exact with or without overlap. Windows
are not trimmed (they are the token spans); windows of whitespace only are dropped. Each
window is counted fresh, and in the rare case re-encoding a window gives more than ``size``
tokens it is shortened until it fits.

``chars``: windows of ``max_chars`` characters; the cut moves back to the last whitespace
within 40 characters of the limit; the next window starts ``overlap`` characters before the
previous end, at a word start, and never at or before the previous window's start. A
trailing fragment under 50 characters folds back into the last window (which may then
exceed ``max_chars`` by up to 49 characters; an optional token ``size`` still holds).

``whole``: the document without surrounding whitespace, as one chunk (for short records);
nothing caps its size, so ``budget`` is None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsift.chunkers.base import DEFAULT_SIZE, Chunk, TokenCounter
from ragsift.chunkers.common import BaseChunker
from ragsift.chunkers.levels import WhitespaceLevel
from ragsift.chunkers.packer import Packer, first_nonspace
from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from ragsift.sources.document import Document


class TokenChunker(BaseChunker):
    name = "tokens"

    def __init__(
        self,
        *,
        tokenizer: str | TokenCounter = "cl100k",
        size: int = DEFAULT_SIZE,
        overlap: int = 0,
    ) -> None:
        if size < 1:
            raise RagsiftError("tokens: {size} must be at least 1", param="size")
        if overlap < 0 or overlap >= size:
            raise RagsiftError(
                "{overlap} {o} must be at least 0 and less than {size} {s}",
                param="overlap",
                values={"o": overlap, "s": size},
            )
        super().__init__(tokenizer, {"size": size, "overlap": overlap})
        self.size = self.budget = size
        self._packer = Packer([], budget=size, overlap=overlap, trim=False, stats=self.stats)

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        return self._packer.pack(text, index)


class CharChunker(BaseChunker):
    name = "chars"

    def __init__(
        self,
        *,
        tokenizer: str | TokenCounter = "cl100k",
        max_chars: int | None = None,
        overlap: int | None = None,
        size: int | None = None,
    ) -> None:
        counter_is_chars = getattr(tokenizer, "name", tokenizer) == "chars"
        if max_chars is None and size is not None and counter_is_chars:
            max_chars, size = size, None
        max_chars = 1000 if max_chars is None else max_chars
        overlap = 150 if overlap is None else overlap
        if max_chars < 1:
            raise RagsiftError("chars: {max_chars} must be at least 1", param="max_chars")
        if overlap < 0 or overlap >= max_chars:
            raise RagsiftError(
                "{overlap} {o} must be at least 0 and less than {max_chars} {m}",
                param="overlap",
                values={"o": overlap, "m": max_chars},
            )
        super().__init__(tokenizer, {"max_chars": max_chars, "overlap": overlap, "size": size})
        self.max_chars = max_chars
        self.budget = size
        self._packer = Packer(
            [WhitespaceLevel(lookback=40)],
            budget=size,
            max_chars=max_chars,
            overlap=overlap,
            overlap_in_chars=True,
            overlap_level=WhitespaceLevel(),
            tail_min=50,
            tail_ignores_max_chars=True,
            stats=self.stats,
        )

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        return self._packer.pack(text, index)


class WholeChunker(BaseChunker):
    name = "whole"

    def __init__(self, *, tokenizer: str | TokenCounter = "cl100k", prefix: str = "") -> None:
        super().__init__(tokenizer, {"prefix": prefix})
        self.prefix = prefix

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        s = first_nonspace(text, 0)
        e = len(text.rstrip())
        return [Chunk(text[s:e], s, e, index.exact(self.prefix, s, e), 0, self.prefix)]
