"""Paths as a user types them, against the stored ones (``ragsift.api`` hands these out
through its lazy table): ``stored_path``, the one rule of ``ls``, ``rm``, ``--path`` and the
MCP server's ``read``; ``removal_patterns``, ``rm``'s patterns checked."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from ragsift.errors import RagsiftError

_GLOB_CHARS = re.compile(r"[*?\[]")


def stored_path(
    typed: str,
    paths: Iterable[str],
    *,
    root: str | os.PathLike | None = None,
    cwd: str | os.PathLike | None = None,
) -> str:
    """The stored path (or glob) that a path typed by a user names: the first of its spellings
    (``ragsift.paths.typed_forms``: from where the user stands, ``cwd``, relative to the
    project ``root``; as typed; absolute) that matches one of the stored ``paths``
    (``Index.paths()``; the glob rule of ``path_matches``), else ``typed`` unchanged. The one
    rule of ``ls``, ``rm``, ``--path`` and the MCP server's ``read``: ``./x.md``,
    ``/abs/root/x.md`` and, from ``advanced/``, ``x.md`` all name ``advanced/x.md`` where that
    is what is stored (issue 41)."""
    from ragsift.paths import typed_forms
    from ragsift.retrieval.engine import path_matches

    stored = paths if isinstance(paths, (set, frozenset)) else set(paths)
    forms = typed_forms(
        typed,
        None if root is None else os.fspath(root),
        None if cwd is None else os.fspath(cwd),
    )
    for form in forms:
        if form in stored:  # a plain path: one look-up, not a scan (rm with many paths)
            return form
        if not _GLOB_CHARS.search(form):
            continue
        try:
            if any(path_matches(p, [form]) for p in stored):
                return form
        except (re.error, ValueError):  # not a glob (GlobError): its check names it where used
            return typed
    return typed


def removal_patterns(patterns: Any) -> list[str]:
    """``remove``'s patterns, checked as strictly as ``ragsift rm`` checks its arguments: at
    least one, each a non-empty string and a valid glob. A plain string is one pattern (not
    its characters)."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    try:
        out = [os.fspath(p) for p in patterns]
    except TypeError:
        raise RagsiftError("patterns must be paths or globs (strings)") from None
    if not out:
        raise RagsiftError(
            "remove needs at least one path or glob (an empty list would "
            "remove nothing; pass '*' to remove every document)"
        )
    for p in out:
        if not isinstance(p, str) or not p.strip():
            raise RagsiftError(f"a pattern must be a non-empty path or glob, not {p!r}")
    from ragsift.retrieval.engine import check_globs

    check_globs(out)
    return out
