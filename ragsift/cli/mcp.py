"""``ragsift mcp``: serve an index to AI agents over the Model Context Protocol (stdio)."""

from __future__ import annotations

import typer

from ragsift.cli._common import handle_errors
from ragsift.cli.query import INDEX_OPTION, MODEL_OPTION, PATH_OPTION
from ragsift.errors import RagsiftError
from ragsift.retrieval.engine import DEFAULT_MODE, MODES

EPILOG = """
Examples:

  ragsift mcp --index docs.db

  ragsift mcp --index docs.db --k 5 --threshold 0.3 --path 'handbook/*'

An MCP client launches it; the configuration to paste (command and arguments):

  {"mcpServers": {"docs": {"command": "ragsift", "args": ["mcp", "--index", "/abs/docs.db"]}}}
"""


def mcp_command(
    index: str = INDEX_OPTION,
    k: int = typer.Option(3, "-k", "--k", min=1,
                          help="Hits a search returns by default, and the most a call may ask."),
    threshold: float | None = typer.Option(
        None, "--threshold", "-t", metavar="FLOAT",
        help="Floor on the relevance score (0-1) for every call; a call may only ask for a "
        "stricter one. Default: the index's (tuned, else the model's measured default)."),
    mode: str = typer.Option(DEFAULT_MODE, "--mode", metavar="|".join(MODES),
                             help="Evidence the relevance score is computed from."),
    span: str = typer.Option("chunk", "--span", metavar="chunk|best",
                             help="best: each hit also carries its evidence span."),
    path: str | None = PATH_OPTION,
    model: str | None = MODEL_OPTION,
) -> None:
    """Serve the index to AI agents over MCP on stdio: tools search, explain and
    list_documents, and each document's indexed text as a ragsift://document/ resource.
    Read-only; needs the mcp extra (pip install 'ragsift\\[mcp]')."""
    try:
        import mcp.server.mcpserver  # noqa: F401 (the optional extra)
    except ImportError:
        raise RagsiftError("`ragsift mcp` needs the mcp extra: pip install 'ragsift[mcp]'") \
            from None
    from ragsift.mcp_server import serve

    serve(index, k=k, threshold=threshold, mode=mode, span=span, path=path, model=model)


def register(app: typer.Typer) -> None:
    app.command("mcp", epilog=EPILOG, help=mcp_command.__doc__)(handle_errors(mcp_command))
