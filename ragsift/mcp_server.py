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
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import ragsift.api as api
from ragsift.errors import RagsiftError
from ragsift.version import __version__

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

MAX_QUERY_CHARS = 10_000  # a longer query is refused (the model reads ~1,000 characters)
MAX_GLOB_CHARS = 1_000
MAX_LINE_BYTES = 8 << 20  # a longer JSON-RPC message is answered -32700 and skipped
EOF_GRACE_S = 120  # at EOF, how long requests in flight may still take to be answered
# The most hits one call may ask for (``k``); the server's ``--k`` is the default. 50: well
# above what an agent needs for one question, yet a bounded reply: on the project's docs 50
# hits are ~38,000 characters of text content (~10k tokens; the record ~77,000), 16x k=3's,
# and a warm call 11 ms against 9 ms (bench/bench_mcp_k.py, RESULTS "MCP: k up to 50").
# A server started with a larger --k allows that many.
MAX_K = 50
MAX_READ_LINES = 400  # ``read`` returns at most this many lines per call (``next_line``)
URI_PREFIX = "ragsift://document/"

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource

THRESHOLD_NOTE = (
    "Each hit has a relevance score in [0, 1], an estimate of the probability that it is "
    "relevant; only hits whose score clears the threshold are returned. An empty result is a "
    "real answer: the index holds nothing relevant enough. Do not answer from it as if it "
    "held something; the near-miss shows the best candidate and, when this server accepts "
    "one, the threshold that would have admitted it."
)


def document_uri(path: str) -> str:
    """The resource URI of an indexed document (its stored path, percent-encoded)."""
    return URI_PREFIX + quote(path, safe="")


def path_of_uri(uri: str) -> str | None:
    """The stored path a ``document_uri`` names (None: not one of ours)."""
    if not isinstance(uri, str) or not uri.startswith(URI_PREFIX):
        return None
    return unquote(uri[len(URI_PREFIX) :], errors="strict")


class ArgumentError(Exception):
    """A call's argument the server cannot use: the model reads the sentence and retries."""


class HugeNumber(float):
    """A JSON number with more digits than Python converts (``read_message``): a tool
    argument that is no usable number, said as such."""

    digits: int = 0


