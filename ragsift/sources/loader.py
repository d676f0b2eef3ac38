"""``load_document``: one ``SourceFile`` → one ``Document``, or ``SkipFile(reason)``.

The format comes from the extension (``formats.FORMATS``): ``.md``/``.markdown`` markdown;
``.html``/``.htm`` HTML; ``.json`` JSON; ``.jsonl``/``.ndjson`` JSON Lines; ``.pdf`` PDF;
``.rst``, ``.adoc`` and everything else plain text (binary content is refused while
decoding). Which walked files reach this function at all is ``discover``'s decision. Stdin is read as
markdown: markdown parsing of plain text is harmless and keeps headings when there are any.
Decoding warnings (a non-UTF-8 guess) travel in ``Document.warnings`` for the caller to show.
"""

from __future__ import annotations

from ragsift.errors import SkipFile
from ragsift.sources.document import Document, OffsetMap
from ragsift.sources.formats import BINARY_SUFFIXES, FORMATS, format_for, suffix_of
from ragsift.sources.reading import DEFAULT_MAX_FILE_SIZE, decode, read_bytes
from ragsift.sources.sourcefile import SourceFile

__all__ = ["BINARY_SUFFIXES", "FORMATS", "format_of", "load_document"]


def format_of(sf: SourceFile) -> str:
    if sf.path is None:
        return "markdown"
    return format_for(sf.relpath)


def load_document(
    sf: SourceFile, data: bytes | None = None, max_size: int | None = DEFAULT_MAX_FILE_SIZE
) -> Document:
    """Read and parse ``sf``; raises ``SkipFile`` with a one-line reason when unusable.

    ``data``: the file's bytes when the caller already read them (``embed`` hashes a file
    before parsing it), so the file is read once. ``max_size``: the size cap for reading."""
    suffix = suffix_of(sf.relpath)
    if sf.path is not None and suffix in BINARY_SUFFIXES:
        raise SkipFile(f"binary file ({suffix} is not a text format)")
    fmt = format_of(sf)
    if data is None:
        data = read_bytes(sf, max_size)
    source = "" if sf.path is None else str(sf.path)
    if fmt == "pdf":
        from ragsift.sources.pdf_reader import parse_pdf

        if not data:
            raise SkipFile("empty file")
        return parse_pdf(data, sf.relpath, source=source)
    text, encoding, warnings = decode(data)
    common = {"source": source, "encoding": encoding, "warnings": warnings}
    if fmt == "markdown":
        from ragsift.sources.markdown import parse_markdown

        return parse_markdown(text, sf.relpath, **common)
    if fmt == "rst":
        doc = _rst(text, sf.relpath, common)
        if doc is not None:
            return doc
        fmt = "rst"  # read as text below, with the warning _rst added
    if fmt == "html":
        from ragsift.sources.html import parse_html

        return parse_html(text, sf.relpath, **common)
    if fmt in ("json", "jsonl"):
        from ragsift.sources.json_reader import parse_json

        return parse_json(text, sf.relpath, lines_format=fmt == "jsonl", **common)
    return Document(
        text=text,
        path=sf.relpath,
        format=fmt,
        lines=OffsetMap.of_lines(text),
        **common,
    )


_NO_DOCUTILS: list[bool] = []  # warned once per process that docutils is missing


def _rst(text: str, path: str, common: dict) -> Document | None:
    """``parse_rst``, or None (the caller reads the file as text) when docutils is missing or
    cannot parse this file: one warning line either way, never a skipped file."""
    try:
        import docutils  # noqa: F401 (the parser ragsift.sources.rst drives)

        from ragsift.sources.rst import parse_rst
    except ImportError:
        if not _NO_DOCUTILS:
            _NO_DOCUTILS.append(True)
            note = (
                "docutils is not installed: .rst files are read as plain text (pip install "
                "docutils)"
            )
            common["warnings"] = (*common["warnings"], note)
        return None
    try:
        return parse_rst(text, path, **common)
    except ValueError as exc:
        common["warnings"] = (*common["warnings"], f"{exc}; read as plain text")
        return None
