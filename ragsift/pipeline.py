"""Orchestration: file → parse → chunk (→ embed → index), with a run summary.

Sits above the layers: it imports ``sources``, ``chunkers`` (and later ``embedders`` and
``retrieval``); nothing below imports it. It never prints: diagnostics go through the
``on_skip`` callback so the CLI decides how to show them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator

from ragsift.errors import SkipFile

if TYPE_CHECKING:
    from ragsift.chunkers.base import Chunk, Chunker
    from ragsift.sources import Document, Skipped


@dataclass
class ChunkSummary:
    """What a ``chunk`` run did (printed on stderr by the CLI)."""

    files: int = 0
    parsed: int = 0
    chunks: int = 0
    token_counts: list[int] = field(default_factory=list)
    skipped: list["Skipped"] = field(default_factory=list)
    over_budget: int = 0

    def as_dict(self) -> dict:
        tc = sorted(self.token_counts)
        return {
            "files": self.files,
            "parsed": self.parsed,
            "chunks": self.chunks,
            "tokens": sum(tc),
            "min_tokens": tc[0] if tc else 0,
            "median_tokens": statistics.median(tc) if tc else 0,
            "max_tokens": tc[-1] if tc else 0,
            "over_budget": self.over_budget,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
        }


def chunk_record(doc: "Document", index: int, chunk: "Chunk") -> dict:
    """The JSON-lines record of ``ragsift chunk`` (field names are an API)."""
    last = max(chunk.start, chunk.end - 1)
    return {
        "id": f"{doc.path}#{index}",
        "path": doc.path,
        "index": index,
        "text": chunk.text,
        "start": chunk.start,
        "end": chunk.end,
        "context": chunk.context,
        "tokens": chunk.tokens,
        "chars": len(chunk.text),
        "line_start": doc.line_at(chunk.start),
        "line_end": doc.line_at(last),
        "headings": list(doc.headings_at(chunk.start)),
        "page": doc.page_at(chunk.start),
        "level": chunk.level,
    }


def iter_documents(
    paths: list[str],
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    on_skip: Callable[["Skipped"], None] | None = None,
    summary: ChunkSummary | None = None,
) -> Iterator["Document"]:
    """Discover and parse files in deterministic order; unusable files are reported, not raised."""
    from ragsift.sources import Skipped, discover, load_document

    summary = summary if summary is not None else ChunkSummary()
    files, missing = discover(paths, include=include or [], exclude=exclude or [])
    for s in missing:
        summary.skipped.append(s)
        if on_skip:
            on_skip(s)
    for sf in files:
        summary.files += 1
        try:
            doc = load_document(sf)
        except SkipFile as exc:
            s = Skipped(sf.relpath, exc.reason)
            summary.skipped.append(s)
            if on_skip:
                on_skip(s)
            continue
        summary.parsed += 1
        yield doc


def iter_chunks(
    paths: list[str],
    chunker: "Chunker",
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    on_skip: Callable[["Skipped"], None] | None = None,
    summary: ChunkSummary | None = None,
    budget: int | None = None,
) -> Iterator[dict]:
    """Yield ``chunk_record`` dicts for every chunk of every readable file under ``paths``."""
    summary = summary if summary is not None else ChunkSummary()
    for doc in iter_documents(
        paths, include=include, exclude=exclude, on_skip=on_skip, summary=summary
    ):
        for i, ch in enumerate(chunker.chunk(doc)):
            summary.chunks += 1
            summary.token_counts.append(ch.tokens)
            if budget is not None and ch.tokens > budget:
                summary.over_budget += 1
            yield chunk_record(doc, i, ch)
