"""``ragsift embed PATH... --watch``: keep an index up to date while its files change.

The loop is the ordinary incremental run, repeated:

1. take a *snapshot* of what discovery finds under the paths (``sources.walk`` with the run's
   include/exclude/follow-links rules: each document's path, size and mtime, and what it could
   not read), then run ``build_index`` once (the initial run);
2. watch the folders with ``watchfiles`` (a folder argument is watched recursively, a file
   argument through its folder) and wait for a *settled burst*: watchfiles yields the changes
   once ``step_ms`` passed with no new event (or ``debounce_ms`` after the first one), and
   events that arrive while a run is going are kept for the next burst;
3. per burst, snapshot again: equal to the last one (only ignored files changed: the index's
   own ``-wal``/``-lock`` files, editor temp files, hidden or non-document files) → no run;
   different → one ``build_index`` over the same paths, which embeds new and changed files,
   removes deleted ones and finds renamed ones by content hash (their vectors are reused).

Why a snapshot rather than the events: discovery's rules (``.gitignore``, hidden entries,
document types, globs, symlinks) are applied by the one walker that applies them, so the
watch cannot disagree with what a plain ``embed`` would index; the events only say *when* to
look. The snapshot is taken before each run, so a change made while a run reads files is seen
at the next burst, never lost. The first burst after the watcher started (or a timeout, which
proves it is live) is compared with the snapshot of the initial run, so nothing changed in the
gap between that run and the watcher's start is missed either.

Each run opens the index writer, commits per batch, and closes it: the writer lock is held only
while a run writes, so readers (``query``, ``explain``, ``ragsift mcp``) keep answering and see
the change at their next call. ``KeyboardInterrupt`` (Ctrl-C) propagates from the wait or from
inside a run; what a run had committed is kept, a batch is never half-written (``ingest.batch``).

Measured (2 cores, the bundled model; tests/test_watch.py and docs/cli.md): a run after one
file changed in a folder of 300 small files costs about what ``ragsift embed`` costs for it:
the walk, the stat-only check of the unchanged files and the commit; the model is loaded
once, by the first run that embeds, and kept for the next ones (``ingest.model.KeptModels``:
~0.3 s a run saved).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ragsift.errors import EXIT_USAGE, RagsiftError
from ragsift.ingest.request import BuildHooks, BuildRequest

if TYPE_CHECKING:
    from ragsift.ingest.request import WalkRules
    from ragsift.ingest.summary import EmbedSummary

DEBOUNCE_MS = 3000  # the longest a burst is grouped before a run starts anyway
STEP_MS = 300  # a burst is settled after this long without a new event
READY_MS = 1000  # the watcher's timeout: the catch-up check after the initial run
# With no event, the folders are listed again this often anyway: a run that failed is retried,
# and an event the OS dropped (inotify's queue overflows; a watch set up after a write) is
# caught. A listing costs ~5 ms per 300 files.
RECHECK_S = 10.0
# Files next to an index that its backend writes (SQLite's journal and WAL, the writer lock).
INDEX_COMPANIONS = ("-wal", "-shm", "-journal", "-lock")
INSTALL_HINT = "pip install 'ragsift[watch]'"


@dataclass(frozen=True)
class WatchRun:
    """One run of a watch: ``number`` 0 is the initial run; ``events`` the file events of the
    burst that started it (0 for the initial run)."""

    number: int
    summary: EmbedSummary
    events: int = 0


def watch(
    request: BuildRequest,
    hooks: BuildHooks | None = None,
    *,
    stop: Any = None,
    on_run: Callable[[WatchRun], None] | None = None,
    on_error: Callable[[RagsiftError], None] | None = None,
    debounce_ms: int = DEBOUNCE_MS,
    step_ms: int = STEP_MS,
) -> int:
    """``ragsift embed PATHS --index INDEX --watch``: the initial incremental run of
    ``request`` (a ``BuildRequest``, what ``build_index`` takes), then one incremental run per
    settled burst of changes to the documents under its paths, until ``stop`` (a
    ``threading.Event``, or a callable returning True) is set or ``KeyboardInterrupt``. The
    request's ``rebuild`` and the ``hooks``' ``progress`` apply to the initial run only; later
    runs wait for a busy writer lock (``BuildRequest.later``). ``on_run(run)``: after each run
    (a ``WatchRun``). ``on_error(exc)``: a ``RagsiftError`` of a later run (the index could not
    be written, ...): the watch goes on and the next burst tries again; without it the error
    is raised. Errors of the initial run are raised. Returns the number of runs after the
    initial one. Needs ``watchfiles`` (``pip install 'ragsift[watch]'``)."""
    if request.reads_stdin or request.stdin_lines is not None:
        raise RagsiftError("{watch} watches files and folders, not stdin (-)", param="watch")
    watcher = _Watcher(_watchfiles(), request, hooks or BuildHooks(), stop)
    seen = watcher.snapshot()
    summary = watcher.run(request, watcher.hooks)
    if on_run is not None:
        on_run(WatchRun(0, summary))
    return watcher.follow(seen, on_run, on_error, debounce_ms, step_ms)


class _Watcher:
    """One watch's state: its request, where its runs report, the model kept across runs."""

    def __init__(self, watchfiles: Any, request: BuildRequest, hooks: BuildHooks, stop: Any):
        from ragsift.ingest.model import KeptModels

        self.watchfiles = watchfiles
        self.request = request
        self.hooks = hooks
        self.paths = list(request.paths)
        self.stopped = _Stop(stop)
        self.kept = KeptModels()  # the model loads once, for the first run that embeds

    def snapshot(self) -> tuple:
        return _snapshot(self.paths, self.request.walk)

    def run(self, request: BuildRequest, hooks: BuildHooks) -> EmbedSummary:
        from ragsift.ingest.run import build_index

        return build_index(request, hooks, kept=self.kept)

    def follow(
        self,
        seen: tuple,
        on_run: Callable[[WatchRun], None] | None,
        on_error: Callable[[RagsiftError], None] | None,
        debounce_ms: int,
        step_ms: int,
    ) -> int:
        """The runs after the initial one (whose snapshot is ``seen``), one per settled burst
        whose snapshot differs from the last run's; returns how many ran."""
        later = self.request.later()
        hooks = replace(self.hooks, progress=None)  # later runs draw no progress
        runs = 0
        ready = False  # the watcher has started: the first yield compares with the initial run
        retry = False  # the last run failed: try again at the next timeout
        checked = time.monotonic()
        ignore = _event_filter(self.paths, self.request.index)

        def keep(change: Any, path: str) -> bool:
            # an event the filter drops still wakes the loop when a look at the folders is
            # due (the first after the watcher started, a failed run's retry, RECHECK_S
            # without one): a steady stream of them (each reader that opens an index inside
            # the folder creates and deletes its -wal and -shm files) holds off watchfiles'
            # timeout for as long as it lasts, and with it the look that catches an event
            # the OS never delivered
            return (
                ignore(change, path)
                or not ready
                or retry
                or (time.monotonic() - checked >= RECHECK_S)
            )

        for changes in self.watchfiles.watch(
            *_watch_roots(self.paths),
            watch_filter=keep,
            debounce=debounce_ms,
            step=step_ms,
            stop_event=self.stopped,
            rust_timeout=READY_MS,
            yield_on_timeout=True,
            raise_interrupt=True,
        ):
            if self.stopped.is_set():
                break
            if not changes and ready and not retry and time.monotonic() - checked < RECHECK_S:
                continue  # a timeout: nothing happened
            ready = True
            checked = time.monotonic()
            now = self.snapshot()
            if now == seen:
                continue  # only files discovery ignores changed
            try:
                summary = self.run(later, hooks)
            except RagsiftError as exc:
                if on_error is None:
                    raise
                on_error(exc)  # `seen` stays: the next timeout or burst tries again
                retry = True
                continue
            seen, retry = now, False
            runs += 1
            if on_run is not None:
                on_run(WatchRun(runs, summary, len(changes)))
            if self.stopped.is_set():
                break
        return runs


