"""The calls of ``ragsift mcp`` over one read-only ``api.Index`` (``Service``), usable without
the SDK: every argument a client sends is checked here and ``ArgumentError`` says what to send
instead; the floor, the server's bounds (``MAX_K``, ``MAX_READ_LINES``, ...), the records in the
server's terms (``_keep_floor``) and the documents' URIs."""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, unquote

import ragsift.api as api
from ragsift.errors import RagsiftError
from ragsift.mcp_server.text import has_surrogate, hit_location, one_line, show, shown_score

MAX_QUERY_CHARS = 10_000  # a longer query is refused (the model reads ~1,000 characters)
MAX_GLOB_CHARS = 1_000
# The most hits one call may ask for (``k``); the server's ``--k`` is the default. 50: well
# above what an agent needs for one question, yet a bounded reply: on the project's docs 50
# hits are ~38,000 characters of text content (~10k tokens; the record ~77,000), 16x k=3's,
# and a warm call 11 ms against 9 ms (bench/bench_mcp_k.py, RESULTS "MCP: k up to 50").
# A server started with a larger --k allows that many.
MAX_K = 50
MAX_READ_LINES = 400  # ``read`` returns at most this many lines per call (``next_line``)
URI_PREFIX = "ragsift://document/"


def document_uri(path: str) -> str:
    """The resource URI of an indexed document (its stored path, percent-encoded)."""
    return URI_PREFIX + quote(path, safe="")


def path_of_uri(uri: str) -> str | None:
    """The stored path a ``document_uri`` names (None: not one of ours)."""
    if not isinstance(uri, str) or not uri.startswith(URI_PREFIX):
        return None
    return unquote(uri[len(URI_PREFIX) :], errors="strict")


