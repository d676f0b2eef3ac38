"""The top-K strategy: admit at most ``k`` candidates that clear a similarity floor, and keep
a record of the near-misses instead of dropping them silently.

Algorithm (pure arithmetic over scores; no I/O, no model):

1. The engine hands over candidates in one total order: the relevance score descending
   (``ragsift.retrieval.relevance``; ties by the cosine, then rowid ascending). It fetches
   ``k + reject_window`` of them. The score that orders them is the score the threshold
   applies to, in every mode.
2. Admission walks the first ``k`` positions of that order and nothing beyond. A candidate
   there is admitted when ``score >= threshold`` (no floor when ``threshold is None``) and its
   text fits in what is left of ``max_chars``. In score order the admitted set is therefore a
   prefix of the first ``k``: once one candidate is below the floor all later ones are too, and
   the first candidate that does not fit the character budget closes admission (a worse hit
   never jumps ahead of a better one that did not fit). So no rejected candidate outscores
   an admitted one unless it is ``over-k`` or ``over-char-budget`` (and an ``over-k`` one
   never does). Only an order that is not by score (``eval``'s comparison fusions) can put a
   below-floor candidate inside the first ``k``: it is skipped and keeps its position.
3. Every other candidate gets a reason: ``below-threshold``, ``over-char-budget`` (it clears
   the floor but the budget stopped admission before it), or ``over-k``.
4. A query whose words are all English function words (``how do I``, ``what is it``:
   ``common_words_only``) admits nothing while a floor is in force: such words are in almost
   every chunk and the model's vector of them says nothing about a topic, so any score they
   reach is noise. Every candidate is kept, with the reason ``common-words-only``, and the
   hint says why. A query with any other word (a name, an identifier such as ``to_do``, a
   number, a CJK word, a word of another language) is not affected, nor one with no floor.

Guarantee: admission reads only the first ``k`` entries of the order, so ``reject_window``
decides how many near-misses are *shown* and can never change which candidates are *admitted*
(``admission`` below takes no window argument at all; tests check the property). When nothing
clears the floor nothing is admitted: there is no fallback to a weak match.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ragsift.errors import RagsiftError, Words, api_words, worded

if TYPE_CHECKING:
    from ragsift.index.backend import ChunkRecord
    from ragsift.retrieval.relevance import Ranked

BELOW_THRESHOLD = "below-threshold"
OVER_K = "over-k"
OVER_CHAR_BUDGET = "over-char-budget"
COMMON_WORDS_ONLY = "common-words-only"
REASONS = (BELOW_THRESHOLD, OVER_K, OVER_CHAR_BUDGET, COMMON_WORDS_ONLY)


def common_words_only(query: str) -> tuple[str, ...]:
    """The query's words when every one is an English function word (``how do I``: ``how``,
    ``do``, ``i``), else ``()``. The words are the lexical side's own (``index.terms``: its
    ``STOPWORDS``, identifiers' whole forms, CJK parts), so a query the lexical side reads
    for a word of content is never caught."""
    from ragsift.index.terms import STOPWORDS, query_terms

    terms = query_terms(query or "")
    return tuple(terms) if terms and all(t in STOPWORDS for t in terms) else ()


def query_hash(query: str) -> str:
    """A short stable id of the query text (sha256, 16 hex digits)."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]


def admission(
    scores: Sequence[float],
    chars: Sequence[int],
    *,
    k: int,
    threshold: float | None,
    max_chars: int | None = None,
) -> list[str | None]:
    """Admission decision for candidates in the searcher's order (normally score descending).

    Returns one entry per candidate: ``None`` when admitted, else the reason. Only the first
    ``k`` positions can be admitted; the loop that admits never looks past them, so whatever
    follows (the reject window) cannot change the outcome.
    """
    n = len(scores)
    reasons: list[str | None] = [None] * n
    budget_left = max_chars
    budget_stopped = False
    head = min(k, n)
    for i in range(head):  # the only loop that admits: it never reads past position k
        if threshold is not None and not scores[i] >= threshold:  # NaN counts as below
            reasons[i] = BELOW_THRESHOLD
        elif budget_stopped or (budget_left is not None and chars[i] > budget_left):
            budget_stopped = True
            reasons[i] = OVER_CHAR_BUDGET
        elif budget_left is not None:
            budget_left -= chars[i]
    for i in range(head, n):
        if threshold is not None and not scores[i] >= threshold:
            reasons[i] = BELOW_THRESHOLD
        elif budget_stopped:
            reasons[i] = OVER_CHAR_BUDGET
        else:
            reasons[i] = OVER_K
    return reasons


