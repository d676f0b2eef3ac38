"""Evaluation configurations: chunker (+ options), embedder, retrieval mode and k, from TOML.

```toml
name = "tokens-250-125"             # optional; defaults to the file's stem
[chunker]
strategy = "tokens"                 # a make_chunker strategy, or chroma-recursive (reference)
tokenizer = "cl100k"                # model (default: the embedder's tokens) | cl100k | chars
size = 250                          # every other key goes to the chunker as an option
overlap = 125                       # (without size and tokenizer = model: the model max length)
[embedder]
model = "default"                   # "default" (all-MiniLM-L6-v2 int8) or an ONNX model folder
[retrieval]
mode = "hybrid"                     # dense | lexical | hybrid
k = 5
fusion = "relevance"                # hybrid: relevance | convex | rrf (the last two: comparisons)
rrf_k = 60                          # rrf: 1 / (rrf_k + rank)
alpha = 0.6                         # convex: weight of the dense side
norm = "minmax"                     # convex: minmax | tmm (theoretical minimum)
depth = 1000                        # hybrid: candidates taken from each side before fusing
span = "chunk"                      # span sets: score whole chunks | best (evidence spans)
backend = "sqlite"                  # the index built per configuration: sqlite | lance
```
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser from PyPI (a 3.10-only dependency)
    import tomli as tomllib

from ragsift.api import DEFAULT_MODE, FUSIONS, MODES, NORMS, Fusion  # cheap: no numpy
from ragsift.errors import RagsiftError

_FUSION = Fusion()  # the library's hybrid defaults, chosen with `ragsift eval`


@dataclass
class EvalConfig:
    name: str = "default"
    chunker: str = "recursive"
    tokenizer: str = "model"
    chunker_options: dict[str, Any] = field(default_factory=dict)
    model: str | None = None  # None: the default embedder
    embedder_options: dict[str, Any] = field(default_factory=dict)
    mode: str = DEFAULT_MODE
    k: int = 5
    fusion: str = _FUSION.fusion
    rrf_k: int = _FUSION.rrf_k
    alpha: float = _FUSION.alpha
    norm: str = _FUSION.norm
    depth: int = _FUSION.depth
    span: str = "chunk"  # chunk | best: score each hit's evidence span (ragsift.retrieval.spans)
    backend: str = "sqlite"  # the index each configuration is built into: sqlite | lance

    def __post_init__(self) -> None:
        if self.backend not in ("sqlite", "lance"):
            raise RagsiftError(f"config {self.name}: backend must be sqlite or lance")
        if self.mode not in MODES:
            raise RagsiftError(f"config {self.name}: mode must be one of {', '.join(MODES)}")
        if self.fusion not in FUSIONS:
            raise RagsiftError(f"config {self.name}: fusion must be one of {', '.join(FUSIONS)}")
        if self.norm not in NORMS:
            raise RagsiftError(f"config {self.name}: norm must be one of {', '.join(NORMS)}")
        if self.k < 1 or self.depth < 1 or self.rrf_k < 0:
            raise RagsiftError(f"config {self.name}: k and depth must be ≥ 1, rrf_k ≥ 0")
        if not 0.0 <= self.alpha <= 1.0:
            raise RagsiftError(f"config {self.name}: alpha must be in [0, 1]")
        if self.span not in ("chunk", "best"):
            raise RagsiftError(f"config {self.name}: span must be chunk or best")

    def fusion_settings(self) -> Fusion:
        """The retrieval engine's ``Fusion`` for this configuration."""
        return Fusion(
            fusion=self.fusion, alpha=self.alpha, norm=self.norm, rrf_k=self.rrf_k, depth=self.depth
        )

    def replace(self, **changes: Any) -> EvalConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if self.span == "chunk":  # the field appears where spans were scored
            d.pop("span")
        if self.mode != "hybrid":
            for key in ("fusion", "rrf_k", "alpha", "norm", "depth"):
                d.pop(key)
        elif self.fusion == "rrf":
            d.pop("alpha")
            d.pop("norm")
        elif self.fusion == "relevance":
            for key in ("alpha", "norm", "rrf_k"):
                d.pop(key)
        else:
            d.pop("rrf_k")
        return d

    def chunker_label(self) -> str:
        opts = self.chunker_options
        label = self.chunker
        if "size" in opts:
            label += f" {opts['size']}"
            if "overlap" in opts:
                label += f"/{opts['overlap']}"
        extra = {k: v for k, v in opts.items() if k not in ("size", "overlap")}
        if extra:
            label += " " + " ".join(f"{k}={v}" for k, v in sorted(extra.items()))
        return f"{label} {self.tokenizer}"

    def retrieval_label(self) -> str:
        if self.span != "chunk":
            return self.replace(span="chunk").retrieval_label() + f", span {self.span}"
        if self.mode != "hybrid":
            return self.mode
        if self.fusion == "rrf":
            return f"hybrid rrf k={self.rrf_k}"
        if self.fusion == "relevance":
            return "hybrid relevance"
        return f"hybrid convex α={self.alpha:g} {self.norm}"


_TOP = {"name", "description"}
_RETRIEVAL = {"mode", "k", "fusion", "rrf_k", "alpha", "norm", "depth", "span", "backend"}


def load_config(path: str | Path) -> EvalConfig:
    """Read one configuration file; unknown sections or retrieval keys are errors."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise RagsiftError(f"config not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RagsiftError(f"{path}: not valid TOML ({exc})") from None
    return config_from_dict(data, default_name=path.stem, base=path.parent)


def config_from_dict(
    data: dict[str, Any], default_name: str = "config", base: Path | None = None
) -> EvalConfig:
    unknown = set(data) - _TOP - {"chunker", "embedder", "retrieval"}
    if unknown:
        raise RagsiftError(f"config {default_name}: unknown keys {sorted(unknown)}")
    chunker = dict(data.get("chunker", {}))
    embedder = dict(data.get("embedder", {}))
    retrieval = dict(data.get("retrieval", {}))
    bad = set(retrieval) - _RETRIEVAL
    if bad:
        raise RagsiftError(f"config {default_name}: unknown [retrieval] keys {sorted(bad)}")
    model = embedder.pop("model", None)
    if model in ("", "default"):
        model = None
    if model is not None and base is not None and not Path(model).is_absolute():
        candidate = base / model
        model = str(candidate) if candidate.exists() else model
    try:
        return EvalConfig(
            name=str(data.get("name", default_name)),
            chunker=str(chunker.pop("strategy", "recursive")),
            tokenizer=str(chunker.pop("tokenizer", "model")),
            chunker_options=chunker,
            model=model,
            embedder_options=embedder,
            **retrieval,
        )
    except TypeError as exc:
        raise RagsiftError(f"config {default_name}: {exc}") from None


# What ``ragsift eval`` scores without a configuration: the defaults chosen by measurement
# (bench/RESULTS.md): recursive chunks sized in the embedder's tokens at its max length
# (what `ragsift embed` builds), hybrid retrieval fused by a convex combination, k = 5.
DEFAULT_CONFIG = EvalConfig(name="defaults")
