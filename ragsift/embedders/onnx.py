"""A sentence-embedding model run with onnxruntime: text → tokens → transformer → pooled unit vector.

Algorithm of ``embed``:
1. Tokenize every text once (``encode_batch``, no padding, no truncation), so the full token
   count of each text is known: truncation is measured, never silent.
2. Texts longer than ``max_length`` keep their first ``max_length - 1`` tokens plus the
   closing special token ([SEP]), exactly what the tokenizer's own truncation would give;
   ``truncated[i]`` = full count − ``max_length``.
3. Sort by token count and run batches of ``batch_size`` texts, each padded only to its own
   longest text (mixed-length input wastes far less compute on padding).
4. Pool ``last_hidden_state`` (mean over the attention mask, or the [CLS] row) and
   L2-normalise; results go back in input order.

The pinned default model runs as onnxruntime's fused transformer kernels rebuilt in memory
from the same int8 file (``fused.py``; identical vectors within 1e-5, ~12% less CPU).

Numbers behind the defaults (2-core machine, see ``bench/RESULTS.md``): batches of 8
beat 32 (and 4; 16 is no better); 2 intra-op threads ~1.8× one on a quiet machine; length
sorting +26–95% on mixed lengths.

Limits: CPU only; one ONNX input signature (``input_ids``, ``attention_mask``, optional
``token_type_ids``), one 3-D output; ``max_length`` is capped at 512 because longer inputs
overflow BERT-style position tables and crash the session.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift.embedders.runtime import log_severity, onnxruntime
from ragsift.embedders.tokens import ModelTokenCounter, TokenMemo
from ragsift.errors import RagsiftError
from ragsift.sources.reading import encodable

if TYPE_CHECKING:
    import numpy as np

HARD_MAX_LENGTH = 512
# Texts per model call: 8 (sorted by length) was the fastest configuration measured on this
# 2-core machine (bench/RESULTS.md, "Embedding speed"); `embed --batch-size` overrides it.
DEFAULT_BATCH_SIZE = 8


# -- onnxruntime, quiet ---------------------------------------------------------------------
@dataclass(frozen=True)
class EmbedResult:
    vectors: np.ndarray  # (n, dimensions) float32, rows L2-normalised when ``normalize``
    truncated: list[int]  # per text: tokens the model never saw (0 when it fit)


def _threads() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(2, cpus))


def read_json(path: Path) -> dict:
    """A model folder's JSON file as a dict; one ``RagsiftError`` line when it cannot be."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RagsiftError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise RagsiftError(f"{path} is not a JSON object")
    return data


