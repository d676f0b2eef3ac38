"""Reading bytes and decoding them to text, refusing what is not text.

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
import re
import sys

from ragsift.errors import SkipFile
from ragsift.sources.discovery import SourceFile

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

_stdin_cache: bytes | None = None


def read_bytes(sf: SourceFile) -> bytes:
    """The file's bytes; stdin is read once and cached, so asking again is safe."""
    global _stdin_cache
    if sf.path is None:
        if _stdin_cache is None:
            _stdin_cache = sys.stdin.buffer.read()
        return _stdin_cache
    try:
        return sf.path.read_bytes()
    except PermissionError:
        raise SkipFile("unreadable: permission denied") from None
    except IsADirectoryError:
        raise SkipFile("unreadable: is a directory") from None
    except FileNotFoundError:
        raise SkipFile("unreadable: no such file (removed while running?)") from None
    except OSError as exc:
        raise SkipFile(f"unreadable: {(exc.strerror or str(exc)).lower()}") from None


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
    if declared and declared not in ("utf-8", "utf-16", "utf-32"):
        try:
            text = data.decode(declared)
        except (UnicodeDecodeError, LookupError):
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
