"""Wrap functions with timers for the phase tools (``embed_phases.py``, ``cold_timeline.py``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

T0 = time.perf_counter()  # the importing tool's start (it imports this module first)


def timed(
    obj: Any,
    name: str,
    record: Callable[[float, float, str, threading.Thread], None],
    label: str | None = None,
) -> None:
    """Replace ``obj.name`` with a wrapper that calls ``record(start, end, label, thread)``
    (seconds since ``T0``) after every call, whatever the call raised."""
    f = getattr(obj, name)

    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            record(t - T0, time.perf_counter() - T0, label or name, threading.current_thread())

    setattr(obj, name, wrapper)
