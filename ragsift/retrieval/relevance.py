"""The relevance score: one number per candidate that orders the list and holds the threshold.

``score`` estimates the probability that a candidate is relevant to the query. It is a
logistic model over evidence both sides already produce, and nothing else (no text, no model
call), so it costs a few vector operations per query:

- ``cosine``: the dense side's cosine of the query and chunk vectors;
- ``share``: the chunk's BM25 divided by the query's BM25 *ceiling* (``lexical.ceiling``: the
  most any chunk could score, ``Σ idf·(k1 + 1)`` over the query's words, words the index lacks
  included), so 0.6 means the same on a one-word query and a twenty-word one; 0 when the
  lexical side did not match the chunk;
- ``cosine_gap`` / ``share_gap``: how far the candidate lies below the best candidate of the
  query on that side (0 for the best): the evidence relative to what else the index holds;
- ``log_words``: ``log`` of the number of query words (``index.terms.query_words``): short queries
  have lower cosines for the same relevance;
- ``title``: the share of the query's words found in the chunk's page title (``title_share``;
  0 when the title holds fewer than ``TITLE_MIN_SHARE`` of them), added to the logit with the
  fixed weight ``TITLE_WEIGHT`` in every mode (not a fitted coefficient of ``Model``: a
  calibration leaves it as it is).

``p = 1 / (1 + exp(−(b + Σ wᵢ·xᵢ + TITLE_WEIGHT·title)))``. Each mode uses only its own
evidence: ``dense`` the cosine terms, ``lexical`` the share terms, ``hybrid`` both; the title
term in all three. Within one query every term but the bias, ``log_words`` and the title is
linear in the cosine and the share with positive weights, so among candidates whose titles
hold the same share of the query's words the score orders a dense list as the cosine does and
a lexical list as BM25 does.

The coefficients were fitted by logistic regression (bench/bench_relevance.py) on the labelled
admission set (bench/admission_set.py: chroma-dev and SciFact train questions and their short
keyword forms against their own index; the other set's questions and off-topic queries as
negatives), on the top candidates of each query; the feature set, the regularisation and the
default threshold were chosen by leave-one-corpus-out over the four folds (chroma-dev's three
corpora, SciFact), and the numbers per fold are in bench/RESULTS.md, "One relevance score".
They describe the bundled all-MiniLM-L6-v2 and the index's BM25 (k1 0.9, b 0.4): for another
model the score is still an order, but not a calibrated probability, and such a model has no
default threshold (``ragsift.retrieval.threshold``) until ``ragsift calibrate`` maps its dense
evidence onto MiniLM's scale on the set that ships with ragsift (``ragsift.calibration``: the
same coefficients read through ``a·cosine + b``, the same thresholds), stored in its index
(``CALIBRATION``, ``models_for``): the engine then scores that index with them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class Ranked:
    """One candidate in the engine's order. ``score`` is the relevance score
    (``ragsift.retrieval.relevance``): what orders the list and what the threshold applies to.
    The rest is the evidence it came from: ``dense_score`` the cosine, ``lexical_score`` the
    BM25 (None: the lexical side did not match it), ``lexical_share`` that BM25 over the
    query's ceiling, each side's 1-based rank in its own list (None: not in it), the position
    in the order (``fused_rank``, hybrid only) and which side brought it in (``source``)."""

    rowid: int
    score: float
    dense_score: float | None = None
    lexical_score: float | None = None
    lexical_rank: int | None = None
    fused_rank: int | None = None
    source: str | None = None
    lexical_share: float | None = None
    dense_rank: int | None = None
    # the chunk's best unit for the query (``ragsift.retrieval.units``): its cosine and its
    # offsets into the chunk's text; None where the units were not read
    unit_score: float | None = None
    unit_start: int | None = None
    unit_end: int | None = None
    # the share of the query's words in the chunk's page title (``title_share``: 0 below
    # ``TITLE_MIN_SHARE``); None where the title was not read (a candidate deeper than ``units.UNIT_DEPTH`` on both sides)
    title_share: float | None = None


# Version of the score's meaning: a threshold saved by `tune --save` records it, and one saved
# before (a cosine, ragsift < 0.2) is not applied to this score.
SCORE_KIND = "relevance-4"  # 2: the dense side is unit evidence (ragsift 0.3, issue 28);
# 3: the aggregate weighs each unit by its length (ragsift 0.6); 4: the page title's share of
# the query's words, from ``TITLE_MIN_SHARE`` of them, adds ``TITLE_WEIGHT`` × that share to the
# logit (issue 41, item 7)

# Earlier score kinds whose stored calibration (``ragsift calibrate``) is what this score's
# calibration fits, by the calibration method that made it: ``stored_calibration`` applies it.
# The method ``align-1`` maps the model's dense evidence onto MiniLM's scale
# (``calibration.fit.align_map``: from the dense evidence of the best relevant and the best
# unrelated candidates only) and keeps the shipped thresholds; relevance-4 adds a term outside
# ``Model`` (``TITLE_WEIGHT``) and changes neither, so a relevance-3 ``align-1`` calibration's
# models and thresholds are relevance-4's, number for number (checked by running ``calibrate``
# on a multilingual index before and after; bench/RESULTS.md, issue 41 item 7). Only its stored
# figures (``folds``) were measured without the title term.
CALIBRATION_CARRIED: dict[str, str] = {"relevance-3": "align-1"}

# The weight of the page-title evidence on the logit: ``TITLE_WEIGHT · title_share``, the share
# of the query's words (``index.terms.query_words``) among the words of the chunk's page title
# (its first heading, read by the engine for the candidates whose units it reads:
# ``units.wanted``) when it reaches ``TITLE_MIN_SHARE``. Measured on the labelled docs-site
# sets (bench/docs_site_{typer,flask,click}.jsonl, Vue zh/ja, the Debian handbook zh/ja; 313
# queries, MiniLM and multilingual): hybrid +6 first hits right, no loss, no off-topic change
# (dense +14 net, lexical +9 net); chroma-dev and SciFact unchanged (their chunks have no
# headings). The weight was chosen leaving one English site out from {0, 0.5, 1, 1.5, 2, 3}:
# 2, 1, 2 (bench/RESULTS.md, "Issue 41 item 7" and "The page title as evidence"); with
# ``TITLE_MIN_SHARE`` every weight from 1 to 3 gives the English sites the same +2 and 2 is kept.
TITLE_WEIGHT = 2.0

# A page title counts only when it holds at least this share of the query's distinct words
# (below it ``title_share`` is 0). Counting any share let one generic shared word lift an
# off-topic question: "How do I write a Dockerfile for a Python web app?" got 0.2 from "Python
# virtual environments". On the calibration set that ships with ragsift (its off-topic
# questions are near its topics) that admitted, in hybrid mode, 1 (en) and 2 (zh) more of 48
# off-topic questions with the multilingual model and 1 (en) and 1 (ja) more with MiniLM; from
# half the words every mode and language admits what relevance-3 admitted, with both models and
# every weight from 0.5 to 4. It costs one hybrid win of seven (Flask's "How do I show a
# message to the user on the next request?": 1 of its 5 words in "Message Flashing"). Measured
# and set aside: the share weighted by its words' IDF, the share squared, at least min(2, n)
# words, half of the query's or of the title's words (issue 41 item 7, the off-topic follow-up).
TITLE_MIN_SHARE = 0.5

FEATURES = (
    "cosine",
    "share",
    "cosine_gap",
    "share_gap",
    "log_words",
    "cosine_words",
    "share_words",
)

# The dense evidence of a chunk (what ``cosine`` above stands for): UNIT_WEIGHT × its best
# unit's cosine + (1 − UNIT_WEIGHT) × its aggregate's cosine (``ragsift.retrieval.units``).
# Chosen leave-one-corpus-out on the dense order's ranking (chroma recall@5 / SciFact
# nDCG@10): every held-out fold chose 0.50-0.55, all four folds 0.50 (bench/RESULTS.md, "Unit
# evidence"). The best unit alone loses where the answer is spread over a chunk (chatlogs
# 94.7 vs 97.9), the aggregate alone where it is one sentence (state_of_the_union 91.5 vs
# 98.1, SciFact 63.6 vs 68.0).
UNIT_WEIGHT = 0.5


def dense_evidence(cosine: np.ndarray, unit: np.ndarray | None) -> np.ndarray:
    """The dense evidence of each candidate: ``unit`` None (no unit read) is the aggregate."""
    return cosine if unit is None else UNIT_WEIGHT * unit + (1.0 - UNIT_WEIGHT) * cosine


@dataclass(frozen=True)
class Model:
    """A logistic model over ``FEATURES`` (a missing weight is 0)."""

    bias: float
    weights: dict[str, float]

    def logit_terms(self) -> tuple[float, ...]:
        return tuple(self.weights.get(f, 0.0) for f in FEATURES)


# Fitted on all four folds by `bench/bench_relevance.py --set SET` (SET: bench/admission_set.py),
# L2 0.1, on the top 3 candidates of each side per query: the feature set, the L2 and the
# candidates fitted on were chosen by held-out log-loss over the four leave-one-corpus-out
# folds (bench/RESULTS.md, "One relevance score"); refitted on unit evidence, ``cosine``
# being ``dense_evidence`` (bench/RESULTS.md, "Unit evidence": every fold's admission and
# ranking table; separate unit features were tried and ranked no better held out). Within a query each side's weight (e.g. cosine + cosine_gap +
# cosine_words·log_words) is positive, so the score keeps each side's own order.
MODELS: dict[str, Model] = {
    "hybrid": Model(
        -2.7571,
        {
            "cosine": 0.4127,
            "share": 3.3109,
            "cosine_gap": 6.2022,
            "share_gap": 3.4275,
            "log_words": -0.9187,
            "cosine_words": 1.9510,
            "share_words": 0.8735,
        },
    ),
    "dense": Model(
        -3.0439,
        {"cosine": 4.0198, "cosine_gap": 4.9837, "log_words": -1.3771, "cosine_words": 2.2589},
    ),
    "lexical": Model(
        -3.3683, {"share": 3.4644, "share_gap": 3.0073, "log_words": -0.2506, "share_words": 2.5506}
    ),
}
# The default threshold of each mode's score, for the bundled model: on the folds it was
# fitted on, the value that maximises answered − 2 × falsely admitted (a false admission costs
# two missed answers), at the default k 3. Leave-one-corpus-out chose 0.12–0.22 (hybrid) on
# the held-out folds (bench/RESULTS.md, "Unit evidence").
DEFAULT_THRESHOLDS: dict[str, float] = {"hybrid": 0.17, "dense": 0.17, "lexical": 0.21}


# The index setting ``ragsift calibrate`` writes (``ragsift.calibration``): per mode a ``Model``
# and a default threshold fitted for the index's model on the set that ships with ragsift,
# keyed to that model's fingerprint and to ``SCORE_KIND``; see ``stored_calibration``.
CALIBRATION = "calibration"


def stored_calibration(settings: dict) -> dict | None:
    """The calibration stored in an index (its ``settings``) when it applies: made for the
    index's own model (same fingerprint) and for this score (``SCORE_KIND``, or an earlier
    kind whose method fits the same: ``CALIBRATION_CARRIED``), with a model and a threshold
    for every mode. None otherwise (nothing stored, another model's, an older score's): the
    shipped ``MODELS`` then score the index."""
    cal = settings.get(CALIBRATION)
    if not isinstance(cal, dict):
        return None
    kind = cal.get("score")
    carried = isinstance(kind, str) and kind in CALIBRATION_CARRIED
    if kind != SCORE_KIND and not (carried and cal.get("method") == CALIBRATION_CARRIED[kind]):
        return None
    if not cal.get("fingerprint") or cal.get("fingerprint") != settings.get("model_fingerprint"):
        return None
    models, thresholds = cal.get("models"), cal.get("thresholds")
    if not isinstance(models, dict) or not isinstance(thresholds, dict):
        return None
    if any(not isinstance(models.get(m), dict) or thresholds.get(m) is None for m in MODELS):
        return None
    return cal


def models_for(settings: dict) -> dict[str, Model]:
    """The relevance models that score an index: its stored calibration's
    (``stored_calibration``), else the shipped ``MODELS``."""
    cal = stored_calibration(settings)
    if cal is None:
        return MODELS
    return {
        m: Model(float(v["bias"]), {str(f): float(w) for f, w in v["weights"].items()})
        for m, v in cal["models"].items()
        if m in MODELS
    }


def model_record(model: Model) -> dict:
    """A ``Model`` as the ``calibration`` setting stores it."""
    return {"bias": model.bias, "weights": dict(model.weights)}


def score_digest(models: dict[str, Model]) -> str:
    """Which coefficients score an index, in 12 hex digits (the sha256 of the models' records,
    keys sorted): what a threshold tuned on that index was tuned on (``tune --save`` records
    it). Equal models give the same digest, so MiniLM calibrated against itself (the
    identity map: ``ragsift.calibration``) keeps the shipped ``MODELS``' digest."""
    import hashlib
    import json

    record = {m: model_record(v) for m, v in models.items()}
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]


