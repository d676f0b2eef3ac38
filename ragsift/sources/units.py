"""Citable units: short, self-contained strings cut from JSON values or prose.

Used by the JSON reader (a document's text is its units, one per line) and by retrieval
explanations (which quote units as evidence).

``json_units`` rules, walking the value in document order:

- a string becomes one unit per line and sentence (trimmed; empty pieces dropped);
- an object (anywhere: an array element, a field, the top) becomes ONE unit of its primitive
  fields as ``key: value`` pairs joined with ``"; "`` (string fields are kept whole, not split
  into sentences), then the walk continues into its nested objects and arrays;
- the numbers directly inside one array become one unit, ``"1, 2, 3"`` (``"key: 1, 2, 3"``
  when the array is a field), rather than one unit per number;
- ``null``, booleans, empty strings and non-finite numbers are skipped;
- at most ``max`` units, each cut to ``max_length`` characters including the ``"…"``.

The walk is iterative with a depth limit (``MAX_DEPTH`` containers) and an ``id()`` set of
containers already seen, so cyclic Python structures and absurdly deep input give fewer units,
never an exception.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 100
ELLIPSIS = "…"
# Where a sentence ends, the one rule for every unit of text (``split_sentences`` here: the
# JSON reader's units, spans; ``embedders.evidence``: the units a chunk is embedded by):
# - at . ! ? … (closing quotes/brackets allowed after it) followed by whitespace;
# - at a CJK full stop, exclamation or question mark (。！？, full-width ．, half-width ｡,
#   a run of them) and the closing brackets/quotes after it (」』）】〕〉》 …), whitespace or
#   not: Chinese and Japanese put no space after a sentence (issue 37).
# A match's text, right-stripped, ends the sentence (the terminators are consumed by the
# second branch, so ``m.start() + len(m.group().rstrip())`` is the sentence's end in both).
# A text without 。！？．｡ gets exactly the first branch's ends (the rule before issue 37's
# CJK sentences): English units are byte-identical (tests/test_cjk_units.py).
CJK_SENTENCE_STOPS = "。！？．｡"
SENTENCE_END = re.compile(
    r"(?<=[.!?…])[\"'”’)\]]*\s+"
    r"|[。！？．｡]+[」』）】〕〉》〗〙〛”’\"')\]]*\s*"
)
_SENTENCE_END = SENTENCE_END
_LINE = re.compile(r"\r\n|\r|\n")


def cut(text: str, max_length: int | None) -> str:
    """``text`` shortened to ``max_length`` characters, the ellipsis counted in."""
    if max_length is None or len(text) <= max_length:
        return text
    if max_length <= 1:
        return ELLIPSIS[:max_length]
    return text[: max_length - 1].rstrip() + ELLIPSIS


def split_sentences(text: str) -> Iterator[str]:
    """Lines, then sentences within lines; trimmed, empty pieces dropped."""
    for line in _LINE.split(text):
        start = 0
        for m in _SENTENCE_END.finditer(line):
            piece = line[start : m.start() + len(m.group().rstrip())].strip()
            if piece:
                yield piece
            start = m.end()
        piece = line[start:].strip()
        if piece:
            yield piece


def text_units(text: str, max: int | None = 12, max_length: int | None = 200) -> list[str]:
    """Prose cut into sentence/line units (for explanations); same limits as ``json_units``."""
    out: list[str] = []
    for piece in split_sentences(text):
        if max is not None and len(out) >= max:
            break
        out.append(cut(piece, max_length))
    return out


def json_units(value: Any, max: int | None = None, max_length: int | None = None) -> list[str]:
    """Citable units of a parsed JSON value (see the module docstring for the rules)."""
    out: list[str] = []
    for unit, _anchor in iter_json_units(value):
        if max is not None and len(out) >= max:
            break
        out.append(cut(unit, max_length))
    return out


def iter_json_units(value: Any, *, parsed: bool = False) -> Iterator[tuple[str, str]]:
    """``(unit, anchor)`` pairs in document order. ``anchor`` is a JSON snippet (a quoted key
    or string) that a reader can search for in the source text to find the unit's line.
    ``parsed``: ``value`` comes from ``json.loads``, so no container is reached twice (no
    cycle, nothing shared) and none is remembered (a set of every container's id was ~13x
    the bytes of a file of small arrays)."""
    seen: set[int] = set()
    # Stack of (value, key it hangs under or None, depth); children pushed in reverse order.
    stack: list[tuple[Any, str | None, int]] = [(value, None, 0)]
    while stack:
        node, key, depth = stack.pop()
        if isinstance(node, str):
            for sentence in split_sentences(node):
                yield sentence, _quote(sentence)
            continue
        if not isinstance(node, (dict, list, tuple)):
            continue  # bare primitives outside arrays/objects: numbers at the top, null, bool
        if depth >= MAX_DEPTH or id(node) in seen:
            continue
        if not parsed:
            seen.add(id(node))
        children: list[tuple[Any, str | None, int]] = []
        if isinstance(node, dict):
            fields: list[str] = []
            anchor = ""
            for k, v in node.items():
                text = _primitive(v)
                if text is not None:
                    fields.append(f"{' '.join(str(k).split())}: {text}")
                    anchor = anchor or _quote(str(k))
                elif isinstance(v, (dict, list, tuple)):
                    children.append((v, str(k), depth + 1))
            if fields:
                yield "; ".join(fields), anchor
        else:
            numbers = [_number(v) for v in node]
            numbers_text = [n for n in numbers if n is not None]
            if numbers_text:
                joined = ", ".join(numbers_text)
                yield (f"{key}: {joined}" if key else joined), (_quote(key) if key else "")
            for v in node:
                if isinstance(v, (str, dict, list, tuple)):
                    children.append((v, key, depth + 1))
        stack.extend(reversed(children))


def _number(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return str(v)


def _primitive(v: Any) -> str | None:
    if isinstance(v, str):
        s = " ".join(v.split())
        return s or None
    return _number(v)


def _quote(s: str) -> str:
    # How the string most likely appears in the source (json.dumps without ASCII escaping).
    import json

    return json.dumps(s, ensure_ascii=False)[1:-1]
