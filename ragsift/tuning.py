"""Threshold tuning: sweep the top-K floor over labelled queries and measure what it admits.

Orchestration above the layers (it drives ``ragsift.retrieval``; nothing below imports it).

Input: a JSON-lines file of ``{"query": "...", "relevant": [...]}``. A relevant item is a
document path or a chunk id (a string: it matches a candidate whose ``path`` or ``id`` equals
it), ``{"path": p}``, ``{"id": i}``, or a character span ``{"path": p, "start": s, "end": e}``
(end exclusive; it matches every chunk of ``p`` that overlaps it). A query with
``"relevant": []`` is a question the index cannot answer: ideally nothing is admitted.

Metrics (precision/recall/F1 of the admitted sets, recall@k, nDCG@k) are defined once in
``ragsift/metrics.py``, shared with ``ragsift eval``. Method: every query is searched once with no floor (``k + reject_window`` candidates); since
admission only ever reads the first ``k`` candidates in score order (see
``ragsift.retrieval.topk``), the admitted set at any threshold follows from those scores
without searching again. For each threshold of the sweep:

- precision = admitted candidates that match a relevant item / admitted candidates
- recall    = relevant items matched by an admitted candidate / relevant items
- F1 of those two. All three are pooled over queries (micro averages), so queries that admit
  nothing do not make precision undefined, and unanswerable queries count against precision.
- ``empty``: share of queries that admit nothing (and of answerable ones that admit nothing).

Threshold-independent ranking quality of the first ``k``: recall@k (mean over answerable
queries) and nDCG@k with binary gains, where a candidate gains 1 only when it matches a
relevant item no earlier candidate matched (a document split into several chunks counts once,
at its best chunk).

Recommendation: the threshold with the highest F1 (``--optimize f1``), or the one with the
highest recall whose precision reaches a target (``recall@precision=0.8``), or the highest
precision with recall at least a target (``precision@recall=0.9``). Ties go to the middle of
the run of equally good thresholds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.metrics import (  # the one metrics module, shared with `eval`
    Judged,
    SweepRow,
    histogram,
    median,
    metrics_at,
    ranking_metrics,
    threshold_grid,
)
from ragsift.retrieval.topk import Candidate, Retrieval, TopK

if TYPE_CHECKING:
    from ragsift.retrieval.request import SearchRequest


@dataclass(frozen=True)
class Relevant:
    """One relevant item: a path or chunk id (``ref``), or a span of a path."""

    ref: str | None = None
    path: str | None = None
    id: str | None = None
    start: int | None = None
    end: int | None = None

    def matches(self, c: Candidate) -> bool:
        if self.ref is not None:
            return c.id == self.ref or c.path == self.ref
        if self.id is not None:
            return c.id == self.id
        if self.path is not None and c.path != self.path:
            return False
        if self.start is not None and self.end is not None:
            if c.start is None or c.end is None:
                return False
            return c.start < self.end and self.start < c.end
        return self.path is not None

    def as_dict(self) -> Any:
        if self.ref is not None:
            return self.ref
        return {
            k: v
            for k, v in (
                ("path", self.path),
                ("id", self.id),
                ("start", self.start),
                ("end", self.end),
            )
            if v is not None
        }


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    relevant: tuple[Relevant, ...]


def parse_relevant(item: Any, where: str) -> Relevant:
    if isinstance(item, str):
        return Relevant(ref=item)
    if isinstance(item, dict):
        path, cid = item.get("path"), item.get("id")
        start, end = item.get("start"), item.get("end")
        if (start is None) != (end is None):
            raise RagsiftError(f"{where}: a span needs both 'start' and 'end'")
        if start is not None and (
            not isinstance(start, int) or not isinstance(end, int) or end < start
        ):
            raise RagsiftError(f"{where}: span start/end must be integers with start <= end")
        if path is None and cid is None:
            raise RagsiftError(f"{where}: a relevant item needs 'path' or 'id'")
        return Relevant(path=path, id=cid, start=start, end=end)
    raise RagsiftError(f"{where}: a relevant item is a string or an object, not {item!r:.40}")


def load_queries(path: str | Path) -> list[LabelledQuery]:
    """Read a labelled queries file (JSON lines); errors name the line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RagsiftError(f"cannot read queries file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RagsiftError(f"queries file {path} is not UTF-8 text") from None
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise RagsiftError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str):
            raise RagsiftError(f'{where}: expected {{"query": "...", "relevant": [...]}}')
        rel = obj.get("relevant", [])
        if not isinstance(rel, list):
            rel = [rel]
        out.append(LabelledQuery(obj["query"], tuple(parse_relevant(r, where) for r in rel)))
    if not out:
        raise RagsiftError(f"queries file {path} holds no queries")
    return out


def judge(retrieval: Retrieval, lq: LabelledQuery) -> Judged:
    cands = retrieval.candidates
    return Judged(
        query=lq.query,
        scores=tuple(c.score for c in cands),
        chars=tuple(c.chars for c in cands),
        matched=tuple(
            frozenset(i for i, r in enumerate(lq.relevant) if r.matches(c)) for c in cands
        ),
        n_relevant=len(lq.relevant),
    )