# -- the calls ---------------------------------------------------------------------------------
class Service:
    """The calls the server answers, over one open ``api.Index`` (usable without the SDK).

    Every argument is checked here; ``ArgumentError`` says what to send instead."""

    def __init__(
        self,
        index: str,
        *,
        k: int = 3,
        threshold: float | str | None = "auto",
        mode: str | None = None,
        span: str = "chunk",
        path: str | None = None,
        model: str | None = None,
        root: str | None = None,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise RagsiftError("{k} must be at least 1 (got {got})", param="k", values={"got": k})
        self.k = k
        self.threshold = api.check_threshold(threshold)
        self.mode = api.check_mode(mode or api.DEFAULT_MODE)
        self.span = api.check_span(span)
        if path is not None:
            api.check_globs([path])
        self.path = path or None
        self.index_path, self.model = index, model
        self.root = os.path.abspath(root) if root is not None else None
        self.index = api.open_index(index, model=model)
        self.lock = threading.Lock()
        try:
            self.floor()  # no floor known and none given: the policy's error, before serving
        except BaseException:
            self.index.close()
            raise

    def close(self) -> None:
        """Close the index (read-only: nothing to lose; a damaged file may fail to close,
        which is not worth a line at the end of a session)."""
        try:
            self.index.close()
        except Exception:
            pass

    def floor(self) -> Any:
        """The server's floor now (``api.ThresholdInForce``: ``.value`` None for no floor)."""
        return self.index.threshold(self.threshold, self.mode)

    # -- arguments ------------------------------------------------------------------------------
    @staticmethod
    def _known(tool: str, args: Any, names: tuple[str, ...]) -> dict[str, Any]:
        if args is None:
            return {}
        if not isinstance(args, dict):
            raise ArgumentError(
                f"the arguments of {tool} must be an object with {', '.join(names)}"
            )
        unknown = sorted(str(a) for a in args if a not in names)
        if unknown:
            raise ArgumentError(
                f"{tool} takes {', '.join(names)}; unknown argument(s): "
                f"{', '.join(_show(u) for u in unknown)}"
            )
        return args

    @staticmethod
    def _text(name: str, value: Any, *, limit: int) -> str:
        if not isinstance(value, str):
            raise ArgumentError(f"{name} must be a string, not {_kind(value)}")
        if _has_surrogate(value):
            raise ArgumentError(
                f"{name} holds a lone surrogate code point (such as \\ud800), "
                "which is not text; send it as valid Unicode"
            )
        if len(value) > limit:
            raise ArgumentError(
                f"{name} has {len(value):,} characters; at most {limit:,} are accepted"
            )
        return value

    def _query(self, value: Any) -> str:
        if value is None:
            raise ArgumentError("query is required: a question or a few keywords")
        text = self._text("query", value, limit=MAX_QUERY_CHARS)
        if not text.strip():
            raise ArgumentError("query is empty: send a question or a few keywords")
        return text

    @property
    def most_k(self) -> int:
        """The most hits a call may ask for: ``MAX_K``, or the server's ``k`` if larger."""
        return max(MAX_K, self.k)

    def _k(self, value: Any) -> int:
        if value is None:
            return self.k
        whole = _whole(value)
        most = self.most_k
        if whole is None:
            raise ArgumentError(f"k must be a whole number from 1 to {most}, not {_kind(value)}")
        if not 1 <= whole <= most:
            raise ArgumentError(
                f"k must be from 1 to {most} (this server's most), not "
                f"{_number(whole)}; omit it for {self.k}"
            )
        return whole

    def _threshold(self, value: Any, floor: Any) -> float | str | None:
        """The threshold argument for the engine: the floor when omitted (``"auto"`` when the
        floor is the index's own, so records name where it came from), else the call's,
        which must be a number in [0, 1] and at least the floor."""
        if value is None or value == "auto":
            return "auto" if self.threshold == "auto" else self.threshold
        if isinstance(value, HugeNumber) or isinstance(value, str):
            raise ArgumentError(
                f"threshold must be a number from {_floor_text(floor)} to 1, not {_kind(value)}"
            )
        try:
            number = api.check_threshold(value)
        except RagsiftError as exc:
            raise ArgumentError(
                exc.message + f"; omit it for this server's floor {_floor_text(floor)}"
            ) from None
        if floor.value is not None and number < floor.value:
            raise ArgumentError(
                f"threshold {number:g} is below this server's floor {floor.value:g} "
                f"({floor.label}): a call may raise the threshold, never lower it; omit it, "
                f"or pass a value from {floor.value:g} to 1"
            )
        return number

    def _glob(self, name: str, value: Any) -> str | None:
        if value is None or value == "":
            return None
        glob = self._text(name, value, limit=MAX_GLOB_CHARS)
        try:
            api.check_globs([glob])
        except RagsiftError as exc:
            raise ArgumentError(f"{name}: {exc.message} (a glob: * ? [abc] [a-z])") from None
        return glob

    def _search_args(
        self, query: Any, k: Any, threshold: Any, path: Any, floor: Any
    ) -> dict[str, Any]:
        return {
            "text": self._query(query),
            "k": self._k(k),
            "threshold": self._threshold(threshold, floor),
            "path": self._glob("path", path),
            "mode": self.mode,
            "span": self.span,
            "within": self.path,
        }

    # -- calls ----------------------------------------------------------------------------------
    PARAMETERS = {
        "search": ("query", "k", "threshold", "path"),
        "explain": ("query", "k", "threshold", "path"),
        "list_documents": ("glob",),
        "read": ("path", "line_start", "line_end"),
    }

    def call(self, tool: str, args: Any) -> dict[str, Any]:
        """Tool ``tool`` with a call's ``arguments`` as the client sent them (any JSON
        value: checked here, unknown names refused)."""
        return getattr(self, tool)(**self._known(tool, args, self.PARAMETERS[tool]))

    def search(
        self, query: Any = None, k: Any = None, threshold: Any = None, path: Any = None
    ) -> dict[str, Any]:
        with self.lock:
            self.index.refresh()
            floor = self.floor()
            call = self._search_args(query, k, threshold, path, floor)
            found = self.index.search(
                call["text"], **{k: v for k, v in call.items() if k != "text"}
            )
            record = api.search_record(
                found.results[0], found.threshold, found.paths, setting=argument_words
            )
        return self._keep_floor(record, floor, call)

    def explain(
        self, query: Any = None, k: Any = None, threshold: Any = None, path: Any = None
    ) -> dict[str, Any]:
        with self.lock:
            self.index.refresh()
            floor = self.floor()
            call = self._search_args(query, k, threshold, path, floor)
            found = self.index.search(
                call["text"], units=3, **{k: v for k, v in call.items() if k != "text"}
            )
            record = api.explain_record(
                found.results[0],
                found.threshold,
                attributions=found.attributions[0],
                query_truncated=found.truncated[0],
                paths=found.paths,
                setting=argument_words,
            )
        return self._keep_floor(record, floor, call)

    def _keep_floor(
        self, record: dict[str, Any], floor: Any, call: dict[str, Any]
    ) -> dict[str, Any]:
        """The record in this server's terms: its floor beside the threshold used, and for a
        best candidate under the threshold, the hint and ``admit_at`` the server can keep
        (never a threshold under the floor)."""
        record["floor"] = floor.value
        record["floor_origin"] = floor.label
        if isinstance(call["threshold"], float) and self.threshold != call["threshold"]:
            record["threshold_origin"] = "given by the call"
            record["threshold_from"] = "flag"
            if "threshold_source" in record:
                record["threshold_source"] = "call"
        if "near_miss" in record:
            miss = record["near_miss"]
        else:
            cands = record["candidates"]
            miss = cands[0] if cands and not record["admitted"] else None
        used = record["threshold"]
        if miss is None or used is None or miss["score"] >= used:
            return record
        at = _admit_at(miss["score"], floor.value)
        if "admit_at" in record:
            record["admit_at"] = at
        sentence = (
            f"nothing cleared the threshold {used:.2f}: best candidate "
            f"{miss['score']:.3f} at {_where(miss)}; "
        )
        if at is not None:
            sentence += f"threshold {at:.2f} would admit it"
        else:
            sentence += (
                f"no threshold this server accepts admits it (its floor is "
                f"{floor.value:.2f}, {floor.label}): the index holds nothing "
                "relevant enough for this query"
            )
        hints = list(record.get("hints") or [])
        # under the threshold, the engine's first hint is this case's (``outcome_hint``), in
        # the CLI's words (``--threshold X``, maybe under the floor): this one replaces it
        hints[:1] = [sentence]
        record["hints"] = hints
        if "hint" in record:  # explain's own hint: the same sentence
            record["hint"] = sentence
        return record

    def list_documents(self, glob: Any = None) -> dict[str, Any]:
        glob = self._glob("glob", glob)
        with self.lock:
            self.index.refresh()
            docs = [
                d for d in self.index.documents([glob] if glob else None) if self._allowed(d.path)
            ]
        return {"documents": [{**api.document_row(d), "uri": document_uri(d.path)} for d in docs]}

    def read(
        self, path: Any = None, line_start: Any = None, line_end: Any = None
    ) -> dict[str, Any]:
        """A document's indexed text, or lines ``line_start``-``line_end`` of it (1-based,
        inclusive; at most ``MAX_READ_LINES`` per call, ``next_line`` says where to go on)."""
        if path is None:
            raise ArgumentError(
                "path is required: a document's path as search, explain and list_documents give it"
            )
        path = self._text("path", path, limit=4096)
        first, last = line_start, line_end
        for name, value in (("line_start", first), ("line_end", last)):
            if value is not None and (_whole(value) is None or _whole(value) < 1):
                raise ArgumentError(
                    f"{name} must be a line number (1 or more), not "
                    f"{_kind(value) if _whole(value) is None else value}"
                )
        first = _whole(first) if first is not None else 1
        last = _whole(last) if last is not None else None
        if last is not None and last < first:
            raise ArgumentError(f"line_end {last} is before line_start {first}")
        with self.lock:
            self.index.refresh()
            path, records = self._records(path)
        lines = _indexed_lines(records)
        if not lines:
            return {
                "path": path,
                "uri": document_uri(path),
                "line_start": None,
                "line_end": None,
                "lines": None,
                "next_line": None,
                "text": _chunk_text(records),
            }
        total = max(lines)
        if first > total:
            raise ArgumentError(f"{path} has {total} lines; line_start {first} is past its end")
        end = min(total, last if last is not None else total, first + MAX_READ_LINES - 1)
        text = "\n".join(lines.get(n, "") for n in range(first, end + 1))
        return {
            "path": path,
            "uri": document_uri(path),
            "line_start": first,
            "line_end": end,
            "lines": total,
            "next_line": end + 1 if end < min(total, last or total) else None,
            "text": text,
        }

    def document(self, path: str) -> str | None:
        """The indexed text of one document: its chunks in order, each headed by its lines
        (overlapping chunk text is shown once); None if the index holds no such document."""
        with self.lock:
            self.index.refresh()
            if not self._allowed(path):
                return None
            records = self.index.document_chunks(path)
        if not records:
            return None
        return f"# {path} (the text ragsift indexed, chunk by chunk)\n" + _chunk_text(records)

    def _records(self, path: str) -> tuple[str, list[Any]]:
        """The stored path ``path`` names (``api.stored_path``, the rule of ``ls``, ``rm`` and
        ``--path``: ``./x``, absolute inside the project root, relative to the server's
        folder) and its chunks."""
        stored = api.stored_path(path, self.index.paths(), root=self.root)
        records = self.index.document_chunks(stored) if self._allowed(stored) else []
        if records:
            return stored, records
        raise ArgumentError(
            f"no indexed document {path!r}; list_documents gives the "
            "paths (hits' paths work as they are)"
        )

    def _allowed(self, path: str) -> bool:
        return self.path is None or api.path_matches(path, [self.path])

    def documents_for_listing(self) -> list[str]:
        with self.lock:
            self.index.refresh()
            return [p for p in self.index.paths() if self._allowed(p)]

    def damage(self, exc: BaseException) -> str:
        """The one line for an error that is not a user's (a damaged index, a bug): opening
        the index again says what the CLI would ("index ... is corrupt ..."); if it opens, it
        replaces the old handle and the line names the error."""
        try:
            fresh = api.open_index(self.index_path, model=self.model)
        except RagsiftError as err:
            return err.message
        except Exception as err:
            return f"internal error: {type(err).__name__}: {_one_line(str(err))}"
        with self.lock:
            old, self.index = self.index, fresh
        try:
            old.close()
        except Exception:
            pass
        return (
            f"internal error: {type(exc).__name__}: {_one_line(str(exc))} (the index "
            f"{self.index_path} was opened again; retry the call)"
        )


def argument_words(name: str, value: object = None) -> str:
    """A hint's words for a tool argument (``k=13``, ``threshold=0.35``): the tools' own
    names, not the CLI's flags."""
    return name if value is None else f"{name}={value}"


def _admit_at(score: float, floor: float | None) -> float | None:
    """The threshold a hint may propose for a candidate of ``score`` at a server whose floor
    is ``floor``: ``admitting_threshold`` (rounded down to 2 decimals), raised to the floor if
    the candidate clears it; None when the candidate is under the floor."""
    at = api.admitting_threshold(score)
    if floor is None:
        return at
    if score < floor:
        return None
    return max(at, floor)


def _floor_text(floor: Any) -> str:
    return "0" if floor.value is None else f"{floor.value:g}"


def _whole(value: Any) -> int | None:
    """``value`` as a whole number (an int, or a float with no fraction), else None."""
    if isinstance(value, bool) or isinstance(value, HugeNumber):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _number(n: int) -> str:
    text = str(n) if abs(n) < 10**30 else f"a {len(str(abs(n))):,}-digit number"
    return text


def _kind(value: Any) -> str:
    """A short description of a JSON value for an error sentence (never the whole value)."""
    if isinstance(value, HugeNumber):
        return f"a {value.digits:,}-digit number"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return _number(value)
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else "a number out of range"
    if isinstance(value, str):
        return f"the string {_show(value)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _show(text: str, limit: int = 40) -> str:
    safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return repr(safe if len(safe) <= limit else safe[: limit - 1] + "…")


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _indexed_lines(records: list[Any]) -> dict[int, str]:
    """{line number: text} of a document's indexed text, rebuilt from its chunks (overlaps
    once; a line split between two chunks joined with the characters between them as
    spaces). Lines no chunk covers are absent. Empty for chunks without line numbers."""
    lines: dict[int, str] = {}
    at = 0
    for rec in records:
        if rec.line_start is None:
            return {}
        if rec.end <= at:
            continue
        skip = max(0, at - rec.start)
        text = rec.text[skip:]
        line = rec.line_start + rec.text[:skip].count("\n")
        gap = " " * max(0, rec.start - at) if line in lines and skip == 0 else ""
        for i, part in enumerate(text.split("\n")):
            n = line + i
            lines[n] = lines.get(n, "") + (gap if i == 0 else "") + part
        at = rec.end
    return lines


def _chunk_text(records: list[Any]) -> str:
    out = []
    at = 0
    for rec in records:
        if rec.end <= at:
            continue
        text = rec.text[max(0, at - rec.start) :]
        where = (
            f"lines {rec.line_start}-{rec.line_end}"
            if rec.line_start is not None
            else f"characters {rec.start}-{rec.end}"
        )
        page = f", page {rec.page}" if rec.page is not None else ""
        out.append(f"\n[{where}{page}]\n{text}")
        at = rec.end
    return "\n".join(out) + "\n"


# -- text content: what a model reads ----------------------------------------------------------
def search_text(record: dict[str, Any]) -> str:
    hits = record["admitted"]
    floor = threshold_words(record)
    if hits:
        out = [
            f"{len(hits)} hit(s) for {record['query']!r} at {floor}; cite them by path and lines:"
        ]
        for i, h in enumerate(hits, 1):
            out.append(
                f"\n[{i}] {_where(h)} (score {h['score']:.3f}{_extra(h)})\n"
                f"{h.get('span_text') or h['text']}"
            )
        return "\n".join(out)
    miss = record["near_miss"]
    head = (
        f"no hit for {record['query']!r}: nothing cleared the {floor}. The index holds nothing relevant enough; do not "
        "answer from it."
    )
    lines = [head] + [f"hint: {h}" for h in record["hints"]]
    if miss is not None:
        lines.append(
            f"near-miss (not admitted): {_where(miss)} (score {miss['score']:.3f}): "
            f"{_flat(miss.get('span_text') or miss['text'])}"
        )
    return "\n".join(lines)


def explain_text(record: dict[str, Any]) -> str:
    cands = record["candidates"]
    admitted = [c for c in cands if c["admitted"]]
    lines = [
        f"{len(admitted)} admitted, {len(cands) - len(admitted)} rejected for "
        f"{record['query']!r} at {threshold_words(record)}:"
    ]
    for c in cands:
        lines.append(
            f"\n{c['rank']:>3}. {c['score']:.3f} {c['reason'] or 'admitted'} {_where(c)}{_extra(c)}"
        )
        if c["admitted"]:
            lines.append(c.get("span_text") or c["text"])
        else:
            lines.append("    " + _flat(c["text"]))
    lines += [f"hint: {h}" for h in record["hints"]]
    return "\n".join(lines)


def documents_text(record: dict[str, Any]) -> str:
    docs = record["documents"]
    return f"{len(docs)} document(s):\n" + "\n".join(
        f"{d['path']} ({d['chunks']} chunks, {d.get('format') or 'text'}) {d['uri']}" for d in docs
    )


def read_text(record: dict[str, Any]) -> str:
    if record["line_start"] is None:
        return f"{record['path']} (the text ragsift indexed):\n{record['text']}"
    more = f"; next: line_start {record['next_line']}" if record["next_line"] is not None else ""
    return (
        f"{record['path']} lines {record['line_start']}-{record['line_end']} of "
        f"{record['lines']} (the text ragsift indexed{more}):\n{record['text']}"
    )


def threshold_words(record: dict[str, Any]) -> str:
    """The threshold a call used and the server's floor, each said once: "threshold 0.17
    (measured default, this server's floor)", "threshold 0.3 (given by the call; this
    server's floor 0.17, measured default)", "threshold 0.3 (given by the call; no floor)"."""
    used, floor = record.get("threshold"), record.get("floor")
    origin = record.get("threshold_origin") or record.get("floor_origin") or ""
    if used is None:
        return "no threshold (this server has no floor)"
    head = f"threshold {used:g}"
    if floor is None:
        return f"{head} ({origin}; no floor)" if origin else f"{head} (no floor)"
    if used == floor:
        return f"{head} ({record['floor_origin']}, this server's floor)"
    return f"{head} ({origin}; this server's floor {floor:g}, {record['floor_origin']})"


def _extra(h: dict[str, Any]) -> str:
    out = ""
    if h.get("page") is not None:
        out += f", page {h['page']}"
    if h.get("headings"):
        out += f", {' > '.join(h['headings'])}"
    return out


def _where(h: dict[str, Any]) -> str:
    loc = h["path"]
    if h.get("line_start") is not None:
        loc += f":{h['line_start']}"
        if h.get("line_end") not in (None, h["line_start"]):
            loc += f"-{h['line_end']}"
    return loc


def _flat(text: str, limit: int = 300) -> str:
    out = " ".join(text.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


# -- schemas -----------------------------------------------------------------------------------
_NUM_OR_NULL = {"type": ["number", "null"]}
_INT_OR_NULL = {"type": ["integer", "null"]}
_STR_OR_NULL = {"type": ["string", "null"]}
HIT_SCHEMA = {
    "type": "object",
    "description": "One candidate as `ragsift query --json` prints it.",
    "properties": {
        "id": {"type": "string"},
        "path": {"type": "string"},
        "score": {"type": "number", "description": "relevance score, 0-1"},
        "rank": {"type": "integer"},
        "admitted": {"type": "boolean"},
        "reason": _STR_OR_NULL,
        "line_start": _INT_OR_NULL,
        "line_end": _INT_OR_NULL,
        "page": _INT_OR_NULL,
        "headings": {"type": "array", "items": {"type": "string"}},
        "start": {"type": "integer"},
        "end": {"type": "integer"},
        "text": {"type": "string"},
        "span_text": {"type": "string"},
        "dense_score": _NUM_OR_NULL,
        "lexical_score": _NUM_OR_NULL,
    },
    "required": ["id", "path", "score", "rank", "admitted", "text"],
}
_FLOOR_PROPS = {
    "threshold": {**_NUM_OR_NULL, "description": "the threshold this search used"},
    "threshold_origin": {"type": "string"},
    "threshold_from": {
        **_STR_OR_NULL,
        "description": "where the threshold came from: flag (given), tuned, calibrated or default",
    },
    "floor": {**_NUM_OR_NULL, "description": "this server's floor (null: none)"},
    "floor_origin": {"type": "string"},
    "hints": {"type": "array", "items": {"type": "string"}},
}
SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "query_hash": {"type": "string"},
        "mode": {"type": "string"},
        "k": {"type": "integer"},
        "searched": {"type": "integer", "description": "chunks searched"},
        "admitted": {"type": "array", "items": HIT_SCHEMA},
        "near_miss": {
            "anyOf": [HIT_SCHEMA, {"type": "null"}],
            "description": "when nothing was admitted: the best candidate",
        },
        "admit_at": {
            **_NUM_OR_NULL,
            "description": "a threshold this server accepts that "
            "would admit the near-miss (null: none)",
        },
        **_FLOOR_PROPS,
    },
    "required": ["query", "threshold", "floor", "admitted", "near_miss", "admit_at", "hints"],
}
EXPLAIN_OUTPUT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "mode": {"type": "string"},
        "k": {"type": "integer"},
        "candidates": {"type": "array", "items": HIT_SCHEMA},
        "admitted": {"type": "integer"},
        "rejected": {"type": "integer"},
        "threshold_source": _STR_OR_NULL,
        "hint": _STR_OR_NULL,
        "attributions": {"type": "array", "items": {"type": "object"}},
        **_FLOOR_PROPS,
    },
    "required": ["query", "candidates", "threshold", "floor", "hints"],
}
DOCUMENTS_OUTPUT = {
    "type": "object",
    "properties": {
        "documents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "uri": {"type": "string"},
                    "chunks": {"type": "integer"},
                    "tokens": {"type": "integer"},
                    "size": _INT_OR_NULL,
                    "format": _STR_OR_NULL,
                    "indexed_at": _STR_OR_NULL,
                    "mtime": _STR_OR_NULL,
                },
                "required": ["path", "uri", "chunks"],
            },
        }
    },
    "required": ["documents"],
}
READ_OUTPUT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "uri": {"type": "string"},
        "line_start": _INT_OR_NULL,
        "line_end": _INT_OR_NULL,
        "lines": {**_INT_OR_NULL, "description": "the document's last indexed line"},
        "next_line": {
            **_INT_OR_NULL,
            "description": "line_start of the next part (null: the range is complete)",
        },
        "text": {"type": "string"},
    },
    "required": ["path", "uri", "line_start", "line_end", "lines", "next_line", "text"],
}


