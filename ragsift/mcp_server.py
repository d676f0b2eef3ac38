"""``ragsift mcp``: the index as tools an AI agent can call (Model Context Protocol, stdio).

A thin layer over ``ragsift.api``, like the CLI: the same engine, the same records.

- ``search(query, k?, threshold?, path?)``: the admitted hits as ``query --json`` prints them
  and, when nothing clears the threshold, the best near-miss with the threshold that would
  admit it (``api.search_record``);
- ``explain(query, k?, threshold?, path?)``: the record ``explain --json`` prints
  (``Index.explain``: admitted, rejected with reasons, hints, closest units);
- ``list_documents(glob?)``: what ``ls --json`` prints, each with its resource URI;
- resources ``ragsift://document/{path}`` (the path percent-encoded): a document's indexed
  text, chunk after chunk, each headed by its line range, so a client can open the lines a hit
  cites. Only what the index holds is read: never a file outside it.

Read-only by design: the index is opened read-only (readers never wait for a writer and a
writer never waits for the server); before each call the server takes a new snapshot if a
writer committed since the last one (``Index.refresh``). The model is loaded once, on the
first query (or at start with ``preload``), and reused. Calls are served one at a time.

The server's own options fix what a call may do: ``k`` is the default and the most a call may
ask for; ``threshold`` (when given) is the floor, a call may only ask for a stricter one;
``mode`` and ``span`` are the server's; ``path`` is a glob every returned document matches
(a call's ``path`` narrows it further). Bad arguments (an empty or over-long query, k < 1, a
threshold outside 0–1, an invalid glob) are protocol errors (``INVALID_PARAMS``), after which
the server goes on serving.
"""

# No ``from __future__ import annotations`` here: the SDK reads the tools' annotations at
# registration, and they name types imported inside ``make_server``.
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

MAX_QUERY_CHARS = 10_000  # a longer query is refused (the model reads ~1,000 characters)
URI_PREFIX = "ragsift://document/"

THRESHOLD_NOTE = (
    "Each hit has a relevance score in [0, 1], an estimate of the probability that it is "
    "relevant; only hits whose score clears the threshold are returned. An empty result is a "
    "real answer: the index holds nothing relevant enough. Do not answer from it as if it "
    "held something; the near-miss shows the best candidate and the threshold that would "
    "have admitted it.")


def document_uri(path: str) -> str:
    """The resource URI of an indexed document (its stored path, percent-encoded)."""
    return URI_PREFIX + quote(path, safe="")


