"""Finding files, reading bytes, parsing them into a ``Document`` with provenance.

Contract used by the pipeline:
- ``discover(paths, include=[], exclude=[]) -> (list[SourceFile], list[Skipped])``
- ``load_document(source_file) -> Document`` (raises ``ragsift.errors.SkipFile``)
"""

from ragsift.sources.document import Document, OffsetMap

__all__ = ["Document", "OffsetMap"]