def title_words(title: str) -> set[str]:
    """The words of a page title, tokenised as a query's (``index.terms.text_words``: its
    terms lower-cased, a CJK run as its bigrams)."""
    from ragsift.index.terms import text_words

    return set(text_words(title))


def title_share(words: Collection[str], title: str) -> float:
    """The share of the query's distinct ``words`` (``query_words``) found among the words of
    ``title`` (``title_words``) when it is at least ``TITLE_MIN_SHARE``, else 0.0 (one shared
    word of a longer question is no evidence); 0.0 for a query without words."""
    wanted = set(words)
    if not wanted:
        return 0.0
    share = len(wanted & title_words(title)) / len(wanted)
    return share if share >= TITLE_MIN_SHARE else 0.0


def score_array(
    mode: str,
    cosine: np.ndarray,
    share: np.ndarray,
    words: int,
    model: Model | None = None,
    unit: np.ndarray | None = None,
    title: np.ndarray | None = None,
) -> np.ndarray:
    """The relevance score of each candidate of one query: ``cosine`` (the aggregate's),
    ``unit`` (the best unit's, where read; None: none read), ``share`` and ``title`` (each
    candidate's ``title_share``; None: no title read, all 0) are aligned float arrays (a side
    the mode does not use is ignored); the dense side is their ``dense_evidence``; ``words``
    is the number of query words. The gaps are taken from the best candidate in these
    arrays."""
    import numpy as np

    m = model or MODELS[mode]
    w_cos, w_share, w_cgap, w_sgap, w_words, w_cw, w_sw = m.logit_terms()
    if not cosine.size:
        return np.zeros(0, np.float64)
    lw = math.log(max(words, 1))
    z = np.full(cosine.shape, m.bias + w_words * lw, np.float64)
    if mode != "lexical":
        d = dense_evidence(cosine, unit)
        z += (w_cos + w_cgap + w_cw * lw) * d - w_cgap * float(d.max())
    if mode != "dense":
        z += (w_share + w_sgap + w_sw * lw) * share - w_sgap * float(share.max())
    if title is not None:
        z += TITLE_WEIGHT * title
    return 1.0 / (1.0 + np.exp(-z))


def scores(
    mode: str,
    cosines: Sequence[float],
    shares: Sequence[float],
    words: int,
    model: Model | None = None,
    units: Sequence[float] | None = None,
    titles: Sequence[float] | None = None,
) -> list[float]:
    """``score_array`` for plain sequences."""
    import numpy as np

    return score_array(
        mode,
        np.asarray(cosines, np.float64),
        np.asarray(shares, np.float64),
        words,
        model,
        None if units is None else np.asarray(units, np.float64),
        None if titles is None else np.asarray(titles, np.float64),
    ).tolist()