class Service:
    """The calls the server answers, over one open ``api.Index`` (usable without the SDK)."""

    def __init__(self, index: str, *, k: int = 3, threshold: float | None = None,
                 mode: str | None = None, span: str = "chunk", path: str | None = None,
                 model: str | None = None) -> None:
        import ragsift.api as rs
        from ragsift.retrieval.engine import DEFAULT_MODE, check_mode
        from ragsift.retrieval.spans import check_span

        if k < 1:
            raise RagsiftError(f"k must be at least 1 (got {k})")
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise RagsiftError(f"threshold {threshold}: the relevance score lies between 0 "
                               "and 1")
        self.k, self.threshold, self.path = k, threshold, path
        self.mode = check_mode(mode or DEFAULT_MODE)
        self.span = check_span(span)
        self.index = rs.open_index(index, model=model)
        self.lock = threading.Lock()

    def close(self) -> None:
        self.index.close()

    # -- arguments --------------------------------------------------------------------------
    def _query(self, query: Any) -> str:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"the query has {len(query):,} characters; at most "
                             f"{MAX_QUERY_CHARS:,} are accepted")
        return query

    def _k(self, k: int | None) -> int:
        if k is None:
            return self.k
        if k < 1:
            raise ValueError(f"k must be at least 1 (got {k})")
        if k > self.k:
            raise ValueError(f"k {k} is more than this server allows ({self.k})")
        return k

    def _threshold(self, threshold: float | None) -> float | str:
        if threshold is None:
            return "auto" if self.threshold is None else self.threshold
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold {threshold}: the relevance score lies between 0 and 1")
        if self.threshold is not None and threshold < self.threshold:
            raise ValueError(f"threshold {threshold} is below this server's floor "
                             f"{self.threshold}")
        return threshold

    @staticmethod
    def _glob(glob: str | None) -> str | None:
        if glob is None or glob == "":
            return None
        from ragsift.sources.globs import check_glob

        check_glob(glob)
        return glob

    def _args(self, query: Any, k: int | None, threshold: float | None,
              path: str | None) -> dict[str, Any]:
        """A search's checked arguments, as ``Index.query``/``explain`` keywords."""
        return {"text": self._query(query), "k": self._k(k),
                "threshold": self._threshold(threshold), "path": self._glob(path),
                "mode": self.mode, "span": self.span, "within": self.path}

    # -- calls ------------------------------------------------------------------------------
    def search(self, query: Any, k: int | None = None, threshold: float | None = None,
               path: str | None = None) -> dict[str, Any]:
        import ragsift.api as rs

        args = self._args(query, k, threshold, path)
        with self.lock:
            self.index.refresh()
            r = self.index.query(**args)
            in_force = self.index.threshold(args["threshold"], mode=self.mode)
            paths = self._paths() if r.searched == 0 else None
        return rs.search_record(r, in_force, paths)

    def explain(self, query: Any, k: int | None = None, threshold: float | None = None,
                path: str | None = None) -> dict[str, Any]:
        args = self._args(query, k, threshold, path)
        with self.lock:
            self.index.refresh()
            return self.index.explain(**args)

    def list_documents(self, glob: str | None = None) -> dict[str, Any]:
        import ragsift.api as rs

        glob = self._glob(glob)
        with self.lock:
            self.index.refresh()
            docs = [d for d in self.index.documents([glob] if glob else None)
                    if self._allowed(d.path)]
        return {"documents": [{**rs.document_row(d), "uri": document_uri(d.path)}
                              for d in docs]}

    def document(self, path: str) -> str:
        """The indexed text of one document: its chunks in order, each headed by its lines
        (overlapping chunk text is shown once)."""
        with self.lock:
            self.index.refresh()
            if not self._allowed(path) or path not in set(self.index.store.paths()):
                raise LookupError(f"no indexed document {path!r}")
            records = self._records(path)
        out = [f"# {path} (the text ragsift indexed, chunk by chunk)"]
        at = 0
        for rec in records:
            if rec.end <= at:
                continue
            text = rec.text[max(0, at - rec.start):]
            lines = (f"lines {rec.line_start}-{rec.line_end}" if rec.line_start is not None
                     else f"characters {rec.start}-{rec.end}")
            page = f", page {rec.page}" if rec.page is not None else ""
            out.append(f"\n[{lines}{page}]\n{text}")
            at = rec.end
        return "\n".join(out) + "\n"

    def _records(self, path: str) -> list:
        store = self.index.store
        return sorted(store.chunk_records(store.rowids_of_paths([path])),
                      key=lambda r: (r.start, r.end))

    def _allowed(self, path: str) -> bool:
        from ragsift.retrieval.engine import path_matches

        return self.path is None or path_matches(path, [self.path])

    def _paths(self) -> list[str]:
        return [p for p in self.index.store.paths() if self._allowed(p)]


