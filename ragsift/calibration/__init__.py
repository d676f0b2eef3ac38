"""Calibration: the relevance score's coefficients and default thresholds fitted for a model.

The relevance score (``ragsift.retrieval.relevance``) and its default thresholds were fitted
for the bundled MiniLM. ``ragsift calibrate`` fits both for an index's own model on the small
labelled set that ships here (``data.py``: passages in English, Chinese and Japanese with
their questions, keyword forms and off-topic negatives), through the real ranking engine over
a temporary index built with that model (``run.py``), with the fit of ``fit.py`` (the same
code ``bench/bench_relevance.py`` fitted the shipped constants with). The result is stored in
the index keyed to the model's fingerprint (``relevance.CALIBRATION``); the threshold policy
(``retrieval/threshold.py``) and the engine then use it.

Orchestration above the layers, beside ``tuning``: nothing below imports it.
"""
