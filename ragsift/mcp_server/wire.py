"""The wire of ``ragsift mcp``: stdin read and checked before the SDK (``read_message``: every
message gets its answer), replies written whole (``Wire``, ``encode``), the session
(``serve``), and a server that could not start answering with its line (``refuse``)."""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
from typing import Any

from ragsift.mcp_server.server import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    make_server,
)
from ragsift.mcp_server.service import HugeNumber, Service
from ragsift.mcp_server.text import has_surrogate, one_line

MAX_LINE_BYTES = 8 << 20  # a longer JSON-RPC message is answered -32700 and skipped
EOF_GRACE_S = 120  # at EOF, how long requests in flight may still take to be answered


_MISSING = object()


def _big_int(text: str) -> int | HugeNumber:
    """``json.loads``'s ``parse_int``: past Python's digit limit, a ``HugeNumber``."""
    try:
        return int(text)
    except ValueError:
        huge = HugeNumber(math.inf if not text.startswith("-") else -math.inf)
        huge.digits = len(text.lstrip("-"))
        return huge


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _usable_id(value: Any) -> bool:
    """A JSON-RPC request id MCP accepts: a string or an integer."""
    if isinstance(value, bool) or isinstance(value, HugeNumber):
        return False
    return isinstance(value, int) or (isinstance(value, str) and not has_surrogate(value))


def _echo_id(value: Any) -> Any:
    """The id to put in an error reply: the request's, if it is a string or a number (so a
    client waiting on ``1.5`` hears back), else null."""
    if isinstance(value, bool) or isinstance(value, HugeNumber) or value is _MISSING:
        return None
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    if isinstance(value, str):
        return value
    return None


