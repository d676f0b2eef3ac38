"""JSON and JSON Lines: the document text is the value's citable units, one per line.

Units follow ``units.json_units`` (unlimited count and length here: the chunker decides
sizes). The line map is best effort: for ``.jsonl`` each unit points at its record's line;
for ``.json`` a cursor moves forward through the source and each unit points at the line of
the next occurrence of its anchor (its first key or its string as written in JSON), or stays
on the previous line when the anchor is not found (e.g. ``\\u00e9`` escapes in the source).
Finding anchors is linear in the file's size: an anchor that cannot occur after the cursor
(a non-ASCII one past the text's last non-ASCII character) is not searched for.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate

from ragsift.errors import SkipFile
from ragsift.sources.document import Document, OffsetMap
from ragsift.sources.units import iter_json_units


def parse_json(
    text: str,
    path: str,
    *,
    lines_format: bool,
    source: str = "",
    encoding: str = "utf-8",
    warnings: tuple[str, ...] = (),
) -> Document:
    parts: list[str] = []  # the units, one per line of the text
    values: list[int] = []  # each unit's 1-based source line (parallel lists: no tuple each)
    if lines_format:
        for line_no, raw in enumerate(text.splitlines(), 1):
            if not raw.strip():
                continue
            value = _loads(raw, line_no)
            for unit, _ in iter_json_units(value, parsed=True):
                parts.append(unit)
                values.append(line_no)
    else:
        value = _loads(text, None)
        cursor, line, line_cursor = 0, 1, 0
        wide = _last_non_ascii(text)
        for unit, anchor in iter_json_units(value, parsed=True):
            # an anchor with a non-ASCII character cannot occur after the text's last one (a
            # file written with ASCII escapes, json.dumps' default, has none): no search,
            # which would scan the rest of the file for each unit (quadratic in its size)
            found = (
                text.find(anchor, cursor) if anchor and (cursor <= wide or anchor.isascii()) else -1
            )
            if found >= 0:
                line += text.count("\n", line_cursor, found)
                line_cursor = found
                cursor = found + len(anchor)
            parts.append(unit)
            values.append(line)
        del value  # (the tree is ~20x the file's bytes: gone before the text is built)
    if not parts:
        raise SkipFile("empty (no text in JSON)")
    starts = list(accumulate((len(unit) + 1 for unit in parts[:-1]), initial=0))
    return Document(
        text="\n".join(parts) + "\n",
        path=path,
        format="json",
        source=source,
        encoding=encoding,
        lines=OffsetMap(tuple(starts), tuple(values)),
        warnings=warnings,
    )


_WIDE = re.compile(r"[^\x00-\x7f]")


def _last_non_ascii(text: str) -> int:
    """Offset of the last non-ASCII character of ``text``, -1 if it has none."""
    if text.isascii():
        return -1
    end = len(text)
    while end > 0:
        start = max(0, end - (1 << 16))
        block = text[start:end]
        if not block.isascii():
            last = -1
            for m in _WIDE.finditer(block):
                last = m.start()
            return start + last
        end = start
    return -1


def _int_or_digits(digits: str) -> int | str:
    """An integer too long for ``int()`` (over ``sys.get_int_max_str_digits()``) stays text:
    the document keeps the number as written instead of being refused."""
    try:
        return int(digits)
    except ValueError:
        return digits


def _loads(text: str, line_no: int | None) -> object:
    try:
        return json.loads(text, parse_int=_int_or_digits)
    except json.JSONDecodeError as exc:
        where = f"line {line_no or exc.lineno} column {exc.colno}"
        raise SkipFile(f"unparsable JSON: {exc.msg} at {where}") from None
    except RecursionError:
        raise SkipFile("unparsable JSON: nested too deeply") from None
    except ValueError as exc:  # any other limit of the parser: still one line
        raise SkipFile(f"unparsable JSON: {' '.join(str(exc).split())}") from None
