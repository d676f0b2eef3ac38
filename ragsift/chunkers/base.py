"""The contracts every chunker and token counter honours.

A ``Chunk`` is a small value: ``text == document.text[start:end]`` always holds; anything
added for embedding (a heading trail, a prefix) lives in ``context``; ``tokens`` counts
``context + text`` with the chunker's counter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

# The token budget of a chunker built directly (Python API, `chunk --tokenizer cl100k`): 512
# cl100k tokens, the size the chunker benchmarks (bench/RESULTS.md, "Chunker speed") and
# Chroma's published rows compare at. `embed` (and `chunk` by default) instead size chunks to
# the model's max length: `ingest.embed_size`, measured in README "Defaults".
DEFAULT_SIZE = 512

if TYPE_CHECKING:
    from ragsift.sources.document import Document


@dataclass(frozen=True, slots=True)
class Chunk:
    text: str
    start: int
    end: int
    tokens: int
    level: int = 0  # rule level at which the split before this chunk happened (0 = top)
    context: str = ""

    @property
    def embed_text(self) -> str:
        """The string an embedder sees."""
        return self.context + self.text


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens; also gives token start offsets so packers work on token boundaries."""

    name: str

    def count(self, text: str) -> int: ...

    def offsets(self, text: str) -> list[int]:
        """Character offset in ``text`` where each token starts (ascending, first is 0)."""
        ...


@runtime_checkable
class Chunker(Protocol):
    name: str

    def chunk(self, text: str | Document) -> list[Chunk]: ...

    def chunk_batch(self, texts: list[str | Document]) -> list[list[Chunk]]: ...

    def options(self) -> dict:
        """The options that determine the output (stored in the index settings)."""
        ...
