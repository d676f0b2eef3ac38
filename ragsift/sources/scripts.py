"""Which writing systems a text's letters are in: a cheap count for one warning.

``embed`` with the default model (all-MiniLM-L6-v2: English WordPiece, trained on English)
says once when most of the letters it just read are in a script that model cannot read, and
names ``--model multilingual``. The count runs on text already in memory (the parsed
document): ``str.isascii`` settles an ASCII document at C speed, any other is scanned by one
regular expression per script over runs of letters. Digits, punctuation, symbols and markup
count for nothing; a Latin letter with an accent counts as Latin (MiniLM reads it, if
poorly: what it means is not this warning's business). Not a language detector.
"""

from __future__ import annotations

import re

# script → a run of its letters (Unicode blocks; the common ones only)
SCRIPTS: dict[str, re.Pattern[str]] = {
    "Latin": re.compile(r"[A-Za-z\u00c0-\u024f\u1e00-\u1eff]+"),
    "Chinese/Japanese": re.compile(  # Han (CJK ideographs, Ext. A, compatibility), kana
        r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9d]+"
    ),
    "Korean": re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]+"),
    "Cyrillic": re.compile(r"[\u0400-\u052f]+"),
    "Greek": re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]+"),
    "Arabic": re.compile(r"[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff]+"),
    "Hebrew": re.compile(r"[\u0590-\u05ff]+"),
    "Devanagari": re.compile(r"[\u0900-\u097f]+"),
    "Thai": re.compile(r"[\u0e00-\u0e7f]+"),
}
_LATIN_RUN = SCRIPTS["Latin"]


def count_scripts(text: str, into: dict[str, int] | None = None) -> dict[str, int]:
    """Letters of ``text`` per script (``SCRIPTS``), added to ``into`` (returned)."""
    counts = {} if into is None else into
    if text.isascii():
        n = sum(map(len, _LATIN_RUN.findall(text)))
        if n:
            counts["Latin"] = counts.get("Latin", 0) + n
        return counts
    for name, run in SCRIPTS.items():
        n = sum(map(len, run.findall(text)))
        if n:
            counts[name] = counts.get(name, 0) + n
    return counts


def mostly_foreign(counts: dict[str, int], share: float = 0.5) -> str | None:
    """When more than ``share`` of the counted letters are not Latin, the script most of
    those are in; else None (and for no letters at all)."""
    foreign = {name: n for name, n in counts.items() if name != "Latin" and n}
    if not foreign or sum(foreign.values()) <= share * sum(counts.values()):
        return None
    return max(foreign, key=lambda name: foreign[name])
