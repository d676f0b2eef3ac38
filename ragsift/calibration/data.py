"""The calibration set that ships with ragsift: ``set_en.json``, ``set_zh.json``, ``set_ja.json``.

Each file holds short documentation passages in one language (command-line tools, config
files, HTTP, databases, packaging, git, testing), written for this set (no other source; none
from FastAPI's documentation, which is held out for measuring), and for each passage two
questions it answers and two short keyword forms of them; and off-topic queries (questions
and keyword queries about none of the passages) as negatives. The topics differ between the
languages, so each language is a fold of its own (``calibration.run``: leave-one-language-out).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LANGUAGES = ("en", "zh", "ja")


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    questions: tuple[str, ...]
    keywords: tuple[str, ...]

    def document(self) -> str:
        """The passage as the markdown file the calibration index is built from."""
        return f"# {self.title}\n\n{self.text}\n"


@dataclass(frozen=True)
class Query:
    """One query of a language's index: ``gold`` the passage id that answers it (None: an
    off-topic negative); ``kind``: ``question``, ``keywords`` or ``off-topic``."""

    text: str
    kind: str
    gold: str | None


@dataclass(frozen=True)
class LanguageSet:
    language: str
    passages: tuple[Passage, ...]
    off_topic: tuple[str, ...]

    def queries(self) -> list[Query]:
        out = [Query(q, "question", p.id) for p in self.passages for q in p.questions]
        out += [Query(q, "keywords", p.id) for p in self.passages for q in p.keywords]
        out += [Query(q, "off-topic", None) for q in self.off_topic]
        return out


def load_set(languages: tuple[str, ...] = LANGUAGES) -> list[LanguageSet]:
    """The shipped set, one ``LanguageSet`` per language, in ``languages`` order."""
    out = []
    for lang in languages:
        raw = json.loads((HERE / f"set_{lang}.json").read_text(encoding="utf-8"))
        out.append(
            LanguageSet(
                raw["language"],
                tuple(
                    Passage(
                        p["id"], p["title"], p["text"], tuple(p["questions"]), tuple(p["keywords"])
                    )
                    for p in raw["passages"]
                ),
                tuple(raw["off_topic"]),
            )
        )
    return out


def set_digest(languages: tuple[str, ...] = LANGUAGES) -> str:
    """The first 12 hex digits of the sha256 of the set's files: which set a calibration was
    fitted on (stored with it)."""
    h = hashlib.sha256()
    for lang in languages:
        h.update((HERE / f"set_{lang}.json").read_bytes())
    return h.hexdigest()[:12]
