"""Reference chunker for reproducing published rows: Chroma's ``RecursiveTokenChunker``.

Role: a benchmark instrument, not a product chunker. The published chroma-dev baseline
(recursive 250 cl100k tokens, overlap 125) comes from Chroma's chunking evaluation, whose
recursive splitter is LangChain's ``RecursiveCharacterTextSplitter`` measured in cl100k tokens.
ragsift's own ``recursive`` chunker packs differently (its overlap starts on a word boundary and
is kept only where a chunk ends at the top rule level), so to run the published baseline in
this harness this module re-implements that algorithm:

1. Pick the first separator of ``"\\n\\n", "\\n", ".", "?", "!", " ", ""`` present in the text;
   split there, each separator kept at the START of the piece that follows it.
2. Pieces under ``size`` tokens are merged greedily (LangChain ``_merge_splits``): a chunk grows
   until the next piece would pass ``size``; the next chunk then starts by dropping pieces from
   the front until at most ``overlap`` tokens remain. Pieces of ``size`` tokens or more are
   split again with the remaining separators.
3. Each chunk is stripped of surrounding whitespace.

Offsets are tracked exactly (pieces are contiguous spans of the original text), where Chroma's
harness searched for each chunk's text in the document; for chunks whose text occurs once the
two agree. Strategy name in evaluation configs: ``chroma-recursive`` (options ``size``,
``overlap``, ``separators``; tokenizer ``cl100k`` as published, or any ragsift counter).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from ragsift.chunkers import Chunk, get_counter

SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")
Span = tuple[int, int]


class ChromaRecursiveChunker:
    """LangChain/Chroma recursive splitting with overlap, on exact offsets (see module doc)."""

    name = "chroma-recursive"

    def __init__(
        self,
        *,
        tokenizer: Any = "cl100k",
        size: int = 250,
        overlap: int = 0,
        separators: list[str] | tuple[str, ...] = SEPARATORS,
    ) -> None:
        if size < 1 or overlap < 0 or overlap >= size:
            raise ValueError("chroma-recursive: need size ≥ 1 and 0 ≤ overlap < size")
        self.counter = get_counter(tokenizer)
        self.size = self.budget = size
        self.overlap = overlap
        self.separators = tuple(separators)

    def options(self) -> dict:
        return {
            "size": self.size,
            "overlap": self.overlap,
            "separators": list(self.separators),
            "tokenizer": self.counter.name,
        }

    def chunk(self, text: Any) -> list[Chunk]:
        text = text if isinstance(text, str) else text.text
        out = []
        for s, e in self._split(text, 0, len(text), self.separators):
            out.append(Chunk(text[s:e], s, e, self.counter.count(text[s:e])))
        return out

    def chunk_batch(self, texts: list[Any]) -> list[list[Chunk]]:
        return [self.chunk(t) for t in texts]

    # -- the algorithm ------------------------------------------------------------------------
    def _len(self, text: str, span: Span) -> int:
        return self.counter.count(text[span[0] : span[1]])

    def _split(self, text: str, lo: int, hi: int, separators: tuple[str, ...]) -> list[Span]:
        piece = text[lo:hi]
        separator, rest = separators[-1], ()
        for i, sep in enumerate(separators):
            if sep == "":
                separator = ""
                break
            if sep in piece:
                separator, rest = sep, separators[i + 1 :]
                break
        splits = _split_keep_separator(piece, separator, lo)
        chunks: list[Span] = []
        good: list[Span] = []
        for sp in splits:
            if self._len(text, sp) < self.size:
                good.append(sp)
                continue
            if good:
                chunks.extend(self._merge(text, good))
                good = []
            if rest:
                chunks.extend(self._split(text, sp[0], sp[1], rest))
            else:
                stripped = _strip(text, sp)
                if stripped:
                    chunks.append(stripped)
        if good:
            chunks.extend(self._merge(text, good))
        return chunks

    def _merge(self, text: str, splits: list[Span]) -> list[Span]:
        """LangChain ``_merge_splits`` with separator "" (separators live in the pieces)."""
        docs: list[Span] = []
        current: list[Span] = []
        lengths: list[int] = []
        total = 0
        for sp in splits:
            n = self._len(text, sp)
            if total + n > self.size and current:
                joined = _strip(text, (current[0][0], current[-1][1]))
                if joined:
                    docs.append(joined)
                while total > self.overlap or (total + n > self.size and total > 0):
                    total -= lengths.pop(0)
                    current.pop(0)
            current.append(sp)
            lengths.append(n)
            total += n
        if current:
            joined = _strip(text, (current[0][0], current[-1][1]))
            if joined:
                docs.append(joined)
        return docs


def _split_keep_separator(piece: str, separator: str, offset: int) -> list[Span]:
    """Split ``piece`` at ``separator``, the separator starting the following part; empty
    parts dropped. Spans are offsets in the full text (``piece`` starts at ``offset``)."""
    if not separator:
        return [(offset + i, offset + i + 1) for i in range(len(piece))]
    cuts = [0] + [m.start() for m in re.finditer(re.escape(separator), piece)] + [len(piece)]
    spans = []
    for a, b in itertools.pairwise(cuts):
        if b > a:
            spans.append((offset + a, offset + b))
    return spans


def _strip(text: str, span: Span) -> Span | None:
    s, e = span
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if e > s else None


REFERENCE_CHUNKERS = {"chroma-recursive": ChromaRecursiveChunker}
