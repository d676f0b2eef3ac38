"""``recursive``: split at the coarsest rule level that fits, then finer ones.

Algorithm: the rule levels (``RecursiveRules``, default: paragraphs/lines → sentences →
line breaks inside prose paragraphs → punctuation and pauses → words → tokens; the first
level leaves out the soft line breaks of hard-wrapped prose, ``levels.ProseBreakLevel``, so a
wrapped paragraph is cut at a sentence end before one of its line breaks) are boundary
levels for the shared ``Packer``. From
each chunk start the chunk extends to the last boundary of the coarsest level that lies
within the budget, so a chunk holds as many whole paragraphs as fit; a paragraph too big for
the budget is cut at its last fitting sentence end, a sentence too big at punctuation, and
so on down to a hard cut on a token boundary. Pieces under ``min_chars`` are never cut off on
their own (the cut moves past them), and a short last chunk merges backward when it fits.
With ``overlap`` (tokens), each chunk after the first starts at the earliest word boundary
whose tail up to the previous chunk's end fits in ``overlap`` tokens (the packer's overlap,
as in LangChain's recursive splitter and Chroma's published 250/125 configuration).

Guarantees (tested with hypothesis and on real corpora): ``text[start:end] == chunk.text``;
chunks in order, disjoint unless ``overlap`` > 0, covering every non-whitespace character; ``tokens`` is a fresh
count of ``context + text`` and never exceeds ``size``; ``level`` is the rule level of the
cut before the chunk (0 = top; ``len(rules)`` = a hard token cut).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsift.chunkers.base import DEFAULT_SIZE, Chunk, TokenCounter
from ragsift.chunkers.common import BaseChunker
from ragsift.chunkers.levels import WhitespaceLevel
from ragsift.chunkers.packer import Packer
from ragsift.chunkers.rules import RecursiveRules
from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from ragsift.sources.document import Document


# Document formats whose fenced code blocks (``` / ~~~) the recursive strategy keeps whole when
# they fit: reStructuredText as ``sources.rst`` renders it (its literal and code-block blocks).
# Markdown keeps the output of ragsift 0.2 here (its fences are kept whole by the ``markdown``
# strategy); the golden chunk files pin that.
CODE_FENCED_FORMATS = ("rst",)


class RecursiveChunker(BaseChunker):
    name = "recursive"

    def __init__(
        self,
        *,
        tokenizer: str | TokenCounter = "cl100k",
        size: int = DEFAULT_SIZE,
        overlap: int = 0,
        rules: str | RecursiveRules | None = None,
        min_chars: int = 24,
        prefix: str = "",
        retain_headers: bool = False,
        include_delim: str | None = None,
    ) -> None:
        self.rules = RecursiveRules.load(rules)
        if overlap < 0 or overlap >= size:
            raise RagsiftError(
                "{overlap} {o} must be at least 0 and less than {size} {s}",
                param="overlap",
                values={"o": overlap, "s": size},
            )
        if include_delim not in (None, "prev", "next"):
            raise RagsiftError(
                "recursive: {include_delim} must be prev or next", param="include_delim"
            )
        super().__init__(
            tokenizer,
            {
                "size": size,
                "rules": self.rules.to_dict(),
                "min_chars": min_chars,
                "prefix": prefix,
                "retain_headers": retain_headers,
                "include_delim": include_delim,
                "overlap": overlap,
            },
        )
        self._check_prefix(prefix, size)
        self.size = self.budget = size
        self.prefix = prefix
        self.retain_headers = retain_headers
        levels = [lv.boundary_level(include_delim) for lv in self.rules.levels]
        self._packer = Packer(
            levels,
            budget=size,
            min_chars=min_chars,
            tail_min=min_chars,
            overlap=overlap,
            overlap_level=WhitespaceLevel() if overlap else None,
            stats=self.stats,
        )

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        ctx = self.context_fn(text, doc, self.prefix, self.retain_headers, self.size)
        return self._packer.pack(text, index, context=ctx, protected=self._code(text, doc, index))

    def _code(self, text: str, doc: Document | None, index: Any) -> list[tuple[int, int]]:
        """The fenced code blocks of a document in ``CODE_FENCED_FORMATS`` that fit the budget:
        no rule level cuts inside one (as the ``markdown`` strategy); a longer block is cut as
        any text."""
        if (
            doc is None
            or doc.format not in CODE_FENCED_FORMATS
            or "```" not in text
            and "~~~" not in text
        ):
            return []
        from ragsift.chunkers.outline import scan

        avail = self.size - (self.counter.count(self.prefix) if self.prefix else 0)
        return [(a, b) for a, b in scan(text).fences if index.approx(a, b) <= avail]