def _watchfiles() -> Any:
    """The ``watchfiles`` module, imported only when a watch starts."""
    try:
        import watchfiles
    except ImportError:
        raise RagsiftError(
            "{watch} needs the watchfiles package: " + INSTALL_HINT, EXIT_USAGE, param="watch"
        ) from None
    return watchfiles


class _Stop:
    """``stop`` as watchfiles' ``stop_event`` (anything with ``is_set()``): an Event, a
    callable, or None (never)."""

    def __init__(self, stop: Any) -> None:
        self._stop = stop

    def is_set(self) -> bool:
        if self._stop is None:
            return False
        if hasattr(self._stop, "is_set"):
            return bool(self._stop.is_set())
        return bool(self._stop())


def _snapshot(paths: list[str], rules: WalkRules) -> tuple:
    """What discovery finds now under ``rules``: each document's real path, size and mtime,
    and the entries it could not read (so a file becoming unreadable, or readable again,
    counts as a change). Equal snapshots: a run would have nothing to do."""
    from ragsift.sources import walk

    found = walk(paths, list(rules.include), list(rules.exclude), follow_links=rules.follow_links)
    files = sorted(
        (os.path.realpath(f.path) if f.path is not None else f.relpath, f.size, f.mtime)
        for f in found.files
    )
    skipped = sorted((s.path, s.reason) for s in found.skipped)
    return tuple(files), tuple(skipped)


def _watch_roots(paths: list[str]) -> list[str]:
    """The folders to watch: a folder argument itself, a file argument's folder (an editor
    that saves by renaming a temp file over it replaces the file, so the file itself cannot
    be watched)."""
    roots: list[str] = []
    for p in paths:
        folder = os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".")
        if folder not in roots:
            roots.append(folder)
    return roots


def _event_filter(paths: list[str], index: str) -> Callable[[Any, str], bool]:
    """watchfiles' ``watch_filter``: drop the events that cannot change what discovery finds,
    so they do not even wake the loop: the index's own files (an index inside a watched
    folder is written by every run), and entries below a watched folder inside a hidden
    folder or one discovery never walks (``.git``, ``node_modules``, ...), and hidden files
    (editor swap files) unless named as an argument. A ``.gitignore`` can change what is
    found: kept. Everything else wakes the loop, and the snapshot decides."""
    from ragsift.sources.discovery import SKIP_DIRS

    own = set()
    for spelling in {os.path.abspath(index), os.path.realpath(index)}:
        own.add(spelling)
        own.update(spelling + suffix for suffix in INDEX_COMPANIONS)
    own_dirs = tuple(p.rstrip(os.sep) + os.sep for p in own)
    roots = [r.rstrip(os.sep) + os.sep for r in _watch_roots(paths)]
    named = {os.path.abspath(p) for p in paths if not os.path.isdir(p)}  # always read

    def keep(_change: Any, path: str) -> bool:
        if path in own or path.startswith(own_dirs):
            return False
        if path in named:
            return True
        for root in roots:
            if not path.startswith(root):
                continue
            parts = path[len(root) :].split(os.sep)
            folders, name = parts[:-1], parts[-1]
            if any(p.startswith(".") or p in SKIP_DIRS for p in folders):
                continue
            if name.startswith(".") and name != ".gitignore":
                continue
            return True
        return not any(path.startswith(root) for root in roots)

    return keep