@dataclass(frozen=True)
class TopK:
    """Options of the top-K strategy (CLI: ``-k``, ``--threshold``, ``--reject-window``,
    ``--max-chars``). ``threshold=None`` disables the floor."""

    k: int = 3
    threshold: float | None = None
    reject_window: int = 10
    max_chars: int | None = None

    name: ClassVar[str] = "topk"

    def __post_init__(self) -> None:
        if self.k < 1:
            raise RagsiftError(
                "{k} must be at least 1 (got {got})", param="k", values={"got": self.k}
            )
        if self.reject_window < 0:
            raise RagsiftError(
                "{reject_window} must be 0 or more (got {got})",
                param="reject_window",
                values={"got": self.reject_window},
            )
        if self.max_chars is not None and self.max_chars < 1:
            raise RagsiftError(
                "{max_chars} must be at least 1 (got {got})",
                param="max_chars",
                values={"got": self.max_chars},
            )
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise RagsiftError(
                "{threshold} must be a number between 0 and 1 (got {got})",
                param="threshold",
                values={"got": self.threshold},
            )

    @property
    def fetch(self) -> int:
        """How many candidates the searcher should return: ``k + reject_window``."""
        return self.k + self.reject_window

    def decide(self, scores: Sequence[float], chars: Sequence[int]) -> list[str | None]:
        """Admission for candidates in score order (see module docstring)."""
        return admission(
            scores, chars, k=self.k, threshold=self.threshold, max_chars=self.max_chars
        )

    def options(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "threshold": self.threshold,
            "reject_window": self.reject_window,
            "max_chars": self.max_chars,
        }


@dataclass(frozen=True)
class Candidate:
    """One candidate chunk and what the strategy decided about it.

    ``score`` is the relevance score (``ragsift.retrieval.relevance``): the estimated
    probability that the chunk is relevant, what orders the candidates and what the
    threshold applies to, in every mode. The evidence it came from: ``dense_score`` (the
    cosine), ``lexical_score`` (BM25), ``lexical_share`` (BM25 over the query's ceiling),
    ``dense_rank``/``lexical_rank`` (1-based ranks in each side's own list) and
    ``fused_rank`` (the position in the hybrid order); ``None`` where a side did not return
    the candidate.
    ``source`` says which side brought a fused candidate in: "both", "dense" or "lexical"
    (a lexical-only hit); ``None`` in dense mode.
    ``truncated`` counts tokens the embedder never saw for this chunk.
    ``span_start``/``span_end``/``span_text``: the evidence span (``--span best``, see
    ``ragsift.retrieval.spans``; offsets into the document text), ``None`` otherwise.
    ``unit_score``/``unit_start``/``unit_end``/``unit_text``: the chunk's best unit for the
    query (``ragsift.retrieval.units``): its cosine and where it lies (offsets into the
    document text); ``None`` where its units were not read (deep candidates, lexical mode).
    ``title_share``: the share of the query's words found in the chunk's page title (its
    first heading), the relevance score's title evidence (0 where the title holds fewer than
    ``relevance.TITLE_MIN_SHARE`` of them); ``None`` where the title was not read (candidates deeper than ``units.UNIT_DEPTH`` on both sides).
    """

    id: str
    rowid: int
    score: float
    rank: int
    admitted: bool
    reason: str | None
    path: str
    page: int | None = None
    headings: tuple[str, ...] = ()
    line_start: int | None = None
    line_end: int | None = None
    start: int | None = None
    end: int | None = None
    text: str = ""
    context: str = ""
    chars: int = 0
    tokens: int | None = None
    truncated: int = 0
    dense_score: float | None = None
    lexical_score: float | None = None
    lexical_rank: int | None = None
    fused_rank: int | None = None
    source: str | None = None
    span_start: int | None = None
    span_end: int | None = None
    span_text: str | None = None
    lexical_share: float | None = None
    dense_rank: int | None = None
    unit_score: float | None = None
    unit_start: int | None = None
    unit_end: int | None = None
    unit_text: str | None = None
    title_share: float | None = None

    @property
    def location(self) -> str:
        """``path:line`` (or ``path:line-line``, plus ``p.N`` for paged documents)."""
        loc = self.path
        if self.line_start is not None:
            loc += f":{self.line_start}"
            if self.line_end is not None and self.line_end != self.line_start:
                loc += f"-{self.line_end}"
        if self.page is not None:
            loc += f" p.{self.page}"
        return loc

    def title_words(self, query: str) -> tuple[int, int] | None:
        """(how many of ``query``'s words are words of the page title, how many words the
        query has): ``title_share`` in words (``index.terms.query_words``), so (0, n) where
        the title holds fewer than ``relevance.TITLE_MIN_SHARE`` of them; None where the title
        was not read."""
        if self.title_share is None:
            return None
        from ragsift.index.terms import query_words

        n = len(query_words(query))
        return round(self.title_share * n), n

    def margin(self, threshold: float | None) -> float | None:
        """Score minus threshold (positive: cleared the floor by that much)."""
        return None if threshold is None else self.score - threshold

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["headings"] = list(self.headings)
        d["score"] = round(float(self.score), 6)
        for key in ("dense_score", "lexical_share", "unit_score", "title_share"):
            if d[key] is not None:
                d[key] = round(float(d[key]), 6)
        if self.span_start is None:  # span fields only where spans were asked for
            for key in ("span_start", "span_end", "span_text"):
                d.pop(key)
        return d


