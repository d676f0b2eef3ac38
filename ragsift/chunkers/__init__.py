"""Chunkers: boundary finders on one packing engine, and the token counters they measure with.

``make_chunker(strategy, tokenizer=..., **options)`` builds any strategy from CLI-style
options and refuses invalid combinations with a ``RagsiftError`` that names the options the
strategy takes. Every chunker has ``chunk(text_or_document)``, ``chunk_batch(list)``,
``options()``, ``budget`` (its size cap in counter units, or None) and
``prepare(document)`` (the document the pipeline should chunk and record).
"""

from __future__ import annotations

from typing import Any

from ragsift.chunkers.base import Chunk, Chunker, TokenCounter
from ragsift.chunkers.counters import CharCounter, TiktokenCounter, get_counter
from ragsift.chunkers.markdown import MarkdownChunker
from ragsift.chunkers.recursive import RecursiveChunker
from ragsift.chunkers.rules import RecursiveLevel, RecursiveRules
from ragsift.chunkers.sections import HeadingChunker, ParagraphChunker
from ragsift.chunkers.sentence import SentenceChunker
from ragsift.chunkers.windows import CharChunker, TokenChunker, WholeChunker
from ragsift.errors import RagsiftError

STRATEGIES: dict[str, type] = {
    "recursive": RecursiveChunker,
    "sentence": SentenceChunker,
    "markdown": MarkdownChunker,
    "heading": HeadingChunker,
    "paragraph": ParagraphChunker,
    "chars": CharChunker,
    "tokens": TokenChunker,
    "whole": WholeChunker,
}


def _options(cls: type) -> tuple[str, ...]:
    """A chunker's options: its constructor's keywords but the tokenizer, in their order."""
    import inspect

    names = inspect.signature(cls.__init__).parameters
    return tuple(n for n in names if n not in ("self", "tokenizer"))


# The options each strategy takes: read from its class, their one home (the CLI's flags and
# the API's keywords are checked against these).
OPTIONS: dict[str, tuple[str, ...]] = {name: _options(cls) for name, cls in STRATEGIES.items()}


def make_chunker(strategy: str, *, tokenizer: str | TokenCounter = "cl100k", **options: Any) -> Any:
    """A chunker for ``strategy`` with ``options`` (``None`` values mean "the default")."""
    cls = STRATEGIES.get(strategy)
    if cls is None:
        raise RagsiftError(
            f"unknown chunking strategy {strategy!r} (choose {', '.join(STRATEGIES)})"
        )
    given = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(given) - set(OPTIONS[strategy]))
    if unknown:
        flags = ", ".join(f"{{{name}}}" for name in unknown)
        takes = ", ".join(f"{{{name}}}" for name in OPTIONS[strategy])
        raise RagsiftError(
            f"{{strategy}} {{name}} does not take {flags} (it takes: {takes})",
            param="strategy",
            values={"name": strategy},
        )
    return cls(tokenizer=get_counter(tokenizer), **given)


__all__ = [
    "CharChunker",
    "CharCounter",
    "Chunk",
    "Chunker",
    "HeadingChunker",
    "MarkdownChunker",
    "ParagraphChunker",
    "RecursiveChunker",
    "RecursiveLevel",
    "RecursiveRules",
    "SentenceChunker",
    "TiktokenCounter",
    "TokenChunker",
    "TokenCounter",
    "WholeChunker",
    "get_counter",
    "make_chunker",
]
