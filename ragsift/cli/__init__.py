"""The ``ragsift`` command line. One module per subcommand; each registers itself here.

Exit codes (an API, see README): 0 success, 1 nothing matched/produced, 2 usage error,
3 completed with some files skipped, 4 output or index could not be written (disk full).
"""

from __future__ import annotations

import os
import sys

import typer

from ragsift.cli._coerce import install as _install_light_coercion
from ragsift.cli._common import (
    PROJECT_COMMANDS,
    STATE,
    install_interrupt_handler,
    project_defaults,
    run_app,
)
from ragsift.cli._help import HelpCommand, HelpGroup, TyperCommand
from ragsift.version import __version__

_install_light_coercion()  # option values without importing pydantic (cli/_coerce.py)

app = typer.Typer(
    name="ragsift",
    cls=HelpGroup,
    help="Turn folders of documents into a searchable embedding index, and show why a query "
    "found what it found.\n\nExample: ragsift chunk docs/ | jq .text",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragsift {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool | None = typer.Option(
        None,
        "--version",
        "-V",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback for errors."),
) -> None:
    STATE["debug"] = STATE["debug"] or debug


from ragsift.cli import chunk as _chunk

_chunk.register(app)

for _name in (
    "embed",
    "info",
    "ls",
    "rm",
    "query",
    "explain",
    "tune",
    "calibrate",
    "evaluate",
    "mcp",
    "init",
):
    # Subcommands land one issue at a time; each module exposes ``register(app)``.
    try:
        _mod = __import__(f"ragsift.cli.{_name}", fromlist=["register"])
    except ModuleNotFoundError as _exc:
        if _exc.name != f"ragsift.cli.{_name}":
            raise
        continue
    _mod.register(app)

for _info in app.registered_commands:  # one help style for every subcommand (cli/_help.py)
    if _info.cls in (None, TyperCommand):
        _info.cls = HelpCommand


# Commands whose only files are stdout/stderr and an index they have committed and closed
# before they return: once their output is flushed, the process ends without the
# interpreter's teardown (``run_app(fast_exit=)``).
FAST_EXIT = frozenset({"chunk", "query", "explain", "info", "ls", "embed", "rm"})


def main(*, fast_exit: bool = True) -> None:
    """The ``ragsift`` console script (and ``python -m ragsift``). ``fast_exit=False`` for a
    caller that goes on after ``SystemExit`` (tests calling it in-process)."""
    restore = install_interrupt_handler()  # a second Ctrl-C: exit 130 at once (cli/_common.py)
    try:
        _main(fast_exit=fast_exit)
    finally:
        if not fast_exit:  # a caller that goes on: its own handler back
            restore()


def _main(*, fast_exit: bool) -> None:
    every = app.registered_commands
    app.registered_commands = invoked_commands(sys.argv[1:])
    names = {info.name for info in app.registered_commands}
    extra = {}
    if names <= PROJECT_COMMANDS and len(names) == 1 and not _asks_help(sys.argv[1:]):
        project = _project()
        if project is not None:
            STATE["project"] = project
            extra["default_map"] = {name: project_defaults(project) for name in names}
    try:
        run_app(app, fast_exit=fast_exit and len(names) == 1 and names <= FAST_EXIT, **extra)
    finally:
        app.registered_commands = every


def _asks_help(args: list[str]) -> bool:
    return any(a in ("-h", "--help") for a in args)


def _project():
    """The project file governing the current folder; a file that cannot be used is one line
    naming it, the key and the line, and exit 2."""
    from ragsift.api import find_project
    from ragsift.cli._common import flag_name, warn
    from ragsift.errors import EXIT_USAGE, RagsiftError

    try:
        return find_project()
    except RagsiftError as exc:
        warn(exc.worded(flag_name))
        sys.exit(EXIT_USAGE)


def invoked_commands(args: list[str]) -> list:
    """The commands typer must build for ``ragsift ARGS``: only the subcommand named, as it
    turns every registered command into a click command (signature, annotations,
    parameters) on each start, ~15 ms for all nine. No subcommand (``--help``,
    ``--version``), an unknown name or shell completion: all of them."""
    name = next((a for a in args if not a.startswith("-")), None)
    if name is None or any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return app.registered_commands
    picked = [info for info in app.registered_commands if info.name == name]
    return picked or app.registered_commands
