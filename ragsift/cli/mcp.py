"""``ragsift mcp``: serve an index to AI agents over the Model Context Protocol (stdio).

Its options are checked as every command checks them, before serving: an invalid ``--path``
glob, ``--mode``, ``--span`` or ``--threshold``, an index that cannot be opened, or no floor
known for the index's model exit 2 with one line.
"""

from __future__ import annotations

import os
import signal
import sys

import typer

from ragsift.cli._common import STATE, flag_name, handle_errors, warn
from ragsift.cli.query import (
    DEFAULT_MODE,
    INDEX_OPTION,
    MODEL_OPTION,
    MODES,
    PATH_OPTION,
    threshold_arg,
)
from ragsift.errors import RagsiftError

EPILOG = """
Examples:

  ragsift mcp --index docs.db

  ragsift mcp --index docs.db --k 5 --threshold 0.3 --path 'handbook/*'

An MCP client launches it; the configuration to paste (command and arguments):

  {"mcpServers": {"docs": {"command": "ragsift", "args": ["mcp", "--index", "/abs/docs.db"]}}}
"""


def mcp_command(
    index: str = INDEX_OPTION,
    k: int = typer.Option(
        3,
        "-k",
        "--k",
        min=1,
        help="Hits a search returns when a call does not say; a call may ask for up to 50 "
        "(or this many, if more).",
    ),
    threshold: str | None = typer.Option(
        None,
        "--threshold",
        "-t",
        metavar="FLOAT|none|auto",
        help="The floor on the relevance score (0-1) for every call: a call may raise it, "
        "never lower it. Default ('auto'): the index's threshold in force (tuned by `ragsift "
        "tune --save`, else the model's measured default); 'none': no floor.",
    ),
    mode: str = typer.Option(
        DEFAULT_MODE,
        "--mode",
        metavar="|".join(MODES),
        help="Evidence the relevance score is computed from.",
    ),
    span: str = typer.Option(
        "chunk",
        "--span",
        metavar="chunk|best",
        help="best: each hit also carries its evidence span.",
    ),
    path: str | None = PATH_OPTION,
    model: str | None = MODEL_OPTION,
) -> None:
    """Serve the index to AI agents over MCP on stdio: tools search, explain, list_documents
    and read, and each document's indexed text as a ragsift://document/ resource.
    Read-only; needs the mcp extra (pip install 'ragsift\\[mcp]')."""
    try:
        import mcp.server.lowlevel  # noqa: F401 (the optional extra)
    except ImportError:
        raise RagsiftError(
            "`ragsift mcp` needs the mcp extra: pip install 'ragsift[mcp]'"
        ) from None
    from ragsift.mcp_server.service import Service
    from ragsift.mcp_server.wire import refuse, serve

    # every option checked and the index opened before serving: a mistake is exit 2
    try:
        service = Service(
            index,
            k=k,
            threshold=threshold_arg(threshold),
            mode=mode,
            span=span,
            path=path,
            model=model,
            root=STATE["project"].root if STATE["project"] is not None else None,
        )
    except RagsiftError as exc:
        if STATE["debug"] or sys.stdin.isatty():
            raise  # a person at a terminal: the line and exit 2 now
        # a client launched it: it reads only the protocol, so each request gets the line
        # too, the initialize first (else the client shows "connection closed"); exit 2 at EOF
        line = exc.worded(flag_name)
        warn(line)
        refuse(line)
        raise typer.Exit(exc.exit_code) from None
    # Ctrl-C: one line and 130 at once, whatever the server is doing. It is read-only, so
    # there is nothing to finish; letting KeyboardInterrupt unwind instead races the SDK's task
    # group (a second Ctrl-C surfaced as an ExceptionGroup) and joins the thread of a search
    # still running (up to the model's load), #40 item 6.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # (a background job ignores it)
        signal.signal(signal.SIGINT, exit_interrupted)
    serve(service, debug=bool(STATE["debug"]))


def exit_interrupted(signum: int, frame: object) -> None:
    """SIGINT while serving: ``ragsift: interrupted`` and exit 130 now (os.write: the
    handler may run while the main thread is inside a write to sys.stderr)."""
    try:
        os.write(2, b"ragsift: interrupted\n")
    finally:
        os._exit(130)


def register(app: typer.Typer) -> None:
    app.command("mcp", epilog=EPILOG, help=mcp_command.__doc__)(handle_errors(mcp_command))
