"""What every chunker shares: input handling, context strings, batch calls, options.

A concrete chunker is a small subclass that builds its boundary levels and calls the one
``Packer``. ``chunk`` takes a ``str`` or a ``Document`` and never changes the text it is
given, so offsets always index it; a chunker that needs a converted text (the markdown
chunker renders tables) does the conversion in ``prepare(doc) -> Document``, which the
pipeline calls first and records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragsift.chunkers.base import Chunk, TokenCounter
from ragsift.chunkers.counters import get_counter, index_for
from ragsift.chunkers.outline import Trails
from ragsift.chunkers.packer import PackStats, first_nonspace
from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from ragsift.sources.document import Document

TRAIL_SEPARATOR = " > "


def unpack(item: str | Document) -> tuple[str, Document | None]:
    if isinstance(item, str):
        return item, None
    text = getattr(item, "text", None)
    if not isinstance(text, str):
        raise TypeError(f"chunk() takes a str or a Document, not {type(item).__name__}")
    return text, item


class BaseChunker:
    """Shared plumbing; subclasses set ``name`` and implement ``_chunk``."""

    name = "base"

    def __init__(self, tokenizer: str | TokenCounter, options: dict[str, Any]) -> None:
        self.counter = get_counter(tokenizer)
        self._options = options
        self.budget: int | None = None
        self.stats = PackStats()

    def prepare(self, doc: Document) -> Document:
        """The document to chunk and record (identity unless a strategy converts text)."""
        return doc

    def chunk(self, text: str | Document) -> list[Chunk]:
        raw, doc = unpack(text)
        if first_nonspace(raw, 0) >= len(raw):
            return []
        return self._chunk(raw, doc, index_for(self.counter, raw))

    def chunk_batch(self, texts: list[str | Document]) -> list[list[Chunk]]:
        """One chunk list per input, the same as calling ``chunk`` on each."""
        return [self.chunk(t) for t in texts]

    __call__ = chunk

    def options(self) -> dict:
        return {"strategy": self.name, "tokenizer": self.counter.name, **self._options}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return f"{type(self).__name__}({opts})"

    def _chunk(self, text: str, doc: Document | None, index: Any) -> list[Chunk]:
        raise TypeError(f"{type(self).__name__} does not implement _chunk")

    # -- context: prefix + heading trail --------------------------------------------------

    def _check_prefix(self, prefix: str, size: int | None) -> None:
        if prefix and size is not None and self.counter.count(prefix) >= size:
            raise RagsiftError(
                "{prefix} takes {n} tokens, leaving nothing of the {size} {s} budget",
                param="prefix",
                values={"n": self.counter.count(prefix), "s": size},
            )

    def context_fn(
        self,
        text: str,
        doc: Document | None,
        prefix: str,
        trail: bool,
        size: int | None,
        outline: Any = None,
    ) -> Callable[[int], str] | None:
        """``start -> context``: ``prefix`` plus, with ``trail``, the heading trail there.

        A trail never takes more than half of the budget: outer headings are dropped first.
        """
        trails = Trails(text, doc, outline) if trail else None
        if not prefix and not trails:
            return None
        if not trails:
            return lambda start: prefix
        cache: dict[tuple[str, ...], str] = {}
        limit = None if size is None else max(size // 2, 1)

        def context(start: int) -> str:
            t = trails.at(start)
            hit = cache.get(t)
            if hit is None:
                parts = list(t)
                hit = prefix
                while parts:
                    hit = prefix + TRAIL_SEPARATOR.join(parts) + "\n\n"
                    if limit is None or self.counter.count(hit) <= limit:
                        break
                    parts.pop(0)
                    hit = prefix
                cache[t] = hit
            return hit

        return context
