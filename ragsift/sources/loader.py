"""``load_document``: one ``SourceFile`` → one ``Document``, or ``SkipFile(reason)``.

The format comes from the extension: ``.md``/``.markdown`` markdown; ``.html``/``.htm``
HTML; ``.json`` JSON; ``.jsonl``/``.ndjson`` JSON Lines; ``.pdf`` PDF; ``.rst`` and
everything else plain text (binary content is refused while decoding). Stdin is read as
markdown: markdown parsing of plain text is harmless and keeps headings when there are any.
Decoding warnings (a non-UTF-8 guess) travel in ``Document.warnings`` for the caller to show.
"""

from __future__ import annotations

from ragsift.errors import SkipFile
from ragsift.sources.discovery import SourceFile
from ragsift.sources.document import Document, OffsetMap
from ragsift.sources.reading import decode, read_bytes

FORMATS = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl",
    ".pdf": "pdf",
    ".rst": "rst", ".txt": "text", ".text": "text",
}
# Refused by name, before reading: their bytes are containers, not text.
BINARY_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".ico", ".bmp", ".tif", ".tiff", ".zip", ".gz",
    ".tgz", ".bz2", ".xz", ".7z", ".tar", ".rar", ".docx", ".xlsx", ".pptx", ".odt", ".epub",
    ".exe", ".dll", ".so", ".dylib", ".o", ".a", ".class", ".jar", ".pyc", ".whl", ".mp3",
    ".mp4", ".wav", ".mov", ".avi", ".woff", ".woff2", ".ttf", ".otf", ".sqlite", ".db",
    ".onnx", ".npy", ".parquet",
})


def format_of(sf: SourceFile) -> str:
    if sf.path is None:
        return "markdown"
    name = sf.relpath.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return FORMATS.get(name[dot:], "text") if dot > 0 else "text"


def load_document(sf: SourceFile, data: bytes | None = None) -> Document:
    """Read and parse ``sf``; raises ``SkipFile`` with a one-line reason when unusable.

    ``data``: the file's bytes when the caller already read them (``embed`` hashes a file
    before parsing it), so the file is read once."""
    name = sf.relpath.rsplit("/", 1)[-1].lower()
    suffix = name[name.rfind("."):] if name.rfind(".") > 0 else ""
    if sf.path is not None and suffix in BINARY_SUFFIXES:
        raise SkipFile(f"binary file ({suffix} is not a text format)")
    fmt = format_of(sf)
    if data is None:
        data = read_bytes(sf)
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
