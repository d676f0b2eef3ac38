"""``ragsift mcp``: the index as tools an AI agent can call (Model Context Protocol, stdio).

A thin layer over ``ragsift.api`` (its one door, like the CLI): the same engine, the same
records.

Tools (each declares its ``inputSchema`` and ``outputSchema``; the structured content is the
record, the text content a summary a model can read and cite):

- ``search(query, k?, threshold?, path?)``: the admitted hits as ``query --json`` prints them
  (``api.search_record``) and, when nothing clears the threshold, the best near-miss with the
  threshold that would admit it (``admit_at``), if this server accepts such a threshold;
- ``explain(query, k?, threshold?, path?)``: the record ``explain --json`` prints
  (``Index.explain``: admitted, rejected with reasons, hints, closest units);
- ``list_documents(glob?)``: what ``ls --json`` prints, each with its resource URI;
- ``read(path, line_start?, line_end?)``: a document's indexed text, or a range of its lines,
  for clients without resource support (qmd's ``get``).

Resources ``ragsift://document/{path}`` (the stored path percent-encoded, absolute or
relative): a document's indexed text, chunk after chunk, each headed by its line range. Only
what the index holds is read: never a file outside it.

**The floor.** The threshold in force for the index (``--threshold``, else the one
``tune --save`` stored, else the model's measured default: ``Index.threshold("auto")``,
resolved again at each call) is the floor: a call may raise it, never lower it, and the
near-miss hint never proposes a value below it (``admit_at`` is then null and the hint says
that nothing this server accepts admits it). ``--threshold none``: no floor.

**Errors.** A call's argument the server cannot use (an empty or over-long query, a lone
surrogate, k < 1 or over ``MAX_K`` (the server's k is the default), a 5,000-digit number, a threshold out of range or
under the floor, an invalid glob, a wrong type, an unknown argument) is a tool result with
``isError: true`` and one sentence saying what to send instead; so is an error of the index
(a damaged file: the CLI's own line, "index ... is corrupt ..."). Protocol errors are for what
is not a call: an unknown tool or resource, a malformed request.

**Every message gets its answer.** ``serve`` reads stdin itself (``read_message``) and hands
the SDK only messages it can take: unparsable JSON (bad UTF-8, NaN, nesting deeper than
Python's JSON reader goes) is answered -32700, an invalid request (no ``"jsonrpc": "2.0"``, an
id that is not a string or an integer, params that are not an object, a batch array: MCP has
no batches since 2025-06-18) -32600, each echoing the request's id where one can be read
(else null); numbers too long to convert reach the tools as unusable numbers. Writes never
fail a session: a reply that cannot be encoded as UTF-8 JSON is sent with escapes.

Read-only by design: the index is opened read-only (readers never wait for a writer and a
writer never waits for the server); before each call the server takes a new snapshot if a
writer committed since the last one (``Index.refresh``). The model is loaded once, on the
first query, and reused. Calls are served one at a time. Nothing but ragsift's own lines
reaches stderr: the SDK's loggers are set to ERROR (one line each) unless ``--debug``, and
fd 0/1 point at /dev/null while serving, so stray output never reaches the wire or stderr.

Modules: ``service`` (the calls, their checks and bounds), ``text`` (what a model reads),
``schemas`` (the tools' JSON schemas), ``server`` (the SDK's ``Server``), ``wire`` (stdin and
stdout, ``serve``, ``refuse``). Import each name from its module.
"""
