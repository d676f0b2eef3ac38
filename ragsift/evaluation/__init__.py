"""Evaluation: build an index per configuration through the pipeline and score retrieval on a
labelled set (span references or BEIR), with an embedding cache shared across configurations.

Orchestration, like ``ingest/``: it sits above the four layers and never prints.
"""

from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache, default_cache_path
from ragsift.evaluation.config import DEFAULT_CONFIG, EvalConfig, config_from_dict, load_config
from ragsift.evaluation.datasets import BeirDataset, SpanDataset, detect_format, load_dataset
from ragsift.evaluation.runner import EvalResult, evaluate
from ragsift.metrics import best_threshold  # the sweep `ragsift eval` reports

__all__ = [
    "DEFAULT_CONFIG",
    "BeirDataset",
    "CachingEmbedder",
    "EmbeddingCache",
    "EvalConfig",
    "EvalResult",
    "SpanDataset",
    "best_threshold",
    "config_from_dict",
    "default_cache_path",
    "detect_format",
    "evaluate",
    "load_config",
    "load_dataset",
]
