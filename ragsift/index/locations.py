"""Which backend a location names (no backend is imported here): a path ending in ``.lance``
or an object-store URI is a Lance index, anything else one SQLite file."""

from __future__ import annotations

import os

REMOTE_SCHEMES = ("s3://", "s3a://", "gs://", "az://", "abfs://", "memory://")


def is_lance_location(path: str | os.PathLike) -> bool:
    """True for a path ending in ``.lance`` or an object-store URI: the Lance backend."""
    p = os.fspath(path)
    return p.startswith(REMOTE_SCHEMES) or p.rstrip("/").endswith(".lance")


def is_remote(path: str) -> bool:
    """True for an object-store URI (``s3://…``)."""
    return path.startswith(REMOTE_SCHEMES)
