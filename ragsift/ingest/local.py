"""The local runner: the stages of ``embed`` wired on this machine. A producer thread walks
the change plan, reads, parses and chunks (``file_events``); this thread consumes the events in
file order, batches, embeds and commits (every index access stays on it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ragsift.ingest.load import load_each, named_files, report_warnings, walk
from ragsift.ingest.plan import ChangePlan
from ragsift.ingest.prefetch import PREFETCH_FILES, prefetched
from ragsift.ingest.records import STDIN_CHUNKER, index_records, records_by_path, records_sha256
from ragsift.sources.scripts import count_scripts

if TYPE_CHECKING:
    from ragsift.ingest.batch import Run
    from ragsift.ingest.request import BuildRequest
    from ragsift.sources import Skipped, SourceFile


def ingest_files(run: Run, request: BuildRequest, chunker: Any) -> ChangePlan:
    """The request's files → the index; returns the run's change plan."""
    s = run.summary
    rules = request.walk
    key_of_chunker = run.use_chunker(chunker)
    found = walk(request.paths, rules, run.skip, run.on_warning, s.ignored)
    plan = ChangePlan(run.store.documents_state(), key_of_chunker, run.root)
    run.progress.start(len(found.files), sum(sf.size or 0 for sf in found.files))
    # (no token-id handover from the chunker: the embedder embeds each chunk's units, texts
    # the chunker never counted, ``embedders.evidence``)
    events = prefetched(
        file_events(found.files, plan, chunker, rules.max_file_size, named_files(request.paths)),
        PREFETCH_FILES,
        idle=run.flush_if_due,
    )
    _consume(run, events)
    run.flush()
    if request.prune:
        run.remove(plan.gone(list(request.paths), found))
    return plan


def _consume(run: Run, events) -> None:
    """The main thread's side: every index access, in file order."""
    s = run.summary
    try:
        for kind, sf, item in events:
            s.discovered += 1
            size = sf.size or 0
            if kind == "unchanged":
                run.unchanged(item, work=size)
            elif kind == "skip":
                run.skip(item)
                run.progress.advance(files=1, unneeded=size)
            elif kind == "ignore":
                run.ignore(item)
                run.progress.advance(files=1, unneeded=size)
            else:
                doc, write = item
                s.parsed += 1
                count_scripts(doc.text, s.scripts)  # for the one script warning (CLI)
                report_warnings(doc.path, doc.warnings, run.on_warning)
                run.add(write, work=size)
    finally:
        events.close()  # stops the producer thread at once on an error


def file_events(
    files: list[SourceFile],
    plan: ChangePlan,
    chunker: Any,
    max_file_size: int | None,
    named: Callable[[SourceFile], bool] | None = None,
) -> Iterator[tuple]:
    """``(kind, file, item)`` per discovered file, in order, through the one read → parse
    loop (``load_each``) and the change plan; no index access (it runs in the producer
    thread): ``unchanged`` (item: ``plan.Unchanged``), ``skip`` (item: ``Skipped``),
    ``ignore`` (item: ``Skipped`` with the kind of non-document it is; ``named``: which files
    were named as arguments, skips instead), ``doc`` (item: the parsed document and its
    ``DocumentWrite``). Parser warnings are reported by the consumer."""
    import hashlib

    from ragsift.index.backend import DocumentWrite

    pending: list[tuple] = []  # unchanged/skip events of the files before the next document
    current: list = [None, None]  # the file being read and its key
    shas: dict[str, str] = {}

    def before_read(sf: SourceFile) -> bool:
        key = plan.key(sf)
        current[:] = [sf, key]
        u = plan.by_stat(sf, key)
        if u is not None:
            pending.append(("unchanged", sf, u))
        return u is not None

    def after_read(sf: SourceFile, data: bytes) -> bool:
        key = current[1]
        sha = shas[key] = hashlib.sha256(data).hexdigest()
        u = plan.by_bytes(sf, key, sha)
        if u is not None:
            pending.append(("unchanged", sf, u))
        return u is not None

    def skip(sk: Skipped) -> None:
        pending.append(("skip", current[0], sk))

    def ignore(sk: Skipped) -> None:
        plan.not_a_document(current[1])
        pending.append(("ignore", current[0], sk))

    for sf, _data, doc in load_each(
        files,
        skip=skip,
        on_warning=None,
        max_file_size=max_file_size,
        before_read=before_read,
        after_read=after_read,
        ignore=ignore,
        named=named,
    ):
        yield from pending
        pending.clear()
        key = current[1]
        doc, records = index_records(chunker, doc)
        plan.note_written(key, doc.path)
        write = DocumentWrite(
            key=key,
            path=doc.path,
            sha256=shas.pop(key),
            records=tuple(records),
            vectors=None,
            source=key,
            size=sf.size,
            mtime=sf.mtime,
            format=doc.format,
            chunker=plan.pipeline(sf),
        )
        yield "doc", sf, (doc, write)
    yield from pending


def ingest_records(run: Run, lines: Iterable[str] | Iterable[bytes]) -> ChangePlan:
    """Chunk JSON lines (``ragsift chunk … | ragsift embed -``) → the index, one document per
    ``path``; returns the run's change plan."""
    from ragsift.index.backend import DocumentWrite

    groups = records_by_path(lines, run.skip)
    plan = ChangePlan(run.store.documents_state(), STDIN_CHUNKER)
    s = run.summary
    run.progress.start(len(groups), sum(len(r) for r in groups.values()))
    for path, records in groups.items():
        s.discovered += 1
        sha = records_sha256(records)
        key = "-:" + path
        if plan.records_unchanged(key, sha):
            s.unchanged += 1
            run.progress.advance(files=1, unneeded=len(records))
            continue
        s.parsed += 1
        run.add(
            DocumentWrite(
                key=key,
                path=path,
                sha256=sha,
                records=tuple(records),
                vectors=None,
                chunker=STDIN_CHUNKER,
            ),
            work=len(records),
        )
    return plan
