"""Stage 1: find, read and parse. The one walk and the one read → parse loop of ``chunk`` and
``embed`` (local and Ray): an unusable file is one skip (one line), and the run goes on. A
walked file a reader finds is not a document once read (``errors.NotADocument``: a theme
template) is ignored as discovery ignores an image: counted by its kind, no line, never a
change of exit code; named as an argument it is a skip, as an image named as one is."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ragsift.errors import NotADocument, SkipFile
from ragsift.ingest.records import chunk_record, prepared
from ragsift.ingest.request import WalkRules
from ragsift.ingest.summary import ChunkSummary

if TYPE_CHECKING:
    from ragsift.chunkers.base import Chunker
    from ragsift.sources import Document, Skipped, SourceFile, Walk

# A parser's limit on a hostile file: that file is skipped, the run goes on.
PARSER_LIMITS = (RecursionError, ValueError, UnicodeError, OverflowError, MemoryError)


def walk(
    paths: Iterable[str],
    rules: WalkRules,
    skip: Callable[[Skipped], None],
    on_warning: Callable[[str, str], None] | None,
    ignored: dict[str, int],
) -> Walk:
    """Discovery under ``rules``, its skips and warnings reported, its ignored files counted by
    reason."""
    from ragsift.sources import walk as discover

    found = discover(
        list(paths),
        list(rules.include),
        list(rules.exclude),
        follow_links=rules.follow_links,
        root=rules.root,
    )
    for s, warning in found.notes:  # in the order they happened
        if s is not None:
            skip(s)
        elif on_warning is not None and warning is not None:
            on_warning(*warning)
    for reason, n in found.ignored_counts().items():
        ignored[reason] = ignored.get(reason, 0) + n
    return found


def named_files(paths: Iterable[str]) -> Callable[[SourceFile], bool]:
    """Whether a file is one of ``paths`` named as an argument (not found by walking a
    folder; stdin counts as named): its real path is an argument's that is not a folder."""
    names = {os.path.realpath(p) for p in paths if p != "-" and not os.path.isdir(p)}
    return lambda sf: sf.path is None or os.path.realpath(sf.path) in names


def load_each(
    files: list[SourceFile],
    *,
    skip: Callable[[Skipped], None],
    on_warning: Callable[[str, str], None] | None,
    max_file_size: int | None,
    before_read: Callable[[SourceFile], bool] | None = None,
    after_read: Callable[[SourceFile, bytes], bool] | None = None,
    ignore: Callable[[Skipped], None] | None = None,
    named: Callable[[SourceFile], bool] | None = None,
) -> Iterator[tuple[SourceFile, bytes, Document]]:
    """The one read → parse loop of ``chunk`` and ``embed``: ``(file, bytes, document)`` for
    every usable file; an unusable one is passed to ``skip`` (one line) and the loop goes on.
    ``before_read``/``after_read`` return True to pass over a file (``embed``: unchanged).
    A file that is not a document (``NotADocument``) is passed to ``ignore`` as
    ``Skipped(path, kind)`` unless ``named`` says it was named as an argument (``named_files``;
    None: none was); without ``ignore`` it is a skip."""
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
        except NotADocument as exc:
            if ignore is not None and not (named is not None and named(sf)):
                ignore(Skipped(sf.relpath, exc.kind))
            else:
                skip(Skipped(sf.relpath, exc.reason))
            continue
        except SkipFile as exc:
            skip(Skipped(sf.relpath, exc.reason))
            continue
        except PARSER_LIMITS as exc:
            skip(
                Skipped(
                    sf.relpath,
                    f"unparsable: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
                )
            )
            continue
        report_warnings(doc.path, doc.warnings, on_warning)
        yield sf, data, doc


def report_warnings(path: str, warnings, on_warning: Callable[[str, str], None] | None) -> None:
    """Decoding guesses and other parser warnings: never silent (e.g. "decoded as cp1252")."""
    if on_warning is not None:
        for message in warnings:
            on_warning(path, message)


def iter_documents(
    paths: list[str],
    *,
    on_skip: Callable[[Skipped], None] | None = None,
    summary: ChunkSummary | None = None,
    on_warning: Callable[[str, str], None] | None = None,
    **walk_rules: Any,
) -> Iterator[Document]:
    """Discover and parse files in deterministic order; unusable files are reported, not raised.

    ``walk_rules``: ``include``, ``exclude``, ``follow_links``, ``max_file_size`` (bytes per
    input file; None: the default cap), ``root`` (``request.WalkRules``). Raises
    ``RagsiftError`` (usage) for a path that does not exist or an invalid glob, before
    anything is read."""
    summary = summary if summary is not None else ChunkSummary()
    rules = WalkRules(**{k: v for k, v in walk_rules.items() if v is not None})

    def skip(s: Skipped) -> None:
        summary.skipped.append(s)
        if on_skip:
            on_skip(s)

    found = walk(paths, rules, skip, on_warning, summary.ignored)

    def count(sf: SourceFile) -> bool:
        summary.files += 1
        return False

    def ignore(s: Skipped) -> None:  # counted as discovery counts an ignored file: not a file
        summary.files -= 1
        summary.ignored[s.reason] = summary.ignored.get(s.reason, 0) + 1

    for _sf, _data, doc in load_each(
        found.files,
        skip=skip,
        on_warning=on_warning,
        max_file_size=rules.max_file_size,
        before_read=count,
        ignore=ignore,
        named=named_files(paths),
    ):
        summary.parsed += 1
        yield doc


def iter_chunks(
    paths: list[str],
    chunker: Chunker,
    *,
    summary: ChunkSummary | None = None,
    budget: int | None = None,
    **documents: Any,
) -> Iterator[dict]:
    """Yield ``chunk_record`` dicts for every chunk of every readable file under ``paths``
    (``ragsift chunk``); ``documents``: ``iter_documents``' keywords (the walk rules,
    ``on_skip``, ``on_warning``). ``budget``: chunks over it are counted in the summary."""
    summary = summary if summary is not None else ChunkSummary()
    for doc in iter_documents(paths, summary=summary, **documents):
        doc = prepared(chunker, doc)
        for i, ch in enumerate(chunker.chunk(doc)):
            summary.chunks += 1
            summary.token_counts.append(ch.tokens)
            if budget is not None and ch.tokens > budget:
                summary.over_budget += 1
            yield chunk_record(doc, i, ch)
