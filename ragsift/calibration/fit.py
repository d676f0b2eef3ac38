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
_OWN = {"dense": ("cosine", "cosine_gap", "cosine_words", "dense_rr", "unit", "unit_gap",
                  "unit_words"),
        "lexical": ("share", "share_gap", "share_words", "lexical_rr")}


def mode_features(mode: str, features: Sequence[str]) -> list[str]:
    """Those of ``features`` the model of ``mode`` is fitted on, in the given order."""
    return [f for f in features
            if mode == "hybrid" or f == "log_words" or f in _OWN[mode]]


@dataclass
class Case:
    """One labelled query and its candidates in one mode, from the engine's ``Ranked`` list:
    ``cos`` the aggregate cosine, ``unit`` the best unit's cosine (the aggregate where no unit
    was read), ``share`` the BM25 share (0: no lexical match), 1-based ranks on each side
    (0: not in that side's list), ``label`` whether each candidate is relevant."""

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


def feature_columns(mode: str, dense: np.ndarray, share: np.ndarray,
                    words: int) -> dict[str, np.ndarray]:
    """The shipped features (``relevance.FEATURES``) of one query's candidates in ``mode``:
    ``dense`` is the dense evidence (``relevance.dense_evidence``); a side the mode does not
    use is zero, as ``relevance.score_array`` ignores it."""
    import numpy as np

    cos = dense if mode != "lexical" else np.zeros_like(dense)
    sh = share if mode != "dense" else np.zeros_like(share)
    lw = math.log(max(words, 1))
    return {"cosine": cos, "share": sh,
            "cosine_gap": cos - cos.max() if cos.size else cos,
            "share_gap": sh - sh.max() if sh.size else sh,
            "log_words": np.full(cos.shape, lw),
            "cosine_words": cos * lw, "share_words": sh * lw}


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


def fit_model(cases: Sequence[Any], mode: str, features: Sequence[str] = FEATURES,
              l2: float = L2) -> Model:
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

    s = score_array(mode, case.cos, case.share, case.words, model, unit=case.unit)
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


def rates(cases: Sequence[Any], orders: dict[int, tuple[np.ndarray, np.ndarray]], t: float,
          k: int = K) -> Rates:
    """``Rates`` of ``cases`` at ``t``; ``orders``: ``id(case)`` → ``scored(...)``."""
    ans = [q for q in cases if q.answerable]
    una = [q for q in cases if not q.answerable]
    a = first = 0
    for q in ans:
        got = admitted(*orders[id(q)], t, k)
        a += bool(q.label[got].any())
        first += bool(got.size and q.label[got[0]])
    f = sum(admitted(*orders[id(q)], t, k).size > 0 for q in una)
    return Rates(a / max(len(ans), 1), first / max(len(ans), 1), f / max(len(una), 1),
                 len(ans), len(una))


def choose_threshold(cases: Sequence[Any], orders: dict[int, tuple[np.ndarray, np.ndarray]],
                     folds: Sequence[str], k: int = K,
                     rate: Callable[..., Any] | None = None) -> float:
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
