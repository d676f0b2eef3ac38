"""The threshold policy: which similarity floor is in force, and where it came from.

Three sources, in this order:

1. ``--threshold VALUE`` (or ``none`` / ``off`` / ``no``: no floor): "given on the command line".
2. A threshold stored in the index by ``ragsift tune --save``: "tuned on N queries".
3. The model's measured default: only models whose floor was measured have one. Today that is
   the bundled all-MiniLM-L6-v2 (int8 ONNX, mean pooling, normalised): 0.40, measured with
   ``ragsift tune``/``ragsift eval`` on ../shared/eval (bench/RESULTS.md, "MiniLM's default
   threshold"; the value and its reasoning live beside ``MINILM_THRESHOLD`` in
   ``ragsift/embedders/onnx.py``). A model nobody measured (any ``--model DIR``, or MiniLM
   with options that change its vectors) has NO default: ``query``/``explain`` refuse with
   exit 2 and say to pass ``--threshold`` or run ``ragsift tune --save``. A number nobody
   measured is never presented as measured.

``tune`` itself never needs a floor (it sweeps them all); its ``--threshold`` is only the
point of comparison, so it asks with ``required=False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragsift.errors import RagsiftError

FLAG = "--threshold"
TUNED = "tuned"
MEASURED = "model default"  # JSON value of ``threshold_source`` (kept from earlier releases)


def measured_thresholds() -> dict[str, float]:
    """Model fingerprint → measured floor. Only the bundled MiniLM, as it ships."""
    from ragsift.embedders.onnx import MINILM_THRESHOLD
    from ragsift.embedders.weights import DEFAULT_MODEL_NAME, DEFAULT_SHA256

    return {f"{DEFAULT_MODEL_NAME}/384/{DEFAULT_SHA256}": MINILM_THRESHOLD}


def parse_threshold(value: str | None) -> tuple[bool, float | None]:
    """(no value given?, explicit value). ``none``/``off``/``no`` disables the floor."""
    if value is None:
        return True, None
    text = value.strip().lower()
    if text in ("none", "off", "no"):
        return False, None
    try:
        number = float(text)
    except ValueError:
        raise RagsiftError(f"--threshold must be a number or 'none', not {value!r}") from None
    if not -1.0 <= number <= 1.0:
        raise RagsiftError(f"--threshold {value}: a cosine similarity lies between -1 and 1")
    return False, number


@dataclass(frozen=True)
class ThresholdInForce:
    """The floor a retrieval uses and its origin (``source``: ``FLAG``, ``TUNED``,
    ``MEASURED`` or None when no floor applies because none is known)."""

    value: float | None
    source: str | None
    queries: int | None = None  # tuned: how many labelled queries

    @property
    def label(self) -> str:
        """How ``explain`` names the origin."""
        if self.source == FLAG:
            return "given on the command line"
        if self.source == TUNED:
            return f"tuned on {self.queries} queries"
        if self.source == MEASURED:
            return "measured default"
        return "no threshold"


def resolve_threshold(flag: str | None, settings: dict[str, Any], *,
                      required: bool = True) -> ThresholdInForce:
    """The threshold in force for an index (its ``settings``) and the ``--threshold`` flag."""
    no_flag, value = parse_threshold(flag)
    if not no_flag:
        return ThresholdInForce(value, FLAG)
    tuned = settings.get("tuned_threshold")
    if isinstance(tuned, dict) and "value" in tuned:
        v = tuned["value"]
        return ThresholdInForce(None if v is None else float(v), TUNED,
                                int(tuned.get("queries") or 0))
    fingerprint = settings.get("model_fingerprint")
    measured = measured_thresholds().get(fingerprint or "")
    if measured is not None:
        return ThresholdInForce(measured, MEASURED)
    if not required:
        return ThresholdInForce(None, None)
    model = settings.get("model") or fingerprint or "of this index"
    raise RagsiftError(
        f"model {model} has no measured threshold; pass --threshold VALUE (or --threshold "
        "none), or store one in the index with `ragsift tune --queries FILE --save`")


def tuned_setting(value: float | None, *, queries: int, k: int, mode: str,
                  objective: str) -> dict[str, Any]:
    """The ``tuned_threshold`` index setting written by ``tune --save``."""
    return {"value": value, "queries": queries, "k": k, "mode": mode, "objective": objective}


def strategy_for(settings: dict[str, Any], *, k: int, threshold: str | None,
                 reject_window: int, max_chars: int | None, required: bool = True):
    """The ``TopK`` options of the shared flags, with the threshold in force for this index.
    Returns ``(TopK, ThresholdInForce)``."""
    from ragsift.retrieval.topk import TopK

    floor = resolve_threshold(threshold, settings, required=required)
    return (TopK(k=k, threshold=floor.value, reject_window=reject_window, max_chars=max_chars),
            floor)
