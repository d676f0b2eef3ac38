"""The SQLite index file itself, before and around ``IndexStore``: what a path holds
(``inspect_file``), creating a new file (``create_file``), the ``file:`` URI that names it
(``sqlite_uri``), the reader's connection (``connect_reader``, also where the user cannot
write), and SQLite errors as one ``RagsiftError`` line (``corrupt``, ``write_error``).

Used by ``store.py`` (which re-exports these names) and ``store_write.py``; imports neither.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from typing import Any

from ragsift.errors import RagsiftError, Words
from ragsift.index import migrations
from ragsift.index.backend import rebuild_action
from ragsift.index.locking import file_kind, holder_pid

SQLITE_MAGIC = b"SQLite format 3\x00"


def inspect_file(path: str) -> str:
    """``"missing"``, ``"empty"`` (0 bytes) or ``"ours"``; raises for anything else.

    Reads the 100-byte SQLite header only, so a foreign file is never opened by SQLite
    (which could replay or create journals next to it).
    """
    try:
        st = os.stat(path)  # a symlink to a regular file is fine; its target is the index
    except FileNotFoundError:
        if os.path.lexists(path):
            raise RagsiftError(
                f"{path} is a symbolic link to a missing file; refusing to replace it"
            ) from None
        return "missing"
    except OSError as exc:
        raise RagsiftError(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        # never opened: reading a FIFO blocks, a device may have no end; nothing is replaced
        raise RagsiftError(
            f"{path} is {file_kind(st.st_mode)}, not an index file; refusing to touch it"
        )
    if st.st_size == 0:
        return "empty"
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise RagsiftError(f"cannot read {path}: {exc.strerror}") from None
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        raise RagsiftError(
            f"{path} is not a ragsift index (not an SQLite database); refusing to touch it"
        )
    if int.from_bytes(head[68:72], "big") != migrations.APPLICATION_ID:
        raise RagsiftError(
            f"{path} is an SQLite database but not a ragsift index; refusing to touch it"
        )
    return "ours"


def create_file(path: str) -> None:
    """Build a new, fully migrated index next to ``path`` and rename it into place.

    So a run killed while creating the index leaves either no index or a complete empty
    one, never a half-initialised file. (Caller holds the writer lock.)
    """
    import glob

    for stale in glob.glob(glob.escape(path) + ".creating-*"):  # from a killed creator
        with contextlib.suppress(OSError):
            os.unlink(stale)
    tmp = f"{path}.creating-{os.getpid()}"
    try:
        db = sqlite3.connect(sqlite_uri(tmp, "rwc"), uri=True, isolation_level=None)
        try:
            db.execute(f"PRAGMA page_size = {migrations.PAGE_SIZE}")
            db.execute(f"PRAGMA application_id = {migrations.APPLICATION_ID}")
            migrations.migrate(db)
            # WAL from the start: a writer sets nothing on a file it opens until it writes
            db.execute("PRAGMA journal_mode = WAL").fetchone()
        finally:
            db.close()
        os.replace(tmp, path)
    except BaseException:  # e.g. a full disk: leave nothing behind
        for leftover in (tmp, f"{tmp}-journal", f"{tmp}-wal", f"{tmp}-shm"):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
        raise


def sqlite_uri(path: str, mode: str, **params: int) -> str:
    """A ``file:`` URI that names exactly ``path``, whatever characters it holds.

    SQLite reads ``?`` and ``#`` in a URI as the start of parameters and a fragment and
    decodes ``%XX``; so the absolute path is percent-encoded byte for byte (``a?b.db`` must
    never open ``a``). ``mode``: ``ro``, ``rw`` or ``rwc``; ``params`` e.g. ``immutable=1``.
    """
    from urllib.parse import quote

    encoded = quote(os.fsencode(os.path.abspath(path)), safe="/")
    query = "&".join([f"mode={mode}", *(f"{k}={v}" for k, v in params.items())])
    return f"file:{encoded}?{query}"


_READONLY_CODES = (8, 14)  # SQLITE_READONLY, SQLITE_CANTOPEN (primary result codes)


def connect_reader(path: str) -> sqlite3.Connection:
    """A connection for reading ``path``, also where the user cannot write.

    - File and folder writable: a normal connection with ``query_only`` (it may create the
      ``-shm``/``-wal`` files SQLite's WAL mode needs, as any reader does).
    - Otherwise ``mode=ro``: works where ``PATH-shm``/``PATH-wal`` exist or can be created.
    - Where they cannot (a folder the user cannot write) SQLite cannot coordinate with a
      writer, so the file is read as ``immutable``, which is only right when nothing is
      pending in ``PATH-wal`` and no writer holds the lock; otherwise one line says exactly
      what is missing. A healthy file is never reported as corrupt.
    """
    folder = os.path.dirname(os.path.abspath(path))
    kw: dict[str, Any] = {"uri": True, "isolation_level": None, "check_same_thread": False}
    if os.access(path, os.W_OK) and os.access(folder, os.W_OK):
        db = sqlite3.connect(sqlite_uri(path, "rw"), **kw)
        db.execute("PRAGMA query_only = 1")
        return db
    try:
        db = sqlite3.connect(sqlite_uri(path, "ro"), **kw)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens -shm/-wal
        except BaseException:
            db.close()
            raise
        return db
    except sqlite3.OperationalError as exc:
        if _result_code(exc) not in _READONLY_CODES:
            raise
    wal = f"{path}-wal"
    pending = os.path.exists(wal) and os.path.getsize(wal) > 0
    pid = holder_pid(path)  # a lock file exists only while (or if) a writer runs
    shm = f"{os.path.basename(path)}-shm"
    if pid:
        raise RagsiftError(
            f"cannot read index {path} read-only while PID {pid} writes it: reading alongside "
            f"a writer needs write access to {folder} (SQLite creates {shm} there); retry "
            "when the write is done"
        )
    if pending:
        raise RagsiftError(
            f"cannot read index {path} read-only: {wal} holds commits not yet copied into "
            f"the index file (a write was interrupted), and reading them needs write access "
            f"to {folder} (SQLite creates {shm} there); any ragsift command run once by a "
            "user who can write there folds them in"
        )
    db = sqlite3.connect(sqlite_uri(path, "ro", immutable=1), **kw)
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return db


def _result_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return code & 0xFF
    text = str(exc)
    if "readonly" in text:
        return 8
    if "unable to open" in text:
        return 14
    if "disk is full" in text:
        return 13
    if "disk I/O error" in text:
        return 10
    if "malformed" in text:
        return 11
    if "not a database" in text:
        return 26
    return None


def check_writable(path: str, state: str) -> None:
    """Refuse, before taking the lock, to write an index the user cannot write."""
    folder = os.path.dirname(os.path.abspath(path))
    if state != "missing" and not os.access(path, os.W_OK):
        raise RagsiftError(
            f"index {path} is read-only (no write permission); `embed` must write it "
            "(query, explain and info read it as it is)"
        )
    if not os.path.isdir(folder):
        raise RagsiftError(f"cannot create index {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise RagsiftError(
            f"cannot write in {folder} (no write permission): the index, its lock and its "
            "write-ahead log live there"
        )


def corrupt(path: str, exc: Exception) -> RagsiftError:
    code = _result_code(exc) if isinstance(exc, sqlite3.Error) else None
    if code in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB: the file itself is damaged
        return RagsiftError(
            Words(
                "index {at} is corrupt ({exc}); it was not modified; build it again with "
                "`{rebuild}`",
                {"at": path, "exc": exc, "rebuild": rebuild_action("INDEX")},
            )
        )
    if code in _WRITE_FAILED:
        return write_error(path, exc)
    return RagsiftError(f"cannot use index {path}: {exc}; it was not modified")


_WRITE_FAILED = (13, 10)  # SQLITE_FULL, SQLITE_IOERR (a full disk, a file-size limit, EIO)


def write_error(path: str, exc: Exception) -> RagsiftError:
    """The one line for an SQLite error while writing ``path``: a full disk (or a file-size
    limit, or an I/O error) is ``EXIT_OUTPUT`` and says that committed batches are kept;
    anything else is a plain ``index PATH: error`` (exit 2)."""
    from ragsift.errors import EXIT_OUTPUT

    code = _result_code(exc) if isinstance(exc, sqlite3.Error) else None
    if code in _WRITE_FAILED:
        return RagsiftError(
            f"cannot write index {path}: {exc}; every batch committed before is kept, the "
            "next run continues from there",
            EXIT_OUTPUT,
        )
    return RagsiftError(f"index {path}: {exc}")
