"""Approximate dense search for large Lance indexes (placeholder until measured; see below)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def use_ann(index: Any, paths: Collection[str] | None) -> bool:
    """Whether ``index`` answers dense candidates through its ANN index."""
    return False


def maintain(index: Any) -> None:
    """Build or update the ANN index where it pays (writer, from ``compact``)."""
    return None
