"""The records every front end hands out, typed, and their one JSON shape each (``ragsift.api``
hands them out through its lazy table):

- ``Hit``: one candidate of one query's retrieval, the one hit type (``Search.hits``);
  ``to_json()`` is what ``query --json`` prints per line and what the MCP server's ``search``
  returns in ``admitted`` and ``near_miss``.
- ``SearchRecord``: what an agent needs from one search (the MCP server's ``search``).
- ``ExplainRecord``: the record ``explain --json`` prints (and the MCP server's ``explain``).
- ``document_row``: a ``DocumentInfo`` as ``ls --json`` prints it.

A front end formats the typed values; it never reads a hit back out of its JSON. The JSON
field names are an API: each record writes them in one place, its ``to_json``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ragsift.errors import api_words, worded
from ragsift.retrieval.topk import Candidate

if TYPE_CHECKING:
    from ragsift.index.backend import DocumentInfo
    from ragsift.retrieval.threshold import ThresholdInForce
    from ragsift.retrieval.topk import Retrieval, Setting


@dataclass(frozen=True)
class Hit(Candidate):
    """One candidate of one query's retrieval, as every front end hands it out: the
    candidate's own fields (``Candidate``: path, lines, text, the score and its evidence,
    admitted or the reason why not) and the query it answers (``query``, ``query_hash``)."""

    query: str = ""
    query_hash: str = ""

    @classmethod
    def of(cls, c: Candidate, r: Retrieval) -> Hit:
        """Candidate ``c`` of retrieval ``r`` as a hit."""
        own = {f.name: getattr(c, f.name) for f in fields(Candidate)}
        return cls(**own, query=r.query, query_hash=r.query_hash)

    def to_json(self, *, with_query: bool = False) -> dict[str, Any]:
        """The hit as ``query --json`` prints it: the candidate's fields
        (``Candidate.as_dict``: scores rounded to 6 places, span fields only where spans
        were asked for), then ``query_hash``; ``with_query`` (a batch read from stdin):
        ``query`` first."""
        row = Candidate.as_dict(self)  # ends with this class's query, query_hash
        query = row.pop("query")
        return {"query": query, **row} if with_query else row

    def as_dict(self) -> dict[str, Any]:
        """The same as ``to_json()``: a hit has one JSON shape."""
        return self.to_json()


def hits(r: Retrieval) -> tuple[Hit, ...]:
    """Every candidate of ``r`` as a ``Hit``, in ``r``'s order (admitted and rejected)."""
    return tuple(Hit.of(c, r) for c in r.candidates)


def _hints(
    r: Retrieval,
    floor: ThresholdInForce,
    paths: list[str] | None,
    setting: Setting | None,
    commands: bool | None,
) -> tuple[str | None, tuple[str, ...]]:
    """The retrieval's own hint and every hint line (``hint_words``), in the words of
    ``setting`` (None: the API's); ``commands`` as ``SearchRecord.of`` says."""
    from ragsift.retrieval.hints import hint_words
    from ragsift.retrieval.topk import outcome_words

    if commands is None:
        commands = setting is None
    name_of = api_words if setting is None else setting
    own = outcome_words(r)
    found = hint_words(r, own, paths, floor.source, commands=commands)
    return worded(own, name_of), tuple(worded(h, name_of) for h in found)


class _OfRetrieval:
    """The query and the threshold of a record's retrieval (``SearchRecord``,
    ``ExplainRecord``)."""

    retrieval: Retrieval

    @property
    def query(self) -> str:
        return self.retrieval.query

    @property
    def threshold(self) -> float | None:
        """The threshold the search used (None: no floor)."""
        return self.retrieval.threshold


