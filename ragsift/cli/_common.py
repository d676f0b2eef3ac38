"""Shared CLI plumbing: one place that turns ``RagsiftError`` into ``ragsift: msg`` + exit code.

Only ``cli`` imports typer or prints. Heavy modules are imported inside command bodies so
that ``ragsift --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import typer

from ragsift.errors import EXIT_USAGE, RagsiftError

F = TypeVar("F", bound=Callable[..., Any])

STATE = {"debug": bool(os.environ.get("RAGSIFT_DEBUG"))}


def warn(message: str) -> None:
    """One line on stderr, prefixed like every ragsift diagnostic."""
    sys.stderr.write(f"ragsift: {message}\n")
    sys.stderr.flush()


def handle_errors(func: F) -> F:
    """Catch user errors once: message on stderr, documented exit code, no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RagsiftError as exc:
            if STATE["debug"]:
                raise
            warn(exc.message)
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:
            # `ragsift chunk docs/ | head`: the reader went away; not an error.
            _silence_stdout()
            raise typer.Exit(0) from None
        except KeyboardInterrupt:
            warn("interrupted")
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as exc:  # a bug, not a user error: still one line unless --debug
            if STATE["debug"]:
                raise
            warn(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)")
            raise typer.Exit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def write_jsonl(rows: Iterable[dict]) -> int:
    """Write one compact JSON object per line to stdout; returns the number written."""
    out = sys.stdout
    n = 0
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False))
        out.write("\n")
        n += 1
    out.flush()
    return n


def stderr_console():  # -> rich.console.Console
    from rich.console import Console

    return Console(stderr=True)


def stdout_console():
    from rich.console import Console

    return Console()
