"""The JSON records every front end prints, built from a retrieval (``ragsift.api`` hands
them out through its lazy table): ``hit_row`` (one candidate as ``query --json`` prints it),
``document_row`` (``ls --json``), ``explain_record`` (``explain --json``) and
``search_record`` (the MCP server's ``search``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragsift.index.backend import DocumentInfo
    from ragsift.retrieval.threshold import ThresholdInForce
    from ragsift.retrieval.topk import Retrieval


def hit_row(c: Any, r: Retrieval, batch: bool = False) -> dict[str, Any]:
    """One candidate as ``query --json`` prints it (a batch from stdin adds ``query``)."""
    row = c.as_dict()
    row["query_hash"] = r.query_hash
    if batch:
        row = {"query": r.query, **row}
    return row


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


def explain_record(
    r: Retrieval,
    floor: ThresholdInForce,
    *,
    attributions: Sequence[Any] = (),
    query_truncated: int = 0,
    paths: list[str] | None = None,
    setting: Any = None,
) -> dict[str, Any]:
    """The record ``explain --json`` prints: ``r.as_dict()`` plus ``threshold_source``,
    ``threshold_origin``, ``threshold_from`` (``flag``, ``tuned``, ``calibrated``, ``default``
    or None), ``hint`` (the retrieval's own), ``hints`` (every hint line),
    ``query_truncated``, ``attribution_note`` and ``attributions``. ``paths``: the stored
    document paths, for the hint when ``--path`` matched nothing. ``setting(name, value)``:
    the reader's words for an argument in hints (default: the CLI's, ``-k 13``)."""
    from ragsift.retrieval.attribution import NOTE
    from ragsift.retrieval.hints import hints
    from ragsift.retrieval.topk import cli_setting, outcome_hint

    setting = setting or cli_setting
    hint = outcome_hint(r, setting)
    record = r.as_dict()
    record["threshold_source"] = floor.source
    record["threshold_origin"] = floor.label
    record["threshold_from"] = floor.origin
    record["hint"] = hint
    record["hints"] = hints(r, hint, paths, setting, floor.source)
    record["query_truncated"] = query_truncated
    record["attribution_note"] = NOTE
    record["attributions"] = [a.as_dict() for a in attributions]
    return record


def search_record(
    r: Retrieval, floor: ThresholdInForce, paths: list[str] | None = None, setting: Any = None
) -> dict[str, Any]:
    """What an agent needs from one search: the admitted hits exactly as ``query --json``
    prints them (``hit_row``), and when nothing was admitted, the best candidate that was not
    (``near_miss``, the same row with ``admitted: false`` and its reason) with the threshold
    that would admit it (``admit_at``); ``hints`` as ``explain`` gives them (``setting``: as
    there)."""
    from ragsift.retrieval.hints import hints
    from ragsift.retrieval.topk import admitting_threshold, cli_setting, outcome_hint

    setting = setting or cli_setting

    best = None if r.admitted else r.best
    return {
        "query": r.query,
        "query_hash": r.query_hash,
        "mode": r.mode,
        "k": r.k,
        "threshold": r.threshold,
        "threshold_origin": floor.label,
        "threshold_from": floor.origin,
        "searched": r.searched,
        "admitted": [hit_row(c, r) for c in r.admitted],
        "near_miss": None if best is None else hit_row(best, r),
        "admit_at": (
            admitting_threshold(best.score)
            if best is not None and r.threshold is not None and best.score < r.threshold
            else None
        ),
        "hints": hints(r, outcome_hint(r, setting), paths, setting, floor.source),
    }
