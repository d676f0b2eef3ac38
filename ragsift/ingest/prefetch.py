"""A producer thread in front of a consumer: the local runner reads, parses and chunks the
next files while the model embeds (it releases the GIL)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

PREFETCH_FILES = 16  # parsed files the producer may run ahead of the model
IDLE_TICK = 0.05  # seconds between ``idle`` calls while the consumer waits for the producer


def prefetched(items: Iterable, depth: int, idle: Callable[[], None] | None = None) -> Iterator:
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
        except BaseException as exc:
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
