"""Stages 3–4: batch and embed, then commit. ``Run`` is the state one ``embed`` shares between
its stages and runners: the open index writer, the summary, the model slot, the progress sink
and the pending batch.

A batch commits after ``FLUSH_CHUNKS`` chunks or ``FLUSH_FILES`` files (small commits, little
lost to a kill). Its texts are looked up by content hash (this batch, then the index) and only
the misses are embedded, shortest first across the whole batch, ``EMBED_STEP`` texts per
embedder call; the batch's documents are then written in one transaction. Every index access
stays on the thread that owns the ``Run``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragsift.ingest.records import chunker_key

if TYPE_CHECKING:
    from ragsift.index.backend import DocumentWrite, IndexWriter
    from ragsift.ingest.model import ModelSlot
    from ragsift.ingest.plan import Unchanged
    from ragsift.ingest.summary import EmbedProgress, EmbedSummary
    from ragsift.sources import Skipped

FLUSH_CHUNKS = 64  # commit after this many chunks are pending (~2 s of embedding here)
FLUSH_FILES = 8  # ... or this many files: small commits, little lost to a kill
GATHER_WHILE_LOADING = 4  # the first batch may grow this many times while the model loads
EMBED_STEP = 64  # texts per embedder call: progress granularity; the embedder sorts inside


class Run:
    """One ``embed`` run's shared state (see the module docstring)."""

    def __init__(
        self,
        store: IndexWriter,
        summary: EmbedSummary,
        model: ModelSlot,
        progress: EmbedProgress,
        on_skip: Callable[[Skipped], None] | None = None,
        on_warning: Callable[[str, str], None] | None = None,
        root: str | None = None,
    ) -> None:
        self.root = root  # the project root: document keys and paths relative to it
        self.store = store
        self.summary = summary
        self.model = model
        self.progress = progress
        self.on_skip = on_skip
        self.on_warning = on_warning
        self.pending: list[DocumentWrite] = []
        self.pending_chunks = 0
        self.pending_work = 0  # progress work units of the pending documents

    # -- bookkeeping, the same for every runner ----------------------------------------------
    def skip(self, s: Skipped, work: int = 0) -> None:
        """A file (or stdin line) that could not be used: one line, counted, the run goes on."""
        self.summary.skipped.append(s)
        if self.on_skip:
            self.on_skip(s)

    def ignore(self, s: Skipped) -> None:
        """A discovered file that turned out not to be a document once read (``reason``: its
        kind, ``errors.NotADocument``): counted with the files discovery ignored, as if it had
        ignored it (not among the discovered), no line."""
        self.summary.discovered -= 1
        self.summary.ignored[s.reason] = self.summary.ignored.get(s.reason, 0) + 1

    def unchanged(self, u: Unchanged, work: int = 0) -> None:
        self.summary.unchanged += 1
        if u.touch is not None:
            self.store.touch_document(u.key, **u.touch)
        self.progress.advance(files=1, unneeded=work)

    def use_chunker(self, chunker: Any) -> str:
        """The chunker's key for document rows; the index's chunker setting follows it."""
        settings = self.model.settings
        if (
            settings.get("chunker_options") != chunker.options()
            or settings.get("chunker") != chunker.name
        ):
            self.store.set_settings(chunker=chunker.name, chunker_options=chunker.options())
        return chunker_key(chunker)

    def remove(self, keys: list[str]) -> None:
        if keys:
            self.summary.removed += self.store.remove_documents(keys)

    # -- batches -----------------------------------------------------------------------------
    def add(self, doc: DocumentWrite, work: int = 0) -> None:
        self.pending.append(doc)
        self.pending_chunks += len(doc.records)
        self.pending_work += work
        self.progress.queued(work, sum(r.tokens or 0 for r in doc.records))
        # while the model is still loading ahead nothing can be embedded: the first batch
        # goes on gathering (up to GATHER_WHILE_LOADING times the usual size), so it is
        # sorted by length over more texts, at no cost in time to the first commit
        if self._due(GATHER_WHILE_LOADING if self.model.loading() else 1):
            self.flush()

    def flush_if_due(self) -> None:
        """While this thread waits for the producer: commit a batch that became due when the
        model finished loading (not only at the next document, which may be slow to parse)."""
        if self.pending and not self.model.loading() and self._due(1):
            self.flush()

    def _due(self, scale: int) -> bool:
        return (
            self.pending_chunks >= FLUSH_CHUNKS * scale or len(self.pending) >= FLUSH_FILES * scale
        )

    def flush(self) -> None:
        """Embed what the pending documents lack and commit them in one transaction."""
        import time
        from dataclasses import replace

        import numpy as np

        from ragsift.embedders.evidence import embed_evidence

        docs, self.pending, self.pending_chunks = self.pending, [], 0
        work, self.pending_work = self.pending_work, 0
        if not docs:
            return
        work_done = 0
        s = self.summary
        hashes = [r.content_hash for d in docs for r in d.records]
        known = self.store.vectors_for_hashes(hashes) if hashes else {}
        missing: dict[str, tuple[str, str]] = {}
        tokens: dict[str, int] = {}
        for d in docs:
            for r in d.records:
                h = r.content_hash
                if h not in known and h not in missing:
                    missing[h] = (r.context, r.text)
                    tokens[h] = r.tokens or 0
        not_embedded = sum(r.tokens or 0 for d in docs for r in d.records) - sum(tokens.values())
        if not_embedded:
            self.progress.queued(0, -not_embedded)  # vectors found: no model time for them
        if missing:
            emb = self.model.embedder()
            # shortest first across the whole batch, not only inside each EMBED_STEP call
            # (the embedder sorts its own call): model batches padded less (-2% model work on
            # chroma-dev); a text's vector does not depend on the texts batched with it
            todo = sorted(missing.items(), key=lambda item: tokens[item[0]])
            for lo in range(0, len(todo), EMBED_STEP):
                part = todo[lo : lo + EMBED_STEP]
                t0 = time.perf_counter()
                found = embed_evidence(emb, [item for _, item in part])
                seconds = time.perf_counter() - t0
                for (h, _), ev in zip(part, found):
                    known[h] = (ev.vector, ev.truncated, ev.units)
                n_tok = sum(tokens[h] for h, _ in part)
                s.embedded += len(part)
                s.tokens += n_tok
                # the batch's work moves with the texts embedded (the commit gets the rest)
                share = work * (lo + len(part)) // (len(todo) + 1) - work_done
                work_done += share
                self.progress.advance(tokens=n_tok, work=share, seconds=seconds)
        ready = self.model.ready
        dim = self.store.dimensions() or (ready.dimensions if ready is not None else 0)
        n_chunks = 0
        embedded: list[DocumentWrite] = []  # each document with its vectors and evidence
        for d in docs:
            records, rows = [], []
            for r in d.records:
                vec, cut, units = known[r.content_hash]
                records.append(replace(r, truncated=cut, units=units))
                if cut:
                    s.truncated += 1
                    s.truncated_tokens += cut
                rows.append(vec)
            vectors = np.stack(rows) if rows else np.zeros((0, dim), np.float32)
            embedded.append(replace(d, records=tuple(records), vectors=vectors))
            n_chunks += len(d.records)
        s.chunks += n_chunks
        s.reused += n_chunks - len(missing)
        with self.store.transaction():
            self.store.write_documents(embedded)
        self.progress.advance(files=len(docs), chunks=n_chunks, work=work - work_done)