@dataclass(frozen=True)
class SearchRecord(_OfRetrieval):
    """What an agent needs from one search: the admitted hits, and when nothing was
    admitted, the best candidate that was not (``near_miss``) with the threshold that would
    admit it (``admit_at``); where the threshold came from (``threshold_origin``: the floor's
    label, ``threshold_from``: ``flag``, ``tuned``, ``calibrated``, ``default`` or None) and
    the ``hints``, as ``explain`` gives them."""

    retrieval: Retrieval
    threshold_origin: str
    threshold_from: str | None
    admitted: tuple[Hit, ...]
    near_miss: Hit | None
    admit_at: float | None
    hints: tuple[str, ...]

    @classmethod
    def of(
        cls,
        r: Retrieval,
        floor: ThresholdInForce,
        paths: list[str] | None = None,
        setting: Setting | None = None,
        *,
        commands: bool | None = None,
    ) -> SearchRecord:
        """The record of retrieval ``r`` under ``floor``. ``paths``: the stored document
        paths, for the hint when the path filter matched nothing; ``setting(name, value)``:
        the reader's words for the parameters and commands hints name (``Words.worded``'s
        ``name_of``; default: the API's, ``api_words``: ``k=13``; the CLI's ``flag_name``:
        ``-k 13``); ``commands``: whether the reader can run ragsift's commands or calls, so
        that a hint may name the lasting fix (``tune`` with ``save``): by default when the
        hints are in the API's words, not when a front end gives its own words and does not
        say (the MCP server's tools: an agent runs no command)."""
        from ragsift.retrieval.topk import admitting_threshold

        _, said = _hints(r, floor, paths, setting, commands)
        best = None if r.admitted else r.best
        under = best is not None and r.threshold is not None and best.score < r.threshold
        return cls(
            retrieval=r,
            threshold_origin=floor.label,
            threshold_from=floor.origin,
            admitted=tuple(Hit.of(c, r) for c in r.admitted),
            near_miss=None if best is None else Hit.of(best, r),
            admit_at=admitting_threshold(best.score) if under else None,
            hints=said,
        )

    def to_json(self) -> dict[str, Any]:
        """The record as the MCP server's ``search`` returns it (before the server adds its
        floor): the hits as ``query --json`` prints them."""
        r = self.retrieval
        return {
            "query": r.query,
            "query_hash": r.query_hash,
            "mode": r.mode,
            "k": r.k,
            "threshold": r.threshold,
            "threshold_origin": self.threshold_origin,
            "threshold_from": self.threshold_from,
            "searched": r.searched,
            "admitted": [h.to_json() for h in self.admitted],
            "near_miss": None if self.near_miss is None else self.near_miss.to_json(),
            "admit_at": self.admit_at,
            "hints": list(self.hints),
        }


@dataclass(frozen=True)
class ExplainRecord(_OfRetrieval):
    """The record of one retrieval with why: where its threshold came from
    (``threshold_source``: ``ThresholdInForce.source``; ``threshold_origin``, its label;
    ``threshold_from``: ``flag``, ``tuned``, ``calibrated``, ``default`` or None), ``hint``
    (the retrieval's own), ``hints`` (every hint line), the query tokens the model cut
    (``query_truncated``) and the closest units of each admitted hit (``attributions``)."""

    retrieval: Retrieval
    threshold_source: str | None
    threshold_origin: str
    threshold_from: str | None
    hint: str | None
    hints: tuple[str, ...]
    query_truncated: int = 0
    attributions: tuple[Any, ...] = ()

    @classmethod
    def of(
        cls,
        r: Retrieval,
        floor: ThresholdInForce,
        *,
        attributions: Sequence[Any] = (),
        query_truncated: int = 0,
        paths: list[str] | None = None,
        setting: Setting | None = None,
        commands: bool | None = None,
    ) -> ExplainRecord:
        """The record of retrieval ``r`` under ``floor``; ``paths``, ``setting`` and
        ``commands`` as for ``SearchRecord.of``."""
        hint, said = _hints(r, floor, paths, setting, commands)
        return cls(
            retrieval=r,
            threshold_source=floor.source,
            threshold_origin=floor.label,
            threshold_from=floor.origin,
            hint=hint,
            hints=said,
            query_truncated=query_truncated,
            attributions=tuple(attributions),
        )

    @property
    def candidates(self) -> tuple[Hit, ...]:
        """Every candidate considered, admitted or rejected, in rank order."""
        return hits(self.retrieval)

    def to_json(self) -> dict[str, Any]:
        """The record ``explain --json`` prints: the retrieval's own record
        (``Retrieval.as_dict``) with the fields above and ``attribution_note``."""
        from ragsift.retrieval.attribution import NOTE

        record = self.retrieval.as_dict()
        record["threshold_source"] = self.threshold_source
        record["threshold_origin"] = self.threshold_origin
        record["threshold_from"] = self.threshold_from
        record["hint"] = self.hint
        record["hints"] = list(self.hints)
        record["query_truncated"] = self.query_truncated
        record["attribution_note"] = NOTE
        record["attributions"] = [a.as_dict() for a in self.attributions]
        return record


def search_record(
    r: Retrieval,
    floor: ThresholdInForce,
    paths: list[str] | None = None,
    setting: Setting | None = None,
    *,
    commands: bool | None = None,
) -> dict[str, Any]:
    """The JSON of ``SearchRecord.of(r, floor, paths, setting, commands=commands)``."""
    return SearchRecord.of(r, floor, paths, setting, commands=commands).to_json()


def explain_record(r: Retrieval, floor: ThresholdInForce, **options: Any) -> dict[str, Any]:
    """The JSON of ``ExplainRecord.of(r, floor, **options)`` (what ``explain --json``
    prints)."""
    return ExplainRecord.of(r, floor, **options).to_json()


def document_row(d: DocumentInfo) -> dict[str, Any]:
    """A ``DocumentInfo`` as ``ls --json`` prints it (times as ISO 8601 UTC)."""
    row = d.as_dict()
    row["mtime"] = _iso(d.mtime)
    row["indexed_at"] = _iso(d.indexed_at)
    return row


def _iso(t: float | None) -> str | None:
    import datetime as dt

    if t is None:
        return None
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")