_OBJECTIVE = re.compile(r"^(recall|precision)@(precision|recall)=([0-9]*\.?[0-9]+)$")


@dataclass(frozen=True)
class Objective:
    """What to optimise: ``f1``, ``recall@precision=0.8`` or ``precision@recall=0.9``."""

    maximise: str = "f1"
    constraint: str | None = None
    target: float | None = None

    @classmethod
    def parse(cls, text: str) -> Objective:
        text = (text or "f1").strip().lower().replace(" ", "")
        if text == "f1":
            return cls()
        m = _OBJECTIVE.match(text)
        if not m or m.group(1) == m.group(2):
            raise RagsiftError(
                "{objective} {got}: use f1, recall@precision=0.8 or precision@recall=0.9",
                param="objective",
                values={"got": repr(text)},
            )
        target = float(m.group(3))
        if not 0.0 <= target <= 1.0:
            raise RagsiftError(
                "{objective} {got}: the target must be between 0 and 1",
                param="objective",
                values={"got": repr(text)},
            )
        return cls(m.group(1), m.group(2), target)

    def __str__(self) -> str:
        if self.constraint is None:
            return self.maximise
        return f"{self.maximise}@{self.constraint}={self.target:g}"

    def choose(self, rows: Sequence[SweepRow]) -> SweepRow | None:
        """Best row; ties go to the middle of the run of equal values. None if no row meets
        the constraint."""
        ok = [
            i
            for i, r in enumerate(rows)
            if self.constraint is None
            or getattr(r, self.constraint) >= (self.target or 0.0) - 1e-12
        ]
        if not ok:
            return None
        best = max(getattr(rows[i], self.maximise) for i in ok)
        ties = [i for i in ok if getattr(rows[i], self.maximise) >= best - 1e-12]
        # the longest consecutive run of tied rows, then its middle
        runs: list[list[int]] = []
        for i in ties:
            if runs and i == runs[-1][-1] + 1:
                runs[-1].append(i)
            else:
                runs.append([i])
        run = max(runs, key=len)
        return rows[run[len(run) // 2]]


@dataclass
class TuneReport:
    k: int
    reject_window: int
    max_chars: int | None
    objective: str
    queries: int
    rows: list[SweepRow]
    recommended: SweepRow | None
    ranking: dict[str, float]
    relevant_scores: list[float] = field(default_factory=list)
    irrelevant_scores: list[float] = field(default_factory=list)
    model: str = ""
    current_threshold: float | None = None
    current: SweepRow | None = None
    saved: dict[str, Any] | None = None  # the ``tuned_threshold`` setting, after ``--save``
    labelled_items: int = 0  # relevant items in the queries file
    unmatched: list[str] = field(default_factory=list)  # those naming no indexed document
    stored_example: str | None = None  # a stored path, to show how labels must look
    no_recommendation: str | None = None  # why nothing is recommended (recommended is None)

    def unmatched_line(self) -> str | None:
        """One sentence when labelled items name no indexed document (else None)."""
        if not self.unmatched:
            return None
        n, m = len(self.unmatched), self.labelled_items
        shape = f"; stored paths look like {self.stored_example!r}" if self.stored_example else ""
        return (
            f"{n} of {m} labelled relevant items match no indexed document (e.g. "
            f"{self.unmatched[0]!r}{shape})"
        )

    def distributions(self, bins: int = 20) -> dict[str, Any]:
        allv = [v for v in self.relevant_scores + self.irrelevant_scores if math.isfinite(v)]
        lo = math.floor(min(allv) * 20) / 20 if allv else 0.0
        hi = math.ceil(max(allv) * 20) / 20 if allv else 1.0
        if hi <= lo:
            hi = lo + 0.05
        return {
            "lo": lo,
            "hi": hi,
            "bins": bins,
            "relevant": histogram(self.relevant_scores, lo, hi, bins),
            "irrelevant": histogram(self.irrelevant_scores, lo, hi, bins),
            "relevant_median": median(self.relevant_scores),
            "irrelevant_median": median(self.irrelevant_scores),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "k": self.k,
            "reject_window": self.reject_window,
            "max_chars": self.max_chars,
            "objective": self.objective,
            "queries": self.queries,
            "recommended": self.recommended.as_dict() if self.recommended else None,
            "current_threshold": self.current_threshold,
            "current": self.current.as_dict() if self.current else None,
            "ranking": {k: round(v, 6) for k, v in self.ranking.items()},
            "distributions": self.distributions(),
            "sweep": [r.as_dict() for r in self.rows],
            "saved": self.saved,
            "labelled_items": self.labelled_items,
            "unmatched_items": len(self.unmatched),
            "no_recommendation": self.no_recommendation,
        }


def analyse(
    judged: Sequence[Judged],
    strategy: TopK,
    *,
    objective: Objective,
    thresholds: Sequence[float] | None = None,
    model: str = "",
    step: float = 0.01,
) -> TuneReport:
    """Sweep thresholds over judged queries and pick one (pure: no model, no index).
    ``strategy``: the k, reject window and character budget of the search; its threshold is
    the current one, reported for comparison (None: none)."""
    k, max_chars, current_threshold = strategy.k, strategy.max_chars, strategy.threshold
    grid = list(thresholds) if thresholds else threshold_grid(judged, k, step)
    rows = [metrics_at(judged, t, k, max_chars) for t in grid]
    rel = [s for j in judged for s, m in zip(j.scores, j.matched) if m]
    irr = [s for j in judged for s, m in zip(j.scores, j.matched) if not m]
    return TuneReport(
        k=k,
        reject_window=strategy.reject_window,
        max_chars=max_chars,
        objective=str(objective),
        queries=len(judged),
        rows=rows,
        recommended=objective.choose(rows),
        ranking=ranking_metrics(judged, k),
        relevant_scores=rel,
        irrelevant_scores=irr,
        model=model,
        current_threshold=current_threshold,
        current=(
            metrics_at(judged, current_threshold, k, max_chars)
            if current_threshold is not None
            else None
        ),
    )


def tune(
    searcher: Any,
    queries: Sequence[LabelledQuery],
    request: SearchRequest,
    *,
    objective: Objective,
    thresholds: Sequence[float] | None = None,
    step: float = 0.01,
) -> TuneReport:
    """Search every query once (no floor, no character budget: ``request`` with those
    cleared) and analyse the sweep. ``request``'s threshold in force (its ``floor``, resolved
    if it has none) is reported as the current threshold for comparison."""
    request = request.resolved(searcher.settings)
    probe = replace(request, threshold=None, max_chars=None, span="chunk", units=None, floor=None)
    retrievals = searcher.retrieve_many([q.query for q in queries], probe)
    judged = [judge(r, q) for r, q in zip(retrievals, queries)]
    report = analyse(
        judged,
        request.strategy,
        objective=objective,
        thresholds=thresholds,
        model=searcher.model,
        step=step,
    )
    paths = sorted(searcher.store.paths())
    items = [r for q in queries for r in q.relevant]
    report.labelled_items = len(items)
    report.unmatched = [_label(r) for r in items if not _names_a_document(r, set(paths))]
    report.stored_example = paths[0] if paths else None
    withhold(report)
    return report


def withhold(report: TuneReport) -> None:
    """No recommendation from a sweep that measured nothing: every labelled item names no
    indexed document, or the best row admits no relevant hit (F1 0). ``recommended`` becomes
    None and ``no_recommendation`` says why (``tune`` exits 1, ``--save`` refuses)."""
    rec = report.recommended
    if report.labelled_items and len(report.unmatched) == report.labelled_items:
        report.no_recommendation = (
            f"none of the {report.labelled_items} labelled relevant items matches an indexed "
            "document, so the sweep measured nothing"
        )
    elif rec is not None and rec.f1 == 0 and rec.recall == 0:
        report.no_recommendation = (
            "no threshold admits a single labelled relevant hit (F1 0 at every threshold)"
        )
    elif rec is None:
        report.no_recommendation = f"no threshold meets {report.objective}"
    if report.no_recommendation:
        report.recommended = None


def _names_a_document(r: Relevant, paths: set[str]) -> bool:
    """Whether a labelled item can match anything in an index holding ``paths``: its path is
    stored, or it is a chunk id (``path#N``) of a stored path."""
    for ref in (r.ref, r.path, r.id):
        if ref is not None and (ref in paths or ref.rpartition("#")[0] in paths):
            return True
    return False


def _label(r: Relevant) -> str:
    return r.ref or r.path or r.id or "?"


def save_threshold(index: str, report: TuneReport, *, mode: str) -> dict[str, Any]:
    """``tune --save``: store the recommended threshold in the index (writer lock; refused
    while another writer holds it). ``query``/``explain`` then use it by default."""
    from ragsift.index import open_index
    from ragsift.retrieval.threshold import tuned_setting

    rec = report.recommended
    if report.labelled_items and len(report.unmatched) == report.labelled_items:
        raise RagsiftError(
            f"none of the {report.labelled_items} labelled relevant items "
            "matches an indexed document, so the sweep measured nothing; "
            f"nothing was saved ({report.unmatched_line()})"
        )
    if rec is None:
        raise RagsiftError(
            f"{report.no_recommendation or 'no threshold meets ' + report.objective}"
            "; nothing was saved"
        )
    with open_index(index, "w") as store:
        # the coefficients the sweep scored with: the index's calibration, else the shipped
        value = tuned_setting(
            rec.threshold,
            queries=report.queries,
            k=report.k,
            mode=mode,
            objective=report.objective,
            settings=dict(store.settings() or {}),
        )
        store.set_settings(tuned_threshold=value)
    report.saved = value
    return value
