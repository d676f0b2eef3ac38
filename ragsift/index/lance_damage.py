"""The guard around ``LanceIndex``'s reads and writes (``lance.py``): an Arrow/Lance failure on
the index's own files is ``index damaged: …`` with the way out (a user error, exit 2), and a
reader whose snapshot a writer's ``compact`` removed (``lance_compact.KEEP_VERSIONS``) moves
to the newest version and asks once more. ``guard(LanceIndex)`` wraps the methods in
``GUARDED``.
"""

from __future__ import annotations

import functools
from typing import Any

from ragsift.errors import RagsiftError, Words
from ragsift.index.backend import rebuild_action


def snapshot_removed(index: Any, exc: Exception) -> bool:
    """Whether a reader's read failed because a file of its snapshot is gone while a newer
    version exists: a writer's ``compact`` removed the version (``KEEP_VERSIONS``). A file
    missing from the newest version is damage, reported as such."""
    if index.mode != "r" or index.closed or "not found" not in str(exc).lower():
        return False
    try:
        return index.stale()
    except Exception:
        return False


def damage_as_error(method):
    """Wrap a ``LanceIndex`` read or write: an Arrow/Lance I/O failure on the index's own
    files (a data file cut short, a fragment that does not decode) is ``index damaged: …``
    with the way out, a user error (exit 2), not an internal error; a reader's read that
    failed on a removed snapshot (``snapshot_removed``) is asked once more on the newest."""

    @functools.wraps(method)
    def read(self, *args, **kwargs):
        for retry in (False, True):
            try:
                return method(self, *args, **kwargs)
            except RagsiftError:
                raise
            except Exception as exc:  # narrowed just below, else re-raised
                if not retry and snapshot_removed(self, exc):  # a writer's ``compact``
                    self.refresh()  # removed it: the reader moves to the newest version
                    continue  # and asks once more (a second failure is what it is)
                if type(exc).__module__.startswith("pyarrow") or "LanceError" in str(exc):
                    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    first = first.split(", /rustc/")[0]  # the Rust location says nothing
                    raise RagsiftError(
                        Words(
                            "index damaged: {at}: {what}; rebuild it with `{rebuild}`",
                            {
                                "at": self.path,
                                "what": first[:200],
                                "rebuild": rebuild_action(self.path),
                            },
                        )
                    ) from None
                raise
        raise AssertionError("unreachable")

    return read


# the ``LanceIndex`` methods that read or write the index's files
GUARDED = (
    "settings",
    "dimensions",
    "documents",
    "paths",
    "documents_state",
    "rowids_of_paths",
    "count",
    "load_matrix",
    "load",
    "dense_candidates",
    "cosines",
    "lexical_candidates",
    "lexical_ceiling",
    "chunk_records",
    "chunks",
    "document_chunks",
    "vectors_for_hashes",
    "unit_evidence",
    "page_titles",
    "stats",
    "verify",
    "_open_datasets",
    "_raw_settings",
    "write_documents",
    "remove_documents",
    "touch_document",
    "set_settings",
    "clear",
    "compact",
    "alloc_rowids",
    "commit_fragments",
)


def guard(cls: type) -> None:
    """Wrap each of ``cls``'s ``GUARDED`` methods in ``damage_as_error``."""
    for name in GUARDED:
        setattr(cls, name, damage_as_error(getattr(cls, name)))
