"""What a model reads: the text content of each tool's result (the structured content is
the record's JSON), written from the typed answer of ``search`` and ``explain``
(``service.Answer``: its hits are ``api.Hit``, never read back out of the JSON) and from the
records of ``list_documents`` and ``read`` (``answer`` is typed ``Any`` here: ``service``
imports this module); and the small text helpers the server shares
(``show``, ``one_line``, ``has_surrogate``, ``hit_location``, ``shown_score``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragsift.api import Hit


def search_text(answer: Any) -> str:
    """What a model reads of a ``search`` call: each admitted hit with its location, score
    and text, or that nothing was admitted, the hints and the near-miss."""
    record = answer.record
    hits = record.admitted
    floor = threshold_words(answer)
    if hits:
        out = [f"{len(hits)} hit(s) for {record.query!r} at {floor}; cite them by path and lines:"]
        for i, h in enumerate(hits, 1):
            out.append(
                f"\n[{i}] {hit_location(h)} (score {shown_score(h):.3f}{_extra(h)})\n"
                f"{h.span_text or h.text}"
            )
        return "\n".join(out)
    miss = record.near_miss
    head = (
        f"no hit for {record.query!r}: nothing cleared the {floor}. The index holds nothing "
        "relevant enough; do not answer from it."
    )
    lines = [head] + [f"hint: {h}" for h in record.hints]
    if miss is not None:
        lines.append(
            f"near-miss (not admitted): {hit_location(miss)} (score {shown_score(miss):.3f}): "
            f"{_flat(miss.span_text or miss.text)}"
        )
    return "\n".join(lines)


def explain_text(answer: Any) -> str:
    """What a model reads of an ``explain`` call: every candidate with its rank, score and
    reason (an admitted one's text, a rejected one's flattened), then the hints."""
    record = answer.record
    cands = record.candidates
    admitted = [c for c in cands if c.admitted]
    lines = [
        f"{len(admitted)} admitted, {len(cands) - len(admitted)} rejected for "
        f"{record.query!r} at {threshold_words(answer)}:"
    ]
    for c in cands:
        lines.append(
            f"\n{c.rank:>3}. {shown_score(c):.3f} {c.reason or 'admitted'} "
            f"{hit_location(c)}{_extra(c)}"
        )
        if c.admitted:
            lines.append(c.span_text or c.text)
        else:
            lines.append("    " + _flat(c.text))
    lines += [f"hint: {h}" for h in record.hints]
    return "\n".join(lines)


def documents_text(record: dict[str, Any]) -> str:
    docs = record["documents"]
    return f"{len(docs)} document(s):\n" + "\n".join(
        f"{d['path']} ({d['chunks']} chunks, {d.get('format') or 'text'}) {d['uri']}" for d in docs
    )


def read_text(record: dict[str, Any]) -> str:
    if record["line_start"] is None:
        return f"{record['path']} (the text ragsift indexed):\n{record['text']}"
    more = f"; next: line_start {record['next_line']}" if record["next_line"] is not None else ""
    return (
        f"{record['path']} lines {record['line_start']}-{record['line_end']} of "
        f"{record['lines']} (the text ragsift indexed{more}):\n{record['text']}"
    )


def threshold_words(answer: Any) -> str:
    """The threshold a call used and the server's floor, each said once: "threshold 0.17
    (measured default, this server's floor)", "threshold 0.3 (given by the call; this
    server's floor 0.17, measured default)", "threshold 0.3 (given by the call; no floor)"."""
    used, floor = answer.record.threshold, answer.floor.value
    origin = answer.record.threshold_origin or answer.floor.label or ""
    if used is None:
        return "no threshold (this server has no floor)"
    head = f"threshold {used:g}"
    if floor is None:
        return f"{head} ({origin}; no floor)" if origin else f"{head} (no floor)"
    if used == floor:
        return f"{head} ({answer.floor.label}, this server's floor)"
    return f"{head} ({origin}; this server's floor {floor:g}, {answer.floor.label})"


def _extra(h: Hit) -> str:
    out = ""
    if h.page is not None:
        out += f", page {h.page}"
    if h.headings:
        out += f", {' > '.join(h.headings)}"
    return out


def hit_location(h: Hit) -> str:
    """``path:line`` or ``path:line-line`` (no page: ``_extra`` says it)."""
    loc = h.path
    if h.line_start is not None:
        loc += f":{h.line_start}"
        if h.line_end not in (None, h.line_start):
            loc += f"-{h.line_end}"
    return loc


def shown_score(h: Hit) -> float:
    """A hit's score as its record shows it (``Hit.to_json``: rounded to 6 places), so the
    text and the structured content say the same number."""
    return round(float(h.score), 6)


def _flat(text: str, limit: int = 300) -> str:
    out = " ".join(text.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def show(text: str, limit: int = 40) -> str:
    safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return repr(safe if len(safe) <= limit else safe[: limit - 1] + "…")


def has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def one_line(text: str) -> str:
    return " ".join(text.split())
