"""Calibration: the relevance score's coefficients and default thresholds fitted for a model.

The relevance score (``ragsift.retrieval.relevance``) and its default thresholds were fitted
for the bundled MiniLM on the large English admission set. ``ragsift calibrate`` maps an
index's own model onto that fit with the small labelled set that ships here (``data.py``:
passages in English, Chinese and Japanese with their questions, keyword forms and off-topic
negatives), through the real ranking engine over a temporary index built with that model and
one built with MiniLM (``run.py``): the model's dense evidence read as ``a·d + b``
(``fit.align_map``, ``fit.mapped``), MiniLM's coefficients and thresholds. The result is stored
in the index keyed to the model's fingerprint (``relevance.CALIBRATION``); the threshold policy
(``retrieval/threshold.py``) and the engine then use it.

Orchestration above the layers, beside ``tuning``: nothing below imports it.
"""
