"""Finding files, reading bytes, parsing them into a ``Document`` with provenance.

Contract used by the pipeline (see docs/CONTRACTS.md):

- ``discover(paths, include=[], exclude=[]) -> (list[SourceFile], list[Skipped])``; ``walk(...)
  -> Walk`` adds what was ignored (not a document type), warnings, and which folders were
  listed (``Walk.may_prune(path_key)``); ``check_arguments`` refuses missing paths and bad globs
- ``load_document(source_file) -> Document`` (raises ``ragsift.errors.SkipFile``); decoding
  guesses are reported in ``Document.warnings``
- ``read_bytes(source_file, max_size) -> bytes`` (regular files only, size-capped; stdin read
  once and cached)
- ``json_units(value, max=None, max_length=None)`` / ``text_units(text, max=12,
  max_length=200)``: citable units for explanations
- ``render_markdown_tables(doc) -> Document``: GFM tables as numbered lists (markdown chunker)

Only the standard library is imported here; markdown-it-py and pypdf load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragsift.sources.discovery import (
        Walk,
        check_arguments,
        discover,
        path_key,
        path_keys,
        printable,
        walk,
    )
    from ragsift.sources.document import Document, OffsetMap
    from ragsift.sources.loader import load_document
    from ragsift.sources.reading import DEFAULT_MAX_FILE_SIZE, parse_size, read_bytes
    from ragsift.sources.sourcefile import Skipped, SourceFile
    from ragsift.sources.units import json_units, text_units

# Names resolve on first use (PEP 562), so importing one small module of this package (e.g.
# ``sources.formats`` for ``--help`` text) does not import the readers.
_HOME = {
    **dict.fromkeys(
        ("Walk", "check_arguments", "discover", "path_key", "path_keys", "printable", "walk"),
        "discovery",
    ),
    "Skipped": "sourcefile",
    "SourceFile": "sourcefile",
    "Document": "document",
    "OffsetMap": "document",
    "load_document": "loader",
    "DEFAULT_MAX_FILE_SIZE": "reading",
    "parse_size": "reading",
    "read_bytes": "reading",
    "json_units": "units",
    "text_units": "units",
}


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'ragsift.sources' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ragsift.sources.{home}"), name)
    globals()[name] = value
    return value


def render_markdown_tables(doc: Document) -> Document:
    """GFM tables → numbered ``header: value`` lists; see ``sources.markdown``."""
    from ragsift.sources.markdown import render_markdown_tables as render

    return render(doc)


__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "Document",
    "OffsetMap",
    "Skipped",
    "SourceFile",
    "Walk",
    "check_arguments",
    "discover",
    "json_units",
    "load_document",
    "parse_size",
    "path_key",
    "path_keys",
    "printable",
    "read_bytes",
    "render_markdown_tables",
    "text_units",
    "walk",
]
