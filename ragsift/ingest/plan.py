"""The change plan: for the files of a run and what the index holds, which are unchanged,
which must be parsed (changed or new) and which documents are gone. The rule is written once
here; the local and the Ray runner both ask it.

Per file, cheapest first:
1. same chunker, size and mtime as recorded → unchanged, nothing read (``by_stat``);
2. else the bytes are read: same chunker and sha256 → unchanged, size/mtime refreshed
   (``by_bytes``);
3. else the file is parsed, chunked and written.

A document is gone (``gone``) only when its absence is certain: its key lies under a folder or
file given in this run, it was not seen (or was read and is not a document:
``not_a_document``), and the walk listed the folder that held it (``Walk.may_prune``);
whatever could not be read this time is kept. Documents from chunk JSON lines on stdin are
unchanged when their records' sha256 is (``records_unchanged``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragsift.index.backend import DocState
    from ragsift.sources import SourceFile, Walk


@dataclass(frozen=True)
class Unchanged:
    """A file that needs no parse; ``touch``: the ``touch_document`` keywords to record (its
    display path, size, mtime), or None when nothing changed at all."""

    key: str
    touch: dict | None


class ChangePlan:
    """The decisions of one run over one index state (``IndexWriter.documents_state``).

    ``key_of_chunker``: the chunker's key (``records.chunker_key``): a document chunked
    with other options is changed. Every file asked about is remembered as seen, for
    ``gone``; ``moved`` counts documents found again under another display path (the same file
    given by another spelling, e.g. absolute after relative), with ``moved_example``."""

    def __init__(
        self, state: dict[str, DocState], key_of_chunker: str, root: str | None = None
    ) -> None:
        self.state = state
        self.root = root
        self.key_of_chunker = key_of_chunker
        self.seen: set[str] = set()
        self.moved = 0
        self.moved_example: tuple[str, str] | None = None  # (was, now)
        self._pipelines: dict[str, str] = {}  # format -> pipeline_key
        self._why: dict[str, str] = {}  # key -> why its unchanged bytes are re-chunked
        self.rechunked: dict[str, int] = {}  # why -> documents re-chunked for it

    def pipeline(self, sf: SourceFile) -> str:
        """What this run builds the file's rows with (``records.pipeline_key``): the same
        chunker for every file, the reader of its format."""
        from ragsift.ingest.records import pipeline_key
        from ragsift.sources.formats import format_for

        fmt = format_for(sf.relpath)
        if fmt not in self._pipelines:
            self._pipelines[fmt] = pipeline_key(self.key_of_chunker, fmt)
        return self._pipelines[fmt]

    def key(self, sf: SourceFile) -> str:
        """The file's identity in the index (``path_key``: relative to the project root, or
        absolute), remembered as seen. A document an index holds under its absolute key (from
        before the project file) keeps that key: never a second copy of it."""
        from ragsift.sources import path_keys

        keys = path_keys(sf.path, self.root)
        key = next((k for k in keys if k in self.state), keys[0])
        self.seen.add(key)
        return key

    def _same_chunker(self, key: str, sf: SourceFile) -> DocState | None:
        old = self.state.get(key)
        return old if old is not None and old.chunker == self.pipeline(sf) else None

    def by_stat(self, sf: SourceFile, key: str) -> Unchanged | None:
        """Unchanged without reading: same pipeline, size and mtime."""
        old = self._same_chunker(key, sf)
        if old is None or old.size != sf.size or old.mtime != sf.mtime:
            return None
        return Unchanged(key, self._moved(old, sf) and {"path": sf.relpath} or None)

    def needs_bytes(self, key: str, sf: SourceFile) -> bool:
        """Whether ``by_bytes`` can say anything: the index holds this file (with the same
        pipeline, or another one that makes unchanged bytes worth counting as re-chunked)."""
        return self.state.get(key) is not None

    def by_bytes(self, sf: SourceFile, key: str, sha256: str | None) -> Unchanged | None:
        """Unchanged after reading: same pipeline and bytes (size and mtime are refreshed).
        The same bytes under another pipeline are re-chunked, and why is remembered."""
        old = self.state.get(key)
        if old is None or sha256 is None or old.sha256 != sha256:
            return None
        if old.chunker != self.pipeline(sf):
            from ragsift.ingest.records import pipeline_change

            self._why[key] = pipeline_change(old.chunker, self.pipeline(sf))
            return None
        self._moved(old, sf)
        return Unchanged(key, {"path": sf.relpath, "size": sf.size, "mtime": sf.mtime})

    def records_unchanged(self, key: str, sha256: str) -> bool:
        """A stdin document (records' sha256) the index already holds as it is."""
        self.seen.add(key)
        old = self.state.get(key)
        return old is not None and old.sha256 == sha256

    def _moved(self, old: DocState, sf: SourceFile) -> bool:
        if old.path == sf.relpath:
            return False
        self.moved += 1
        if self.moved_example is None:
            self.moved_example = (old.path, sf.relpath)
        return True

    def note_written(self, key: str, path: str) -> None:
        """A changed document written under display ``path``: moved if its path differs;
        re-chunked (counted by why) when only its pipeline changed."""
        why = self._why.pop(key, None)
        if why is not None:
            self.rechunked[why] = self.rechunked.get(why, 0) + 1
        old = self.state.get(key)
        if old is not None and old.path != path:
            self.moved += 1
            if self.moved_example is None:
                self.moved_example = (old.path, path)

    def not_a_document(self, key: str) -> None:
        """The file under ``key`` was read and is not a document (``errors.NotADocument``, a
        theme template): as if the walk had ignored it, it is not seen, so what the index
        holds under its key (from before it was judged so) is ``gone``."""
        self.seen.discard(key)

    def gone(self, paths: list[str], found: Walk) -> list[str]:
        """Keys of documents certainly gone (or deliberately left out) from what this run
        listed: under a given path, not seen, in a folder the walk listed."""
        from ragsift.sources import path_keys

        roots = [k for p in paths for k in path_keys(p, self.root)]
        return [
            k
            for k, st in self.state.items()
            if st.source and k not in self.seen and _under(k, roots) and found.may_prune(k)
        ]


def _under(path: str, roots: list[str]) -> bool:
    for root in roots:
        if root == "." and not path.startswith("/"):  # the project root: every relative key
            return True
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False
