"""``Searcher``: one open index plus the model that embeds its queries, in front of the engine.

It loads the embedder the index was built with (refusing another model) and hands every
search to ``ragsift.retrieval.engine`` (candidates from the backend, the order for the mode,
the top-K decision). The exact dense scan itself is the backend's (``ragsift/index/dense.py``
for SQLite).

Cold start: the model load (onnxruntime session, ~0.3-0.6 s) runs in a thread beside the
backend's ``load`` (numpy's import and the matrix read) and, for the queries given as
``prefetch``, the lexical side (FTS5 needs no query vector): a cold ``ragsift query`` pays the
longer of the two, not their sum (both release the GIL for most of their work).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.embedders.binding import embedder_for
from ragsift.errors import EXIT_NOTHING, RagsiftError
from ragsift.retrieval.engine import lexical_ahead, retrieve
from ragsift.retrieval.relevance import models_for
from ragsift.retrieval.request import DEFAULT_MODE

if TYPE_CHECKING:
    import numpy as np

    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.topk import Retrieval

# A query is cut to this many characters where it comes in (``Searcher``, before it is embedded
# or read for words): a pasted file as a query is answered in the time of a page, never left
# running (issue 40: 100,000 characters got no answer in 120 s). Far above what is read of
# a query: a model reads its first max_length tokens (256 for MiniLM, 512 at most), the
# lexical side its first ``index.terms.MAX_QUERY_TERMS`` (64) distinct words. A cut query gets
# the one line of a query the model truncated (``query truncated to N model tokens``).
MAX_QUERY_CHARS = 10_000


def bounded(queries: Sequence[str]) -> list[str]:
    """``queries``, each cut to ``MAX_QUERY_CHARS`` characters."""
    return [q[:MAX_QUERY_CHARS] for q in queries]


# -- a query longer than the model reads (issue 41) ---------------------------------------------
# A pasted traceback with a one-line question after it is thousands of tokens; the model reads
# its first max_length (256 for MiniLM): the traceback's head, never the question. The dense
# side is given instead the parts that say what the user wants, by a rule that knows no
# language or tool in particular:
#
#   1. the question: the last line (a long last line: its last sentences), and any other line
#      that ends with "?";
#   2. the error lines, last first: a line that starts with a name ending in Error, Exception,
#      Warning, NotFound, ... (``jinja2.exceptions.TemplateNotFound: x.html``) or with
#      error:, fatal:, panic:, Caused by:, ERR!, or a compiler's ``file:line: error:``;
#   3. the identifiers of the rest (``render_template``, ``flask/templating.py``,
#      ``TemplateNotFound``; a path to a file by its last two parts, a folder's path not at
#      all), the most repeated first;
#   4. the rest of the lines, from the end backwards;
#
# each part taken whole while it fits the model's length (its own tokenizer counts), and given
# to the model in the text's order with the identifiers last. The lexical side still reads the
# query as it was given, and ``MAX_QUERY_CHARS`` still bounds both. A query that fits is never
# changed; a model that reads a long text whole (the multilingual one windows it) is never
# given the view.
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.$:]*(?:Error|Exception|Exit|Interrupt|Warning|NotFound|Fault|Failure|Denied)"
    r"\b|(?i:error|fatal|panic|caused by|npm err!|err!)[\s:\[]"
    r"|\S+:\d+:(?:\d+:)?\s*(?i:fatal error|error)\b)"  # a compiler's file:line: error:
)
_DECORATION = re.compile(r"^[\s^~\-=_*+|.]*$")  # ^^^^^ markers, rules, empty lines
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
_IDENT = re.compile(
    r"[^\W\d]\w*(?:(?:\.|::|/|-)[^\W\d]\w*)+|\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|--?[a-z][\w-]+"
)
# a last line longer than this (a pasted paragraph): its last sentences within it. Not tuned:
# a question is a sentence or two (bench/RESULTS.md, "A pasted traceback with its question").
_QUESTION_CHARS = 300


@dataclass(frozen=True)
class DenseView:
    """What the model was given of a query longer than it reads (``dense_view``)."""

    text: str  # the text embedded
    tokens: int  # the whole query's model tokens
    kept_tokens: int  # the view's
    lines: int  # the query's lines (not counting empty ones and ^^^^ markers)
    kept_lines: int  # whole lines in the view
    question: int  # lines (or sentences) of the question kept
    error_lines: int  # error lines kept
    identifiers: int  # identifiers from the left-out lines

    def summary(self) -> str:
        """``the last line, 1 error line and 12 identifiers (40 of 52 lines left out)``."""
        parts = []
        if self.question:
            parts.append(
                "the last line" if self.question == 1 else f"{self.question} question lines"
            )
        if self.error_lines:
            parts.append(f"{self.error_lines} error line{'s' if self.error_lines != 1 else ''}")
        if self.identifiers:
            parts.append(f"{self.identifiers} identifier{'s' if self.identifiers != 1 else ''}")
        other = self.kept_lines - self.question - self.error_lines
        if other > 0:
            parts.append(f"{other} other line{'s' if other != 1 else ''}")
        kept = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        left = self.lines - self.kept_lines
        return f"{kept} ({left} of {self.lines} lines left out)"


def dense_view(text: str, count: Callable[[list[str]], list[int]], limit: int) -> DenseView | None:
    """The part of ``text`` the model is given when the whole is over ``limit`` tokens (the
    rule above), or None when it fits. ``count``: model tokens of each text, its special
    tokens (and the query prefix) included, as the embedder counts them."""
    whole = count([text])[0]
    if whole <= limit:
        return None
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not _DECORATION.match(ln)]
    if not lines:
        return None
    base = count([""])[0]  # the special tokens (and prefix) every text pays once
    budget = limit - base
    lines = _question_apart(lines)
    last = len(lines) - 1
    sizes = [max(0, n - base) for n in count(lines)]
    chosen: dict[int, str] = {}  # line index -> what it counts as
    used = 0

    def take(i: int, kind: str) -> bool:
        nonlocal used
        if i in chosen or used + sizes[i] > budget:
            return False
        chosen[i] = kind
        used += sizes[i]
        return True

    take(last, "question")
    for i in range(last - 1, -1, -1):
        if lines[i].endswith("?"):
            take(i, "question")
    for i in range(last, -1, -1):
        if _ERROR_LINE.match(lines[i]):
            take(i, "error")
    idents = _left_out_identifiers(lines, chosen)
    kept_idents: list[str] = []
    if idents:
        id_sizes = [max(0, n - base) for n in count(idents)]
        for ident, size in zip(idents, id_sizes):
            if used + size <= budget:
                kept_idents.append(ident)
                used += size
    for i in range(last, -1, -1):
        take(i, "other")
    order = sorted(chosen)

    def assemble(idents_kept: list[str]) -> str:
        body = "\n".join(lines[i] for i in order)
        return body + ("\n" + " ".join(idents_kept) if idents_kept else "")

    if not order and not kept_idents:  # not even the question fits: the model's own cut
        return None
    view = assemble(kept_idents)
    n = count([view])[0]
    while n > limit and kept_idents:  # joining can cost a token or two: drop identifiers
        kept_idents = kept_idents[: max(0, len(kept_idents) - max(1, (n - limit)))]
        view = assemble(kept_idents)
        n = count([view])[0]
    kinds = list(chosen.values())
    return DenseView(
        text=view,
        tokens=whole,
        kept_tokens=n,
        lines=len(lines),
        kept_lines=len(chosen),
        question=kinds.count("question"),
        error_lines=kinds.count("error"),
        identifiers=len(kept_idents),
    )


def _question_apart(lines: list[str]) -> list[str]:
    """``lines`` with a last line longer than a question (one paragraph) split in two: its
    last sentences (at most ``_QUESTION_CHARS``, the question) and what comes before."""
    last = len(lines) - 1
    if len(lines[last]) > _QUESTION_CHARS:  # one long line (a paragraph): its last sentences
        sentences = _SENTENCE_END.split(lines[last])
        tail: list[str] = []
        while sentences and sum(len(t) + 1 for t in tail) + len(sentences[-1]) <= _QUESTION_CHARS:
            tail.insert(0, sentences.pop())
        if sentences and tail:
            return [*lines[:last], " ".join(sentences), " ".join(tail)]
    return lines


def _left_out_identifiers(lines: list[str], chosen: Mapping[int, str]) -> list[str]:
    """The identifiers of the lines not ``chosen``, the most repeated first (ties: the one
    seen later first); a path counts as its file and folder, a folder path not at all."""
    seen: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if i in chosen:
            continue
        for m in _IDENT.finditer(line):
            ident = m.group()
            if "/" in ident:  # a path: by its file and folder; a folder path says nothing
                parts = ident.split("/")
                if "." not in parts[-1]:
                    continue
                ident = "/".join(parts[-2:])
            seen.setdefault(ident, [0, 0])
            seen[ident][0] += 1
            seen[ident][1] = i
    return sorted(seen, key=lambda w: (-seen[w][0], -seen[w][1]))


def require_chunks(
    count: int, exit_code: int = EXIT_NOTHING, *, subject: str = "the index"
) -> None:
    """The one check of an index with nothing to search: ``count`` (its chunks) 0 is a
    ``RagsiftError`` "``subject`` holds no chunks" with ``exit_code``. The exit code is a
    parameter because the commands differ on purpose, each as documented: ``query`` and
    ``explain`` exit 1 (``EXIT_NOTHING``, the default: nothing found, like grep; the README's
    exit-code table), ``tune`` and ``eval`` exit 2 (``EXIT_USAGE``: there is nothing to tune
    or evaluate on, an input they cannot use)."""
    if not count:
        raise RagsiftError(f"{subject} holds no chunks", exit_code)


class Searcher:
    """Search one index (``store`` follows ``ragsift.index.backend.IndexReader``).

    The embedder is loaded on first use and must match the index's model fingerprint. Each
    search is one ``SearchRequest`` (its mode, threshold, k, ...), handed to the engine as it
    is. ``prefetch``: the queries of the first search, known before the model is loaded, and
    ``request`` that search's request: their lexical lists are fetched while the model loads
    (``engine.lexical_ahead``; unused with a path filter)."""

    def __init__(
        self,
        store: Any,
        embedder: Any = None,
        model_dir: str | None = None,
        preload_embedder: bool = False,
        prefetch: Sequence[str] | None = None,
        request: SearchRequest | None = None,
    ) -> None:
        self.store = store
        self.settings: dict = dict(store.settings() or {})
        # the relevance models of this index: its stored calibration's, else the shipped ones
        self.models = models_for(self.settings)
        self._loading: Any = None
        self._lexical: dict = {}
        self._embedder = embedder
        self._model_dir = model_dir
        mode = request.mode if request is not None else DEFAULT_MODE
        fusion = request.fusion if request is not None else None
        if embedder is None and preload_embedder:
            from concurrent.futures import ThreadPoolExecutor

            # numpy's first import on this thread, before the model thread's onnxruntime
            # imports it: two threads importing numpy at once can get its partially
            # initialised C module (ImportError "__cpu_features__", seen 1 run in 6)
            import numpy  # noqa: F401

            with ThreadPoolExecutor(1, thread_name_prefix="ragsift-model") as pool:
                self._loading = pool.submit(embedder_for, self.settings, model_dir)
                store.load()
                self._lexical = lexical_ahead(store, bounded(prefetch or ()), mode, fusion)
        else:
            store.load()
            self._lexical = lexical_ahead(store, bounded(prefetch or ()), mode, fusion)
        self.count = int(store.count())
        self.dimensions = int(self.settings.get("dimensions") or 0)

    # -- model -----------------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            if self._loading is not None:
                loading, self._loading = self._loading, None
                self._embedder = loading.result()
            else:
                self._embedder = embedder_for(self.settings, self._model_dir)
        return self._embedder

    @property
    def model(self) -> str:
        if self._embedder is not None:
            return str(getattr(self._embedder, "name", ""))
        return str(self.settings.get("model") or "")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The query vectors of ``texts`` (m, dimensions) float32."""
        return self.embed_queries_counted(texts)[0]

    def embed_queries_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """(query vectors, tokens cut per query): a long query is never cut silently, the
        caller says so (``query``/``explain`` warn)."""
        vectors, cut, _ = self.embed_queries_viewed(texts)
        return vectors, cut

    def embed_queries_viewed(
        self, texts: Sequence[str]
    ) -> tuple[np.ndarray, list[int], list[DenseView | None]]:
        """(query vectors, tokens the model did not see per query, the ``DenseView`` of each
        query longer than the model reads, None for the others): a query the model would cut
        is embedded as its view (``dense_view``: the question, the error lines, the
        identifiers); the caller says what was left out."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32), [], []
        texts = bounded(texts)
        result = self.embedder.embed(texts, kind="query")
        vectors = np.asarray(result.vectors, dtype=np.float32)
        if self.dimensions and vectors.shape[1] != self.dimensions:
            raise RagsiftError(
                f"the model gives {vectors.shape[1]}-dimensional vectors but the index holds "
                f"{self.dimensions}; query with the model the index was built with"
            )
        cut = [int(t) for t in (getattr(result, "truncated", None) or [0] * len(texts))]
        views: list[DenseView | None] = [None] * len(texts)
        limit = getattr(self.embedder, "max_length", None)
        counter = getattr(self.embedder, "count_tokens", None)
        if any(cut) and limit and counter is not None:
            prefix = str(getattr(self.embedder, "query_prefix", "") or "")

            def count(parts: list[str]) -> list[int]:
                return counter([prefix + p for p in parts])

            for i, t in enumerate(texts):
                if cut[i]:
                    views[i] = dense_view(t, count, int(limit))
            redo = [i for i, v in enumerate(views) if v is not None]
            if redo:
                again = self.embedder.embed([views[i].text for i in redo], kind="query")
                vectors[redo] = np.asarray(again.vectors, dtype=np.float32)
                for i in redo:
                    cut[i] = views[i].tokens - views[i].kept_tokens
        return vectors, cut, views

    # -- search ----------------------------------------------------------------------------
    def retrieve(
        self, query: str, request: SearchRequest, *, qvec: np.ndarray | None = None
    ) -> Retrieval:
        return self.retrieve_many([query], request, qvecs=None if qvec is None else qvec[None, :])[
            0
        ]

    def retrieve_many(
        self,
        queries: Sequence[str],
        request: SearchRequest,
        *,
        qvecs: np.ndarray | None = None,
    ) -> list[Retrieval]:
        """Embed ``queries`` in one batch and retrieve each through the engine with
        ``request`` (its floor resolved here if the caller has not: ``resolved``)."""
        if not queries:
            return []
        if request.floor is None:
            request = request.resolved(self.settings)
            request.check_floor(self.settings)
        queries = bounded(queries)
        if qvecs is None and self.count:
            qvecs = self.embed_queries(queries)
        ahead, self._lexical = self._lexical, {}  # fetched for the first search only
        return retrieve(
            self.store,
            queries,
            qvecs,
            request,
            model=self.model,
            dimensions=self.dimensions,
            ahead=ahead,
            models=self.models,
        )