def make_server(service: "Service") -> "MCPServer":
    """The MCP server over ``service``: three tools and one resource template."""
    from mcp.server.mcpserver import MCPServer
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS, CallToolResult, TextContent

    from ragsift.version import __version__

    server = MCPServer(
        "ragsift", version=__version__,
        instructions=("Search a local document index built by ragsift. " + THRESHOLD_NOTE
                      + " Cite hits by path and lines; read a document's indexed text "
                        "through its ragsift://document/ URI."))

    def answer(call, text_of) -> CallToolResult:
        try:
            record = call()
        except (ValueError, RagsiftError, LookupError) as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        return CallToolResult(content=[TextContent(type="text", text=text_of(record))],
                              structured_content=record)

    @server.tool(name="search", title="Search the index", description=(
        "Find the passages of the indexed documents that answer a question or match "
        "keywords. Returns the admitted hits (path, lines, headings, text, score, and the "
        "evidence behind the score). " + THRESHOLD_NOTE + " Arguments: query (a question or "
        "a few keywords); k (at most this many hits); threshold (a stricter floor, 0-1); "
        "path (a glob: only documents whose path matches, '*' also matches '/')."))
    def search(query: str, k: int | None = None, threshold: float | None = None,
               path: str | None = None) -> CallToolResult:
        return answer(lambda: service.search(query, k, threshold, path), search_text)

    @server.tool(name="explain", title="Explain a search", description=(
        "The full record of a search: every candidate considered, admitted or rejected, "
        "with its score, the evidence it came from (cosine, lexical share, ranks) and the "
        "reason it was rejected (below-threshold, over-k, over-char-budget), plus hints. "
        "Use it to see why something was or was not found. " + THRESHOLD_NOTE))
    def explain(query: str, k: int | None = None, threshold: float | None = None,
                path: str | None = None) -> CallToolResult:
        return answer(lambda: service.explain(query, k, threshold, path), explain_text)

    @server.tool(name="list_documents", title="List the indexed documents", description=(
        "The documents in the index (path, chunks, tokens, size, when indexed) and the "
        "resource URI to read each one's indexed text. glob: only paths that match "
        "('*' also matches '/')."))
    def list_documents(glob: str | None = None) -> CallToolResult:
        return answer(lambda: service.list_documents(glob), documents_text)

    @server.resource(URI_PREFIX + "{path}", name="document", mime_type="text/plain",
                     description="The text ragsift indexed for one document, chunk by chunk "
                                 "with line ranges (the path percent-encoded).")
    def document(path: str) -> str:
        try:
            return service.document(path)
        except LookupError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None

    return server


def search_text(record: dict[str, Any]) -> str:
    hits = record["admitted"]
    if hits:
        lines = [f"{len(hits)} hit(s) at threshold {record['threshold']}:"]
        for h in hits:
            lines.append(f"{h['score']:.3f} {_where(h)}: {_flat(h.get('span_text') or h['text'])}")
        return "\n".join(lines)
    miss = record["near_miss"]
    if miss is None:
        return "nothing admitted; " + "; ".join(record["hints"] or ["the index holds nothing"])
    return (f"nothing cleared the threshold {record['threshold']}: best candidate "
            f"{miss['score']:.3f} at {_where(miss)}"
            + (f" (threshold {record['admit_at']} would admit it)"
               if record["admit_at"] is not None else ""))


def explain_text(record: dict[str, Any]) -> str:
    cands = record["candidates"]
    admitted = [c for c in cands if c["admitted"]]
    head = (f"{len(admitted)} admitted, {len(cands) - len(admitted)} rejected "
            f"(threshold {record['threshold']}, {record['threshold_origin']}):")
    lines = [head]
    for c in cands:
        lines.append(f"{c['rank']:>3} {c['score']:.3f} {c['reason'] or 'admitted'} "
                     f"{_where(c)}")
    lines += [f"hint: {h}" for h in record["hints"]]
    return "\n".join(lines)


def documents_text(record: dict[str, Any]) -> str:
    docs = record["documents"]
    return f"{len(docs)} document(s)\n" + "\n".join(
        f"{d['path']} ({d['chunks']} chunks)" for d in docs)


def _where(h: dict[str, Any]) -> str:
    loc = h["path"]
    if h.get("line_start") is not None:
        loc += f":{h['line_start']}"
        if h.get("line_end") not in (None, h["line_start"]):
            loc += f"-{h['line_end']}"
    return loc


def _flat(text: str, limit: int = 200) -> str:
    out = " ".join(text.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def serve(index: str, **options: Any) -> None:
    """Run the server on stdio until the client closes it."""
    service = Service(index, **options)
    try:
        make_server(service).run("stdio")
    finally:
        service.close()
