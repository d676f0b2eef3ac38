"""What discovery hands the readers: ``SourceFile`` (a file to read) and ``Skipped`` (an input
that gave no document, and why).

The bottom of ``sources``: it imports nothing of the package, so ``reading`` (which reads a
``SourceFile``), ``globs`` (which reads ``.gitignore`` files through ``reading``) and
``discovery`` (which makes them) import in one direction: discovery → globs → reading →
sourcefile. ``ragsift.sources`` and ``ragsift.sources.discovery`` still export both names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourceFile:
    """A file to parse. ``path is None`` and ``relpath == "-"`` means stdin. ``stream``: a
    FIFO named as an argument, read as a stream."""

    path: Path | None
    relpath: str
    size: int
    mtime: float
    stream: bool = False

    @property
    def is_stdin(self) -> bool:
        return self.path is None


@dataclass(frozen=True)
class Skipped:
    """An input that produced no document, and why (one line)."""

    path: str
    reason: str
