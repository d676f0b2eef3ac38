"""The MCP server over a ``Service`` (``make_server``): the SDK's low-level ``Server`` with four
tools, the documents as resources and one resource template, each handler's work in a
function of its own. Imports the SDK only inside functions (nothing at import time)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.mcp_server.schemas import (
    DOCUMENTS_OUTPUT,
    EXPLAIN_OUTPUT,
    LIST_INPUT,
    READ_INPUT,
    READ_OUTPUT,
    SEARCH_OUTPUT,
    search_input,
)
from ragsift.mcp_server.service import (
    MAX_READ_LINES,
    URI_PREFIX,
    Answer,
    ArgumentError,
    Service,
    document_uri,
    path_of_uri,
)
from ragsift.mcp_server.text import (
    documents_text,
    explain_text,
    has_surrogate,
    read_text,
    search_text,
    show,
)
from ragsift.version import __version__

if TYPE_CHECKING:
    import mcp_types as t
    from mcp.server.lowlevel import Server

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource

THRESHOLD_NOTE = (
    "Each hit has a relevance score in [0, 1], an estimate of the probability that it is "
    "relevant; only hits whose score clears the threshold are returned. An empty result is a "
    "real answer: the index holds nothing relevant enough. Do not answer from it as if it "
    "held something; the near-miss shows the best candidate and, when this server accepts "
    "one, the threshold that would have admitted it."
)


TOOLS = {  # name: (title, description, call, text)
    "search": (
        "Search the index",
        (
            "Find the passages of the indexed documents that answer a question or match "
            "keywords. Returns the admitted hits (path, lines, headings, text, score, and the "
            "evidence behind the score). " + THRESHOLD_NOTE + " A call may raise the threshold "
            "above this server's floor, never lower it."
        ),
        "search",
        search_text,
    ),
    "explain": (
        "Explain a search",
        (
            "The full record of a search: every candidate considered, admitted or rejected, "
            "with its score, the evidence it came from (cosine, lexical share, ranks) and the "
            "reason it was rejected (below-threshold, over-k, over-char-budget), plus hints. "
            "Use it to see why something was or was not found. " + THRESHOLD_NOTE
        ),
        "explain",
        explain_text,
    ),
    "list_documents": (
        "List the indexed documents",
        (
            "The documents in the index (path, chunks, tokens, size, when indexed) and the "
            "resource URI of each one's indexed text."
        ),
        "list_documents",
        documents_text,
    ),
    "read": (
        "Read an indexed document",
        (
            "The text ragsift indexed for one document, or a range of its lines (line_start, "
            "line_end; a hit's own line numbers work as they are): to read around a hit or cite "
            f"it. At most {MAX_READ_LINES} lines per call; next_line says where the rest starts."
        ),
        "read",
        read_text,
    ),
}


OUTPUTS = {
    "search": SEARCH_OUTPUT,
    "explain": EXPLAIN_OUTPUT,
    "list_documents": DOCUMENTS_OUTPUT,
    "read": READ_OUTPUT,
}

INSTRUCTIONS = (
    "Search a local document index built by ragsift. "
    + THRESHOLD_NOTE
    + " Cite hits by path and lines; read around a hit with the read tool "
    "or its ragsift://document/ URI."
)


def make_server(service: Service, *, debug: bool = False) -> Server:
    """The MCP server over ``service``: four tools, the documents as resources and one
    resource template. Every handler answers; nothing it raises reaches the SDK's logs."""
    import anyio
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return _tool_list(service)

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        if params.name not in TOOLS:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown tool {show(params.name)}; the tools are {', '.join(TOOLS)}",
            )
        _, _, method, text_of = TOOLS[params.name]
        return await anyio.to_thread.run_sync(
            _run_call, service, debug, method, params.arguments, text_of
        )

    async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
        return await _resource_list(service)

    async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
        return _template_list()

    async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        return await _read_document(service, str(params.uri))

    return Server(
        "ragsift",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _tool_list(service: Service) -> t.ListToolsResult:
    """The four tools, the search schemas with the index's floor (none when it cannot be
    read: the list still answers)."""
    import mcp_types as t

    try:
        floor = service.floor().value
    except Exception:
        floor = None

    def input_schema(name: str) -> dict[str, Any]:
        if name in ("search", "explain"):
            return search_input(service, floor)
        return LIST_INPUT if name == "list_documents" else READ_INPUT

    return t.ListToolsResult(
        tools=[
            t.Tool(
                name=name,
                title=title,
                description=text,
                input_schema=input_schema(name),
                output_schema=OUTPUTS[name],
            )
            for name, (title, text, _, _) in TOOLS.items()
        ]
    )


def _run_call(
    service: Service, debug: bool, method: str, args: Any, text_of: Any
) -> t.CallToolResult:
    """One tool call (on a worker thread): its record as text and structured content, or
    the error's line as an error result (a traceback on stderr with ``debug``)."""
    import mcp_types as t

    try:
        answer = service.call(method, args)
        record = answer.to_json() if isinstance(answer, Answer) else answer
        return t.CallToolResult(
            content=[t.TextContent(type="text", text=text_of(answer))],
            structured_content=record,
        )
    except ArgumentError as exc:
        message = str(exc)
    except RagsiftError as exc:
        message = exc.message
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc(file=sys.stderr)
        message = service.damage(exc)
    return t.CallToolResult(content=[t.TextContent(type="text", text=message)], is_error=True)


async def _resource_list(service: Service) -> t.ListResourcesResult:
    """Every indexed document as a resource (none when the index cannot be read)."""
    import anyio
    import mcp_types as t

    try:
        paths = await anyio.to_thread.run_sync(service.documents_for_listing)
    except Exception:
        paths = []
    return t.ListResourcesResult(
        resources=[
            t.Resource(
                uri=document_uri(p),
                name=p,
                mime_type="text/plain",
                description="the text ragsift indexed, chunk by chunk",
            )
            for p in paths
        ]
    )


def _template_list() -> t.ListResourceTemplatesResult:
    """The one resource template: a document by its stored path."""
    import mcp_types as t

    return t.ListResourceTemplatesResult(
        resource_templates=[
            t.ResourceTemplate(
                uri_template=URI_PREFIX + "{path}",
                name="document",
                mime_type="text/plain",
                description="The text ragsift indexed for one document, chunk by chunk with "
                "line ranges (the stored path percent-encoded, '/' as %2F).",
            )
        ]
    )


async def _read_document(service: Service, uri: str) -> t.ReadResourceResult:
    """The indexed text behind a document URI; an ``MCPError`` for an unknown document
    (``RESOURCE_NOT_FOUND``) or one that cannot be read (-32603, with ragsift's line)."""
    import anyio
    import mcp_types as t
    from mcp.shared.exceptions import MCPError

    try:
        path = path_of_uri(uri)
    except UnicodeDecodeError:
        path = None
    text = None
    if path is not None and not has_surrogate(path):
        try:
            text = await anyio.to_thread.run_sync(service.document, path)
        except RagsiftError as exc:
            raise MCPError(code=-32603, message=exc.message, data={"uri": uri}) from None
        except Exception as exc:
            message = await anyio.to_thread.run_sync(service.damage, exc)
            raise MCPError(code=-32603, message=message, data={"uri": uri}) from None
    if text is None:
        raise MCPError(
            code=RESOURCE_NOT_FOUND,
            message=f"Resource not found: {show(uri, 200)} is no indexed "
            "document (list_documents gives their URIs)",
            data={"uri": uri},
        )
    return t.ReadResourceResult(
        contents=[t.TextResourceContents(uri=uri, text=text, mime_type="text/plain")]
    )
