"""Named token counters: a registry the chunkers read (``tokenizer="cl100k"``) and the layers
that own a counter fill. The chunkers register their own (``cl100k``, ``chars``); the package
root (``ragsift/__init__.py``) registers ``model``, the embedder's WordPiece, whose factory
imports ``ragsift.embedders`` only when it is called. So the chunkers are handed counters and
never import what makes them (as text-splitter's ``ChunkSizer``). Imports nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FACTORIES: dict[str, Callable[[], Any]] = {}


def register_counter(name: str, factory: Callable[[], Any]) -> None:
    """``get_counter(name)`` (and ``tokenizer=name`` of every chunker) builds its counter with
    ``factory()``, once per process."""
    FACTORIES[name] = factory
