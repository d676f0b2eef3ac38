"""Orchestration: file → parse → chunk (→ embed → index), with a run summary.

Sits above the layers: it imports ``sources``, ``chunkers`` (and later ``embedders`` and
``retrieval``); nothing below imports it. It never prints: diagnostics go through the
``on_skip`` callback so the CLI decides how to show them, and progress through an
``EmbedProgress`` object.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragsift.errors import SkipFile

if TYPE_CHECKING:
    from ragsift.chunkers.base import Chunk, Chunker
    from ragsift.sources import Document, Skipped, SourceFile, Walk


@dataclass
class ChunkSummary:
    """What a ``chunk`` run did (printed on stderr by the CLI)."""

    files: int = 0
    parsed: int = 0
    chunks: int = 0
    token_counts: list[int] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    over_budget: int = 0
    ignored: dict[str, int] = field(default_factory=dict)  # reason → files (not documents)

    def as_dict(self) -> dict:
        tc = sorted(self.token_counts)
        return {
            "files": self.files,
            "ignored": sum(self.ignored.values()),
            "parsed": self.parsed,
            "chunks": self.chunks,
            "tokens": sum(tc),
            "min_tokens": tc[0] if tc else 0,
            "median_tokens": statistics.median(tc) if tc else 0,
            "max_tokens": tc[-1] if tc else 0,
            "over_budget": self.over_budget,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
        }


def chunk_record(doc: Document, index: int, chunk: Chunk) -> dict:
    """The JSON-lines record of ``ragsift chunk`` (field names are an API)."""
    last = max(chunk.start, chunk.end - 1)
    return {
        "id": f"{doc.path}#{index}",
        "path": doc.path,
        "index": index,
        "text": chunk.text,
        "start": chunk.start,
        "end": chunk.end,
        "context": chunk.context,
        "tokens": chunk.tokens,
        "chars": len(chunk.text),
        "line_start": doc.line_at(chunk.start),
        "line_end": doc.line_at(last),
        "headings": list(doc.headings_at(chunk.start)),
        "page": doc.page_at(chunk.start),
        "level": chunk.level,
    }


def iter_documents(
    paths: list[str],
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    on_skip: Callable[[Skipped], None] | None = None,
    summary: ChunkSummary | None = None,
    on_warning: Callable[[str, str], None] | None = None,
    max_file_size: int | None = None,
    follow_links: bool = False,
) -> Iterator[Document]:
    """Discover and parse files in deterministic order; unusable files are reported, not raised.

    Raises ``RagsiftError`` (usage) for a path that does not exist or an invalid glob, before
    anything is read. ``max_file_size``: bytes per input file (None: the default cap)."""
    summary = summary if summary is not None else ChunkSummary()

    def skip(s: Skipped) -> None:
        summary.skipped.append(s)
        if on_skip:
            on_skip(s)

    found = _walk(paths, include, exclude, follow_links, skip, on_warning, summary.ignored)

    def count(sf: SourceFile) -> bool:
        summary.files += 1
        return False

    for _sf, _data, doc in _load_each(found.files, skip=skip, on_warning=on_warning,
                                      max_file_size=max_file_size, before_read=count):
        summary.parsed += 1
        yield doc


def _walk(paths, include, exclude, follow_links: bool, skip, on_warning,
          ignored: dict[str, int]) -> Walk:
    """Discovery, its skips and warnings reported, its ignored files counted by reason."""
    from ragsift.sources import walk

    found = walk(list(paths), include or [], exclude or [], follow_links=follow_links)
    for s, warning in found.notes:  # in the order they happened
        if s is not None:
            skip(s)
        elif on_warning is not None and warning is not None:
            on_warning(*warning)
    for reason, n in found.ignored_counts().items():
        ignored[reason] = ignored.get(reason, 0) + n
    return found


def _load_each(
    files: list[SourceFile],
    *,
    skip: Callable[[Skipped], None],
    on_warning: Callable[[str, str], None] | None,
    max_file_size: int | None,
    before_read: Callable[[SourceFile], bool] | None = None,
    after_read: Callable[[SourceFile, bytes], bool] | None = None,
) -> Iterator[tuple[SourceFile, bytes, Document]]:
    """The one read → parse loop of ``chunk`` and ``embed``: ``(file, bytes, document)`` for
    every usable file; an unusable one is passed to ``skip`` (one line) and the loop goes on.
    ``before_read``/``after_read`` return True to pass over a file (``embed``: unchanged)."""
    from ragsift.sources import DEFAULT_MAX_FILE_SIZE, Skipped, load_document, read_bytes

    cap = DEFAULT_MAX_FILE_SIZE if max_file_size is None else max_file_size
    for sf in files:
        if before_read is not None and before_read(sf):
            continue
        try:
            data = read_bytes(sf, cap)
            if after_read is not None and after_read(sf, data):
                continue
            doc = load_document(sf, data)
        except SkipFile as exc:
            skip(Skipped(sf.relpath, exc.reason))
            continue
        except (RecursionError, ValueError, UnicodeError, OverflowError, MemoryError) as exc:
            # a parser's limit on a hostile file: that file is skipped, the run goes on
            skip(Skipped(sf.relpath, f"unparsable: {type(exc).__name__}: "
                                     f"{' '.join(str(exc).split())[:200]}"))
            continue
        _report_warnings(doc, on_warning)
        yield sf, data, doc


def _report_warnings(doc: Document, on_warning: Callable[[str, str], None] | None) -> None:
    """Decoding guesses and other parser warnings: never silent (e.g. "decoded as cp1252")."""
    if on_warning is not None:
        for message in doc.warnings:
            on_warning(doc.path, message)


def _prepared(chunker: Chunker, doc: Document) -> Document:
    """The document a chunker wants to chunk and have recorded (e.g. tables rendered)."""
    prepare = getattr(chunker, "prepare", None)
    return prepare(doc) if prepare is not None else doc


def iter_chunks(
    paths: list[str],
    chunker: Chunker,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    on_skip: Callable[[Skipped], None] | None = None,
    summary: ChunkSummary | None = None,
    budget: int | None = None,
    on_warning: Callable[[str, str], None] | None = None,
    max_file_size: int | None = None,
    follow_links: bool = False,
) -> Iterator[dict]:
    """Yield ``chunk_record`` dicts for every chunk of every readable file under ``paths``."""
    summary = summary if summary is not None else ChunkSummary()
    for doc in iter_documents(
        paths, include=include, exclude=exclude, on_skip=on_skip, summary=summary,
        on_warning=on_warning, max_file_size=max_file_size, follow_links=follow_links,
    ):
        doc = _prepared(chunker, doc)
        for i, ch in enumerate(chunker.chunk(doc)):
            summary.chunks += 1
            summary.token_counts.append(ch.tokens)
            if budget is not None and ch.tokens > budget:
                summary.over_budget += 1
            yield chunk_record(doc, i, ch)


# -- embed → index ---------------------------------------------------------------------------
# ``build_index`` is the whole ``ragsift embed`` run. Order of work per file, cheapest first:
# size+mtime equal (and same chunker) → unchanged, nothing read; else, same size → sha256 of
# the bytes, equal → unchanged (mtime refreshed); else parse → chunk → look vectors up by
# content hash (this batch, then the index) → embed only the misses → commit the batch.
# The model is loaded on the first chunk that needs it, so an unchanged corpus never loads it.

FLUSH_CHUNKS = 64  # commit after this many chunks are pending (~2 s of embedding here)
FLUSH_FILES = 8  # ... or this many files: small commits, little lost to a kill
GATHER_WHILE_LOADING = 4  # the first batch may grow this many times while the model loads
EMBED_STEP = 64  # texts per embedder call: progress granularity; the embedder sorts inside
STDIN_CHUNKER = "stdin"  # chunker key of documents ingested as chunk JSON lines

# Fields of a ``ragsift chunk`` record accepted on stdin: name → (types, required).
_RECORD_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "path": ((str,), True),
    "index": ((int,), True),
    "text": ((str,), True),
    "start": ((int, type(None)), False),
    "end": ((int, type(None)), False),
    "context": ((str,), False),
    "tokens": ((int, type(None)), False),
    "chars": ((int, type(None)), False),
    "line_start": ((int, type(None)), False),
    "line_end": ((int, type(None)), False),
    "headings": ((list,), False),
    "page": ((int, type(None)), False),
    "level": ((int,), False),
}


@dataclass
class EmbedSummary:
    """What an ``embed`` run did (stderr summary, or ``--json``)."""

    discovered: int = 0
    unchanged: int = 0
    parsed: int = 0
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    removed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)  # reason → files (not documents)
    truncated: int = 0
    truncated_tokens: int = 0
    tokens: int = 0
    model_loaded: bool = False
    seconds: float = 0.0
    index: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "discovered": self.discovered,
            "unchanged": self.unchanged,
            "parsed": self.parsed,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "reused": self.reused,
            "removed": self.removed,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "ignored": sum(self.ignored.values()),
            "truncated": self.truncated,
            "truncated_tokens": self.truncated_tokens,
            "tokens": self.tokens,
            "model_loaded": self.model_loaded,
            "seconds": round(self.seconds, 3),
            "index": self.index,
        }


class EmbedProgress:
    """Progress sink for ``build_index`` (the CLI draws it; the default draws nothing).

    Work is counted in ``work`` units whose total ``start`` gives: bytes of the discovered
    files (records for chunk JSON lines on stdin). A file's work is advanced chunk by chunk as
    its texts are embedded (so one big file moves the bar smoothly), or at once when its
    chunks need no model; work of a file that needs nothing (unchanged, skipped) leaves the
    total (``unneeded``). ``seconds`` is the model time the ``tokens`` took, so a rate is
    right from the first call."""

    def start(self, files: int, work: int = 0) -> None:
        """``files`` inputs will be looked at, ``work`` units in all (0: unknown)."""

    def advance(self, files: int = 0, chunks: int = 0, tokens: int = 0, *, work: int = 0,
                unneeded: int = 0, seconds: float = 0.0) -> None:
        """``files`` done, ``chunks`` written, ``tokens`` (chunker units) embedded in
        ``seconds`` of model time; ``work`` units done, ``unneeded`` units dropped."""

    def finish(self) -> None:
        """The run is over (successfully or not)."""


def content_hash(embed_text: str) -> str:
    """Identity of a chunk's embedding input (``context + text``): sha256, 32 hex digits."""
    import hashlib

    return hashlib.sha256(embed_text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def chunker_key(chunker: Chunker) -> str:
    """JSON naming the chunker and every option that shapes its output (stored per document)."""
    import json

    return json.dumps({"name": chunker.name, "options": chunker.options()}, sort_keys=True,
                      default=str)


# Embedder options an index records (``embedder_options`` setting) and ``query``/``explain``/
# ``tune`` load the index's model with; absent = what the model folder declares / the default.
from ragsift.retrieval.search import EMBEDDER_OPTIONS  # noqa: E402  (defined once there)


def clean_embedder_options(options: dict | None) -> dict:
    """The explicitly chosen ``load_embedder`` options: known keys, ``None`` values dropped."""
    return {k: options[k] for k in EMBEDDER_OPTIONS
            if options and options.get(k) is not None}


def embedder_option_flags(options: dict | None) -> str:
    """``embed`` flags that reproduce ``options`` (for messages), e.g. ``--pooling cls``."""
    import shlex

    flags = []
    for key, value in clean_embedder_options(options).items():
        if key == "normalize":
            if not value:
                flags.append("--no-normalize")
        else:
            flags.append(f"--{key.replace('_', '-')} {shlex.quote(str(value))}")
    return " ".join(flags)


def embed_size(counter, passage_prefix: str | None = None) -> int:
    """The default chunk size of ``embed`` (and of ``eval``'s model-token configurations),
    defined once: the model's max length in its own tokens, special tokens included, less the
    tokens ``passage_prefix`` adds, so no chunk is ever truncated. Measured: 256 for MiniLM
    beat 192 and 128 by 5.6 and 9.4 recall points on chroma-dev (bench/RESULTS.md)."""
    prefix = counter.count(passage_prefix) - counter.count("") if passage_prefix else 0
    return max(counter.max_length - prefix, 8)


def default_embed_chunker(model_dir: str | None = None, *, strategy: str = "recursive",
                          size: int | None = None, overlap: int | None = None,
                          tokenizer: str | None = None, max_length: int | None = None,
                          passage_prefix: str | None = None, **extra) -> Chunker:
    """The chunker ``embed`` uses (and ``chunk``, so that it previews ``embed``): by default
    recursive, sized in the model's own tokens at the model's max length (special tokens
    included; ``max_length`` overrides it) less the tokens of ``passage_prefix``, so no chunk
    is ever truncated. ``extra``: further strategy options (``None`` values dropped)."""
    from ragsift.chunkers import OPTIONS, make_chunker

    options: dict = {k: v for k, v in extra.items() if v is not None}
    if tokenizer in (None, "model"):
        from ragsift.embedders import model_counter

        counter = model_counter(model_dir)
        if max_length is not None:
            counter.max_length = min(counter.max_length, max_length)
        if size is not None:
            options["size"] = size
        elif "size" in OPTIONS.get(strategy, ()):
            options["size"] = embed_size(counter, passage_prefix)
        tok: object = counter
    else:
        tok = tokenizer
        if size is not None:
            options["size"] = size
    if overlap is not None:
        options["overlap"] = overlap
    return make_chunker(strategy, tokenizer=tok, **options)


class _ModelLoad:
    """``load_embedder`` on a daemon thread, for a run that will embed: the session is built
    (native code, the GIL released) while this thread opens the index and the producer
    chunks the first files, instead of after them. ``result()`` waits and returns it, or
    raises what the load raised."""

    def __init__(self, model_dir: str | None, options: dict) -> None:
        import threading

        # numpy's first import is not safe from two threads at once (one may get it half
        # initialised: "cannot import name ... from partially initialized module"), and the
        # caller's thread needs it too (index, Lance): imported here, before the thread
        import numpy  # noqa: F401

        self._embedder = None
        self._error: BaseException | None = None

        def load() -> None:
            try:
                from ragsift.embedders import load_embedder

                self._embedder = load_embedder(model_dir, **options)
            except BaseException as exc:  # noqa: BLE001 - raised again by result()
                self._error = exc

        self._thread = threading.Thread(target=load, name="ragsift-model", daemon=True)
        self._thread.start()

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._embedder

    def loading(self) -> bool:
        return self._thread.is_alive()

    def wait(self) -> None:
        """Let an unused load finish: no thread outlives the run inside native code."""
        self._thread.join()


class _Run:
    """State of one ``build_index`` call (kept out of the function to keep it readable)."""

    def __init__(self, store, summary: EmbedSummary, embedder, model_dir, batch_size,
                 progress: EmbedProgress, options: dict | None = None) -> None:
        self.store = store
        self.summary = summary
        self._embedder = embedder
        self.model_dir = model_dir
        # None: unknown (a ready embedder object was passed without its options): not recorded
        self.options = clean_embedder_options(options) if options is not None or embedder is None \
            else None
        self.batch_size = batch_size
        self.progress = progress
        self.pending: list = []  # DocumentWrite
        self.pending_chunks = 0
        self.pending_work = 0  # progress work units of the pending documents
        self.settings = store.settings()
        self.on_warning: Callable[[str, str], None] | None = None
        self.token_counter = None  # the chunker's counter keeping token ids (share_token_ids)
        self.early: _ModelLoad | None = None  # the model loading ahead (build_index)

    # model -------------------------------------------------------------------------------
    @property
    def model_source(self) -> str:
        return "default" if self.model_dir is None else os.path.abspath(self.model_dir)

    def check_model_early(self) -> None:
        """Refuse a different model before any work, loading it only when it must be."""
        stored = self.settings.get("model_fingerprint")
        if not stored:
            if self._embedder is None and self.options:
                self.embedder()  # new index: bad options (e.g. --max-length) fail before work
            return
        if self._embedder is None and self.settings.get("model_source") == self.model_source \
                and not self._options_changed():
            return  # same model as last time: verified lazily if something needs embedding
        self.embedder()

    def _options_changed(self) -> bool:
        if self.options is None:
            return False
        return clean_embedder_options(self.settings.get("embedder_options")) != self.options

    def embedder(self):
        if self._embedder is None:
            if self.early is not None:
                self._embedder, self.early = self.early.result(), None
            else:
                from ragsift.embedders import load_embedder

                self._embedder = load_embedder(self.model_dir,
                                               **_load_options(self.options, self.batch_size))
            self.summary.model_loaded = True
        emb = self._embedder
        if self.token_counter is not None:
            self._link_token_ids(emb, self.token_counter)
        stored = self.settings.get("model_fingerprint")
        if stored and stored != emb.fingerprint:
            from ragsift.retrieval.search import check_model

            was = embedder_option_flags(self.settings.get("embedder_options"))
            now = embedder_option_flags(self.options)
            options = ""
            if was or now:
                options = (f" (index built with {was or 'no embedder options'}; this run: "
                           f"{now or 'no embedder options'})")
            check_model(self.settings, emb.fingerprint, emb.name,
                        subject=f"index {self.store.path}", detail=options,
                        advice="Vectors of different models or embedder options cannot be "
                        "mixed: pass --rebuild to re-embed everything, or use the index's "
                        "model and options")
        if not stored or self.settings.get("model_source") != self.model_source \
                or self._options_changed():
            values = {"model": emb.name, "model_fingerprint": emb.fingerprint,
                      "dimensions": int(emb.dimensions), "model_source": self.model_source}
            if self.options is not None:
                values["embedder_options"] = self.options
            self.store.set_settings(**values)
            self.settings = self.store.settings()
        return emb

    def share_token_ids(self, chunker: Chunker | None) -> None:
        """While the chunker sizes chunks in the model's own tokens (``ModelTokenCounter``, on
        the embedder's tokenizer), it keeps the ids of each chunk it counts and the embedder
        takes them instead of encoding the same text again (``TokenMemo``: keyed by the exact
        text, so the ids and vectors are those of a fresh encode). ``None``: stop."""
        counter = getattr(chunker, "counter", None)
        if self.token_counter is not None:
            self.token_counter.keep_token_ids(False)
            self.token_counter = None
            if self._embedder is not None:
                self._link_token_ids(self._embedder, None)
        if counter is not None and hasattr(counter, "keep_token_ids"):
            counter.keep_token_ids(True)
            self.token_counter = counter
            if self._embedder is not None:
                self._link_token_ids(self._embedder, counter)

    @staticmethod
    def _link_token_ids(emb, counter) -> None:
        take = getattr(emb, "take_token_ids_from", None)
        if take is not None:
            take(counter)

    # batches -----------------------------------------------------------------------------
    def add(self, doc, work: int = 0) -> None:
        self.pending.append(doc)
        self.pending_chunks += len(doc.records)
        self.pending_work += work
        # while the model is still loading ahead nothing can be embedded: the first batch
        # goes on gathering (up to GATHER_WHILE_LOADING times the usual size), so it is
        # sorted by length over more texts, at no cost in time to the first commit
        if self._due(GATHER_WHILE_LOADING if self._loading() else 1):
            self.flush()

    def flush_if_due(self) -> None:
        """While this thread waits for the producer: commit a batch that became due when the
        model finished loading (not only at the next document, which may be slow to parse)."""
        if self.pending and not self._loading() and self._due(1):
            self.flush()

    def _due(self, scale: int) -> bool:
        return self.pending_chunks >= FLUSH_CHUNKS * scale or \
            len(self.pending) >= FLUSH_FILES * scale

    def _loading(self) -> bool:
        return self.early is not None and self.early.loading()

    def flush(self) -> None:
        import time

        import numpy as np

        docs, self.pending, self.pending_chunks = self.pending, [], 0
        work, self.pending_work = self.pending_work, 0
        if not docs:
            return
        work_done = 0
        s = self.summary
        hashes = [r["content_hash"] for d in docs for r in d.records]
        known = self.store.vectors_for_hashes(hashes) if hashes else {}
        missing: dict[str, str] = {}
        tokens: dict[str, int] = {}
        for d in docs:
            for r in d.records:
                h = r["content_hash"]
                if h not in known and h not in missing:
                    missing[h] = r["context"] + r["text"]
                    tokens[h] = int(r.get("tokens") or 0)
        if missing:
            emb = self.embedder()
            # shortest first across the whole batch, not only inside each EMBED_STEP call
            # (the embedder sorts its own call): model batches padded less (-2% model work on
            # chroma-dev); a text's vector does not depend on the texts batched with it
            todo = sorted(missing.items(), key=lambda item: tokens[item[0]])
            for lo in range(0, len(todo), EMBED_STEP):
                part = todo[lo:lo + EMBED_STEP]
                t0 = time.perf_counter()
                res = emb.embed([t for _, t in part], kind="passage")
                seconds = time.perf_counter() - t0
                vecs = np.asarray(res.vectors, dtype=np.float32)
                for (h, _), vec, cut in zip(part, vecs, res.truncated):
                    known[h] = (vec, int(cut))
                n_tok = sum(tokens[h] for h, _ in part)
                s.embedded += len(part)
                s.tokens += n_tok
                # the batch's work moves with the texts embedded (the commit gets the rest)
                share = work * (lo + len(part)) // (len(todo) + 1) - work_done
                work_done += share
                self.progress.advance(tokens=n_tok, work=share, seconds=seconds)
        dim = self.store.dimensions() or (self._embedder.dimensions if self._embedder else 0)
        n_chunks = 0
        for d in docs:
            rows = []
            for r in d.records:
                vec, cut = known[r["content_hash"]]
                r["truncated"] = cut
                if cut:
                    s.truncated += 1
                    s.truncated_tokens += cut
                rows.append(vec)
            d.vectors = np.stack(rows) if rows else np.zeros((0, dim), np.float32)
            n_chunks += len(d.records)
        s.chunks += n_chunks
        s.reused += n_chunks - len(missing)
        with self.store.transaction():
            self.store.write_documents(docs)
        self.progress.advance(files=len(docs), chunks=n_chunks, work=work - work_done)


def build_index(
    paths: list[str],
    index: str | os.PathLike,
    chunker: Chunker | None = None,
    embedder=None,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    prune: bool = True,
    rebuild: bool = False,
    wait: bool = False,
    model_dir: str | None = None,
    batch_size: int | None = None,
    embedder_options: dict | None = None,
    stdin_lines: Iterable[str] | None = None,
    on_skip: Callable[[Skipped], None] | None = None,
    progress: EmbedProgress | None = None,
    on_warning: Callable[[str, str], None] | None = None,
    max_file_size: int | None = None,
    follow_links: bool = False,
    engine: str = "local",
    ray_address: str | None = None,
) -> EmbedSummary:
    """Bring the index at ``index`` up to date with ``paths`` (see the comment above).

    ``paths == ["-"]`` reads ``ragsift chunk`` JSON lines from ``stdin_lines`` instead of
    files. ``chunker`` defaults to ``default_embed_chunker(model_dir)``; ``embedder`` (an
    object, e.g. a caching wrapper) defaults to ``load_embedder(model_dir,
    **embedder_options)``, loaded on first need. ``embedder_options`` (pooling, normalize,
    max_length, query_prefix, passage_prefix; None = the model's own) are recorded in the
    index settings so ``query``/``explain``/``tune`` load the same embedder. Raises
    ``RagsiftError`` for a busy/foreign index or a model (or vector-changing option) mismatch,
    and (before the index is opened or created) for a path that does not exist or a bad glob.
    Pruning removes only documents whose absence is certain (``Walk.may_prune``).
    """
    import sqlite3
    import time

    from ragsift.errors import RagsiftError
    from ragsift.index.store import IndexStore

    t0 = time.perf_counter()
    summary = EmbedSummary()
    progress = progress or EmbedProgress()
    use_stdin = "-" in paths
    if use_stdin and len(paths) > 1:
        raise RagsiftError("- (chunk JSON lines on stdin) cannot be combined with other paths")
    if not use_stdin:
        from ragsift.sources import check_arguments

        check_arguments(list(paths), include or [], exclude or [])  # before the index exists

    def skip(s: Skipped) -> None:
        summary.skipped.append(s)
        if on_skip:
            on_skip(s)

    early = None
    try:
        if not use_stdin and chunker is None:
            opts = clean_embedder_options(embedder_options)
            chunker = default_embed_chunker(model_dir, max_length=opts.get("max_length"),
                                            passage_prefix=opts.get("passage_prefix"))
        early = _load_ahead(index, embedder, rebuild, engine, model_dir, batch_size,
                            embedder_options)
        store = IndexStore.open(index, "w", wait=wait)
    except BaseException:
        if early is not None:
            early.wait()
        raise
    try:
        if rebuild:
            store.clear()
        run = _Run(store, summary, embedder, model_dir, batch_size, progress,
                   embedder_options)
        run.early = early
        run.on_warning = on_warning
        run.check_model_early()
        if use_stdin:
            _ingest_records(run, stdin_lines if stdin_lines is not None else [], skip)
        elif engine == "ray":
            from ragsift.distributed import ingest_files

            ingest_files(run, paths, chunker, include, exclude, prune, skip, address=ray_address,
                         max_file_size=max_file_size, follow_links=follow_links)
        else:
            _ingest_files(run, paths, chunker, include, exclude, prune, skip,
                          max_file_size=max_file_size, follow_links=follow_links)
        run.flush()
        store.compact()
        summary.index = {k: v for k, v in store.stats().items() if k != "writer_pid"}
    except sqlite3.DatabaseError as exc:
        from ragsift.index.store import write_error

        raise write_error(index, exc) from None  # a full disk: exit 4, else "index X: ..."
    finally:
        progress.finish()
        store.close()
        if early is not None:
            early.wait()
    summary.seconds = time.perf_counter() - t0
    return summary


def _load_ahead(index, embedder, rebuild: bool, engine: str, model_dir: str | None,
                batch_size: int | None, embedder_options: dict | None) -> _ModelLoad | None:
    """Start loading the model now when the run will certainly need it: a new index (no
    file, or a 0-byte one) or a rebuilt one embeds everything it indexes (an index with
    documents loads the model only once something needs embedding, so an unchanged re-run
    never does)."""
    from ragsift.errors import RagsiftError
    from ragsift.index.store import inspect_file

    if embedder is not None or engine != "local":
        return None
    if not rebuild:
        try:
            if inspect_file(os.fspath(index)) == "ours":
                return None
        except RagsiftError:
            return None  # IndexStore.open says what is wrong with it
    return _ModelLoad(model_dir, _load_options(clean_embedder_options(embedder_options),
                                               batch_size))


def _load_options(options: dict | None, batch_size: int | None) -> dict:
    """``load_embedder`` keywords: the embedder options and the batch size."""
    out = dict(options or {})
    if batch_size is not None:
        out["batch_size"] = batch_size
    return out


def _ingest_files(run: _Run, paths, chunker, include, exclude, prune: bool, skip, *,
                  max_file_size: int | None = None, follow_links: bool = False) -> None:
    """Files → the index. The reading, hashing, parsing and chunking of the next files
    (``_file_events``) run in a producer thread while this thread embeds and commits (the
    model releases the GIL); every store access stays on this thread, in file order."""

    store, s = run.store, run.summary
    key_of_chunker = _use_chunker(run, chunker)
    found = _walk(paths, include, exclude, follow_links, skip, run.on_warning, s.ignored)
    state = store.documents_state()
    seen: set[str] = set()
    run.progress.start(len(found.files), sum(sf.size or 0 for sf in found.files))
    run.share_token_ids(chunker)
    try:
        _consume(run, _prefetched(_file_events(found.files, state, chunker, key_of_chunker,
                                               max_file_size), PREFETCH_FILES,
                                  idle=run.flush_if_due), seen, skip)
        run.flush()
    finally:
        run.share_token_ids(None)
    if prune:
        _prune(run, state, seen, paths, found)


def _consume(run: _Run, events, seen: set[str], skip) -> None:
    """The main thread's side of ``_ingest_files``: every store access, in file order."""
    store, s = run.store, run.summary
    try:
        for kind, sf, key, item in events:
            s.discovered += 1
            seen.add(key)
            size = sf.size or 0
            if kind == "unchanged":
                s.unchanged += 1
                if item is not None:
                    store.touch_document(key, **item)
                run.progress.advance(files=1, unneeded=size)
            elif kind == "skip":
                skip(item)
                run.progress.advance(files=1, unneeded=size)
            else:
                doc, write = item
                s.parsed += 1
                _report_warnings(doc, run.on_warning)
                run.add(write, work=size)
    finally:
        events.close()  # stops the producer thread at once on an error


def _use_chunker(run: _Run, chunker: Chunker) -> str:
    """The chunker's key for document rows; the index's chunker setting follows it."""
    if run.settings.get("chunker_options") != chunker.options() or \
            run.settings.get("chunker") != chunker.name:
        run.store.set_settings(chunker=chunker.name, chunker_options=chunker.options())
    return chunker_key(chunker)


def _prune(run: _Run, state: dict, seen: set[str], paths, found: Walk) -> None:
    """Remove what is certainly gone (or deliberately left out) from a folder listed in this
    run; whatever could not be read this time is kept (README, "Which files are indexed")."""
    from ragsift.sources import path_key

    roots = [path_key(p) for p in paths]
    gone = [k for k, st in state.items()
            if st.source and k not in seen and _under(k, roots) and found.may_prune(k)]
    if gone:
        run.summary.removed += run.store.remove_documents(gone)


PREFETCH_FILES = 16  # parsed files the producer may run ahead of the model


def index_records(chunker: Chunker, doc: Document) -> tuple[Document, list[dict]]:
    """The document as the chunker records it and its chunk records for the index
    (``chunk_record`` plus the ``content_hash`` that vector reuse keys on); the local and the
    Ray engine build them here."""
    doc = _prepared(chunker, doc)
    records = []
    for i, ch in enumerate(chunker.chunk(doc)):
        rec = chunk_record(doc, i, ch)
        rec["content_hash"] = content_hash(rec["context"] + rec["text"])
        records.append(rec)
    return doc, records


def _file_events(files, state, chunker, key_of_chunker,
                 max_file_size: int | None) -> Iterator[tuple]:
    """``(kind, file, key, item)`` per discovered file, in order, through the one read → parse
    loop (``_load_each``); no store access (it runs in the producer thread): ``unchanged``
    (item: ``touch_document`` keywords or None), ``skip`` (item: ``Skipped``), ``doc`` (item:
    the parsed document and its write). Parser warnings are reported by the consumer."""
    import hashlib

    from ragsift.index.store import DocumentWrite
    from ragsift.sources import path_key

    pending: list[tuple] = []  # unchanged/skip events of the files before the next document
    current: list = [None, None]  # the file being read and its key
    shas: dict[str, str] = {}

    def before_read(sf: SourceFile) -> bool:  # size and mtime unchanged: nothing to read
        key = path_key(sf.path)
        current[:] = [sf, key]
        old = state.get(key)
        if old is not None and old.chunker == key_of_chunker and old.size == sf.size \
                and old.mtime == sf.mtime:
            pending.append(("unchanged", sf, key,
                            {"path": sf.relpath} if old.path != sf.relpath else None))
            return True
        return False

    def after_read(sf: SourceFile, data: bytes) -> bool:  # same bytes: nothing to parse
        key = current[1]
        sha = shas[key] = hashlib.sha256(data).hexdigest()
        old = state.get(key)
        if old is not None and old.chunker == key_of_chunker and old.sha256 == sha:
            pending.append(("unchanged", sf, key,
                            {"path": sf.relpath, "size": sf.size, "mtime": sf.mtime}))
            return True
        return False

    def skip(sk: Skipped) -> None:
        pending.append(("skip", current[0], current[1], sk))

    for sf, _data, doc in _load_each(files, skip=skip, on_warning=None,
                                     max_file_size=max_file_size, before_read=before_read,
                                     after_read=after_read):
        yield from pending
        pending.clear()
        key = current[1]
        doc, records = index_records(chunker, doc)
        write = DocumentWrite(key=key, path=doc.path, sha256=shas.pop(key), records=records,
                              vectors=None, source=key, size=sf.size, mtime=sf.mtime,
                              format=doc.format, chunker=key_of_chunker)
        yield "doc", sf, key, (doc, write)
    yield from pending


IDLE_TICK = 0.05  # seconds between ``idle`` calls while the consumer waits for the producer


def _prefetched(items: Iterable, depth: int,
                idle: Callable[[], None] | None = None) -> Iterator:
    """``items`` produced by a daemon thread up to ``depth`` ahead of the consumer, in order;
    ``idle`` runs on the consumer's thread every ``IDLE_TICK`` seconds it waits for an item.
    An exception in the producer is raised here; when the consumer stops early (an error,
    Ctrl-C) the producer stops at its next item."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(entry) -> bool:
        while not stop.is_set():
            try:
                q.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((None, item)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            put((exc, None))
            return
        put((None, done))

    thread = threading.Thread(target=produce, name="ragsift-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            try:
                exc, item = q.get(timeout=IDLE_TICK if idle is not None else None)
            except queue.Empty:
                idle()  # type: ignore[misc]
                continue
            if exc is not None:
                raise exc
            if item is done:
                return
            yield item
    finally:
        stop.set()


def _under(path: str, roots: list[str]) -> bool:
    for root in roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def _ingest_records(run: _Run, lines: Iterable[str] | Iterable[bytes], skip) -> None:
    """Chunk JSON lines (as ``ragsift chunk`` prints them) → documents grouped by ``path``.

    ``lines`` may be bytes (``sys.stdin.buffer``): a line that is not UTF-8 is one skip."""
    import hashlib
    import json

    from ragsift.index.store import DocumentWrite
    from ragsift.sources import Skipped

    groups: dict[str, list[dict]] = {}
    indexes: dict[str, set[int]] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"stdin line {lineno}"
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                skip(Skipped(where, f"not UTF-8 (byte {exc.start}); expected records as "
                                    "printed by `ragsift chunk`"))
                continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            skip(Skipped(where, f"not JSON ({exc.msg}); expected records as printed by "
                                "`ragsift chunk`"))
            continue
        problem = _record_problem(rec)
        if problem is None and rec["index"] in indexes.get(rec["path"], ()):
            problem = f"duplicate index {rec['index']} for path {rec['path']!r}"
        if problem:
            skip(Skipped(where, problem))
            continue
        clean = {k: rec.get(k) for k in _RECORD_FIELDS}
        clean["context"] = clean["context"] or ""
        clean["headings"] = [str(h) for h in (clean["headings"] or [])]
        clean["level"] = clean["level"] or 0
        if clean["chars"] is None:
            clean["chars"] = len(clean["text"])
        clean["id"] = f"{clean['path']}#{clean['index']}"
        clean["content_hash"] = content_hash(clean["context"] + clean["text"])
        groups.setdefault(clean["path"], []).append(clean)
        indexes.setdefault(clean["path"], set()).add(clean["index"])
    state = run.store.documents_state()
    s = run.summary
    run.progress.start(len(groups), sum(len(r) for r in groups.values()))
    for path, records in groups.items():
        s.discovered += 1
        records.sort(key=lambda r: r["index"])
        sha = hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()
        key = "-:" + path
        old = state.get(key)
        if old is not None and old.sha256 == sha:
            s.unchanged += 1
            run.progress.advance(files=1, unneeded=len(records))
            continue
        s.parsed += 1
        run.add(DocumentWrite(key=key, path=path, sha256=sha, records=records, vectors=None,
                              chunker=STDIN_CHUNKER), work=len(records))


def _record_problem(rec: object) -> str | None:
    if not isinstance(rec, dict):
        return "not a JSON object; expected records as printed by `ragsift chunk`"
    for name, (types, required) in _RECORD_FIELDS.items():
        if name not in rec:
            if required:
                return f"missing field {name!r}"
            continue
        value = rec[name]
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            return f"field {name!r} must be {want}, not {type(value).__name__}"
    for name, value in rec.items():
        if name not in _RECORD_FIELDS:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and \
                not -(2**63) <= value < 2**63:
            return f"field {name!r} is out of range ({len(str(abs(value)))} digits)"
        texts = value if name == "headings" else [value]
        for t in texts:
            if isinstance(t, str) and not _is_text(t):
                return f"field {name!r} holds a lone surrogate (\\ud800-\\udfff is not text)"
    if rec["index"] < 0:
        return "field 'index' must be >= 0"
    if not rec["text"].strip():
        return "field 'text' is empty"
    return None


def _is_text(value: str) -> bool:
    """False for a string holding a lone surrogate (``"\\ud800"`` in JSON): not encodable."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
