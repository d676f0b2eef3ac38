"""onnxruntime, imported once and kept quiet: only ragsift's lines reach stderr unless
``--debug``. Every use of onnxruntime in ragsift (``onnx.py``, ``fused.py``) imports it here."""

from __future__ import annotations

import os
from typing import Any

# Only ragsift's lines reach stderr unless --debug (issue 23). onnxruntime writes its own to
# fd 2, in colour, from C++: the one seen in practice is "Failed to persist telemetry device
# ID", printed by ``import onnxruntime`` itself when the cache dir under $HOME (or
# $XDG_CACHE_HOME) cannot be written, before any logger setting can apply. The only switch
# that acts before the import is onnxruntime's ``ORT_DISABLE_TELEMETRY``, so ragsift sets it
# (unless the user set it: ``ORT_DISABLE_TELEMETRY=0`` keeps onnxruntime's telemetry). After
# the import, the default logger and every session log errors only, unless --debug.
# (Redirecting fd 2 around the import is no answer: the model loads in a background thread
# while the main thread prints ragsift's own lines, which would be lost with it.)
ORT_QUIET = 3  # onnxruntime severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal
ORT_DEFAULT = 2


def log_severity() -> int:
    """The ``log_severity_level`` of every onnxruntime session: errors only unless --debug."""
    from ragsift.errors import debug_requested

    return ORT_DEFAULT if debug_requested() else ORT_QUIET


def onnxruntime() -> Any:
    """``import onnxruntime``, with its own stderr lines kept to errors unless --debug (see
    above). Every use of onnxruntime in ragsift imports it through here."""
    import sys

    first = "onnxruntime" not in sys.modules
    if first:
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    if first:
        ort.set_default_logger_severity(log_severity())
    return ort
