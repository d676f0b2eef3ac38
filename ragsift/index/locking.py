"""The single-writer lock of an index: ``fcntl.flock`` on ``INDEX-lock`` holding the writer's PID.

Why a lock file and not SQLite's own locks: a run commits many small transactions, and
another writer must not slip in between them. ``flock`` is released by the kernel when the
process dies (``kill -9`` included), so a stale lock never needs cleaning up by hand.

The file is removed on release. Because another process may have opened the old file just
before the unlink, a locker checks after acquiring that the path still names the inode it
locked, and retries otherwise (the usual lock-file-with-unlink protocol).
Readers never take this lock: SQLite's WAL mode lets them read during a write.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time

from ragsift.errors import RagsiftError


def lock_path(index_path: str) -> str:
    return f"{index_path}-lock"


class WriterLock:
    """Exclusive, process-wide writer lock for one index file."""

    def __init__(self, index_path: str) -> None:
        self.index_path = index_path
        self.path = lock_path(index_path)
        self._fd: int | None = None

    def acquire(self, wait: bool = False) -> None:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise RagsiftError(f"cannot create the lock file {self.path}: {exc.strerror}")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise RagsiftError(f"cannot lock {self.path}: {exc.strerror}")
                if not wait:
                    pid = _read_pid(fd)
                    os.close(fd)
                    who = f"PID {pid}" if pid else "another process"
                    raise RagsiftError(
                        f"index {self.index_path} is being written by {who}; "
                        "wait for it to finish or pass --wait"
                    )
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, self.path):
                break
            # The holder removed the file after we opened it: lock the new one instead.
            os.close(fd)
            time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if _same_file(fd, self.path):
                os.unlink(self.path)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing releases the flock

    @property
    def held(self) -> bool:
        return self._fd is not None


def holder_pid(index_path: str) -> int | None:
    """PID of the process writing ``index_path`` now, or None (for messages and ``info``)."""
    path = lock_path(index_path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _read_pid(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 32, 0)
        return int(raw.decode().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _same_file(fd: int, path: str) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
