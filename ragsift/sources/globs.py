"""Glob matching for ``--include``/``--exclude`` and the common subset of ``.gitignore``.

Two dialects share one translator:

- ``gitignore``: ``*`` and ``?`` never cross ``/``; ``**/`` matches zero or more folders,
  ``/**`` everything inside; ``[...]`` classes; ``!`` negation; trailing ``/`` means
  "folders only"; a ``/`` at the start or in the middle anchors the pattern to the folder of
  the ``.gitignore`` file, otherwise it matches a name at any depth. Later rules win; nested
  files apply to their subtree and override their parents. Not supported: ``\\`` escapes of
  trailing spaces, ``.git/info/exclude`` and the global excludes file.
- ``fnmatch`` (``--include``/``--exclude``; ``--path``, ``ls`` and ``rm`` on stored paths,
  ``retrieval.engine.path_matches``): like ``fnmatch``, ``*`` also crosses ``/``, so
  ``docs/*`` covers ``docs/a/b.md``; ``**/`` still matches zero folders (``**/*.md``
  matches ``a.md``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache


class GlobError(ValueError):
    """A pattern that cannot be compiled (e.g. the range ``[z-a]``); the message says why."""


def check_glob(pattern: str) -> None:
    """Raise ``GlobError`` when ``pattern`` (an ``--include``/``--exclude`` glob) is invalid."""
    pat = pattern.strip().rstrip("/").removeprefix("./")
    if pat:
        glob_regex(pat, slash_stars=True)


@lru_cache(maxsize=512)
def glob_regex(pattern: str, *, slash_stars: bool) -> re.Pattern[str]:
    """Compile ``pattern`` to a full-match regex. ``slash_stars``: ``*``/``?`` cross ``/``.

    Raises ``GlobError`` for a pattern no regex can express (a reversed range ``[z-a]``)."""
    star = ".*" if slash_stars else "[^/]*"
    one = "." if slash_stars else "[^/]"
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i):
            j = i + 2
            before_ok = i == 0 or pattern[i - 1] == "/"
            if before_ok and pattern.startswith("/", j):
                out.append("(?:.*/)?")  # `**/`: zero or more folders
                i = j + 1
            else:
                out.append(".*")
                i = j
            continue
        if c == "*":
            out.append(star)
        elif c == "?":
            out.append(one)
        elif c == "[":
            k = i + 1
            if k < n and pattern[k] in "!^":
                k += 1
            if k < n and pattern[k] == "]":
                k += 1  # `[]x]`: a leading `]` is a literal member
            j = pattern.find("]", k)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out), re.DOTALL)
    except re.error as exc:
        raise GlobError(f"invalid pattern {pattern!r}: {exc.msg}") from None


def path_matches(pattern: str, rel: str, root: str = "") -> bool:
    """``--include``/``--exclude`` test for the file ``rel`` found under the displayed root
    ``root``: ``pattern`` may match ``rel``, ``root/rel``, the basename, or a folder between
    root and file (so ``--exclude drafts`` prunes ``drafts/``). Folders above the root never
    match: ``--exclude 'tmp*'`` must not drop everything under ``/tmp/notes``."""
    pat = pattern.strip().rstrip("/").removeprefix("./")
    if not pat:
        return False
    rx = glob_regex(pat, slash_stars=True)
    parts = rel.split("/")
    prefix = "" if root in ("", ".") else root.rstrip("/") + "/"
    for k in range(len(parts), 0, -1):
        below = "/".join(parts[:k])
        if rx.fullmatch(parts[k - 1]) or rx.fullmatch(below):
            return True
        if prefix and rx.fullmatch(prefix + below):
            return True
    return False


@dataclass(frozen=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


@dataclass(frozen=True)
class IgnoreFile:
    """The rules of one ``.gitignore``; ``base`` is its folder (absolute, posix)."""

    base: str
    rules: tuple[IgnoreRule, ...]
    # invalid patterns, ignored (one message each, e.g. "line 3: invalid pattern '[z-a]': ...")
    errors: tuple[str, ...] = ()

    @classmethod
    def parse(cls, base: str, text: str) -> IgnoreFile:
        rules: list[IgnoreRule] = []
        errors: list[str] = []
        for line_no, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate or line.startswith(("\\!", "\\#")):  # `\!`, `\#`: literal
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            if line.startswith("**/"):
                anchored = True  # `**/x` is the same as unanchored `x`, compiled as anchored
            try:
                regex = glob_regex(line, slash_stars=False)
            except GlobError as exc:
                errors.append(f"line {line_no}: {exc} (pattern ignored)")
                continue
            rules.append(IgnoreRule(regex, negate, dir_only, anchored))
        return cls(base, tuple(rules), tuple(errors))

    def verdict(self, abspath: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a ``!`` rule, None: no rule matched."""
        if not abspath.startswith(self.base + "/"):
            return None
        rel = abspath[len(self.base) + 1 :]
        name = rel.rsplit("/", 1)[-1]
        result: bool | None = None
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            target = rel if rule.anchored else name
            if rule.regex.fullmatch(target):
                result = not rule.negate
        return result


def is_ignored(stack: list[IgnoreFile], abspath: str, is_dir: bool) -> bool:
    """Outer files first: a deeper ``.gitignore`` overrides its parents."""
    ignored = False
    for f in stack:
        v = f.verdict(abspath, is_dir)
        if v is not None:
            ignored = v
    return ignored


IGNORE_FILE_CAP = 1 << 20  # a .gitignore larger than 1 MiB is not one


def read_ignore_file(folder: str, base: str) -> IgnoreFile | None:
    """The ``.gitignore`` in ``folder``; ``base`` is that folder's absolute posix path.

    Read like any input (regular files only, never blocking on a FIFO, size-capped); one that
    cannot be read applies no rules and carries one error saying why."""
    from ragsift.errors import SkipFile
    from ragsift.sources.reading import read_path

    path = os.path.join(folder, ".gitignore")
    if not os.path.lexists(path):
        return None
    try:
        data = read_path(path, IGNORE_FILE_CAP, cap_param=None)  # a fixed cap: no advice
    except SkipFile as exc:  # said once, so that files it would ignore are not a surprise
        return IgnoreFile(base, (), (f"not applied: {exc.reason}",))
    return IgnoreFile.parse(base, data.decode("utf-8", errors="replace"))


def to_posix(path: str) -> str:
    return path.replace(os.sep, "/") if os.sep != "/" else path
