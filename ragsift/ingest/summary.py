"""What a run reports: the ``chunk`` and ``embed`` summaries (stderr, or ``--json``: their
field names are an API) and the progress sink ``embed`` advances."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragsift.sources import Skipped


@dataclass
class ChunkSummary:
    """What a ``chunk`` run did (printed on stderr by the CLI)."""

    files: int = 0
    parsed: int = 0
    chunks: int = 0
    token_counts: list[int] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    over_budget: int = 0
    ignored: dict[str, int] = field(default_factory=dict)  # reason → files (not documents)

    def as_dict(self) -> dict:
        tc = sorted(self.token_counts)
        return {
            "files": self.files,
            "ignored": sum(self.ignored.values()),
            "parsed": self.parsed,
            "chunks": self.chunks,
            "tokens": sum(tc),
            "min_tokens": tc[0] if tc else 0,
            "median_tokens": statistics.median(tc) if tc else 0,
            "max_tokens": tc[-1] if tc else 0,
            "over_budget": self.over_budget,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
        }


@dataclass
class EmbedSummary:
    """What an ``embed`` run did (stderr summary, or ``--json``)."""

    discovered: int = 0
    unchanged: int = 0
    parsed: int = 0
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    removed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)  # reason → files (not documents)
    truncated: int = 0
    truncated_tokens: int = 0
    tokens: int = 0
    model_loaded: bool = False
    seconds: float = 0.0
    index: dict = field(default_factory=dict)
    rekeyed: int = 0  # documents found again under another spelling of their path (not JSON)
    rechunked: dict[str, int] = field(default_factory=dict)  # why -> same bytes re-chunked
    # letters per script of the documents parsed in this run (``sources.scripts``; not JSON)
    scripts: dict[str, int] = field(default_factory=dict)

    def foreign_script(self) -> str | None:
        """The script most of this run's parsed text is in when it is not Latin (None when it
        is, or nothing was parsed): the default model reads English only."""
        from ragsift.sources.scripts import mostly_foreign

        return mostly_foreign(self.scripts)

    def rechunked_line(self) -> str | None:
        """``12 documents re-chunked: the rst reader changed`` (None when none were)."""
        n = sum(self.rechunked.values())
        if not n:
            return None
        why = "; ".join(
            f"{w} ({c})" if len(self.rechunked) > 1 else w
            for w, c in sorted(self.rechunked.items(), key=lambda x: -x[1])
        )
        return f"{n} document{'s' if n != 1 else ''} re-chunked: {why}"

    def as_dict(self) -> dict:
        return {
            "discovered": self.discovered,
            "unchanged": self.unchanged,
            "parsed": self.parsed,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "reused": self.reused,
            "removed": self.removed,
            "rechunked": sum(self.rechunked.values()),
            "rechunked_because": dict(self.rechunked),
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "ignored": sum(self.ignored.values()),
            "truncated": self.truncated,
            "truncated_tokens": self.truncated_tokens,
            "tokens": self.tokens,
            "model_loaded": self.model_loaded,
            "seconds": round(self.seconds, 3),
            "index": self.index,
        }


class EmbedProgress:
    """Progress sink for ``build_index`` (the CLI draws it; the default draws nothing).

    Work is counted in ``work`` units whose total ``start`` gives: bytes of the discovered
    files (records for chunk JSON lines on stdin). A file's work is advanced chunk by chunk as
    its texts are embedded (so one big file moves the bar smoothly), or at once when its
    chunks need no model; work of a file that needs nothing (unchanged, skipped) leaves the
    total (``unneeded``). ``seconds`` is the model time the ``tokens`` took, so a rate is
    right from the first call."""

    def start(self, files: int, work: int = 0) -> None:
        """``files`` inputs will be looked at, ``work`` units in all (0: unknown)."""

    def advance(
        self,
        files: int = 0,
        chunks: int = 0,
        tokens: int = 0,
        *,
        work: int = 0,
        unneeded: int = 0,
        seconds: float = 0.0,
    ) -> None:
        """``files`` done, ``chunks`` written, ``tokens`` (chunker units) embedded in
        ``seconds`` of model time; ``work`` units done, ``unneeded`` units dropped."""

    def queued(self, work: int = 0, tokens: int = 0) -> None:
        """Documents of ``work`` units were chunked into chunks of ``tokens`` tokens that may
        need embedding; a negative ``tokens`` later: that many turned out not to (their vector
        was found). So the tokens left to embed are known for what is chunked, and estimated
        at the same tokens per unit for the rest: what a percentage and an ETA follow."""

    def finish(self) -> None:
        """The run is over (successfully or not)."""
