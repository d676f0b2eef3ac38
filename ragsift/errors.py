"""The one exception type for errors a user can fix, and the documented exit codes.

Raised anywhere below ``cli``; caught once in ``ragsift.cli.main``, which prints
``ragsift: <message>`` on stderr and exits with ``exit_code`` (no traceback unless ``--debug``).
"""

from __future__ import annotations

import os
import sys

# Exit codes are an API: documented in the README, stable across releases.
EXIT_OK = 0  # success
EXIT_NOTHING = 1  # nothing matched / nothing produced
EXIT_USAGE = 2  # usage error (bad flag, bad value, unusable index, ...)
EXIT_SKIPPED = 3  # completed, but some input files were skipped
EXIT_OUTPUT = 4  # stdout or the index could not be written (disk full, I/O error)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


def debug_requested() -> bool:
    """Whether the user asked for ``--debug`` (or set ``RAGSIFT_DEBUG``): then the libraries
    under ragsift (onnxruntime, Lance) may write their own lines to stderr; otherwise
    only ragsift's lines reach it. Read without importing the CLI."""
    cli = sys.modules.get("ragsift.cli._common")
    return bool(os.environ.get("RAGSIFT_DEBUG") or (cli is not None and cli.STATE.get("debug")))


class RagsiftError(Exception):
    """An error the user can fix. The message is shown as-is, on one line.

    ``param``: the argument the error is about (its Python API name, ``"k"``), for an error
    about an argument. Its message is then a template whose ``{name}`` fields are parameter
    names (``"{k} must be at least 1 (got {got})"``, ``values={"got": 0}`` fills the rest):
    ``message`` writes them as the API names them (``k must be at least 1 (got 0)``), and a
    front end writes them in its own words with ``worded`` (the CLI: ``-k must be ...``)."""

    def __init__(
        self,
        message: str,
        exit_code: int = EXIT_USAGE,
        *,
        param: str | None = None,
        values: dict[str, object] | None = None,
    ) -> None:
        self.template = message
        self.param = param
        self.values = dict(values or {})
        self.exit_code = exit_code
        self.message = self.worded(str)
        super().__init__(self.message)

    def worded(self, name_of) -> str:
        """The message with each parameter name written as ``name_of(name)``."""
        if self.param is None:
            return self.template
        return self.template.format_map(_Fields(self.values, name_of))


class _Fields(dict):
    """A template's fields: a value given with the error, else a parameter name."""

    def __init__(self, values: dict[str, object], name_of) -> None:
        super().__init__(values)
        self.name_of = name_of

    def __missing__(self, name: str) -> str:
        return self.name_of(name)


class SkipFile(Exception):
    """Raised by a reader/parser: this file cannot be used; ``reason`` says why (one line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
