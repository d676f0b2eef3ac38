"""What a run reports: the ``chunk`` and ``embed`` summaries (stderr, or ``--json``: their
field names are an API), the progress sink ``embed`` advances, and the counts, fraction,
rate and ETA worked out from it (``CountedProgress``: front ends only draw them)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragsift.errors import api_words, worded

if TYPE_CHECKING:
    from ragsift.sources import Skipped


def skipped_list(skipped: list[Skipped], name_of=api_words) -> list[dict]:
    """``[{"path", "reason"}]``, each reason as plain text in ``name_of``'s words."""
    return [{"path": s.path, "reason": worded(s.reason, name_of)} for s in skipped]


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

    def as_dict(self, name_of=api_words) -> dict:
        """The ``--json`` summary; a skip reason that names a parameter (``Worded``: the size
        cap's ``max_file_size``) in ``name_of``'s words (``errors.worded``)."""
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
            "skipped": skipped_list(self.skipped, name_of),
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

    def as_dict(self, name_of=api_words) -> dict:
        """The ``--json`` summary; skip reasons in ``name_of``'s words (``ChunkSummary``)."""
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
            "skipped": skipped_list(self.skipped, name_of),
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


class CountedProgress(EmbedProgress):
    """An ``EmbedProgress`` that keeps count of what a run reported and works out from it the
    fraction done, the rate and the time left, so a front end only draws them (``ragsift
    embed``'s line and bar subclass it).

    The fraction and the ETA follow the tokens left to embed: known for the files already
    chunked (their chunks' tokens, less those whose vector was found: ``queued``), estimated
    for the rest at the same tokens per work unit; before a file with tokens is chunked they
    follow work units (bytes of the files that need chunking and embedding). The rate is
    tokens over the model's own time for them, so the first value is already right."""

    def __init__(self) -> None:
        self.files_total = 0
        self.work_total = 0
        self.files = 0
        self.chunks = 0
        self.tokens = 0
        self.work = 0
        self.model_seconds = 0.0
        self.queued_work = 0  # work units chunked so far
        self.queued_tokens = 0  # tokens of their chunks that need embedding
        self.t0 = time.perf_counter()

    def start(self, files: int, work: int = 0) -> None:
        self.files_total, self.work_total = files, work
        self.t0 = time.perf_counter()

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
        self.files += files
        self.chunks += chunks
        self.tokens += tokens
        self.work += work
        self.work_total -= unneeded
        self.model_seconds += seconds

    def queued(self, work: int = 0, tokens: int = 0) -> None:
        self.queued_work += work
        self.queued_tokens += tokens

    def tokens_total(self) -> float | None:
        """Tokens this run will embed: those of the chunked files, and at their tokens per
        work unit for the files not chunked yet. None before a file with tokens was chunked."""
        if self.queued_work <= 0 or self.queued_tokens <= 0:
            return None
        rest = max(self.work_total - self.queued_work, 0)
        return max(self.queued_tokens + rest * self.queued_tokens / self.queued_work, self.tokens)

    def fraction(self) -> float | None:
        """The part done, 0..1: tokens embedded of ``tokens_total``, else work units done;
        None when neither is known."""
        total = self.tokens_total()
        if total is not None:
            return min(self.tokens / total, 1.0)
        if self.work_total > 0:
            return min(self.work, self.work_total) / self.work_total
        return None

    def rate(self) -> float | None:
        """Tokens per second of model time; None before anything was embedded."""
        return self.tokens / self.model_seconds if self.model_seconds > 0 else None

    def eta(self) -> float | None:
        """Seconds left: the tokens left to embed at the rate of the run so far (wall time,
        parsing included), or the work units left before tokens are known; None before
        there is a rate."""
        elapsed = time.perf_counter() - self.t0
        total = self.tokens_total()
        if total is not None and self.tokens > 0 and elapsed > 0:
            return max(total - self.tokens, 0) / (self.tokens / elapsed)
        if self.work <= 0 or elapsed <= 0 or self.work_total <= 0:
            return None
        return max(self.work_total - self.work, 0) / (self.work / elapsed)
