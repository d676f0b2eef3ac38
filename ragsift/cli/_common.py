"""Shared CLI plumbing: the one place where errors become ``ragsift: msg`` + an exit code,
where output failures (full disk, closed pipe) are handled, and where text from documents is
made safe for a terminal.

Only ``cli`` imports typer or prints. Heavy modules are imported inside command bodies so
that ``ragsift --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import typer

from ragsift.errors import EXIT_INTERRUPTED, EXIT_OUTPUT, EXIT_USAGE, Action, RagsiftError

F = TypeVar("F", bound=Callable[..., Any])

STATE: dict[str, Any] = {"debug": bool(os.environ.get("RAGSIFT_DEBUG")), "project": None}

# -- the project file ----------------------------------------------------------------------------
# Commands that read ``ragsift.toml`` / ``[tool.ragsift]`` (``ragsift.project``): its settings
# become the defaults of their options (click's ``default_map``), so a flag or RAGSIFT_INDEX
# overrides the file and the file overrides the built-in default.
PROJECT_COMMANDS = frozenset({"embed", "query", "explain", "tune", "ls", "rm", "info", "mcp"})
_SAME_NAME = (
    "index",
    "paths",
    "include",
    "exclude",
    "mode",
    "k",
    "reject_window",
    "span",
    "model",
    "pooling",
    "max_length",
    "query_prefix",
    "passage_prefix",
)


def project_defaults(project: Any) -> dict[str, Any]:
    """The option defaults a project file sets, by the commands' parameter names (a command
    ignores what it has no option for)."""
    s = project.settings
    out = {k: s[k] for k in _SAME_NAME if k in s}
    if s.get("threshold", "auto") != "auto":
        out["threshold"] = str(s["threshold"])  # "none" or a number: the flag's own text
    if s.get("normalize") is False:
        out["no_normalize"] = True
    return out


def setting_sources(project: Any = None) -> dict[str, str]:
    """Where each option of the running command got its value: ``--flag`` (the command line),
    the environment variable, the project file, or ``default``."""
    try:
        from typer._click.core import ParameterSource
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - an older typer: click itself
        from click.core import ParameterSource
        from click.globals import get_current_context
    ctx = get_current_context(silent=True)
    if ctx is None:
        return {}
    out = {}
    for p in ctx.command.params:
        if not p.name or p.name.startswith("_"):
            continue
        src = ctx.get_parameter_source(p.name)
        if src is ParameterSource.COMMANDLINE:
            out[p.name] = p.opts[0] if getattr(p, "opts", None) else "command line"
        elif src is ParameterSource.ENVIRONMENT:
            out[p.name] = str(getattr(p, "envvar", None) or "environment")
        elif src is ParameterSource.DEFAULT_MAP:
            out[p.name] = project.name if project is not None else "project file"
        else:
            out[p.name] = "default"
    return out


# -- terminal safety ----------------------------------------------------------------------------
# C0 controls except tab and newline, DEL, and C1 controls: ESC starts colour, title, clear-screen
# and hyperlink sequences, BEL rings, CR overwrites the line, U+009B is a one-byte CSI.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f]")


def _picture(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control picture: ESC -> U+241B, BEL -> U+2407
    if code == 0x7F:
        return "\u2421"  # DEL
    return "\ufffd"  # C1 controls have no picture


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every terminal control character replaced by a visible stand-in.

    C0 controls become their Unicode control pictures (ESC -> ``␛``, BEL -> ``␇``, CR -> ``␍``),
    DEL ``␡``, C1 controls ``�``; one character for one, so offsets into the text still hold.
    Tab and newline are kept (``one_line=True`` replaces them too: ``␉``, ``␊``).
    Applied to everything ragsift shows on a terminal that came from documents or file names
    (rich consoles from ``stdout_console``/``stderr_console`` and ``warn`` do it themselves);
    JSON output is left exact (JSON escapes control characters).
    """
    pattern = _CONTROL_ONE_LINE if one_line else _CONTROL
    return pattern.sub(_picture, text) if pattern.search(text) else text


def safe_markup(text: str) -> str:
    """Document text for a rich markup string: controls made visible, ``[...]`` shown literally."""
    from rich.markup import escape

    return escape(printable(text))


