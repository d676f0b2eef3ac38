"""The Ray runner's filter for one line of Ray's own: Ray's C++ core worker writes a notice on
the driver's file descriptor 2 each time Ray Data starts an actor pool; ``restart_notice_dropped``
drops it and passes every other byte on (``ingest.ray``'s ``Pool.batches`` runs inside it)."""

from __future__ import annotations

import contextlib
import os
import re

# Ray's C++ core worker logs this at ERROR on the driver's stderr each time Ray Data starts an
# actor pool: Ray Data hands its actors their function through the object store, and Ray
# warns that a restart could fail if that object were lost (ray-project/ray#53727, #57733).
# Here it is held by this process for the whole stage, so restarts work (a killed actor is
# retried: tests/test_ray_engine.py); the line is noise on every run (issue 41, item 6).
RESTART_NOTICE = re.compile(
    rb"core_worker\.cc:\d+: Actor with class name: .* has constructor arguments in the "
    rb"object store and max_restarts > 0"
)


@contextlib.contextmanager
def restart_notice_dropped():
    """While inside, the driver's file descriptor 2 (where Ray's C++ code writes, out of
    Python's reach) goes through a pipe that drops ``RESTART_NOTICE`` lines and passes every
    other byte on at once, in order: real errors still show. Nothing done where fd 2 cannot
    be duplicated."""
    import sys
    import threading

    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:
        yield
        return

    def pump() -> None:
        pending = b""
        while True:
            try:
                data = os.read(read_end, 65536)
            except OSError:
                break
            if not data:
                break
            *lines, pending = (pending + data).split(b"\n")
            out = b"".join(ln + b"\n" for ln in lines if not RESTART_NOTICE.search(ln))
            if pending and not pending.startswith(b"["):  # only a log line is held back
                out, pending = out + pending, b""
            if out:
                with contextlib.suppress(OSError):
                    os.write(saved, out)
        if pending and not RESTART_NOTICE.search(pending):
            with contextlib.suppress(OSError):
                os.write(saved, pending)
        os.close(read_end)

    thread = threading.Thread(target=pump, name="ray-stderr", daemon=True)
    thread.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer gone: the pump ends
        thread.join(timeout=5)
        if not thread.is_alive():  # else a child still holds the pipe: the pump keeps it
            os.close(saved)
