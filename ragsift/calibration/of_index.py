"""Calibration as the API asks for it, for an index (``ragsift.api`` hands these out through
its lazy table): ``calibration_cost`` (what ``calibrate`` will send to the index's model),
``calibration_needed`` (what ``embed`` calibrates by itself after a run) and ``calibrate``
(``ragsift calibrate``: the fit of ``run.py`` for the index's model, stored in the index)."""

from __future__ import annotations

import os
from typing import Any

from ragsift.errors import RagsiftError


def calibration_cost(index: str | os.PathLike | None = None, *, model: str | None = None) -> Any:
    """What ``calibrate`` will send to the index's model (``calibration.cost.Estimate``:
    ``texts``, ``characters``, ``passages``, ``queries``; for an endpoint ``requests`` and
    ``bound_seconds``; ``line()`` the sentence the CLI prints), counted with the chunker and
    unit rule the calibration uses, before any model loads. ``index`` None: for the bundled
    MiniLM."""
    from ragsift.calibration.cost import estimate

    if index is None:
        return estimate(None)
    return estimate(_calibration_model(_index_settings(index), model))


def _index_settings(index: str | os.PathLike) -> dict[str, Any]:
    from ragsift.index import inspect_index, open_index

    path = os.fspath(index)
    if inspect_index(path) != "ours":
        raise RagsiftError(f"no index at {path}")
    with open_index(path, "r") as store:
        return dict(store.settings() or {})


def _calibration_model(settings: dict[str, Any], model: str | None) -> str | None:
    """The ``model_dir`` the calibration indexes with: ``multilingual``, an endpoint URL or a
    folder as the index records it (``model`` for a folder given again), None for MiniLM."""
    from ragsift.embedders import MULTILINGUAL

    source = settings.get("model_source")
    if source == MULTILINGUAL:
        return MULTILINGUAL
    return None if source in (None, "default") else (model or source)


def calibration_needed(index: str | os.PathLike) -> bool:
    """Whether the index's model has neither a shipped calibration (only the bundled MiniLM
    has one) nor one stored in the index for its fingerprint: what ``embed`` calibrates by
    itself after a run."""
    from ragsift.index import open_index
    from ragsift.retrieval.relevance import stored_calibration
    from ragsift.retrieval.threshold import measured_thresholds

    with open_index(os.fspath(index), "r") as store:
        settings = dict(store.settings() or {})
    fingerprint = settings.get("model_fingerprint")
    return (
        bool(fingerprint)
        and stored_calibration(settings) is None
        and fingerprint not in measured_thresholds()
    )


def calibrate(
    index: str | os.PathLike,
    *,
    model: str | None = None,
    embedder: Any = None,
    save: bool = True,
    progress: Any = None,
    wait: bool = False,
) -> Any:
    """``ragsift calibrate``: fit the relevance score and its default threshold per mode for
    the index's model on the set that ships with ragsift (``ragsift.calibration``), and with
    ``save`` store them in the index (its ``calibration`` setting, keyed to the model's
    fingerprint): ``query``/``explain``/MCP then score the index with them and use the
    threshold when none is given or tuned (``threshold_from`` ``calibrated``). ``model``: the
    index's model folder when it was built with ``--model DIR`` (as for ``query``);
    ``embedder``: an embedder object to use instead of loading it; ``progress(line)``: called
    at each stage. Returns the ``Calibration`` (``as_dict()``: coefficients, thresholds,
    leave-one-language-out figures)."""
    from ragsift.calibration.run import calibrate as fit
    from ragsift.embedders.binding import check_model, embedder_for
    from ragsift.index import open_index
    from ragsift.retrieval.relevance import CALIBRATION

    path = os.fspath(index)
    settings = _index_settings(path)
    if not settings.get("model_fingerprint"):
        raise RagsiftError(
            f"index {path} holds no vectors yet: embed documents into it first, "
            "then calibrate its model"
        )
    given = embedder is not None
    if embedder is None:
        embedder = embedder_for(settings, model)
    else:
        check_model(settings, embedder.fingerprint, getattr(embedder, "name", ""))
    # an endpoint counts what it sends; the probe at load counts when it was loaded here
    before = (getattr(embedder, "sent", 0), getattr(embedder, "requests", 0)) if given else (0, 0)
    result = fit(embedder, _calibration_model(settings, model), progress=progress)
    if hasattr(embedder, "sent"):
        result.embedded["sent"] = embedder.sent - before[0]
        result.embedded["requests"] = embedder.requests - before[1]
    if save:
        with open_index(path, "w", wait=wait) as store:
            store.set_settings(**{CALIBRATION: result.setting()})
    return result
