"""A long ``.rst`` file's pieces rendered by this process and one helper process at once.

Why: docutils is pure Python, so its rate (~1 s per MB of markup-dense Sphinx text) is one
core's; read as plain text the same bytes cost the tokenizer's rate, which already uses
every core. A file of ``PARALLEL_CHARS`` or more with pieces to share, on a machine with a
second CPU, is rendered from both ends at once:

- a helper process (``python -m ragsift.sources.rst``, which calls ``serve``; ~0.1 s to
  start) is given
  the pieces last first; it says which piece it takes before rendering it, then sends its
  ``(lines, line_of, heads)``;
- this process renders from the first piece on, and stops at the first piece the helper has
  taken; it then waits for the helper's results of the pieces after that, and stops it.

A piece renders the same in either process (``rst.render_piece``: its text and depth in,
markdown-shaped lines out), so the document is identical to the one-process parse (a test
compares them). Whatever goes wrong with the helper (it cannot start, dies, a piece
fails in it, the platform has no second CPU) only means this process renders the rest
itself: a piece docutils cannot parse then raises here, as in one process.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

PARALLEL_CHARS = 256 * 1024  # a smaller file is rendered here alone (the helper's start-up
# costs about what docutils takes for ~100 KB)

Rendered = tuple[list[str], list[int], list[int]]  # lines, source line of each, heading lines


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def rendered(
    parts: Sequence[tuple[str, int]],
    render: Callable[[str, int], Rendered],
    size: int,
    module: str,
    *,
    helper_first: bool = False,
) -> Iterator[Rendered]:
    """``render(text, depth)`` of every part, in order; with a helper process when ``size``
    (the file's characters) is at least ``PARALLEL_CHARS`` and a second CPU is there. The
    helper is ``python -m module``, which calls ``serve`` with the same render function.
    ``helper_first`` (for tests): wait until the helper has taken a piece (or failed)
    before rendering any here, so that both processes surely take part."""
    if size < PARALLEL_CHARS or len(parts) < 3 or cpus() < 2:
        for text, depth in parts:
            yield render(text, depth)
        return
    helper = _Helper.start(parts, module)
    if helper is not None and helper_first:
        helper.wait_taken()
    try:
        for k, (text, depth) in enumerate(parts):
            got = helper.result(k) if helper is not None and k >= helper.claimed else None
            yield got if got is not None else render(text, depth)
    finally:
        if helper is not None:
            helper.stop()


class _Helper:
    """The helper process and a thread that reads its messages."""

    def __init__(self, proc: subprocess.Popen, count: int) -> None:
        self.proc = proc
        self.count = count
        self.claimed = count  # the lowest piece the helper has taken
        self.results: dict[int, Rendered | None] = {}  # None: it failed there
        self.ended = False
        self.cond = threading.Condition()

    @classmethod
    def start(cls, parts: Sequence[tuple[str, int]], module: str) -> _Helper | None:
        """The helper: ``python -m module``, a module that calls ``serve`` with its render
        function when run as a program."""
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None
        helper = cls(proc, len(parts))
        threading.Thread(
            target=helper._send, args=(parts,), daemon=True, name="ragsift-rst-send"
        ).start()
        threading.Thread(target=helper._read, daemon=True, name="ragsift-rst-read").start()
        return helper

    def _send(self, parts: Sequence[tuple[str, int]]) -> None:
        try:
            for k in range(len(parts) - 1, -1, -1):
                pickle.dump((k, *parts[k]), self.proc.stdin, pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.close()
        except (OSError, ValueError):  # stopped (a closed pipe): nothing more to send
            pass

    def _read(self) -> None:
        try:
            while True:
                kind, k, payload = pickle.load(self.proc.stdout)
                with self.cond:
                    if kind == "take":
                        self.claimed = min(self.claimed, k)
                    else:
                        self.results[k] = payload
                    self.cond.notify_all()
        except Exception:
            with self.cond:
                self.ended = True
                self.cond.notify_all()

    def wait_taken(self) -> None:
        with self.cond:
            while self.claimed == self.count and not self.ended:
                self.cond.wait()

    def result(self, k: int) -> Rendered | None:
        """The helper's rendering of piece ``k`` (which it has taken), waiting for it; None
        when it failed there or ended first."""
        with self.cond:
            while k not in self.results and not self.ended:
                self.cond.wait()
            return self.results.pop(k, None)  # (the caller keeps it: not held twice)

    def stop(self) -> None:
        self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        self.proc.wait()


def serve(render: Callable[[str, int], Rendered]) -> None:
    """The helper's loop: render pieces as they come (last first), saying which before each;
    the parent renders one that fails here (and reports its error)."""
    out = sys.stdout.buffer
    stdin = sys.stdin.buffer
    try:
        while True:
            try:
                k, text, depth = pickle.load(stdin)
            except EOFError:
                return
            pickle.dump(("take", k, None), out, pickle.HIGHEST_PROTOCOL)
            out.flush()
            try:
                payload: Any = render(text, depth)
            except Exception:
                payload = None
            pickle.dump(("done", k, payload), out, pickle.HIGHEST_PROTOCOL)
            out.flush()
    except (KeyboardInterrupt, BrokenPipeError):  # the parent stopped it
        pass
