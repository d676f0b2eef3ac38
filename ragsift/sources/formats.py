"""Which files are documents: the file-name suffix → format table, in one place.

``discover`` uses it to decide what a walked folder contributes by default, ``load_document``
to pick the parser. The default set is the formats ragsift parses, plus plain-text documentation
formats read as text. Anything else found while walking a folder is *ignored* (counted, no
skip line, exit code unchanged) unless ``--include`` names it; a file named as an argument is
always read. Only the standard library is imported here.
"""

from __future__ import annotations

FORMATS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    ".mdx": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".pdf": "pdf",
    ".rst": "rst",
    ".txt": "text",
    ".text": "text",
    # plain-text documentation formats, read as text
    ".adoc": "text",
    ".asciidoc": "text",
    ".org": "text",
    ".textile": "text",
    ".rdoc": "text",
    ".pod": "text",
    ".tex": "text",
}

# What reads each format, versioned. Bump a format's number whenever its reader turns the same
# bytes into other text, offsets or headings (the goldens in tests/data change with it):
# ``embed`` stores each document's reader fingerprint (``reader_fingerprint``: this number and
# the version of the library that parses the format) and re-reads exactly the documents whose
# fingerprint differs from what this ragsift produces ("3 documents re-chunked: the rst reader
# changed"), with no --rebuild.
READERS: dict[str, tuple[int, str | None]] = {
    # markdown 3: raw HTML reduced to text (0.3.0); 4: long files in pieces, a block past the
    # bound read as plain text (0.4.0); 5: read as plain text, its raw HTML still reduced
    # (0.7.0, issue 40); 6: a heading's trailing attribute list ({#id}, { #id }, {: #id .cls })
    # is left out of its title in the trail, the text unchanged (0.8.0)
    "markdown": (6, "markdown-it-py"),
    # rst 2: Sphinx roles and directives as a reader sees them (0.2.0); 3: long files in
    # pieces (footnote numbers restart per piece), past the bounds plain text (0.4.0); 4: a
    # table row's lines are those docutils numbers its cells with (rows that repeat, or
    # after a long block, were mapped to another row's line), and what docutils could not
    # parse (a malformed table, an unknown directive, a code-block with Sphinx's options)
    # keeps its text (0.5.0); 5: a ``::`` block whose first row repeats just above it points
    # at its own lines, not the earlier ones (0.6.0)
    "rst": (5, "docutils"),
    # html 2: the page's main content only: outside <main>/<article> and page chrome (nav,
    # buttons, search, footers, permalinks, breadcrumbs) are not read; a template (more
    # template syntax than text) is skipped (0.7.0, issue 41; sources/html_layout.py)
    "html": (2, None),
    "json": (1, None),
    "jsonl": (1, None),
    "pdf": (1, "pypdf"),
    "text": (1, None),
}
_FINGERPRINTS: dict[str, str] = {}


def reader_fingerprint(fmt: str) -> str:
    """``"rst 2 docutils 0.21.2"``: the reader of ``fmt`` and the library under it."""
    if fmt not in _FINGERPRINTS:
        number, library = READERS.get(fmt, (1, None))
        text = f"{fmt} {number}"
        if library is not None:
            from importlib.metadata import PackageNotFoundError, version

            try:
                text += f" {library} {version(library)}"
            except PackageNotFoundError:
                text += f" {library} -"
        _FINGERPRINTS[fmt] = text
    return _FINGERPRINTS[fmt]


# Containers, not text: refused by name before reading (also when named as an argument).
BINARY_SUFFIXES = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".webp",
        ".ico",
        ".bmp",
        ".tif",
        ".tiff",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".tar",
        ".rar",
        ".docx",
        ".xlsx",
        ".pptx",
        ".odt",
        ".epub",
        ".exe",
        ".dll",
        ".so",
        ".dylib",
        ".o",
        ".a",
        ".class",
        ".jar",
        ".pyc",
        ".whl",
        ".mp3",
        ".mp4",
        ".wav",
        ".mov",
        ".avi",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".sqlite",
        ".db",
        ".onnx",
        ".npy",
        ".parquet",
    }
)

NOT_A_DOCUMENT = "not a document type"
PDF_NEEDS_EXTRA = "PDF (needs the pdf extra: pip install 'ragsift[pdf]')"


def suffix_of(name: str) -> str:
    """The lower-cased suffix of a file name (``""`` for none or a leading-dot-only name)."""
    name = name.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


def format_for(name: str) -> str:
    """The parser for a file name: a ``FORMATS`` value, ``"text"`` for anything else."""
    return FORMATS.get(suffix_of(name), "text")


_PDF: list[bool] = []  # memo: is pypdf importable?


def _pdf_available() -> bool:
    if not _PDF:
        import importlib.util  # here, not at import: `--help` imports this module

        _PDF.append(importlib.util.find_spec("pypdf") is not None)
    return _PDF[0]


def not_a_document(name: str) -> str | None:
    """Why a walked file is ignored by default (``None``: it is a document to read)."""
    suffix = suffix_of(name)
    if suffix not in FORMATS:
        return NOT_A_DOCUMENT
    if suffix == ".pdf" and not _pdf_available():
        return PDF_NEEDS_EXTRA
    return None