@dataclass(frozen=True)
class Retrieval:
    """The record of one retrieval: options, every candidate considered, and why each one was
    or was not admitted. ``candidates_complete`` is true when fewer candidates than
    ``k + reject_window`` exist, i.e. the list holds every searchable chunk and no near-miss
    lies beyond it. ``searched`` is how many chunks were scored (after ``--path``)."""

    query: str
    query_hash: str
    strategy: str
    k: int
    threshold: float | None
    reject_window: int
    max_chars: int | None
    dimensions: int
    model: str
    searched: int
    candidates: tuple[Candidate, ...]
    candidates_complete: bool
    corpus_empty: bool
    mode: str = "dense"
    path_filter: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def admitted(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.admitted)

    @property
    def rejected(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if not c.admitted)

    @property
    def best(self) -> Candidate | None:
        """The highest-scoring candidate among the first k positions (the only ones that can
        be admitted). In dense mode that is rank 1; in hybrid mode the fused order can put a
        lower cosine first, and a hint must name the score that decides admission."""
        eligible = self.candidates[: self.k]
        return max(eligible, key=lambda c: c.score) if eligible else None

    def as_dict(self) -> dict[str, Any]:
        admitted = self.admitted
        return {
            "query": self.query,
            "query_hash": self.query_hash,
            "strategy": self.strategy,
            "mode": self.mode,
            "model": self.model,
            "k": self.k,
            "threshold": self.threshold,
            "reject_window": self.reject_window,
            "max_chars": self.max_chars,
            "dimensions": self.dimensions,
            "path_filter": self.path_filter,
            "searched": self.searched,
            "considered": len(self.candidates),
            "admitted": len(admitted),
            "rejected": len(self.candidates) - len(admitted),
            "candidates_complete": self.candidates_complete,
            "corpus_empty": self.corpus_empty,
            "candidates": [c.as_dict() for c in self.candidates],
            **self.extra,
        }


@dataclass(frozen=True)
class Scope:
    """What every query of one search shares, as its ``Retrieval`` records it: the model and
    its ``dimensions``, how many chunks were ``searched`` (after the path filter), the
    ``mode``, the ``path_filter`` given, and whether the index holds no chunk at all
    (``corpus_empty``; None: ``searched == 0``)."""

    dimensions: int
    model: str
    searched: int
    mode: str = "dense"
    path_filter: str | None = None
    corpus_empty: bool | None = None