def load_tokenizer(path: Path) -> Any:
    """A ``tokenizers.Tokenizer`` with saved padding and truncation switched off.

    One object per file (and size, mtime) per process: ``embed`` asks for the model's tokenizer
    twice, for the chunker's token counts and for the embedder, and nothing changes it after
    loading (``encode``/``encode_batch`` only), so both share it."""
    try:
        st = os.stat(path)
    except OSError:
        return _load_tokenizer(str(path), None)
    return _load_tokenizer(str(path), (st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _load_tokenizer(path: str, _stamp: tuple[int, int] | None) -> Any:
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(path)
    except Exception as exc:  # the Rust side raises plain Exception subclasses
        raise RagsiftError(f"cannot load tokenizer {path}: {exc}") from exc
    tok.no_padding()
    tok.no_truncation()
    return tok


@dataclass(frozen=True)
class ModelFiles:
    """Which model an ``OnnxEmbedder`` runs: its name, weights file and their sha256, and
    the fingerprint's tail (``fingerprint_extra``: the options and files that change stored
    vectors); ``fused_minilm``: run the rebuilt fused graph (``fused.py``)."""

    name: str
    weights: Path
    weights_sha256: str
    fingerprint_extra: str = ""
    fused_minilm: bool = False


@dataclass(frozen=True)
class VectorSettings:
    """How an ``OnnxEmbedder`` turns tokens into vectors: ``dimensions`` (0: probed on first
    load), ``max_length`` in tokens, ``pooling`` ("mean" | "cls"), ``normalize``, and the
    prefixes put before a query and a passage."""

    dimensions: int
    max_length: int
    pooling: str = "mean"
    normalize: bool = True
    query_prefix: str = ""
    passage_prefix: str = ""


class OnnxEmbedder:
    """Text → unit vectors with an ONNX transformer. Build it with ``load_embedder``."""

    def __init__(
        self,
        files: ModelFiles,
        tokenizer: Any,
        settings: VectorSettings,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        pooling, max_length = settings.pooling, settings.max_length
        if pooling not in ("mean", "cls"):
            raise RagsiftError(f"pooling must be 'mean' or 'cls', not {pooling!r}")
        if not 2 <= max_length <= HARD_MAX_LENGTH:
            raise RagsiftError(
                f"max length must be between 2 and {HARD_MAX_LENGTH} tokens, not {max_length}"
            )
        self.name = files.name
        self.dimensions = settings.dimensions
        self.max_length = max_length
        self.pooling = pooling
        self.normalize = settings.normalize
        self.query_prefix = settings.query_prefix
        self.passage_prefix = settings.passage_prefix
        self.batch_size = batch_size
        self.weights = files.weights
        self.weights_sha256 = files.weights_sha256
        self._fingerprint_extra = files.fingerprint_extra
        self.fused_minilm = files.fused_minilm  # run the rebuilt fused graph (see fused.py)
        self._tok = tokenizer
        self._memo: TokenMemo | None = None  # ids a chunker's counter kept (take_token_ids_from)
        self._threads = threads or _threads()
        self._session: Any = None
        self._input_names: tuple[str, ...] = ()
        self._output_name = ""

    @property
    def fingerprint(self) -> str:
        """name/dimensions/weights-sha256[/options that change stored vectors]."""
        from ragsift.embedders.weights import fingerprint

        extra = (self._fingerprint_extra,) if self._fingerprint_extra else ()
        return fingerprint(self.name, self.dimensions, self.weights_sha256, *extra)

    # -- model session -------------------------------------------------------------------
    def _ensure_session(self) -> Any:
        if self._session is None:
            self._session = self._make_session()
        return self._session

    def _make_session(self) -> Any:
        ort = onnxruntime()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = log_severity()
        try:
            if self.fused_minilm:  # the optimised fused graph, cached on disk (fused.py)
                from ragsift.embedders.fused import fused_session

                session = fused_session(self.weights, self.weights_sha256, opts)
            else:
                session = ort.InferenceSession(
                    str(self.weights), sess_options=opts, providers=["CPUExecutionProvider"]
                )
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            raise RagsiftError(f"cannot load ONNX model {self.weights}: {exc}") from exc
        inputs = [i.name for i in session.get_inputs()]
        if "input_ids" not in inputs or "attention_mask" not in inputs:
            raise RagsiftError(
                f"{self.weights} is not a text encoder this tool can run: inputs are {inputs}, "
                "expected input_ids and attention_mask (and optionally token_type_ids)"
            )
        unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown:
            raise RagsiftError(f"{self.weights} needs inputs this tool does not provide: {unknown}")
        outputs = [o.name for o in session.get_outputs()]
        self._output_name = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        self._input_names = tuple(inputs)
        return session

    def _probe_dimensions(self) -> None:
        """Learn the width of the token states from one tiny run (configs did not say)."""
        import numpy as np

        session = self._ensure_session()
        ids = np.asarray([self._token_ids(["dimension probe"])[0][0]], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run([self._output_name], feed)[0]
        if hidden.ndim != 3:
            raise RagsiftError(
                f"{self.weights} returns shape {hidden.shape}, not (batch, tokens, dim) states"
            )
        self.dimensions = int(hidden.shape[-1])

    # -- tokens --------------------------------------------------------------------------
    def _prefix(self, kind: str) -> str:
        if kind == "passage":
            return self.passage_prefix
        if kind == "query":
            return self.query_prefix
        raise ValueError(f"kind must be 'passage' or 'query', not {kind!r}")

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Model tokens of each text, special tokens included (before any truncation)."""
        return [len(e.ids) for e in self._tok.encode_batch(list(texts))]

    def counter(self) -> ModelTokenCounter:
        return ModelTokenCounter(self._tok, self.max_length)

    def take_token_ids_from(self, counter: Any) -> bool:
        """Take the ids ``counter`` keeps (``ModelTokenCounter.keep_token_ids``) instead of
        encoding those texts again, if it counts with this embedder's tokenizer object (None:
        stop). True if linked."""
        memo = (
            getattr(counter, "memo", None)
            if isinstance(counter, ModelTokenCounter) and counter._tok is self._tok
            else None
        )
        self._memo = memo
        return memo is not None

    def _token_ids(self, texts: list[str]) -> tuple[list[list[int]], list[int]]:
        """Model-input ids per text (truncated to ``max_length``) and tokens cut per text."""
        limit = self.max_length
        kept: list = [None] * len(texts)
        if self._memo is not None:  # ids a chunker kept: identical to encoding the text here
            kept = [
                ids if ids is not None and len(ids) <= limit else None
                for ids in self._memo.take(texts)
            ]
        encs = iter(
            self._tok.encode_batch([t for t, ids in zip(texts, kept) if ids is None])
            if None in kept
            else ()
        )
        ids_out: list[list[int]] = []
        cut: list[int] = []
        for ids in kept:
            if ids is not None:
                ids_out.append(ids)
                cut.append(0)
                continue
            enc = next(encs)
            ids = enc.ids
            n = len(ids)
            if n <= limit:
                ids_out.append(ids)
                cut.append(0)
                continue
            # keep the closing special tokens ([SEP]) as the tokenizer's truncation would
            mask = enc.special_tokens_mask
            tail = 0
            while tail < n and tail < limit - 1 and mask[n - 1 - tail]:
                tail += 1
            ids_out.append(ids[: limit - tail] + ids[n - tail :])
            cut.append(n - limit)
        return ids_out, cut

    # -- embedding -----------------------------------------------------------------------
    def embed(self, texts: list[str], kind: str = "passage") -> EmbedResult:
        import numpy as np

        texts = [encodable(t) for t in texts]
        prefix = self._prefix(kind)
        if prefix:
            texts = [prefix + t for t in texts]
        n = len(texts)
        out = np.zeros((n, self.dimensions), dtype=np.float32)
        if n == 0:
            return EmbedResult(out, [])
        ids, cut = self._token_ids(texts)
        session = self._ensure_session()
        order = sorted(range(n), key=lambda i: len(ids[i]))
        bs = self.batch_size
        for lo in range(0, n, bs):
            rows = order[lo : lo + bs]
            out[rows] = self._run_batch([ids[i] for i in rows], session, np)
        return EmbedResult(out, cut)

    def _run_batch(self, batch: list[list[int]], session: Any, np: Any) -> np.ndarray:
        width = max(len(x) for x in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for r, seq in enumerate(batch):
            input_ids[r, : len(seq)] = seq
            mask[r, : len(seq)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        hidden = session.run([self._output_name], feed)[0]
        if hidden.ndim != 3 or hidden.shape[-1] != self.dimensions:
            raise RagsiftError(
                f"{self.weights} returned shape {hidden.shape}; expected "
                f"(batch, tokens, {self.dimensions}) token states"
            )
        if self.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        pooled = pooled.astype(np.float32, copy=False)
        if self.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        return pooled

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], kind="query").vectors[0]

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.fingerprint!r}, max_length={self.max_length})"
