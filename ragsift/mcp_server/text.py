"""What a model reads: the text content of each tool's result (the structured content is
the record), and the small text helpers the server shares (``show``, ``one_line``,
``has_surrogate``, ``hit_location``)."""

from __future__ import annotations

from typing import Any


def search_text(record: dict[str, Any]) -> str:
    hits = record["admitted"]
    floor = threshold_words(record)
    if hits:
        out = [
            f"{len(hits)} hit(s) for {record['query']!r} at {floor}; cite them by path and lines:"
        ]
        for i, h in enumerate(hits, 1):
            out.append(
                f"\n[{i}] {hit_location(h)} (score {h['score']:.3f}{_extra(h)})\n"
                f"{h.get('span_text') or h['text']}"
            )
        return "\n".join(out)
    miss = record["near_miss"]
    head = (
        f"no hit for {record['query']!r}: nothing cleared the {floor}. The index holds nothing relevant enough; do not "
        "answer from it."
    )
    lines = [head] + [f"hint: {h}" for h in record["hints"]]
    if miss is not None:
        lines.append(
            f"near-miss (not admitted): {hit_location(miss)} (score {miss['score']:.3f}): "
            f"{_flat(miss.get('span_text') or miss['text'])}"
        )
    return "\n".join(lines)


def explain_text(record: dict[str, Any]) -> str:
    cands = record["candidates"]
    admitted = [c for c in cands if c["admitted"]]
    lines = [
        f"{len(admitted)} admitted, {len(cands) - len(admitted)} rejected for "
        f"{record['query']!r} at {threshold_words(record)}:"
    ]
    for c in cands:
        lines.append(
            f"\n{c['rank']:>3}. {c['score']:.3f} {c['reason'] or 'admitted'} {hit_location(c)}{_extra(c)}"
        )
        if c["admitted"]:
            lines.append(c.get("span_text") or c["text"])
        else:
            lines.append("    " + _flat(c["text"]))
    lines += [f"hint: {h}" for h in record["hints"]]
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


def threshold_words(record: dict[str, Any]) -> str:
    """The threshold a call used and the server's floor, each said once: "threshold 0.17
    (measured default, this server's floor)", "threshold 0.3 (given by the call; this
    server's floor 0.17, measured default)", "threshold 0.3 (given by the call; no floor)"."""
    used, floor = record.get("threshold"), record.get("floor")
    origin = record.get("threshold_origin") or record.get("floor_origin") or ""
    if used is None:
        return "no threshold (this server has no floor)"
    head = f"threshold {used:g}"
    if floor is None:
        return f"{head} ({origin}; no floor)" if origin else f"{head} (no floor)"
    if used == floor:
        return f"{head} ({record['floor_origin']}, this server's floor)"
    return f"{head} ({origin}; this server's floor {floor:g}, {record['floor_origin']})"


def _extra(h: dict[str, Any]) -> str:
    out = ""
    if h.get("page") is not None:
        out += f", page {h['page']}"
    if h.get("headings"):
        out += f", {' > '.join(h['headings'])}"
    return out


def hit_location(h: dict[str, Any]) -> str:
    loc = h["path"]
    if h.get("line_start") is not None:
        loc += f":{h['line_start']}"
        if h.get("line_end") not in (None, h["line_start"]):
            loc += f"-{h['line_end']}"
    return loc


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