def error_reply(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _salvage_id(text: str) -> Any:
    """The top-level ``"id"`` of a message too deeply nested to parse (a scalar only), by a
    scan that tracks strings and depth; None if there is none."""
    depth, i, n = 0, 0, len(text)
    decoder = json.JSONDecoder(parse_int=_big_int)
    while i < n:
        c = text[i]
        if c == '"':
            try:
                key, end = decoder.raw_decode(text, i)
            except ValueError:
                return None
            j = end
            while j < n and text[j] in " \t\r\n":
                j += 1
            if depth == 1 and key == "id" and j < n and text[j] == ":":
                j += 1
                while j < n and text[j] in " \t\r\n":
                    j += 1
                if j < n and text[j] not in "[{":
                    try:
                        return _echo_id(decoder.raw_decode(text, j)[0])
                    except (ValueError, RecursionError):
                        return None
                return None
            i = end
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return None


def read_message(raw: bytes) -> tuple[Any, Any]:
    """One line from the client: ``(message, None)`` for the SDK (a ``JSONRPCMessage``),
    ``(None, reply)`` for a line the server answers itself (an error object, or a list of
    them for a batch), ``(None, None)`` for nothing to do (a blank line, an invalid
    notification or response: those get no reply in JSON-RPC)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, error_reply(
            None,
            PARSE_ERROR,
            f"Parse error: the message is not UTF-8 "
            f"(byte 0x{raw[exc.start]:02x} at offset {exc.start})",
        )
    if not text.strip():
        return None, None
    try:
        obj = json.loads(text, parse_int=_big_int, parse_constant=_not_json)
    except RecursionError:
        return None, error_reply(
            _salvage_id(text), PARSE_ERROR, "Parse error: the message is nested too deeply to read"
        )
    except ValueError as exc:
        return None, error_reply(None, PARSE_ERROR, f"Parse error: {one_line(str(exc))}")
    if isinstance(obj, list):
        return None, _batch_reply(obj)
    if not isinstance(obj, dict):
        return None, error_reply(
            None, INVALID_REQUEST, "Invalid Request: a message is a JSON object"
        )
    return _check(obj)


def _batch_reply(items: list[Any]) -> Any:
    """A batch array: MCP has no batches (since 2025-06-18), so each request in it gets an
    Invalid Request error, in one array as JSON-RPC answers a batch; ``[]`` one error."""
    if not items:
        return error_reply(None, INVALID_REQUEST, "Invalid Request: an empty batch")
    out = []
    for item in items:
        if isinstance(item, dict) and "id" not in item and "method" in item:
            continue  # a notification: no reply, even to refuse it
        rid = _echo_id(item.get("id", _MISSING)) if isinstance(item, dict) else None
        out.append(
            error_reply(
                rid,
                INVALID_REQUEST,
                "Invalid Request: batches are not "
                "supported (MCP removed them); send one message per line",
            )
        )
    return out or None


def _check(obj: dict[str, Any]) -> tuple[Any, Any]:
    import mcp_types as t
    from pydantic import ValidationError

    rid = obj.get("id", _MISSING)
    request = "method" in obj and rid is not _MISSING
    reply_id = _echo_id(rid)
    if obj.get("jsonrpc") != "2.0":
        if "method" not in obj and ("result" in obj or "error" in obj):
            return None, None  # a malformed response from the client: nothing to answer
        return None, error_reply(
            reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
        )
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or has_surrogate(method):
            return None, (
                error_reply(reply_id, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
                if rid is not _MISSING
                else None
            )
        if request and not _usable_id(rid):
            return None, error_reply(
                reply_id, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer'
            )
        if "params" in obj and not isinstance(obj["params"], dict) and obj["params"] is not None:
            return None, (
                error_reply(reply_id, INVALID_PARAMS, 'Invalid params: "params" must be an object')
                if request
                else None
            )
    elif rid is _MISSING or not ("result" in obj or "error" in obj):
        return None, error_reply(
            reply_id, INVALID_REQUEST, 'Invalid Request: no "method" (and not a response)'
        )
    try:
        return t.jsonrpc_message_adapter.validate_python(obj, by_name=False), None
    except (ValidationError, RecursionError, ValueError) as exc:
        if not request:
            return None, None
        first = exc.errors()[0] if isinstance(exc, ValidationError) else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        detail = f"{where}: {first.get('msg')}" if first else one_line(str(exc))
        return None, error_reply(reply_id, INVALID_REQUEST, f"Invalid Request: {detail}")


class Wire:
    """The client's end: stdin and stdout as private descriptors, with fd 0/1 pointed at
    /dev/null while serving (a stray print or a child process can neither read the
    client's messages nor write into the replies). Replies are written whole lines under a
    lock."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.in_fd, self.out_fd = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self.reader = os.fdopen(self.in_fd, "rb", buffering=1 << 16)
        self.lock = threading.Lock()
        self.gone = False

    def restore(self) -> None:
        for fd, saved in ((0, self.in_fd), (1, self.out_fd)):
            try:
                os.dup2(saved, fd)
            except OSError:
                pass

    def readline(self) -> bytes:
        """One line (without a limit's worth of bytes: the rest is skipped), or b"" at EOF."""
        line = self.reader.readline(MAX_LINE_BYTES + 1)
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # skip the rest of the over-long line
                more = self.reader.readline(1 << 20)
                if not more or more.endswith(b"\n"):
                    break
            return b"\x00too-long"
        return line

    def write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8", "backslashreplace")
        with self.lock:
            if self.gone:
                return
            try:
                view = memoryview(data)
                while view:
                    n = os.write(self.out_fd, view)
                    view = view[n:]
            except OSError:
                self.gone = True  # the client went away: the read side ends the session


def encode(message: Any) -> str:
    """A JSON-RPC message (the SDK's model, or our own dict) as one JSON line. A model that
    pydantic cannot serialize (a lone surrogate echoed back) goes through ``json.dumps``
    with ASCII escapes."""
    if isinstance(message, (dict, list)):
        return json.dumps(message, ensure_ascii=True, default=str, separators=(",", ":"))
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception:
        data = message.model_dump(by_alias=True, exclude_unset=True, mode="python")
        return json.dumps(data, ensure_ascii=True, default=str, separators=(",", ":"))


async def _serve(service: Service, debug: bool) -> None:
    import anyio

    server = make_server(service, debug=debug)
    wire = Wire()
    to_sdk_send, to_sdk = anyio.create_memory_object_stream(0)
    from_sdk, from_sdk_recv = anyio.create_memory_object_stream(0)

    # stdin is read on a daemon thread of our own, not an anyio worker: a worker blocked in
    # read() is joined at exit, so Ctrl-C would wait for the client to close stdin (#40)
    lines_send, lines_recv = anyio.create_memory_object_stream[bytes](0)
    token = anyio.lowlevel.current_token()
    threading.Thread(
        target=_pump, args=(wire, lines_send, token), name="ragsift-mcp-stdin", daemon=True
    ).start()

    session = _Session(wire)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.read, lines_recv, to_sdk_send)
            tg.start_soon(session.write, from_sdk_recv)
            await server.run(to_sdk, from_sdk, server.create_initialization_options())
            tg.cancel_scope.cancel()  # the SDK ended the session (EOF): stop reading
    finally:
        wire.restore()


def _pump(wire: Wire, lines_send: Any, token: Any) -> None:
    """Stdin's lines handed to the event loop, b"" last (EOF)."""
    import anyio

    try:
        while True:
            raw = wire.readline()
            anyio.from_thread.run(lines_send.send, raw, token=token)
            if not raw:
                return
    except Exception:  # the loop is gone (Ctrl-C, the session ended): nobody to tell
        return


class _Session:
    """The two directions of one session: client lines checked and handed to the SDK
    (``read``), the SDK's messages written to the client (``write``). ``pending`` holds the
    requests handed to the SDK and not answered yet: at EOF the session ends only once each
    has its reply (the SDK cancels what is in flight when its input closes)."""

    def __init__(self, wire: Wire) -> None:
        import anyio

        self.wire = wire
        self.pending: set[Any] = set()
        self.settled = anyio.Event()

    async def read(self, lines_recv: Any, to_sdk_send: Any) -> None:
        import anyio
        from mcp.shared.message import SessionMessage

        async with to_sdk_send:
            while True:
                raw = await lines_recv.receive()
                if not raw:
                    await self._drain()
                    return
                if raw == b"\x00too-long":
                    message, reply = (
                        None,
                        error_reply(
                            None,
                            PARSE_ERROR,
                            f"Parse error: a message over {MAX_LINE_BYTES:,} bytes was skipped",
                        ),
                    )
                else:
                    message, reply = read_message(raw)
                if reply is not None:
                    await anyio.to_thread.run_sync(self.wire.write, encode(reply))
                if message is not None:
                    self._track(message)
                    await to_sdk_send.send(SessionMessage(message))

    async def _drain(self) -> None:
        """At EOF: wait for the pending requests' replies (at most ``EOF_GRACE_S``: a reply
        the SDK never sends), unless the client has gone."""
        import anyio

        with anyio.move_on_after(EOF_GRACE_S):
            while self.pending and not self.wire.gone:
                self.settled = anyio.Event()
                await self.settled.wait()

    def _track(self, message: Any) -> None:
        """A request handed to the SDK is pending; a cancelled one gets no reply."""
        import mcp_types as t

        if isinstance(message, t.JSONRPCRequest):
            self.pending.add((type(message.id), message.id))
        elif (
            isinstance(message, t.JSONRPCNotification)
            and message.method == "notifications/cancelled"
        ):
            rid = (message.params or {}).get("requestId")
            self.pending.discard((type(rid), rid))  # a cancelled request: no reply

    async def write(self, from_sdk_recv: Any) -> None:
        import anyio
        import mcp_types as t

        async with from_sdk_recv:
            async for item in from_sdk_recv:
                message = item.message
                try:
                    line = encode(message)
                except Exception as exc:
                    rid = getattr(message, "id", None)
                    line = encode(
                        error_reply(
                            rid,
                            -32603,
                            f"Internal error: the reply "
                            f"could not be encoded ({type(exc).__name__})",
                        )
                    )
                await anyio.to_thread.run_sync(self.wire.write, line)
                if isinstance(message, (t.JSONRPCResponse, t.JSONRPCError)):
                    self.pending.discard((type(message.id), message.id))
                    if not self.pending:
                        self.settled.set()


START_UP_ERROR = -32000  # JSON-RPC's range for a server's own errors: it cannot serve


def refuse(line: str) -> None:
    """A server that could not start (a wrong ``--index``, a bad option) launched by a client:
    every request until stdin closes is answered with ``line`` as a JSON-RPC error, the
    ``initialize`` request first, so the client shows ragsift's line instead of "connection
    closed" (MCP: a server may answer ``initialize`` with an error). No SDK needed."""
    reader = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    message = f"ragsift mcp cannot serve: {line}"
    for raw in iter(lambda: reader.readline(MAX_LINE_BYTES), b""):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and "method" in obj and "id" in obj:
            reply = error_reply(_echo_id(obj["id"]), START_UP_ERROR, message)
            os.write(1, (encode(reply) + "\n").encode("ascii"))


def quiet_sdk_logs(debug: bool) -> None:
    """The SDK's loggers: ERROR and above only, each as one ``ragsift: mcp: ...`` line on
    stderr; with ``debug``, everything from INFO with tracebacks."""

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return "ragsift: mcp: " + one_line(record.getMessage())

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("ragsift: %(name)s: %(levelname)s %(message)s") if debug else OneLine()
    )
    for name in ("mcp", "mcp_types"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO if debug else logging.ERROR)
        logger.propagate = False


def serve(service: Service, *, debug: bool = False) -> None:
    """Serve ``service`` on stdio until the client closes stdin (then close the index)."""
    import anyio

    quiet_sdk_logs(debug)
    try:
        anyio.run(_serve, service, debug)
    finally:
        service.close()