@dataclass(frozen=True)
class Answer:
    """A ``search`` or ``explain`` call's answer: its record (``api.SearchRecord`` or
    ``api.ExplainRecord``, in this server's terms) and the server's ``floor``
    (``api.ThresholdInForce``). What a model reads (``text``) is written from it, and the
    structured content is its ``to_json()``."""

    record: Any
    floor: Any

    def to_json(self) -> dict[str, Any]:
        """The record's JSON with the server's floor (``floor``, ``floor_origin``)."""
        return {
            **self.record.to_json(),
            "floor": self.floor.value,
            "floor_origin": self.floor.label,
        }


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

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """One call's view of the index: what writers committed up to now (``refresh``), ended
        when the call is answered (``release``), so an idle server holds nothing back (the
        SQLite write-ahead log is reset past no open snapshot; ``docs/scale.md``)."""
        self.index.refresh()
        try:
            yield
        finally:
            self.index.release()

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
                f"{', '.join(show(u) for u in unknown)}"
            )
        return args

    @staticmethod
    def _text(name: str, value: Any, *, limit: int) -> str:
        if not isinstance(value, str):
            raise ArgumentError(f"{name} must be a string, not {_kind(value)}")
        if has_surrogate(value):
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
        call = {
            "text": self._query(query),
            "k": self._k(k),
            "threshold": self._threshold(threshold, floor),
            "path": self._glob("path", path),
            "mode": self.mode,
            "span": self.span,
            "within": self.path,
        }
        # the call's api.SearchRequest; with the server's own threshold, the floor this call
        # resolved (``floor()``) goes with it, so the index's floor is resolved once a call
        same = call["threshold"] == self.threshold
        options = {n: v for n, v in call.items() if n != "text"}
        call["request"] = api.SearchRequest(**options, floor=floor if same else None)
        return call

    # -- calls ----------------------------------------------------------------------------------
    PARAMETERS = {
        "search": ("query", "k", "threshold", "path"),
        "explain": ("query", "k", "threshold", "path"),
        "list_documents": ("glob",),
        "read": ("path", "line_start", "line_end"),
    }

    def call(self, tool: str, args: Any) -> Answer | dict[str, Any]:
        """Tool ``tool`` with a call's ``arguments`` as the client sent them (any JSON
        value: checked here, unknown names refused): a search's or an explain's ``Answer``
        (typed; ``to_json()`` its record), the record of the others."""
        args = self._known(tool, args, self.PARAMETERS[tool])
        if tool in ("search", "explain"):
            return self.answer(tool, **args)
        return getattr(self, tool)(**args)

    def search(
        self, query: Any = None, k: Any = None, threshold: Any = None, path: Any = None
    ) -> dict[str, Any]:
        """The ``search`` tool's record (``answer("search", ...).to_json()``)."""
        return self.answer("search", query, k, threshold, path).to_json()

    def explain(
        self, query: Any = None, k: Any = None, threshold: Any = None, path: Any = None
    ) -> dict[str, Any]:
        """The ``explain`` tool's record (``answer("explain", ...).to_json()``)."""
        return self.answer("explain", query, k, threshold, path).to_json()

    def answer(
        self,
        tool: str,
        query: Any = None,
        k: Any = None,
        threshold: Any = None,
        path: Any = None,
    ) -> Answer:
        """One ``search`` or ``explain`` call: its typed record (``api.SearchRecord``, or
        ``api.ExplainRecord`` with the closest units) in this server's terms
        (``_keep_floor``), with the server's floor."""
        with self.lock, self.snapshot():
            floor = self.floor()
            call = self._search_args(query, k, threshold, path, floor)
            request = call["request"]
            if tool == "explain":
                request = replace(request, units=3)
            found = self.index.search(call["text"], request)
            r = found.results[0]
            if tool == "explain":
                record: Any = api.ExplainRecord.of(
                    r,
                    found.threshold,
                    attributions=found.attributions[0],
                    query_truncated=found.truncated[0],
                    paths=found.paths,
                    setting=argument_words,
                    commands=False,
                )
            else:
                record = api.SearchRecord.of(
                    r, found.threshold, found.paths, argument_words, commands=False
                )
        return Answer(self._keep_floor(record, floor, call), floor)

    def _keep_floor(self, record: Any, floor: Any, call: dict[str, Any]) -> Any:
        """The record in this server's terms (a new one; records are frozen): the threshold
        a call gave named as the call's, and for a best candidate under the threshold, the
        hint and ``admit_at`` the server can keep (never a threshold under the floor)."""
        explain = isinstance(record, api.ExplainRecord)
        if isinstance(call["threshold"], float) and self.threshold != call["threshold"]:
            given = {"threshold_origin": "given by the call", "threshold_from": "flag"}
            if explain:
                given["threshold_source"] = "call"
            record = replace(record, **given)
        if explain:
            cands = record.candidates
            miss = cands[0] if cands and not record.retrieval.admitted else None
        else:
            miss = record.near_miss
        used = record.threshold
        score = None if miss is None else shown_score(miss)
        if score is None or used is None or score >= used:
            return record
        at = _admit_at(score, floor.value)
        sentence = (
            f"nothing cleared the threshold {used:.2f}: best candidate {score:.3f} at "
            f"{hit_location(miss)}; "
        )
        if at is not None:
            sentence += f"threshold {at:.2f} would admit it"
        else:
            sentence += (
                f"no threshold this server accepts admits it (its floor is "
                f"{floor.value:.2f}, {floor.label}): the index holds nothing "
                "relevant enough for this query"
            )
        # under the threshold, the engine's first hint is this case's (``outcome_hint``), in
        # the CLI's words (``--threshold X``, maybe under the floor): this one replaces it
        hints = (sentence, *record.hints[1:])
        if explain:  # explain's own hint: the same sentence
            return replace(record, hints=hints, hint=sentence)
        return replace(record, hints=hints, admit_at=at)

    def list_documents(self, glob: Any = None) -> dict[str, Any]:
        glob = self._glob("glob", glob)
        with self.lock, self.snapshot():
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
        with self.lock, self.snapshot():
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
        with self.lock, self.snapshot():
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
        with self.lock, self.snapshot():
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
            return f"internal error: {type(err).__name__}: {one_line(str(err))}"
        with self.lock:
            old, self.index = self.index, fresh
        try:
            old.close()
        except Exception:
            pass
        return (
            f"internal error: {type(exc).__name__}: {one_line(str(exc))} (the index "
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
        return f"the string {show(value)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


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
