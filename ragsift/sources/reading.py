"""Reading bytes and decoding them to text, refusing what is not text.

Reading: only regular files are read (a FIFO only when named as an argument, e.g. ``<(cmd)``).
A file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a
file replaced by a FIFO or a device after it was listed is refused, never waited on. At most
``max_size`` bytes are read (``DEFAULT_MAX_FILE_SIZE``, ``--max-file-size``): a larger file,
or a stream that keeps going (``/dev/zero``), is skipped with its size in the reason, which
names the parameter that raises the cap in each front end's words (``too_large``).

Decoding order: a BOM (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE) decides and is stripped; NUL bytes
in the first 8 KiB mean binary; strict UTF-8; then an encoding the file declares (HTML
``<meta charset>``, the XML declaration, a ``-*- coding: x -*-`` line); then cp1252 when bytes
0x80–0x9F are all printable cp1252 characters, else latin-1. Everything after UTF-8 adds a
warning to the document ("not UTF-8; decoded as cp1252") so that a wrong guess is visible,
never silent mojibake. Offsets everywhere are in the decoded text (a stripped BOM is not
counted).
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys

from ragsift.errors import SkipFile, Worded, Words
from ragsift.sources.sourcefile import SourceFile

SNIFF = 8192
# C0 controls other than tab, newlines, form feed; DEL. A text file has next to none.
_CONTROL = frozenset([*range(0x01, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_CP1252_UNDEFINED = frozenset({0x81, 0x8D, 0x8F, 0x90, 0x9D})
_BOMS = (
    # UTF-32 first: its LE BOM starts with the UTF-16 LE BOM.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_DECLARED = (
    re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)", re.IGNORECASE),
    re.compile(rb"<\?xml[^>]*encoding\s*=\s*[\"']([A-Za-z0-9._:-]+)[\"']", re.IGNORECASE),
)
# PEP 263 / emacs `-*- coding: x -*-`, looked for in the first two lines only.
_CODING_LINE = re.compile(rb"coding[:=]\s*([-\w.]+)")

# Declared encodings that are not character sets (they can produce lone surrogates or
# execute escapes): a declaration naming one is ignored.
_NOT_CHARSETS = frozenset(
    {
        "unicode-escape",
        "raw-unicode-escape",
        "utf-7",
        "punycode",
        "idna",
        "utf-16",
        "utf-32",
        "utf-8",
    }
)

DEFAULT_MAX_FILE_SIZE = 64 * 1024 * 1024  # bytes; one input file larger than this is skipped
_READ_STEP = 1 << 20

_stdin_cache: bytes | None = None


def read_bytes(sf: SourceFile, max_size: int | None = DEFAULT_MAX_FILE_SIZE) -> bytes:
    """The file's bytes (at most ``max_size``, else ``SkipFile``); stdin is read once and
    cached, so asking again is safe."""
    global _stdin_cache
    if sf.path is None:
        if _stdin_cache is None:
            data = sys.stdin.buffer.read(-1 if max_size is None else max_size + 1)
            if max_size is not None and len(data) > max_size:
                raise SkipFile(too_large(None, max_size))
            _stdin_cache = data
        return _stdin_cache
    return read_path(sf.path, max_size, stream=sf.stream)


def read_path(
    path: str | os.PathLike,
    max_size: int | None = DEFAULT_MAX_FILE_SIZE,
    *,
    stream: bool = False,
    cap_param: str | None = "max_file_size",
) -> bytes:
    """Bytes of the regular file at ``path``; ``stream``: a FIFO named by the user is read
    (blocking, capped) too. Raises ``SkipFile`` with a one-line reason otherwise.
    ``cap_param``: the parameter that raises ``max_size`` (``too_large``; None: none does)."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    if not stream:
        flags |= os.O_NONBLOCK  # opening a FIFO must never wait for a writer
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SkipFile(f"unreadable: {os_reason(exc)}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if max_size is not None and st.st_size > max_size:
                raise SkipFile(too_large(st.st_size, max_size, cap_param))
        elif not (stream and stat.S_ISFIFO(st.st_mode)):
            raise SkipFile(f"not a regular file ({file_kind(st.st_mode)})")
        return _read_capped(fd, max_size, cap_param)
    except OSError as exc:
        raise SkipFile(f"unreadable: {os_reason(exc)}") from None
    finally:
        os.close(fd)


def _read_capped(fd: int, max_size: int | None, cap_param: str | None) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        step = _READ_STEP if max_size is None else min(_READ_STEP, max_size + 1 - total)
        block = os.read(fd, step)
        if not block:
            return b"".join(parts)
        parts.append(block)
        total += len(block)
        if max_size is not None and total > max_size:
            raise SkipFile(too_large(None, max_size, cap_param))


def too_large(size: int | None, max_size: int, cap_param: str | None = "max_file_size") -> str:
    """Why a file over the cap is skipped, naming ``cap_param``, the parameter that raises the
    cap: ``Worded``, so each front end words it (the CLI's skip line and ``--json``:
    ``--max-file-size``; the API's summary: ``max_file_size``). None (a cap no parameter
    raises: a ``.gitignore``'s): plain text, no advice."""
    values = {"cap": human_size(max_size), "size": None if size is None else human_size(size)}
    # a stream or a growing file (no size): only known to be over the cap
    what = "over the cap of {cap}" if size is None else "{size}; the cap is {cap}"
    if cap_param is None:
        return f"too large ({what.format_map(values)})"
    return Worded(Words(f"too large ({what}; {{{cap_param}}} raises it)", values))


def human_size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def parse_size(text: str) -> int:
    """``"64M"``, ``"1.5G"``, ``"500k"``, ``"1000"`` → bytes (binary multiples); ValueError."""
    raw = text.strip().lower().removesuffix("b").removesuffix("i")
    scale = 1
    if raw[-1:] in ("k", "m", "g", "t"):
        scale = 1 << (10 * ("kmgt".index(raw[-1]) + 1))
        raw = raw[:-1]
    value = float(raw)
    if not 0 <= value < float("inf"):  # also refuses nan
        raise ValueError(text)
    return int(value * scale)


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def os_reason(exc: OSError) -> str:
    """A one-line lower-case reason for an ``OSError`` (no path: the caller names the file)."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, FileNotFoundError):
        return "no such file (removed while running?)"
    return (exc.strerror or str(exc)).lower()


def decode(data: bytes) -> tuple[str, str, tuple[str, ...]]:
    """``(text, encoding, warnings)``; raises ``SkipFile`` for empty, binary or undecodable."""
    if not data:
        raise SkipFile("empty file")
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise SkipFile(f"undecodable: invalid {encoding} at byte {exc.start}") from None
            return _not_blank(text), encoding, ()
    head = data[:SNIFF]
    if b"\x00" in head:
        raise SkipFile("binary file (NUL bytes)")
    try:
        return _not_blank(data.decode("utf-8")), "utf-8", ()
    except UnicodeDecodeError:
        pass
    controls = sum(1 for b in head if b in _CONTROL)
    if controls > max(2, len(head) // 20):  # > 5 %: not a text file in any encoding
        raise SkipFile("binary file (not UTF-8, many control bytes)")
    declared = _declared_encoding(head)
    if declared == "iso8859-1":
        declared = "cp1252"  # what browsers do with a latin-1 label (WHATWG encoding spec)
    if declared and declared.replace("_", "-") not in _NOT_CHARSETS:
        try:
            text = data.decode(declared)
            text.encode("utf-8")  # no lone surrogates: every later layer needs valid text
        except (UnicodeError, LookupError):
            pass
        else:
            return _not_blank(text), declared, (f"not UTF-8; decoded as {declared} (declared)",)
    high = {b for b in data if 0x80 <= b <= 0x9F}
    encoding = "cp1252" if high and not (high & _CP1252_UNDEFINED) else "latin-1"
    text = data.decode(encoding)
    return _not_blank(text), encoding, (f"not UTF-8; decoded as {encoding}",)


def _declared_encoding(head: bytes) -> str | None:
    first_lines = b"\n".join(head.split(b"\n", 2)[:2])
    for m in (*(rx.search(head[:4096]) for rx in _DECLARED), _CODING_LINE.search(first_lines)):
        if m:
            try:
                return codecs.lookup(m.group(1).decode("ascii")).name
            except (LookupError, UnicodeDecodeError):
                return None
    return None


def _not_blank(text: str) -> str:
    if not text.strip():
        raise SkipFile("empty file (only whitespace)")
    return text


def encodable(text: str) -> str:
    """``text`` with any lone surrogate (``"\\ud800"``: from a JSON escape or a Python string;
    no decoded file holds one) replaced by U+FFFD, so it can be encoded, hashed, tokenized and
    printed. Text without one is returned as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        import re

        return re.sub("[\ud800-\udfff]", "\ufffd", text)
    return text
