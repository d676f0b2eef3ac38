"""The threshold policy: which similarity floor is in force, and where it came from.

Four sources, in this order:

1. A threshold given with the call (``--threshold VALUE``, or ``none``: no floor; the API's
   ``threshold=0.3`` or ``None``): "given on the command line".
2. A threshold stored in the index by ``ragsift tune --save``: "tuned on N queries". It is a
   threshold on the relevance score only when it says so (``"score": SCORE_KIND``) and on the
   coefficients that score the index now (``"calibration"``: ``relevance.score_digest`` of
   ``models_for`` when it was saved; one saved before it was recorded was tuned on the
   shipped ``MODELS``). One saved by ragsift < 0.2 (a cosine), on an earlier score, or on
   another calibration (the index calibrated since) is ignored, with one warning asking to
   re-tune (``ThresholdInForce.notice``), and the next source applies.
3. The index's calibration (``ragsift calibrate``, or ``embed`` by itself for a model without
   a shipped default): the mode's threshold fitted for the index's model on the set that
   ships with ragsift (``ragsift.calibration``), applied only when it was made for the
   index's model (same fingerprint) and this score (``relevance.stored_calibration``):
   "calibrated for this model". The index's score then uses the calibrated coefficients too.
4. The model's shipped default: only models whose floor was measured have one. Today that is
   the bundled all-MiniLM-L6-v2 (int8 ONNX, mean pooling, normalised): the relevance score's
   ``DEFAULT_THRESHOLDS`` (one per mode: each mode's score has its own model), chosen by leave-one-corpus-out on ../shared/eval (the value and its
   measurement live beside the score's coefficients in ``ragsift/retrieval/relevance.py``;
   bench/RESULTS.md, "One relevance score"). A model nobody measured or calibrated (a
   ``--model DIR`` or ``multilingual`` index that was never calibrated, or MiniLM with
   options that change its vectors) has NO default: ``query``/``explain`` refuse with exit 2
   and say to run ``ragsift calibrate``, pass ``--threshold`` or run ``ragsift tune --save``.
   A number nobody measured is never presented as measured.

``ThresholdInForce.origin`` names the source in one word for the JSON records (``flag``,
``tuned``, ``calibrated``, ``default``; ``threshold_from``).

``tune`` itself never needs a floor (it sweeps them all); its ``--threshold`` is only the
point of comparison, so it asks with ``required=False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragsift.errors import Action, RagsiftError, Worded, Words
from ragsift.retrieval.relevance import (
    MODELS,
    SCORE_KIND,
    models_for,
    score_digest,
    stored_calibration,
)

# ``threshold_source`` of a threshold given with the call: a JSON value kept from earlier releases
FLAG = "--threshold"
RETUNE = Action("tune", queries="FILE", save=True)  # how a warning asks to re-tune
TUNED = "tuned"
MEASURED = "model default"  # JSON value of ``threshold_source`` (kept from earlier releases)
CALIBRATED = "calibrated"
# ``threshold_source`` → ``ThresholdInForce.origin`` (the ``threshold_from`` JSON field)
ORIGINS = {FLAG: "flag", TUNED: "tuned", CALIBRATED: "calibrated", MEASURED: "default"}


def measured_thresholds(mode: str = "hybrid") -> dict[str, float]:
    """Model fingerprint → measured floor in ``mode``. Only the bundled MiniLM, as it ships."""
    from ragsift.embedders.weights import DEFAULT_FINGERPRINT
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS

    return {DEFAULT_FINGERPRINT: DEFAULT_THRESHOLDS[mode]}


AUTO = "auto"  # the threshold argument's default: the saved one, else the measured default


def check_threshold(value: object) -> float | str | None:
    """A threshold argument as the engine takes it: ``"auto"`` (the threshold in force for the
    index), ``None`` (no floor) or a number in [0, 1] (a float). Anything else (a bool, another
    string, NaN, a number out of range) is a ``RagsiftError`` about ``threshold``."""
    if value is None or value == AUTO and isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RagsiftError(
            "{threshold} must be a number between 0 and 1, None or 'auto', not {got}",
            param="threshold",
            values={"got": repr(value)},
        )
    if not 0.0 <= value <= 1.0:  # NaN fails this too
        raise RagsiftError(
            "{threshold} {got}: the relevance score lies between 0 and 1",
            param="threshold",
            values={"got": value},
        )
    return float(value)


@dataclass(frozen=True)
class ThresholdInForce:
    """The floor a retrieval uses and its origin (``source``: ``FLAG``, ``TUNED``,
    ``CALIBRATED``, ``MEASURED`` or None when no floor applies because none is known).
    ``queries``: how many labelled queries it was tuned or calibrated on."""

    value: float | None
    source: str | None
    queries: int | None = None  # tuned: how many labelled queries
    notice: Words | None = None  # one line for the user (a saved threshold that was ignored)

    @property
    def warning(self) -> str | None:
        """``notice`` as text in the API's words (``re-run `tune(queries=FILE, save=True)```),
        a ``Worded`` str that keeps its ``Words`` for a front end to word again (the CLI:
        ``ragsift tune --queries FILE --save``)."""
        return None if self.notice is None else Worded(self.notice)

    @property
    def label(self) -> str:
        """How ``explain`` names the origin."""
        if self.source == FLAG:
            return "given on the command line"
        if self.source == TUNED:
            return f"tuned on {self.queries} queries"
        if self.source == CALIBRATED:
            return f"calibrated for this model on {self.queries} queries"
        if self.source == MEASURED:
            return "measured default"
        return "no threshold"

    @property
    def origin(self) -> str | None:
        """The source in one word: ``flag``, ``tuned``, ``calibrated``, ``default`` (None:
        no threshold)."""
        return ORIGINS.get(self.source or "")


def resolve_threshold(
    threshold: float | str | None,
    settings: dict[str, Any],
    *,
    required: bool = True,
    mode: str = "hybrid",
) -> ThresholdInForce:
    """The threshold in force for an index (its ``settings``), the threshold argument
    (``check_threshold``: ``"auto"``, ``None`` or a number) and the retrieval ``mode`` (whose
    score the measured default belongs to)."""
    threshold = check_threshold(threshold)
    if threshold != AUTO:
        return ThresholdInForce(threshold, FLAG)
    tuned = settings.get("tuned_threshold")
    notice = None
    if isinstance(tuned, dict) and "value" in tuned:
        v = tuned["value"]
        was = tuned.get("score")
        tuned_on = tuned.get("calibration") or score_digest(MODELS)
        now = score_digest(models_for(settings))
        if was == SCORE_KIND and tuned_on == now:
            return ThresholdInForce(
                None if v is None else float(v), TUNED, int(tuned.get("queries") or 0)
            )
        facts = {"v": v, "retune": RETUNE}
        if was == SCORE_KIND:
            notice = Words(
                "the threshold saved in this index ({v}) was tuned on other coefficients of "
                "the score ({was}; `{calibrate}` has changed them to {now} since) and is "
                "ignored; re-run `{retune}`",
                {**facts, "was": tuned_on, "now": now, "calibrate": Action("calibrate")},
            )
        elif isinstance(was, str) and was.startswith("relevance-"):
            notice = Words(
                "the threshold saved in this index ({v}) was tuned on an earlier relevance "
                "score ({was}; this ragsift scores {kind}) and is ignored; re-run `{retune}`",
                {**facts, "was": was, "kind": SCORE_KIND},
            )
        else:
            notice = Words(
                "the threshold saved in this index ({v}) is a cosine from ragsift < 0.2 and "
                "is ignored: scores are now relevance scores; re-run `{retune}`",
                facts,
            )
    cal = stored_calibration(settings)
    if cal is not None:
        return ThresholdInForce(
            float(cal["thresholds"][mode]),
            CALIBRATED,
            int(cal.get("queries") or 0),
            notice=notice,
        )
    fingerprint = settings.get("model_fingerprint")
    measured = measured_thresholds(mode).get(fingerprint or "")
    if measured is not None:
        return ThresholdInForce(measured, MEASURED, notice=notice)
    floor = ThresholdInForce(None, None, notice=notice)
    if required:
        raise no_threshold(settings, floor)
    return floor


def no_threshold(settings: dict[str, Any], floor: ThresholdInForce) -> RagsiftError:
    """The policy's error (exit 2) for an index whose model has no floor known (``floor``:
    what ``resolve_threshold(..., required=False)`` found, ``source`` None) when a query
    needs one: calibrate, pass a threshold, or tune."""
    model = settings.get("model") or settings.get("model_fingerprint") or "of this index"
    ignored = (
        " (the threshold saved in it is ignored: it was tuned on another score)"
        if floor.notice
        else ""
    )
    return RagsiftError(
        Words(
            "model {model} has no measured threshold{ignored}; calibrate it with `{calibrate}` "
            "(the set that ships with ragsift), pass {threshold=value} (or {threshold=none}), "
            "or store one in the index with `{retune}`",
            {
                "model": model,
                "ignored": ignored,
                "calibrate": Action("calibrate"),
                "value": "VALUE",
                "none": "none",
                "retune": RETUNE,
            },
        )
    )


def tuned_setting(
    value: float | None,
    *,
    queries: int,
    k: int,
    mode: str,
    objective: str,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``tuned_threshold`` index setting written by ``tune --save``: the score it was
    tuned on (``SCORE_KIND``) and the coefficients that scored the index (``calibration``:
    ``score_digest`` of ``models_for(settings)``, the index's settings when it was tuned)."""
    return {
        "value": value,
        "queries": queries,
        "k": k,
        "mode": mode,
        "objective": objective,
        "score": SCORE_KIND,
        "calibration": score_digest(models_for(settings or {})),
    }
