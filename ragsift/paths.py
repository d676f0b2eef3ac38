"""Where ragsift keeps files of its own (the user cache dir), for every layer. Imports nothing
of ragsift."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$RAGSIFT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragsift``, else ``~/.cache/ragsift``."""
    explicit = os.environ.get("RAGSIFT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "ragsift"
