"""What ``ragsift calibrate`` will send to the model, known before the model is loaded.

``calibrate`` indexes the shipped set's passages with the index's own chunker and embeds
each chunk as its evidence (``embedders.evidence.embed_evidence``: every unit of the chunk
and its heading trail, each distinct string once per batch), then each language's queries.
``estimate`` counts exactly that, from the same parser, chunker and unit rule, without a
model: the texts, their characters and, for a model behind an endpoint, the requests (its
``batch_size`` texts a request, plus the one-text probe at load) and the bound on their time
(each request gives up after the endpoint's ``timeout`` and ``attempts``). MiniLM's
reference pass over the English set runs in process and is reported apart (``reference``).

The count is an upper bound by at most the strings two chunks of one batch share (a repeated
unit is embedded once): on the shipped set it is exact (tests/test_endpoint.py compares it
with what a server received).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragsift.calibration.data import LANGUAGES, load_set

FILES_PER_BATCH = 8  # ingest.batch: a batch commits after 64 chunks or 8 files


@dataclass(frozen=True)
class Estimate:
    """``texts``/``characters``: what the model is sent (passage evidence, then queries; for an
    endpoint also the probe sent at load);
    ``passages``/``queries``: how many of each; ``reference``: texts the bundled MiniLM embeds
    in process for the map (the English set again, ``calibration.run``); ``requests`` and
    ``bound_seconds``: for an endpoint, the requests sent and the most they can take if every
    one runs to its timeout on every attempt (None for an in-process model)."""

    passages: int
    queries: int
    texts: int
    characters: int
    reference: int
    languages: tuple[str, ...]
    requests: int | None = None
    bound_seconds: float | None = None

    def line(self) -> str:
        """The one stderr line said before calibrating."""
        head = (
            f"{self.texts} texts ({self.characters:,} characters: {self.passages} passages as "
            f"their units, {self.queries} queries; {', '.join(self.languages)})"
        )
        if self.requests is None:
            return head
        return (
            f"{head} in {self.requests} requests to the endpoint; at most "
            f"{_duration(self.bound_seconds or 0.0)} if every request ran to its timeout"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "passages": self.passages,
            "queries": self.queries,
            "texts": self.texts,
            "characters": self.characters,
            "reference_texts": self.reference,
            "languages": list(self.languages),
            "requests": self.requests,
            "bound_seconds": self.bound_seconds,
        }


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _evidence_texts(chunks: list[Any]) -> list[str]:
    """The distinct strings ``embed_evidence`` sends for one batch of chunks."""
    from ragsift.embedders.evidence import unit_bounds

    seen: dict[str, None] = {}
    for c in chunks:
        for lo, hi in unit_bounds(c.text) or [(0, len(c.text))]:
            seen.setdefault(c.text[lo:hi] or " ", None)
        if c.context.strip():
            seen.setdefault(c.context.strip(), None)
    return list(seen)


def estimate(
    model: str | None = None,
    languages: tuple[str, ...] = LANGUAGES,
    *,
    chunker: Any = None,
) -> Estimate:
    """What calibrating ``model`` (``None``: the bundled MiniLM; a folder, ``multilingual``
    or an endpoint URL, as ``embed --model`` takes it) sends. ``chunker``: the one the
    calibration indexes with (default: ``embed``'s default chunker for the model)."""
    from ragsift.ingest import default_embed_chunker
    from ragsift.sources.markdown import parse_markdown

    if chunker is None:
        chunker = default_embed_chunker(model)
    endpoint = _endpoint(model)
    batch = endpoint[0] if endpoint else None
    texts = characters = passages = queries = requests = reference = 0
    for lang_set in load_set(languages):
        # the ingest walk reads a folder's files in name order, 8 files a batch
        files = sorted(lang_set.passages, key=lambda p: f"{p.id}.md")
        for lo in range(0, len(files), FILES_PER_BATCH):
            chunks = [
                c
                for p in files[lo : lo + FILES_PER_BATCH]
                for c in chunker.chunk(parse_markdown(p.document(), f"{p.id}.md"))
            ]
            strings = _evidence_texts(chunks)
            texts += len(strings)
            characters += sum(map(len, strings))
            if batch:
                requests += -(-len(strings) // batch)
            if lang_set.language == "en":
                reference += len(strings)
        passages += len(lang_set.passages)
        q = [x.text for x in lang_set.queries()]
        queries += len(q)
        texts += len(q)
        characters += sum(map(len, q))
        if batch:
            requests += -(-len(q) // batch)
        if lang_set.language == "en":
            reference += len(q)
    if not endpoint:
        return Estimate(passages, queries, texts, characters, reference, languages)
    _, timeout, attempts, concurrency = endpoint
    from ragsift.embedders.endpoint import PROBE

    requests += 1  # the one-text probe at load (model name and dimension)
    texts += 1
    characters += len(PROBE)
    # every request to its timeout on every attempt, with the retry waits between
    # attempts (0.5, 1, 2, ... s, at most 30 s), ``concurrency`` requests at once
    waits = sum(min(0.5 * 2**i, 30.0) for i in range(attempts - 1))
    per_request = attempts * timeout + waits
    bound = -(-requests // max(concurrency, 1)) * per_request
    return Estimate(
        passages, queries, texts, characters, reference, languages, requests, float(bound)
    )


def _endpoint(model: str | None) -> tuple[int, float, int, int] | None:
    """``(batch_size, timeout, attempts, concurrency)`` of an endpoint model, else None."""
    if not model or "://" not in model:
        return None
    from ragsift.embedders.endpoint import DEFAULT_BATCH_SIZE, parse_endpoint

    e = parse_endpoint(model)
    return DEFAULT_BATCH_SIZE, float(e.timeout), int(e.attempts), int(e.concurrency)