def build_retrieval(
    strategy: TopK,
    scope: Scope,
    *,
    query: str,
    ranked: Sequence[Ranked],
    records: Sequence[ChunkRecord],
) -> Retrieval:
    """Apply ``strategy`` to candidates already in the engine's order and build the record.

    ``ranked`` (``ragsift.retrieval.relevance.Ranked``: the cosine plus the lexical/fused
    evidence) and ``records`` (the backend's ``ChunkRecord`` of each) are aligned; at most
    ``strategy.fetch`` are kept. The threshold applies to ``Ranked.score``, the relevance
    score the engine ordered them by.
    """
    mode, searched = scope.mode, scope.searched
    ranked = list(ranked)[: strategy.fetch]
    records = list(records)[: len(ranked)]
    reasons = strategy.decide([c.score for c in ranked], [len(r.text) for r in records])
    if strategy.threshold is not None and common_words_only(query):
        reasons = [COMMON_WORDS_ONLY] * len(reasons)  # step 4 of the module docstring
    candidates = tuple(
        _candidate(rec, c, rank, reason, mode)
        for rank, (rec, c, reason) in enumerate(zip(records, ranked, reasons), start=1)
    )
    return Retrieval(
        query=query,
        query_hash=query_hash(query),
        strategy=strategy.name,
        k=strategy.k,
        threshold=strategy.threshold,
        reject_window=strategy.reject_window,
        max_chars=strategy.max_chars,
        dimensions=scope.dimensions,
        model=scope.model,
        searched=searched,
        candidates=candidates,
        candidates_complete=len(candidates) < strategy.fetch,
        corpus_empty=searched == 0 if scope.corpus_empty is None else scope.corpus_empty,
        mode=mode,
        path_filter=scope.path_filter,
    )


def _candidate(rec: ChunkRecord, c: Ranked, rank: int, reason: str | None, mode: str) -> Candidate:
    return Candidate(
        id=rec.id,
        rowid=rec.rowid,
        score=float(c.score),
        rank=rank,
        admitted=reason is None,
        reason=reason,
        path=rec.path,
        page=rec.page,
        headings=rec.headings,
        line_start=rec.line_start,
        line_end=rec.line_end,
        start=rec.start,
        end=rec.end,
        text=rec.text,
        context=rec.context,
        chars=len(rec.text),
        tokens=rec.tokens,
        truncated=rec.truncated,
        dense_score=None if c.dense_score is None else float(c.dense_score),
        lexical_score=c.lexical_score,
        lexical_share=c.lexical_share,
        dense_rank=c.dense_rank,
        lexical_rank=c.lexical_rank,
        fused_rank=c.fused_rank,
        source=c.source,
        title_share=c.title_share,
        **_unit_fields(rec, c),
    )


def _unit_fields(rec: ChunkRecord, c: Ranked) -> dict[str, Any]:
    """The best unit's fields: offsets into the document (the chunk's start + the unit's
    offsets into the chunk text), its text a slice of the chunk's."""
    if c.unit_score is None or c.unit_start is None:
        return {}
    base = rec.start if rec.start is not None else 0
    lo, hi = c.unit_start, c.unit_end
    return {
        "unit_score": float(c.unit_score),
        "unit_start": base + lo,
        "unit_end": base + hi,
        "unit_text": rec.text[lo:hi],
    }


def admitted_at(r: Retrieval, threshold: float | None) -> int:
    """How many of ``r``'s candidates another threshold would admit (same k and budget)."""
    reasons = admission(
        [c.score for c in r.candidates],
        [c.chars for c in r.candidates],
        k=r.k,
        threshold=threshold,
        max_chars=r.max_chars,
    )
    return sum(reason is None for reason in reasons)


def admitting_threshold(score: float) -> float:
    """The threshold a hint suggests for a candidate of ``score``: ``score`` rounded down to
    two decimals, so it admits that candidate (exact: the hint's count is computed at it)."""
    return math.floor(score * 100) / 100


# A hint proposes a lower threshold only for a best candidate that scores at least
# PLAUSIBLE_SHARE of the mode's measured default threshold (or of the threshold in force, if
# lower); under that, the best candidate scores like an off-topic question's best and a
# proposed threshold would admit noise (issue 41: "--threshold 0.03" for a plainly off-topic
# question). Measured on the English docs sites (bench/bench_hint_threshold.py, RESULTS
# "Plausible thresholds in hints"): at the default 0.17, the best candidates of off-topic
# questions that admit nothing score 0.020-0.067 on Typer (11) and 0.019-0.068 on Flask
# (11 of 12; one 0.113), the one answerable miss whose best candidate is right 0.121; half
# the default (0.085) proposes for 0/11 and 1/12 off-topic and keeps that miss.
PLAUSIBLE_SHARE = 0.5


