"""The single-writer lock of an index: ``fcntl.flock`` on ``INDEX-lock`` holding the writer's PID.

Why a lock file and not SQLite's own locks: a run commits many small transactions, and
another writer must not slip in between them. ``flock`` is released by the kernel when the
process dies (``kill -9`` included), so a stale lock never needs cleaning up by hand.

The file is removed on release. Because another process may have opened the old file just
before the unlink, a locker checks after acquiring that the path still names the inode it
locked, and retries otherwise (the usual lock-file-with-unlink protocol).
Readers never take this lock: SQLite's WAL mode lets them read during a write.

Safety of the lock file itself (we write our PID into it, so it must be ours): it is created
with ``O_CREAT | O_EXCL | O_NOFOLLOW``; an existing one (left by a killed writer, or held by a
live one) is opened with ``O_NOFOLLOW | O_NONBLOCK`` and used only if it is a regular file
with one link whose content is empty or a PID line. A symlink, FIFO, device, directory,
hard link or a file with other content is refused with a clear error and left untouched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable

from ragsift.errors import RagsiftError, Words

_PID_LINE = re.compile(rb"\d{0,20}\n?")
_OPEN_EXISTING = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def lock_path(index_path: str) -> str:
    return f"{index_path}-lock"


class WriterLock:
    """Exclusive, process-wide writer lock for one index file."""

    def __init__(self, index_path: str) -> None:
        self.index_path = index_path
        self.path = lock_path(index_path)
        self._fd: int | None = None

    def acquire(self, wait: bool | Callable[[int | None], None] = False) -> None:
        """Take the lock. ``wait``: False fails at once when another writer holds it; True
        (or a callable, first called with the holder's PID, or None if unknown, so the
        caller can say who it is waiting for) blocks until the holder is done."""
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise RagsiftError(f"cannot lock {self.path}: {exc.strerror}") from None
                pid = _read_pid(fd)
                if not wait:
                    os.close(fd)
                    who = f"PID {pid}" if pid else "another process"
                    raise RagsiftError(
                        Words(
                            "index {at} is being written by {who}; wait for it to finish or "
                            "pass {wait=on}",
                            {"at": self.index_path, "who": who, "on": True},
                        )
                    ) from None
                if callable(wait):
                    wait(pid)
                    wait = True  # say it once, not on every retry
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, self.path):
                break
            # The holder removed the file after we opened it: lock the new one instead.
            os.close(fd)
            time.sleep(0.01)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as exc:  # a full disk (or a file-size limit) before anything began
            from ragsift.errors import EXIT_OUTPUT

            with contextlib.suppress(OSError):
                os.unlink(self.path)  # ours (locked): nothing is left behind
            os.close(fd)
            raise RagsiftError(
                f"cannot write index {self.index_path}: {exc.strerror or exc} "
                f"(the lock file {self.path} could not be written); nothing "
                "was changed",
                EXIT_OUTPUT,
            ) from None
        self._fd = fd

    def _open(self) -> int:
        """A descriptor of the lock file: newly created, or an existing one proven ours."""
        try:
            return os.open(
                self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
            )
        except FileExistsError:
            pass
        except OSError as exc:
            raise RagsiftError(f"cannot create the lock file {self.path}: {exc.strerror}") from None
        try:  # look before opening: opening a device or FIFO can have effects of its own
            st = os.lstat(self.path)
            if not stat.S_ISREG(st.st_mode):
                raise RagsiftError(_not_ours(self.path, file_kind(st.st_mode)))
            fd = os.open(self.path, _OPEN_EXISTING)
        except FileNotFoundError:  # the holder released it meanwhile: create it afresh
            return self._open()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise RagsiftError(_not_ours(self.path, "a symbolic link")) from None
            if exc.errno in (errno.ENXIO, errno.EISDIR):
                raise RagsiftError(_not_ours(self.path, "not a regular file")) from None
            raise RagsiftError(f"cannot open the lock file {self.path}: {exc.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise RagsiftError(_not_ours(self.path, file_kind(st.st_mode)))
            if st.st_nlink != 1:
                raise RagsiftError(_not_ours(self.path, f"a file with {st.st_nlink} hard links"))
            if st.st_size > 32 or not _PID_LINE.fullmatch(os.pread(fd, 33, 0)):
                raise RagsiftError(_not_ours(self.path, "a file that does not hold a PID"))
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

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
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _read_pid(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _not_ours(path: str, what: str) -> str:
    return (
        f"the lock file {path} is {what}, not a ragsift lock; refusing to use it "
        "(remove it if no ragsift run is writing the index)"
    )


def file_kind(mode: int) -> str:
    """ "a FIFO", "a directory", ... for a ``st_mode`` that is not a regular file."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _read_pid(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 32, 0)
        return int(raw.decode().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _same_file(fd: int, path: str) -> bool:
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
