"""The fit behind the relevance score: logistic coefficients per mode, and the default threshold.

One engine for ``ragsift calibrate`` (``calibration.run``) and ``bench/bench_relevance.py``
(which fitted the shipped ``relevance.MODELS``/``DEFAULT_THRESHOLDS`` with this same code):

- **cases**: one labelled query with its candidates' evidence, as the ranking engine produced
  it (anything with ``fold``, ``answerable``, ``ids``, ``cos``, ``label`` and the two methods
  of ``Case``: ``columns(mode)``, the feature columns by name, and ``train_rows(mode)``, the
  candidates the gate is ever asked about);
- **fit** (``fit_model``): logistic regression of "this candidate is relevant" on the mode's
  own features (``mode_features``), L2 (the bias unregularised), Newton's method, each fold
  weighted equally whatever its size;
- **threshold** (``choose_threshold``): on a grid of 0.02 … 0.98, the value that maximises
  ``answered − COST · falsely admitted`` (each fold's rates averaged) at the default ``k``:
  a false admission costs ``COST`` missed answers. A query is *answered* when one of its
  admitted hits (the first ``k`` of the score's order at or above the threshold) is relevant;
  an unanswerable query is *falsely admitted* when anything is admitted.

Deterministic: the same cases give the same coefficients and threshold (no randomness, a fixed
number of Newton steps at most, ties in the threshold rule to the lower value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.retrieval.relevance import FEATURES, Model, dense_evidence, score_array

if TYPE_CHECKING:
    import numpy as np

K = 3  # the default -k: admission is measured at it
TRAIN_TOP = 3  # candidates per side per query the model is fitted on (bench/RESULTS.md)
COST = 2.0  # a false admission costs this many missed answers (the threshold rule)
L2 = 0.1  # chosen by held-out log-loss over the admission set's folds (bench/RESULTS.md)


def grid() -> np.ndarray:
    """The thresholds the rule chooses from: 0.02 … 0.98 by 0.01."""
    import numpy as np

    return np.round(np.arange(0.02, 0.99, 0.01), 2)


# the features each single-side mode may use (hybrid: all); ``log_words`` in every mode
_OWN = {
    "dense": ("cosine", "cosine_gap", "cosine_words", "dense_rr", "unit", "unit_gap", "unit_words"),
    "lexical": ("share", "share_gap", "share_words", "lexical_rr"),
}


def mode_features(mode: str, features: Sequence[str]) -> list[str]:
    """Those of ``features`` the model of ``mode`` is fitted on, in the given order."""
    return [f for f in features if mode == "hybrid" or f == "log_words" or f in _OWN[mode]]


@dataclass
class Case:
    """One labelled query and its candidates in one mode, from the engine's ``Ranked`` list:
    ``cos`` the aggregate cosine, ``unit`` the best unit's cosine (the aggregate where no unit
    was read), ``share`` the BM25 share (0: no lexical match), 1-based ranks on each side
    (0: not in that side's list), ``label`` whether each candidate is relevant, ``title`` its
    page title's share of the query's words (``relevance.title_share``; None: all 0). The
    title term is not fitted (``relevance.TITLE_WEIGHT``): it only enters the figures."""

    fold: str
    kind: str
    answerable: bool
    words: int
    ids: np.ndarray
    cos: np.ndarray
    unit: np.ndarray
    share: np.ndarray
    dense_rank: np.ndarray
    lexical_rank: np.ndarray
    label: np.ndarray
    title: np.ndarray | None = None

    @property
    def dense(self) -> np.ndarray:
        return dense_evidence(self.cos, self.unit)

    def columns(self, mode: str) -> dict[str, np.ndarray]:
        return feature_columns(mode, self.dense, self.share, self.words)

    def train_rows(self, mode: str) -> np.ndarray:
        """The top ``TRAIN_TOP`` of each side (the dense side by its aggregate and, outside
        lexical mode, by its evidence): what the gate is ever asked about."""
        import numpy as np

        top = (self.dense_rank > 0) & (self.dense_rank <= TRAIN_TOP)
        top |= (self.lexical_rank > 0) & (self.lexical_rank <= TRAIN_TOP)
        if mode != "lexical" and self.ids.size:
            by_evidence = np.argsort(-self.dense, kind="stable")[:TRAIN_TOP]
            top[by_evidence] = True
        return np.flatnonzero(top)


def feature_columns(
    mode: str, dense: np.ndarray, share: np.ndarray, words: int
) -> dict[str, np.ndarray]:
    """The shipped features (``relevance.FEATURES``) of one query's candidates in ``mode``:
    ``dense`` is the dense evidence (``relevance.dense_evidence``); a side the mode does not
    use is zero, as ``relevance.score_array`` ignores it."""
    import numpy as np

    cos = dense if mode != "lexical" else np.zeros_like(dense)
    sh = share if mode != "dense" else np.zeros_like(share)
    lw = math.log(max(words, 1))
    return {
        "cosine": cos,
        "share": sh,
        "cosine_gap": cos - cos.max() if cos.size else cos,
        "share_gap": sh - sh.max() if sh.size else sh,
        "log_words": np.full(cos.shape, lw),
        "cosine_words": cos * lw,
        "share_words": sh * lw,
    }


def newton_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float) -> np.ndarray:
    """Weighted L2 logistic regression by Newton's method: ``[bias, *coefficients]``. The
    penalty is ``l2 · rows / 1000`` per coefficient (so it means the same on any number of
    rows); the bias is not penalised."""
    import numpy as np

    xb = np.hstack([np.ones((x.shape[0], 1)), x])
    beta = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2 * x.shape[0] / 1000.0)
    reg[0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(xb @ beta)))
        g = xb.T @ (w * (p - y)) + reg * beta
        h = (xb * (w * p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(xb.shape[1])
        step = np.linalg.solve(h, g)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def fit_model(
    cases: Sequence[Any], mode: str, features: Sequence[str] = FEATURES, l2: float = L2
) -> Model:
    """The logistic model of ``mode`` fitted on ``cases`` (each fold weighted equally, each
    query equally within its fold, over its ``train_rows``)."""
    import numpy as np

    names = mode_features(mode, features)
    per_fold: dict[str, int] = {}
    for q in cases:
        per_fold[q.fold] = per_fold.get(q.fold, 0) + 1
    xs, ys, ws = [], [], []
    for q in cases:
        rows = q.train_rows(mode)
        if not rows.size:
            continue
        cols = q.columns(mode)
        xs.append(np.stack([cols[f][rows] for f in names], axis=1))
        ys.append(q.label[rows].astype(np.float64))
        ws.append(np.full(rows.size, 1.0 / (per_fold[q.fold] * rows.size)))
    if not xs:
        raise ValueError("no candidates to fit on")
    w = np.concatenate(ws)
    beta = newton_logistic(np.concatenate(xs), np.concatenate(ys), w / w.mean(), l2)
    return Model(float(beta[0]), {f: float(b) for f, b in zip(names, beta[1:])})


def scored(case: Any, mode: str, model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(positions best first, scores) of one case under ``model``: the engine's order (score
    descending, then the cosine, then the rowid) and ``relevance.score_array`` itself."""
    import numpy as np

    s = score_array(mode, case.cos, case.share, case.words, model, unit=case.unit, title=case.title)
    return np.lexsort((case.ids, -case.cos, -s)), s


def admitted(pos: np.ndarray, score: np.ndarray, t: float, k: int = K) -> np.ndarray:
    """The positions admitted at threshold ``t``: the first ``k`` whose score reaches it."""
    head = pos[:k]
    return head[score[head] >= t]


@dataclass(frozen=True)
class Rates:
    """Admission over a set of cases at one threshold: shares of the answerable queries
    answered and with their first admitted hit relevant, of the unanswerable ones admitting
    anything, and the counts."""

    answered: float
    first_right: float
    false: float
    answerable: int
    unanswerable: int


def rates(
    cases: Sequence[Any], orders: dict[int, tuple[np.ndarray, np.ndarray]], t: float, k: int = K
) -> Rates:
    """``Rates`` of ``cases`` at ``t``; ``orders``: ``id(case)`` → ``scored(...)``."""
    ans = [q for q in cases if q.answerable]
    una = [q for q in cases if not q.answerable]
    a = first = 0
    for q in ans:
        got = admitted(*orders[id(q)], t, k)
        a += bool(q.label[got].any())
        first += bool(got.size and q.label[got[0]])
    f = sum(admitted(*orders[id(q)], t, k).size > 0 for q in una)
    return Rates(
        a / max(len(ans), 1), first / max(len(ans), 1), f / max(len(una), 1), len(ans), len(una)
    )


def choose_threshold(
    cases: Sequence[Any],
    orders: dict[int, tuple[np.ndarray, np.ndarray]],
    folds: Sequence[str],
    k: int = K,
    rate: Callable[..., Any] | None = None,
) -> float:
    """The threshold of the grid that maximises ``answered − COST · false`` averaged over
    ``folds`` (each fold's rates computed on its own cases); ties to the lower value.
    ``rate``: a function ``(cases, orders, t) -> (answered, false, ...)`` to use instead of
    ``rates`` (the bench passes its own)."""
    import numpy as np

    by_fold = {f: [q for q in cases if q.fold == f] for f in folds}
    best = (-1e9, 0.5)
    for t in grid():
        if rate is None:
            got = [rates(by_fold[f], orders, float(t), k) for f in folds]
            a = float(np.mean([r.answered for r in got]))
            fa = float(np.mean([r.false for r in got]))
        else:
            got = [rate(by_fold[f], orders, t) for f in folds]
            a = float(np.mean([r[0] for r in got]))
            fa = float(np.mean([r[1] for r in got]))
        if a - COST * fa > best[0] + 1e-12:
            best = (a - COST * fa, float(t))
    return best[1]


# -- aligning a model to the reference fit -------------------------------------------------------
#
# The shipped ``relevance.MODELS``/``DEFAULT_THRESHOLDS`` were fitted for MiniLM on the large
# English admission set (bench/admission_set.py), far harder than anything that can ship inside
# the package. So instead of refitting every coefficient on the small set, a model is mapped
# onto MiniLM's scale: its dense evidence ``d`` is read as ``a·d + b`` (the best unit, the
# aggregate and so the gaps alike: a gap becomes ``a·gap``), every other coefficient and the
# thresholds stay MiniLM's. The lexical side is model-independent and stays as it is.


@dataclass(frozen=True)
class DenseMap:
    """``a·d + b``: a model's dense evidence on the reference model's scale."""

    a: float = 1.0
    b: float = 0.0


MAP_DIGITS = 4  # (a, b) are stored rounded: the same set gives the same map to 1e-4


def contrast(cases: Sequence[Any]) -> tuple[float, float]:
    """(relevant, unrelated): the mean over the answerable queries of their best relevant
    candidate's dense evidence, and the mean over every query of its best candidate that is
    not relevant (an off-topic query's top, an answerable query's best wrong passage): the
    two levels the gate has to tell apart."""
    import numpy as np

    rel, other = [], []
    for q in cases:
        d = q.dense
        if q.answerable and q.label.any():
            rel.append(float(d[q.label].max()))
        if (~q.label).any():
            other.append(float(d[~q.label].max()))
    if not rel or not other:
        raise ValueError("no relevant or no unrelated candidates to align on")
    return float(np.mean(rel)), float(np.mean(other))


def align_map(cases: Sequence[Any], reference: Sequence[Any]) -> DenseMap:
    """The ``DenseMap`` that puts ``cases``' two levels (``contrast``) onto ``reference``'s:
    the same queries over the same passages, embedded by the model and by the reference model.
    The reference model aligned to itself is exactly the identity (a 1, b 0)."""
    rx, ux = contrast(cases)
    ry, uy = contrast(reference)
    if rx - ux <= 1e-6:
        raise ValueError("the model does not separate relevant from unrelated passages")
    a = (ry - uy) / (rx - ux)
    b = ry - a * rx
    return DenseMap(round(a, MAP_DIGITS) + 0.0, round(b, MAP_DIGITS) + 0.0)


def likelihood_map(cases: Sequence[Any], mode: str, model: Model) -> DenseMap:
    """The ``DenseMap`` that maximises the likelihood of the labels of ``cases`` (their
    ``train_rows``, each fold and each query weighted as in ``fit_model``) with every
    coefficient of ``model`` held: the score's logit is linear in (a, b) with an offset."""
    import numpy as np

    w_cos, w_share, w_cgap, w_sgap, w_words, w_cw, w_sw = model.logit_terms()
    per_fold: dict[str, int] = {}
    for q in cases:
        per_fold[q.fold] = per_fold.get(q.fold, 0) + 1
    us, vs, offs, ys, ws = [], [], [], [], []
    for q in cases:
        rows = q.train_rows(mode)
        if not rows.size:
            continue
        lw = math.log(max(q.words, 1))
        d = q.dense
        slope = w_cos + w_cw * lw
        us.append((slope * d + w_cgap * (d - d.max()))[rows])
        vs.append(np.full(rows.size, slope))
        off = np.full(q.cos.shape, model.bias + w_words * lw)
        if mode != "dense":
            off = off + (w_share + w_sgap + w_sw * lw) * q.share - w_sgap * q.share.max()
        offs.append(off[rows])
        ys.append(q.label[rows].astype(np.float64))
        ws.append(np.full(rows.size, 1.0 / (per_fold[q.fold] * rows.size)))
    x = np.stack([np.concatenate(us), np.concatenate(vs)], axis=1)
    off, y, w = np.concatenate(offs), np.concatenate(ys), np.concatenate(ws)
    w = w / w.mean()
    beta = np.array([1.0, 0.0])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(off + x @ beta)))
        g = x.T @ (w * (p - y))
        h = (x * (w * p * (1 - p))[:, None]).T @ x + 1e-9 * np.eye(2)
        step = np.linalg.solve(h, g)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return DenseMap(
        round(float(beta[0]), MAP_DIGITS) + 0.0, round(float(beta[1]), MAP_DIGITS) + 0.0
    )


def mapped(model: Model, dense_map: DenseMap) -> Model:
    """``model`` reading the dense evidence as ``a·d + b``, as a ``Model`` over the same
    features (so ``relevance.score_array`` scores it unchanged): with ``d' = a·d + b``,
    ``w_cos·d' + w_gap·(d' − max d') + w_cw·d'·log_words`` is ``a·w_cos·d + a·w_gap·gap +
    a·w_cw·d·log_words`` plus ``b·w_cos`` on the bias and ``b·w_cw`` on ``log_words``. A model
    without dense weights (lexical) is unchanged; the identity map returns equal values."""
    a, b = dense_map.a, dense_map.b
    w = dict(model.weights)
    bias = model.bias + b * w.get("cosine", 0.0)
    if "cosine_words" in w and (b or "log_words" in w):
        w["log_words"] = w.get("log_words", 0.0) + b * w["cosine_words"]
    for f in ("cosine", "cosine_gap", "cosine_words"):
        if f in w:
            w[f] = a * w[f]
    return Model(bias, w)