def search_input(service: Service, floor: float | None) -> dict[str, Any]:
    floor_words = (
        f"at least this server's floor {floor:g}"
        if floor is not None
        else "no floor at this server"
    )
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "a question or a few keywords",
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": service.most_k,
                "description": f"at most this many hits (default {service.k}, "
                f"most {service.most_k})",
            },
            "threshold": {
                "type": "number",
                "minimum": floor or 0,
                "maximum": 1,
                "description": f"a stricter floor on the score, 0-1 ({floor_words};"
                " default: the floor)",
            },
            "path": {
                "type": "string",
                "description": "a glob: only documents whose path matches ('*' also matches '/')",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


LIST_INPUT = {
    "type": "object",
    "properties": {
        "glob": {"type": "string", "description": "only paths that match ('*' also matches '/')"}
    },
    "additionalProperties": False,
}
READ_INPUT = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "the document's path, as a hit or list_documents gives it",
        },
        "line_start": {"type": "integer", "minimum": 1, "description": "first line (default 1)"},
        "line_end": {
            "type": "integer",
            "minimum": 1,
            "description": "last line, inclusive "
            f"(default: the end; at most {MAX_READ_LINES} lines per call)",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


# -- the server --------------------------------------------------------------------------------
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


def make_server(service: Service, *, debug: bool = False) -> Server:
    """The MCP server over ``service``: four tools, the documents as resources and one
    resource template. Every handler answers; nothing it raises reaches the SDK's logs."""
    import anyio
    import mcp_types as t
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    def floor_value() -> float | None:
        try:
            return service.floor().value
        except Exception:
            return None

    def input_schema(name: str, floor: float | None) -> dict[str, Any]:
        if name in ("search", "explain"):
            return search_input(service, floor)
        return LIST_INPUT if name == "list_documents" else READ_INPUT

    outputs = {
        "search": SEARCH_OUTPUT,
        "explain": EXPLAIN_OUTPUT,
        "list_documents": DOCUMENTS_OUTPUT,
        "read": READ_OUTPUT,
    }

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        floor = floor_value()
        return t.ListToolsResult(
            tools=[
                t.Tool(
                    name=name,
                    title=title,
                    description=text,
                    input_schema=input_schema(name, floor),
                    output_schema=outputs[name],
                )
                for name, (title, text, _, _) in TOOLS.items()
            ]
        )

    def run_call(method: str, args: Any, text_of: Any) -> t.CallToolResult:
        try:
            record = service.call(method, args)
            return t.CallToolResult(
                content=[t.TextContent(type="text", text=text_of(record))],
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

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        if params.name not in TOOLS:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown tool {_show(params.name)}; the tools are {', '.join(TOOLS)}",
            )
        _, _, method, text_of = TOOLS[params.name]
        return await anyio.to_thread.run_sync(run_call, method, params.arguments, text_of)

    async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
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

    async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
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

    async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        uri = str(params.uri)
        try:
            path = path_of_uri(uri)
        except UnicodeDecodeError:
            path = None
        text = None
        if path is not None and not _has_surrogate(path):
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
                message=f"Resource not found: {_show(uri, 200)} is no indexed "
                "document (list_documents gives their URIs)",
                data={"uri": uri},
            )
        return t.ReadResourceResult(
            contents=[t.TextResourceContents(uri=uri, text=text, mime_type="text/plain")]
        )

    return Server(
        "ragsift",
        version=__version__,
        instructions=(
            "Search a local document index built by ragsift. "
            + THRESHOLD_NOTE
            + " Cite hits by path and lines; read around a hit with the read tool "
            "or its ragsift://document/ URI."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


# -- the wire: every message gets its answer ---------------------------------------------------
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
    return isinstance(value, int) or (isinstance(value, str) and not _has_surrogate(value))


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
        return None, error_reply(None, PARSE_ERROR, f"Parse error: {_one_line(str(exc))}")
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
        if not isinstance(method, str) or _has_surrogate(method):
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
        detail = f"{where}: {first.get('msg')}" if first else _one_line(str(exc))
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
    import mcp_types as t
    from mcp.shared.message import SessionMessage

    server = make_server(service, debug=debug)
    wire = Wire()
    to_sdk_send, to_sdk = anyio.create_memory_object_stream(0)
    from_sdk, from_sdk_recv = anyio.create_memory_object_stream(0)

    # requests handed to the SDK and not answered yet: at EOF the session ends only once
    # each has its reply (the SDK cancels what is in flight when its input closes)
    pending: set[Any] = set()
    settled = anyio.Event()

    # stdin is read on a daemon thread of our own, not an anyio worker: a worker blocked in
    # read() is joined at exit, so Ctrl-C would wait for the client to close stdin (#40)
    lines_send, lines_recv = anyio.create_memory_object_stream[bytes](0)
    token = anyio.lowlevel.current_token()

    def pump() -> None:
        try:
            while True:
                raw = wire.readline()
                anyio.from_thread.run(lines_send.send, raw, token=token)
                if not raw:
                    return
        except Exception:  # the loop is gone (Ctrl-C, the session ended): nobody to tell
            return

    threading.Thread(target=pump, name="ragsift-mcp-stdin", daemon=True).start()

    async def reader() -> None:
        nonlocal settled
        async with to_sdk_send:
            while True:
                raw = await lines_recv.receive()
                if not raw:
                    with anyio.move_on_after(EOF_GRACE_S):  # a reply the SDK never sends
                        while pending and not wire.gone:
                            settled = anyio.Event()
                            await settled.wait()
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
                    await anyio.to_thread.run_sync(wire.write, encode(reply))
                if message is not None:
                    if isinstance(message, t.JSONRPCRequest):
                        pending.add((type(message.id), message.id))
                    elif (
                        isinstance(message, t.JSONRPCNotification)
                        and message.method == "notifications/cancelled"
                    ):
                        rid = (message.params or {}).get("requestId")
                        pending.discard((type(rid), rid))  # a cancelled request: no reply
                    await to_sdk_send.send(SessionMessage(message))

    async def writer() -> None:
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
                await anyio.to_thread.run_sync(wire.write, line)
                if isinstance(message, (t.JSONRPCResponse, t.JSONRPCError)):
                    pending.discard((type(message.id), message.id))
                    if not pending:
                        settled.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            await server.run(to_sdk, from_sdk, server.create_initialization_options())
            tg.cancel_scope.cancel()  # the SDK ended the session (EOF): stop reading
    finally:
        wire.restore()


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
            return "ragsift: mcp: " + _one_line(record.getMessage())

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