def plausible_floor(threshold: float, mode: str) -> float:
    """The lowest score whose admitting threshold a hint may propose (``PLAUSIBLE_SHARE``)."""
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS

    return PLAUSIBLE_SHARE * min(threshold, DEFAULT_THRESHOLDS.get(mode, threshold))


def proposes_threshold(r: Retrieval) -> bool:
    """Whether a "nothing cleared the threshold" hint proposes one: a best candidate under
    the threshold, at or above ``plausible_floor``."""
    best = r.best
    return (
        best is not None
        and r.threshold is not None
        and plausible_floor(r.threshold, r.mode) <= best.score < r.threshold
    )


Setting = Callable[..., str]  # (name, value=None) -> a reader's words: ``Words.worded``'s name_of


def outcome_hint(r: Retrieval, setting: Setting = api_words) -> str | None:
    """``outcome_words`` in the reader's words (``setting``: ``api_words``, the default,
    ``k=13``; the CLI's ``ragsift.cli._common.flag_name``, ``-k 13``)."""
    return worded(outcome_words(r), setting)


def outcome_words(r: Retrieval) -> Words | None:
    """One sentence when the outcome is extreme (nothing admitted, or nothing in the window
    below the floor), else None; it names the arguments to change (``Words``: each front end
    words them). ``query`` prints it on stderr when nothing was admitted, ``explain`` as its
    hint (one function for both)."""
    if r.corpus_empty:
        return Words("the index holds no chunks")
    if r.searched == 0:
        return Words("no document path matches {path} {pattern}", {"pattern": repr(r.path_filter)})
    best = r.best
    if best is None:
        return None
    if best.reason == COMMON_WORDS_ONLY:
        return Words(
            "the query holds only common words ({common}), which say nothing about what to "
            "find: nothing admitted; ask with a word the documents would hold (a name, a "
            "term, an identifier)",
            {"common": ", ".join(common_words_only(r.query))},
        )
    facts = {
        "chars": best.chars,
        "at": best.location,
        "budget": r.max_chars,
        "score": best.score,
        "floor": r.threshold,
    }
    if not r.admitted:
        if best.reason == OVER_CHAR_BUDGET:
            return Words(
                "the best hit ({chars} chars, {at}) does not fit {max_chars=budget}; "
                "`{max_chars=chars}` would admit it",
                facts,
            )
        if r.threshold is not None and best.score < r.threshold and not proposes_threshold(r):
            return Words(
                "nothing cleared the threshold {floor:.2f}: best candidate {score:.3f} at "
                "{at}, under {plausible:.3f}, where off-topic questions score: the index "
                "holds nothing relevant enough for this query (no lower threshold is proposed)",
                {**facts, "plausible": plausible_floor(r.threshold, r.mode)},
            )
        if r.threshold is not None and best.score < r.threshold:
            suggestion = admitting_threshold(best.score)
            return Words(
                "nothing cleared the threshold {floor:.2f}: best candidate {score:.3f} at "
                "{at}; `{threshold=suggestion}` would admit {n}",
                {**facts, "suggestion": f"{suggestion:.2f}", "n": admitted_at(r, suggestion)},
            )
        return None
    if r.threshold is None:
        return Words(
            "no floor ({threshold=none}): the top k are admitted whatever their score",
            {"none": "none"},
        )
    if any(c.reason == BELOW_THRESHOLD for c in r.candidates):
        return None
    lowest = min(c.score for c in r.candidates)
    if r.candidates_complete:
        return Words(
            "all {n} chunks searched clear the floor (lowest {lowest:.2f} >= "
            "{floor:.2f}): the threshold excludes nothing here",
            {"n": len(r.candidates), "lowest": lowest, "floor": r.threshold},
        )
    if r.reject_window > 0:
        return Words(
            "every candidate in the window clears the floor (lowest {lowest:.2f} >= "
            "{floor:.2f}): more chunks this similar may lie beyond it; raise {reject_window} "
            "to see them or {threshold} to be stricter",
            {"lowest": lowest, "floor": r.threshold},
        )
    return None
