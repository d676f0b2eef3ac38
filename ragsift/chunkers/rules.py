"""Recursive chunking rules as data: ordered levels of delimiters.

A ``RecursiveRules`` is a list of ``RecursiveLevel``s, coarsest first. Each level has either
``delimiters`` (literal strings) or ``whitespace: true``, and ``include_delim`` (``prev``: the
delimiter ends the piece before the cut; ``next``: it starts the piece after). A level with
``soft_breaks: false`` leaves out the line breaks inside a prose paragraph (hard-wrapped
lines: ``levels.soft_break``; never inside a fenced code block), so a later level can rank
them below sentence ends. A final token level (hard cut) is always implied. Rule sets ship
as JSON next to this module (``default``, ``markdown``); users load their own from a JSON or
TOML file with the same shape::

    [[levels]]
    delimiters = ["\\n\\n", "\\n"]
    soft_breaks = false
    [[levels]]
    delimiters = [". ", "! ", "? ", ".\\n"]
    [[levels]]
    delimiters = ["\\n"]
    [[levels]]
    whitespace = true
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsift.chunkers.levels import DelimLevel, Level, ProseBreakLevel, WhitespaceLevel
from ragsift.errors import RagsiftError

RULES_DIR = Path(__file__).resolve().parent / "rules"
SHIPPED = ("default", "markdown")


@dataclass(frozen=True)
class RecursiveLevel:
    """One level: split at any of ``delimiters`` (or at whitespace)."""

    delimiters: tuple[str, ...] = ()
    whitespace: bool = False
    include_delim: str = "prev"
    soft_breaks: bool = True  # False: line breaks inside prose paragraphs are no boundary

    def __post_init__(self) -> None:
        if isinstance(self.delimiters, str):
            object.__setattr__(self, "delimiters", (self.delimiters,))
        else:
            object.__setattr__(self, "delimiters", tuple(self.delimiters))
        if self.include_delim not in ("prev", "next"):
            raise RagsiftError(
                f"rule level include_delim must be prev or next, not {self.include_delim!r}"
            )
        if self.whitespace and self.delimiters:
            raise RagsiftError("a rule level has either delimiters or whitespace: true, not both")
        if self.whitespace and not self.soft_breaks:
            raise RagsiftError("soft_breaks: false applies to a level of delimiters")
        if any(not isinstance(d, str) or not d for d in self.delimiters):
            raise RagsiftError("rule delimiters must be non-empty strings")

    def boundary_level(self, include_delim: str | None = None) -> Level:
        mode = include_delim or self.include_delim
        if self.whitespace:
            return WhitespaceLevel(mode)
        if not self.soft_breaks:
            return ProseBreakLevel(self.delimiters, mode)
        return DelimLevel(self.delimiters, mode)

    def to_dict(self) -> dict:
        if self.whitespace:
            return {"whitespace": True, "include_delim": self.include_delim}
        out = {"delimiters": list(self.delimiters), "include_delim": self.include_delim}
        if not self.soft_breaks:
            out["soft_breaks"] = False
        return out


@dataclass(frozen=True)
class RecursiveRules:
    """Ordered levels, coarsest first; the token level (hard cut) is implied after them."""

    levels: tuple[RecursiveLevel, ...] = field(default_factory=tuple)
    name: str = "custom"

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(self.levels))

    def __len__(self) -> int:
        return len(self.levels)

    def to_dict(self) -> dict:
        return {"name": self.name, "levels": [lv.to_dict() for lv in self.levels]}

    @classmethod
    def from_dict(cls, data: Any, name: str = "custom") -> RecursiveRules:
        if isinstance(data, dict):
            name = str(data.get("name", name))
            raw = data.get("levels")
        else:
            raw = data
        if not isinstance(raw, list) or not raw:
            raise RagsiftError("rules need a non-empty list of levels")
        levels = []
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                raise RagsiftError(f"rule level {i} must be a table/object")
            unknown = set(item) - {"delimiters", "whitespace", "include_delim", "soft_breaks"}
            if unknown:
                raise RagsiftError(
                    f"rule level {i}: unknown key(s) {', '.join(sorted(unknown))} "
                    "(allowed: delimiters, whitespace, include_delim, soft_breaks)"
                )
            soft = item.get("soft_breaks", True)
            if not isinstance(soft, bool):
                raise RagsiftError(f"rule level {i}: soft_breaks must be true or false")
            delims = item.get("delimiters", [])
            ws = bool(item.get("whitespace", False))
            if not delims and not ws:
                if i == len(raw) - 1:  # an explicit final token level: implied anyway
                    continue
                raise RagsiftError(f"rule level {i} has neither delimiters nor whitespace")
            if isinstance(delims, str):
                delims = [delims]
            levels.append(
                RecursiveLevel(tuple(delims), ws, item.get("include_delim", "prev"), soft)
            )
        return cls(tuple(levels), name)

    @classmethod
    def named(cls, name: str) -> RecursiveRules:
        """A shipped rule set (``default``, ``markdown``)."""
        path = RULES_DIR / f"{name}.json"
        if name not in SHIPPED or not path.is_file():
            raise RagsiftError(f"no shipped rule set {name!r} (shipped: {', '.join(SHIPPED)})")
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")), name)

    @classmethod
    def from_file(cls, path: str | Path) -> RecursiveRules:
        """Rules from a ``.json`` or ``.toml`` file (TOML via ``tomllib``; ``tomli`` on Python 3.10)."""
        p = Path(path)
        try:
            raw = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise RagsiftError(f"cannot read rules file {path}: {exc.strerror or exc}") from exc
        if p.suffix.lower() == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10: the same parser from PyPI
                import tomli as tomllib
            try:
                data = tomllib.loads(raw)
            except tomllib.TOMLDecodeError as exc:
                raise RagsiftError(f"{path}: invalid TOML: {exc}") from exc
        else:
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise RagsiftError(f"{path}: invalid JSON: {exc}") from exc
        return cls.from_dict(data, p.stem)

    @classmethod
    def load(cls, spec: str | RecursiveRules | None) -> RecursiveRules:
        """``None`` → default; a shipped name; a file path; or rules as they are."""
        if spec is None:
            return cls.named("default")
        if isinstance(spec, RecursiveRules):
            return spec
        if isinstance(spec, (list, dict)):
            return cls.from_dict(spec)
        if spec in SHIPPED:
            return cls.named(spec)
        if Path(spec).is_file():
            return cls.from_file(spec)
        raise RagsiftError(
            f"rules {spec!r}: not a file and not a shipped rule set ({', '.join(SHIPPED)})"
        )
