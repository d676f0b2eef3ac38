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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragsift.embedders.binding import EMBEDDER_OPTIONS, check_model, embedder_for  # noqa: F401 (re-exported: defined there)
from ragsift.errors import RagsiftError
from ragsift.retrieval.engine import DEFAULT_MODE, check_mode, lexical_ahead, retrieve
from ragsift.retrieval.hybrid import Fusion
from ragsift.retrieval.relevance import models_for

if TYPE_CHECKING:
    import numpy as np

    from ragsift.retrieval.topk import Retrieval, TopK

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


class Searcher:
    """Search one index (``store`` follows ``ragsift.index.backend.IndexReader``).

    The embedder is loaded on first use and must match the index's model fingerprint.
    ``mode`` chooses the evidence (dense | lexical | hybrid, see the engine); the threshold
    applies to the relevance score that orders them. ``prefetch``: the queries of the first search, known
    before the model is loaded; their lexical lists are fetched while it loads
    (``engine.lexical_ahead``; unused with a path filter)."""

    def __init__(
        self,
        store: Any,
        embedder: Any = None,
        model_dir: str | None = None,
        preload_embedder: bool = False,
        mode: str = DEFAULT_MODE,
        fusion: Fusion | None = None,
        prefetch: Sequence[str] | None = None,
    ) -> None:
        self.mode = check_mode(mode)
        self.fusion = fusion or Fusion()
        self.store = store
        self.settings: dict = dict(store.settings() or {})
        # the relevance models of this index: its stored calibration's, else the shipped ones
        self.models = models_for(self.settings)
        self._loading: Any = None
        self._lexical: dict = {}
        self._embedder = embedder
        self._model_dir = model_dir
        if embedder is None and preload_embedder:
            from concurrent.futures import ThreadPoolExecutor

            # numpy's first import on this thread, before the model thread's onnxruntime
            # imports it: two threads importing numpy at once can get its partially
            # initialised C module (ImportError "__cpu_features__", seen 1 run in 6)
            import numpy  # noqa: F401

            with ThreadPoolExecutor(1, thread_name_prefix="ragsift-model") as pool:
                self._loading = pool.submit(embedder_for, self.settings, model_dir)
                store.load()
                self._lexical = lexical_ahead(
                    store, bounded(prefetch or ()), self.mode, self.fusion
                )
        else:
            store.load()
            self._lexical = lexical_ahead(store, bounded(prefetch or ()), self.mode, self.fusion)
        self.count = int(store.count())
        self.dimensions = int(self.settings.get("dimensions") or 0)

    def require_chunks(self) -> None:
        """Refuse an index with nothing to search: exit 1, "the index holds no chunks"."""
        if not self.count:
            from ragsift.errors import EXIT_NOTHING

            raise RagsiftError("the index holds no chunks", EXIT_NOTHING)

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
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32), []
        result = self.embedder.embed(bounded(texts), kind="query")
        vectors = np.asarray(result.vectors, dtype=np.float32)
        if self.dimensions and vectors.shape[1] != self.dimensions:
            raise RagsiftError(
                f"the model gives {vectors.shape[1]}-dimensional vectors but the index holds "
                f"{self.dimensions}; query with the model the index was built with"
            )
        cut = getattr(result, "truncated", None) or [0] * len(texts)
        return vectors, [int(t) for t in cut]

    # -- search ----------------------------------------------------------------------------
    def retrieve(
        self,
        query: str,
        strategy: TopK,
        *,
        path_glob: str | None = None,
        qvec: np.ndarray | None = None,
        span: str = "chunk",
        within: str | None = None,
    ) -> Retrieval:
        return self.retrieve_many(
            [query],
            strategy,
            path_glob=path_glob,
            qvecs=None if qvec is None else qvec[None, :],
            span=span,
            within=within,
        )[0]

    def retrieve_many(
        self,
        queries: Sequence[str],
        strategy: TopK,
        *,
        path_glob: str | None = None,
        qvecs: np.ndarray | None = None,
        span: str = "chunk",
        within: str | None = None,
    ) -> list[Retrieval]:
        """Embed ``queries`` in one batch and retrieve each through the engine."""
        if not queries:
            return []
        queries = bounded(queries)
        if qvecs is None and self.count:
            qvecs = self.embed_queries(queries)
        ahead, self._lexical = self._lexical, {}  # fetched for the first search only
        return retrieve(
            self.store,
            queries,
            qvecs,
            strategy,
            mode=self.mode,
            fusion=self.fusion,
            path_glob=path_glob,
            model=self.model,
            dimensions=self.dimensions,
            span=span,
            ahead=ahead,
            within=within,
            models=self.models,
        )
