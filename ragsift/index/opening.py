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
def open_index(path: str | os.PathLike, mode: Literal["r"] = "r",
               wait: bool | Callable[[int | None], None] = False) -> IndexReader: ...
@overload
def open_index(path: str | os.PathLike, mode: Literal["w"],
               wait: bool | Callable[[int | None], None] = False) -> IndexWriter: ...


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

        return LanceIndex.open(path, mode, wait)
    from ragsift.index.store import IndexStore

    return IndexStore.open(path, mode, wait)


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