def warn(message: str) -> None:
    """One line on stderr, prefixed like every ragsift diagnostic (controls made visible)."""
    with contextlib.suppress(OSError, ValueError):  # stderr itself gone: nothing left to tell
        sys.stderr.write(f"ragsift: {printable(message, one_line=True)}\n")
        sys.stderr.flush()


def waiting_notice(index: str) -> Callable[[int | None], None]:
    """For ``open_index(..., wait=...)``: say once, on stderr, whom ``--wait`` waits for."""

    def notice(pid: int | None) -> None:
        who = f"PID {pid}" if pid else "another process"
        warn(f"index {index} is being written by {who}; waiting for it to finish (--wait)")

    return notice


# -- errors -------------------------------------------------------------------------------------
class OutputError(RagsiftError):
    """Writing to stdout failed for a reason other than a closed pipe (disk full, I/O error)."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write output: {exc.strerror or exc}", EXIT_OUTPUT)


def handle_errors(func: F) -> F:
    """Catch user errors once: message on stderr, documented exit code, no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RagsiftError as exc:
            if STATE["debug"]:
                raise
            if isinstance(exc, OutputError):
                _silence_stdout()  # what is still buffered must not fail again at exit
            warn(exc.worded(flag_name))
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:
            # `ragsift chunk docs/ | head`: the reader went away; not an error.
            _silence_stdout()
            raise typer.Exit(0) from None
        except KeyboardInterrupt:
            say_interrupted()
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as exc:  # a bug, not a user error: still one line unless --debug
            if _interrupted(exc):  # Ctrl-C inside an import (numpy re-raises ImportError)
                say_interrupted()
                raise typer.Exit(EXIT_INTERRUPTED) from None
            if STATE["debug"]:
                raise
            warn(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)"
            )
            raise typer.Exit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]


# -- Ctrl-C ---------------------------------------------------------------------------------------
# The first Ctrl-C is Python's KeyboardInterrupt: it unwinds the command (a batch in flight is
# rolled back, the lock released) and ``handle_errors`` says "interrupted", exit 130. A second
# one while that is under way (a slow cleanup, or the exit itself) would otherwise raise again
# wherever the process stands, outside every handler: a traceback and a death by SIGINT (-2).
# It ends the process at once instead, as ``kill -9`` would (what was committed is kept:
# docs/reliability.md), with the same one line and 130 (issue 40).
_INTERRUPT = {"count": 0, "told": False}


def say_interrupted(*, raw: bool = False) -> None:
    """The "interrupted" line. ``raw``: from the signal handler of a second Ctrl-C, only if
    the first has not said it, and with ``os.write``: the handler may run while the main
    thread is inside a write to ``sys.stderr`` (a second buffered write would fail)."""
    told, _INTERRUPT["told"] = _INTERRUPT["told"], True
    if not raw:
        warn("interrupted")
    elif not told:
        with contextlib.suppress(OSError):
            os.write(2, b"ragsift: interrupted\n")


def _on_sigint(signum: int, frame: Any) -> None:
    _INTERRUPT["count"] += 1
    if _INTERRUPT["count"] == 1:
        raise KeyboardInterrupt
    # stdout is not flushed: a reader that stopped reading would block the exit
    say_interrupted(raw=True)
    os._exit(EXIT_INTERRUPTED)


