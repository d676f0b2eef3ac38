"""PDF: text per page through pypdf (the optional ``ragsift[pdf]`` extra), imported lazily.

The text is the pages' text joined with a blank line; the page map starts each page at its
first character; the line map counts lines within each page (line 1 at the top of every
page), which together with the page number is how a PDF passage is cited. Scanned PDFs
(images without a text layer) have no text to extract and are skipped.

pypdf logs its repairs ("invalid pdf header", "EOF marker not found") and issues Python
warnings; both are captured while a file is parsed, so they never reach stderr: a broken PDF
is one skip line, a repaired one parses without noise.
"""

from __future__ import annotations

import io
import logging
import warnings as pywarnings
from collections.abc import Iterator
from contextlib import contextmanager

from ragsift.errors import SkipFile
from ragsift.sources.document import Document, OffsetMap

NEEDS_EXTRA = "PDF support needs the pdf extra: pip install 'ragsift[pdf]'"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _pypdf_quiet() -> Iterator[list[str]]:
    """pypdf's log records and warnings while parsing: collected, not printed."""
    logger = logging.getLogger("pypdf")
    handler = _Collect()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore")
            yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def parse_pdf(data: bytes, path: str, *, source: str = "") -> Document:
    try:
        from pypdf import PdfReader  # noqa: F401 - checked here, used in _parse
    except ImportError:
        raise SkipFile(NEEDS_EXTRA) from None
    with _pypdf_quiet():
        return _parse(data, path, source)


def _parse(data: bytes, path: str, source: str) -> Document:
    from pypdf import PdfReader

    warnings: list[str] = []
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("encrypted PDF (needs a password)")
        pages = list(reader.pages)
    except SkipFile:
        raise
    except Exception as exc:
        raise SkipFile(f"unreadable PDF: {_one_line(exc)}") from None
    texts: list[str] = []
    for number, page in enumerate(pages, 1):
        try:
            texts.append(page.extract_text() or "")
        except Exception as exc:
            warnings.append(f"page {number}: no text extracted ({_one_line(exc)})")
            texts.append("")
    if not any(t.strip() for t in texts):
        raise SkipFile("no extractable text in PDF (scanned images?)")
    parts: list[str] = []
    page_starts: list[int] = []
    line_starts: list[int] = []
    line_values: list[int] = []
    offset = 0
    for number, page_text in enumerate(texts, 1):
        if number > 1:
            parts.append("\n\n")
            offset += 2
        page_starts.append(offset)
        local = OffsetMap.of_lines(page_text)
        line_starts.extend(offset + s for s in local.starts)
        line_values.extend(local.values)
        parts.append(page_text)
        offset += len(page_text)
    return Document(
        text="".join(parts),
        path=path,
        format="pdf",
        source=source,
        encoding="pdf",
        lines=OffsetMap(tuple(line_starts), tuple(line_values)),
        pages=OffsetMap(tuple(page_starts), tuple(range(1, len(texts) + 1))),
        warnings=tuple(warnings),
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
