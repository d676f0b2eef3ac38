"""``sentence``: whole sentences packed up to the budget, with optional token overlap.

Algorithm: sentence boundaries come from one regex pass over the document (the delimiters,
longest first). A fragment shorter than ``min_chars_per_sentence`` is not a sentence of its
own: its boundary is dropped so it joins the next one ("e.g." stays inside its sentence),
and a short last fragment joins the one before. The shared ``Packer`` then puts as many
whole sentences in a chunk as fit; a single sentence over the budget is cut at whitespace,
then at a token. With ``overlap`` the next chunk starts at the earliest sentence whose
tail to the previous chunk's end fits in ``overlap`` tokens.

``min_sentences``: a chunk ends no earlier than its ``min_sentences``-th sentence. When that
would exceed the budget the budget wins (the chunk takes the sentences that fit, counted in
``stats.short``) unless ``allow_oversize`` is set (then the chunk goes over the budget, and
the pipeline counts it as over budget).

``include_delim``: ``prev`` (the delimiter ends the sentence), ``next`` (it starts the next
one) or ``none`` (left out of both chunks: the only case where non-whitespace text is not
covered).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragsift.chunkers.base import DEFAULT_SIZE, Chunk, TokenCounter
from ragsift.chunkers.common import BaseChunker
from ragsift.chunkers.levels import SortedLevel, WhitespaceLevel
from ragsift.chunkers.packer import Packer
from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from ragsift.sources.document import Document

DEFAULT_DELIMITERS = (". ", "! ", "? ", "\n")


class _SkippingSortedLevel(SortedLevel):
    """Sentence boundaries for ``include_delim="none"``: the delimiter after a cut is dropped."""

    def __init__(
        self, boundaries: list[int], end: int, min_count: int, skips: dict[int, int]
    ) -> None:
        super().__init__(boundaries, end, min_count)
        self.skips = skips

    def skip_at(self, text: str, b: int) -> int:
        return self.skips.get(b, 0)


class SentenceChunker(BaseChunker):
    name = "sentence"

    def __init__(
        self,
        *,
        tokenizer: str | TokenCounter = "cl100k",
        size: int = DEFAULT_SIZE,
        overlap: int = 0,
        min_sentences: int = 1,
        min_chars_per_sentence: int = 12,
        delimiters: Sequence[str] | None = None,
        include_delim: str = "prev",
        allow_oversize: bool = False,
    ) -> None:
        delims = tuple(DEFAULT_DELIMITERS if delimiters is None else delimiters)
        if not delims or any(not isinstance(d, str) or not d for d in delims):
            raise RagsiftError(
                "sentence: {delimiters} must be non-empty strings", param="delimiters"
            )
        if include_delim not in ("prev", "next", "none"):
            raise RagsiftError(
                "sentence: {include_delim} must be prev, next or none", param="include_delim"
            )
        if size < 1:
            raise RagsiftError("sentence: {size} must be at least 1", param="size")
        if overlap < 0 or overlap >= size:
            raise RagsiftError(
                "{overlap} {o} must be at least 0 and less than {size} {s}",
                param="overlap",
                values={"o": overlap, "s": size},
            )
        if min_sentences < 1:
            raise RagsiftError(
                "sentence: {min_sentences} must be at least 1", param="min_sentences"
            )
        super().__init__(
            tokenizer,
            {
                "size": size,
                "overlap": overlap,
                "min_sentences": min_sentences,
                "min_chars_per_sentence": min_chars_per_sentence,
                "delimiters": list(delims),
                "include_delim": include_delim,
                "allow_oversize": allow_oversize,
            },
        )
        self.size = self.budget = size
        self.overlap = overlap
        self.min_sentences = min_sentences
        self.min_chars_per_sentence = min_chars_per_sentence
        self.include_delim = include_delim
        self.allow_oversize = allow_oversize
        ordered = sorted(dict.fromkeys(delims), key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(d) for d in ordered))

    def boundaries(self, text: str) -> tuple[list[int], dict[int, int]]:
        """Sentence cut positions (after short-fragment merging) and, for ``none``, the
        delimiter length to skip after each cut."""
        after = self.include_delim == "prev"
        floor = self.min_chars_per_sentence
        cuts: list[int] = []
        skips: dict[int, int] = {}
        last = 0
        for m in self._pattern.finditer(text):
            b = m.end() if after else m.start()
            if b <= last:
                continue
            if floor and (b - last < floor + 8) and len(text[last:b].strip()) < floor:
                continue
            cuts.append(b)
            if self.include_delim == "none":
                skips[b] = m.end() - m.start()
            last = b if after else m.end()
        if cuts and floor and len(text[cuts[-1] :].strip()) < floor:
            skips.pop(cuts.pop(), None)
        return cuts, skips

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        cuts, skips = self.boundaries(text)
        n = len(text)
        if self.include_delim == "none":
            top: SortedLevel = _SkippingSortedLevel(cuts, n, self.min_sentences, skips)
        else:
            top = SortedLevel(cuts, n, self.min_sentences)
        packer = Packer(
            [top, WhitespaceLevel()],
            budget=self.size,
            overlap=self.overlap,
            overlap_level=SortedLevel(cuts, n),
            allow_oversize=self.allow_oversize,
            stats=self.stats,
        )
        return packer.pack(text, index)
