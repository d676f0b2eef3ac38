"""The one exception type for errors a user can fix, and the documented exit codes.

Raised anywhere below ``cli``; caught once in ``ragsift.cli.main``, which prints
``ragsift: <message>`` on stderr and exits with ``exit_code`` (no traceback unless ``--debug``).
"""

from __future__ import annotations

# Exit codes are an API: documented in the README, stable across releases.
EXIT_OK = 0  # success
EXIT_NOTHING = 1  # nothing matched / nothing produced
EXIT_USAGE = 2  # usage error (bad flag, bad value, unusable index, ...)
EXIT_SKIPPED = 3  # completed, but some input files were skipped
EXIT_OUTPUT = 4  # stdout or the index could not be written (disk full, I/O error)


class RagsiftError(Exception):
    """An error the user can fix. The message is shown as-is, on one line."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class SkipFile(Exception):
    """Raised by a reader/parser: this file cannot be used; ``reason`` says why (one line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
