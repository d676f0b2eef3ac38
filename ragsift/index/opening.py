"""``open_index``: how every caller (CLI, API, ``embed``, ``tune``, ``eval``, the MCP server)
opens an index. The backend is chosen here, once, by the location
(``locations.is_lance_location``); nothing else names a backend class."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, overload

from ragsift.index.locations import is_lance_location

if TYPE_CHECKING:
    from ragsift.index.backend import IndexReader, IndexWriter


@overload
def open_index(
    path: str | os.PathLike,
    mode: Literal["r"] = "r",
    wait: bool | Callable[[int | None], None] = False,
) -> IndexReader: ...
@overload
def open_index(
    path: str | os.PathLike, mode: Literal["w"], wait: bool | Callable[[int | None], None] = False
) -> IndexWriter: ...


def open_index(path, mode="r", wait=False):
    """Open the index at ``path`` for reading (``"r"``: one snapshot, never blocks) or writing
    (``"w"``: creates it, takes the writer lock; ``wait``: True blocks on a busy lock, a
    callable is told the holder's PID first). A ``.lance`` path or an ``s3://…`` URI is a Lance
    index (the ``ragsift[lance]`` extra), anything else one SQLite file. Raises
    ``RagsiftError`` for what a user can fix (no index, a foreign or damaged one, a busy
    lock, no write permission)."""
    if mode not in ("r", "w"):
        raise ValueError(f"mode must be 'r' or 'w', not {mode!r}")
    path = os.fspath(path)
    if is_lance_location(path):
        from ragsift.index.lance import LanceIndex

        store = LanceIndex.open(path, mode, wait)
    else:
        from ragsift.index.store import IndexStore

        store = IndexStore.open(path, mode, wait)
    try:
        check_versions(store, path, mode)
    except BaseException:
        store.close()
        raise
    return store


def check_versions(store, path: str, mode: str) -> None:
    """Refuse an index a newer ragsift bound to its own (or newer) writers, or readers: one
    line naming both versions (exit 2). Reads only: a writer records itself
    (``backend.writer_stamp``: ``written_by``, ``min_writer_version``, never lowered) with
    its first write, so a refused command leaves the index as it was (issue 40)."""
    from ragsift.errors import RagsiftError, Words
    from ragsift.index.backend import rebuild_action
    from ragsift.version import __version__, version_tuple

    settings = store.settings() or {}
    key = "min_writer_version" if mode == "w" else "min_reader_version"
    need = settings.get(key)
    if need and _version(need) is None:
        raise RagsiftError(
            Words(
                "index damaged: {at}: its {key} setting is not a version ({need}); rebuild "
                "it: {rebuild}",
                {
                    "at": path,
                    "key": key,
                    "need": _short(need),
                    "rebuild": rebuild_action(path, "PATH"),
                },
            )
        )
    if need and version_tuple(str(need)) > version_tuple(__version__):
        by = settings.get("written_by") or need
        verb = "write" if mode == "w" else "read"
        raise RagsiftError(
            f"index {path} was written by ragsift {by}; only ragsift {need} or newer may "
            f"{verb} it, and this is ragsift {__version__}: upgrade ragsift"
            + (" (reading it still works)" if mode == "w" else "")
        )


_VERSION_PART = 9  # digits of one part of a version: more is not a version ragsift wrote


def _version(value: object) -> tuple[int, ...] | None:
    """A stored version setting as numbers, or None when it cannot be one (edited by hand:
    not text, no number, or a part of thousands of digits, which ``int`` refuses)."""
    import re

    if not isinstance(value, str):
        return None
    parts = re.findall(r"\d+", value.split("+")[0])[:3]
    if not parts or any(len(p) > _VERSION_PART for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _short(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else f"{text[:20]}… {len(text):,} characters"


def inspect_index(path: str | os.PathLike) -> str:
    """``"missing"``, ``"empty"`` (a 0-byte file) or ``"ours"``; raises ``RagsiftError`` for
    anything else (a foreign file, a FIFO, a dangling symlink, ...). Reads as little as it
    can: a foreign file is never opened as an index."""
    path = os.fspath(path)
    if is_lance_location(path):
        from ragsift.index.lance import inspect_location

        return inspect_location(path)
    from ragsift.index.store import inspect_file

    return inspect_file(path)


def check_model_record(store, path: str) -> None:
    """Refuse, as damaged, an index that holds vectors but no record of the model that made
    them (its settings rows deleted by hand): no query can be embedded to match them. Asked
    by the front door (``api.open_index``) for a search; the backends themselves can hold
    rows without settings (their contract tests write such indexes)."""
    from ragsift.errors import RagsiftError, Words
    from ragsift.index.backend import rebuild_action

    settings = store.settings() or {}
    if not settings.get("model_fingerprint") and store.count():
        raise RagsiftError(
            Words(
                "index damaged: {at}: it holds vectors but no record of the model that made "
                "them (its settings are missing); rebuild it: {rebuild}",
                {"at": path, "rebuild": rebuild_action(path, "PATH")},
            )
        )