def install_interrupt_handler() -> Callable[[], None]:
    """Make a second Ctrl-C end the process at once with exit 130 (see above); returns what
    puts the previous handler back. Left alone where SIGINT is ignored (a background job) or
    handled by someone else, and off the main thread (where no handler can be set)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        return lambda: None
    _INTERRUPT.update(count=0, told=False)
    signal.signal(signal.SIGINT, _on_sigint)
    return lambda: signal.signal(signal.SIGINT, previous)


# -- parameter names as flags ------------------------------------------------------------------
# Errors and hints name the parameters and actions they mention (``ragsift.errors.Words``); the
# CLI writes a parameter as the running command's option of that name (its first spelling:
# ``-k``, ``--strategy``; a repeatable one's values: "delimiters" -> ``--delimiter values``), a
# name the command has no option for as the option it is elsewhere (``--name-with-dashes``),
# and an action as the command line that does it (``ragsift tune --queries FILE --save``).
CLI_NAMES = {"objective": "optimize"}  # API parameter -> the CLI option's name, where they differ
COMMANDS = {"build": "embed"}  # API action -> the command that does it, where they differ


def flag_name(name: str | Action, value: object = None) -> str:
    """The CLI's words for the API parameter ``name`` in the running command (``-k``), set to
    ``value`` (``-k 13``; ``True``: the switch, ``--wait``; ``False``: its negative spelling,
    ``--no-normalize``; ``""``: the option alone, also for a repeatable one), or for the
    ``Action`` ``name`` (``ragsift tune --save``)."""
    if isinstance(name, Action):
        return " ".join(
            ["ragsift", COMMANDS.get(name.name, name.name), *name.args]
            + [
                _option(n) if v is True else _negative(n) if v is False else f"{_option(n)} {v}"
                for n, v in name.settings
            ]
        )
    if value is False:
        return _negative(name)
    cli = CLI_NAMES.get(name, name)
    flag = (_command_flags() or {}).get(cli) or _option(name)
    if value is None or value is True:
        return flag
    return flag.split()[0] if value == "" else f"{flag.split()[0]} {value}"


def _negative(name: str) -> str:
    """The switch that sets the API parameter ``name`` to False in the running command: its
    option's secondary spelling (``--foo/--no-foo``), or a switch of its own named ``no_`` +
    ``name`` (``embed --no-normalize``); elsewhere ``--no-name``."""
    cli = CLI_NAMES.get(name, name)
    ctx = _current_context()
    for p in ctx.command.params if ctx is not None else ():
        if p.param_type_name != "option":
            continue
        if p.name == cli and p.secondary_opts:
            return p.secondary_opts[0]
        if p.name == "no_" + cli and p.opts:
            return p.opts[0]
    return "--no-" + cli.replace("_", "-")


def _option(name: str) -> str:
    """The option of the API parameter ``name`` where no command says otherwise."""
    cli = CLI_NAMES.get(name, name)
    return "-k" if cli == "k" else "--" + cli.replace("_", "-")


def _current_context() -> Any:
    """The click context of the command being run (None outside one)."""
    try:
        from typer._click.globals import get_current_context  # typer vendors its click
    except ImportError:  # pragma: no cover - an older typer: click itself
        from click import get_current_context
    return get_current_context(silent=True)


def _command_flags() -> dict[str, str] | None:
    """{option name: its first spelling} for the command being run (None outside one)."""
    ctx = _current_context()
    if ctx is None:
        return None
    # a list parameter given by a repeatable option: "delimiters" -> "--delimiter values"
    return {
        p.name: p.opts[0] + (" values" if getattr(p, "multiple", False) else "")
        for p in ctx.command.params
        if p.param_type_name == "option" and p.name and p.opts
    }


def _interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among ``exc``'s causes or contexts."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's last flush cannot fail (or print
    "Exception ignored ...") once stdout is known to be closed or full."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


# -- stdout and stdin ---------------------------------------------------------------------------
_PIPE_GONE = (errno.EPIPE,)


class _GuardedStdout:
    """``sys.stdout`` whose write failures say they are output failures.

    A closed pipe stays ``BrokenPipeError`` (a quiet exit); any other ``OSError`` on write or
    flush (ENOSPC from ``> /dev/full`` or a full disk, EFBIG, EIO) becomes ``OutputError``,
    so ``handle_errors`` prints one line and exits ``EXIT_OUTPUT`` instead of calling it an
    internal error. Everything else is the wrapped stream's.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _output_error(exc) from None

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise _output_error(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ClosedStdout:
    """``sys.stdout`` when the process started without one: writing is an output error."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        raise OutputError(OSError(errno.EBADF, "stdout is closed"))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "stdout is closed")


def _output_error(exc: OSError) -> OSError | OutputError:
    if isinstance(exc, BrokenPipeError) or exc.errno in _PIPE_GONE:
        return exc
    return OutputError(exc)


def read_stdin_text(what: str = "stdin") -> str:
    """All of stdin as text, strictly UTF-8 (a UTF-8 BOM is dropped).

    Raises ``RagsiftError`` (exit 2) with one clear line for UTF-16/32 (BOM or NUL bytes) and
    for bytes that are not UTF-8, naming the offset, instead of a ``UnicodeDecodeError``.
    """
    stream = getattr(sys.stdin, "buffer", None)
    if stream is not None:
        raw = stream.read()
    else:  # a text-only stdin (tests, embedding): take its text as it is
        raw = sys.stdin.read().encode("utf-8", "surrogateescape")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or (b"\x00" in raw[:4096]):
        raise RagsiftError(
            f"{what} looks like UTF-16 or UTF-32 text; ragsift reads UTF-8 "
            "(convert it, e.g. iconv -f UTF-16 -t UTF-8)"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RagsiftError(
            f"{what} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "convert it to UTF-8, e.g. with iconv"
        ) from None


_JSON_LINE = json.JSONEncoder(ensure_ascii=False)


def write_jsonl(rows: Iterable[dict]) -> int:
    """Write one compact JSON object per line to stdout; returns the number written."""
    out = sys.stdout
    encode = _JSON_LINE.encode  # json.dumps(row, ensure_ascii=False), one encoder for all rows
    n = 0
    for row in rows:
        out.write(encode(row))
        out.write("\n")
        n += 1
    out.flush()
    return n


def _safe_console(**kwargs: Any):  # -> rich.console.Console
    """A rich ``Console`` that makes terminal controls visible in every string it renders.

    Every ``str`` a rich console shows (``print`` arguments, table cells, titles) goes through
    ``Console.render_str``, before layout measures it; overriding it is the one place that
    keeps document text and file names from reaching the terminal raw. Our own markup holds
    no control characters, so it is unaffected. (Build a ``rich.text.Text`` from document
    text yourself? Pass it through ``printable`` first.)
    """
    from rich.console import Console

    class SafeConsole(Console):
        def render_str(self, text: str, **kw: Any):
            return super().render_str(printable(text), **kw)

        def on_broken_pipe(self) -> None:
            # rich's own answer is exit 1; ours is the one in handle_errors (quiet, exit 0)
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return SafeConsole(**kwargs)


def stderr_console():  # -> rich.console.Console
    return _safe_console(stderr=True)


def stdout_console():
    return _safe_console()


def run_app(app: Callable[..., Any], *, fast_exit: bool = False, **extra: Any) -> None:
    """Run the typer app, then flush stdout ourselves so a late output failure is also one
    line and an exit code (not "Exception ignored ..." from the interpreter's last flush).

    ``fast_exit`` (commands that write nothing but stdout/stderr): once the output is flushed,
    run the ``atexit`` handlers and end the process with ``os._exit``, skipping the
    interpreter's teardown: freeing every module and object (numpy, onnxruntime, typer, rich)
    costs ~0.04 s of a ~0.45 s cold ``query`` (bench/RESULTS.md, "Cold query")."""
    original = sys.stdout  # None when started with stdout closed (`>&-`)
    guarded = _GuardedStdout(original) if original is not None else _ClosedStdout()
    sys.stdout = guarded  # type: ignore[assignment]
    code: Any = 0
    try:
        try:
            app(**extra)  # extra: click's ``main`` options (``default_map``)
        except SystemExit as exc:
            code = exc.code
        except BrokenPipeError:  # outside a command (help, --version)
            _silence_stdout()
            code = 0
        except OutputError as exc:
            _silence_stdout()
            warn(exc.message)
            code = exc.exit_code
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
        except OutputError as exc:
            _silence_stdout()
            warn(exc.message)
            code = exc.exit_code
    finally:
        sys.stdout = original
    if fast_exit and (code is None or isinstance(code, int)):
        _exit_now(code or 0)
    sys.exit(code)


def _exit_now(code: int) -> None:
    """``os._exit(code)`` after flushing the standard streams and running the ``atexit``
    handlers (coverage, logging, Ray's shutdown): only the interpreter's freeing of objects
    and modules is skipped. Open files other than stdout/stderr are not flushed: for commands
    that write nothing else, or only an index they closed (``FAST_EXIT`` in ``ragsift.cli``)."""
    import atexit

    for stream in (sys.stdout, sys.stderr):
        # stdout was flushed and checked by run_app: a stream that fails now has nothing left
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def plural(n: int, word: str) -> str:
    """``1 document``, ``2 documents``: a count and its noun."""
    return f"{n} {word}{'' if n == 1 else 's'}"
