"""``ragsift calibrate``: the relevance score and its default thresholds for one model.

The design (bench/RESULTS.md, "Calibration that transfers"): the shipped ``relevance.MODELS``
and ``DEFAULT_THRESHOLDS``, fitted for the bundled MiniLM on the large English admission set,
are the *reference*; a model is calibrated by mapping its dense evidence onto MiniLM's scale
(``fit.DenseMap``: ``a·d + b``), every other coefficient and the thresholds staying MiniLM's.
Chosen over refitting every coefficient on the small set (``fit_all``, still measured by
``bench/bench_calibrate.py``): that fit learns how easy the shipped set is, not the model.

Steps, for an embedder (the index's own model, with its options):

1. **index**: the shipped set's passages of each language (``data.py``) written as markdown
   files into a temporary folder and indexed with that model through the ingestion pipeline
   (``ingest.build_index``, embed's default chunker for the model): one index per language,
   as a user's documentation is one language;
2. **evidence**: each language's queries (its questions, their keyword forms, its off-topic
   negatives) embedded once and ranked in every mode by the ranking engine itself
   (``retrieval.engine.rank``, every candidate of the small index), so each candidate's
   cosine, best unit, BM25 share and ranks are exactly what ``query`` would score; a candidate
   is relevant when it is a chunk of the query's passage. The English set is also indexed
   and asked with the reference model (the bundled MiniLM), the same way;
3. **align** (``fit.align_map``): on the English set, the map that puts the model's two
   levels (its best relevant candidate's evidence, its best unrelated one's, each averaged
   over the queries: ``fit.contrast``) onto MiniLM's; the models are the shipped ones read
   through it (``fit.mapped``: the same ``Model`` form, scored by ``relevance.score_array``),
   the thresholds the shipped ones. MiniLM aligned to itself is the identity: its calibration
   is the shipped one, number for number. Lexical mode's model has no dense weight: unchanged;
4. **figures** per mode and language at the calibrated default (``FoldFigures``): Chinese and
   Japanese are held out by construction (the map sees English only); English is not.

Cost: the passages' units and the queries embedded once (counted beforehand by
``calibration.cost.estimate``), and the English set once more with MiniLM; nothing downloaded. Deterministic: the same model gives the same map.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift.calibration.data import LANGUAGES, LanguageSet, load_set, set_digest
from ragsift.calibration.fit import (
    Case,
    DenseMap,
    align_map,
    choose_threshold,
    fit_model,
    mapped,
    rates,
    scored,
)
from ragsift.retrieval.relevance import (
    DEFAULT_THRESHOLDS,
    MODELS,
    SCORE_KIND,
    Model,
    model_record,
    score_digest,
)
from ragsift.retrieval.request import MODES

METHOD = "align-1"  # the calibration's design and its version (stored with it)
REFERENCE_LANGUAGE = "en"  # the reference model's language: the map is fitted on it

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class FoldFigures:
    """One mode's figures on one language held out (model and threshold fitted on the
    others), at k 3: shares of its answerable queries answered and with the first admitted
    hit right, and of its off-topic queries admitting anything."""

    mode: str
    held_out: str
    threshold: float
    answered: float
    first_right: float
    false: float
    answerable: int
    off_topic: int


@dataclass
class Calibration:
    """A model's calibration: per mode the relevance ``Model`` and the default threshold
    (the shipped ones read through ``dense_map``); ``queries``: how many the map was fitted
    on (the English set's); ``folds``: the figures per mode and language at the calibrated
    default (``held_out``: the language; English is the one the map was fitted on);
    ``in_sample``: the same figures (kept for the JSON's shape)."""

    model: str
    fingerprint: str
    models: dict[str, Model]
    thresholds: dict[str, float]
    queries: int
    folds: list[FoldFigures]
    in_sample: list[FoldFigures]
    set: str
    seconds: float = 0.0
    embedded: dict[str, int] = field(default_factory=dict)
    dense_map: DenseMap = field(default_factory=DenseMap)
    reference: str = ""
    method: str = METHOD

    @property
    def digest(self) -> str:
        """Which coefficients score a calibrated index (``relevance.score_digest``)."""
        return score_digest(self.models)

    def setting(self) -> dict[str, Any]:
        """The ``calibration`` index setting (``relevance.CALIBRATION``)."""
        from ragsift.version import __version__

        return {
            "fingerprint": self.fingerprint,
            "model": self.model,
            "score": SCORE_KIND,
            "method": self.method,
            "map": asdict(self.dense_map),
            "reference": self.reference,
            "digest": self.digest,
            "set": self.set,
            "queries": self.queries,
            "models": {m: model_record(v) for m, v in self.models.items()},
            "thresholds": dict(self.thresholds),
            "folds": [asdict(f) for f in self.folds],
            "ragsift": __version__,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.setting(),
            "in_sample": [asdict(f) for f in self.in_sample],
            "seconds": round(self.seconds, 2),
            "embedded": dict(self.embedded),
        }


def calibrate(
    embedder: Any,
    model_dir: str | None = None,
    *,
    languages: tuple[str, ...] = LANGUAGES,
    progress: Callable[[str], None] | None = None,
    reference: Any = None,
) -> Calibration:
    """The calibration of ``embedder`` (``model_dir``: what ``embed`` would be given for it:
    None for the bundled MiniLM, ``"multilingual"`` or a folder; it picks the chunker).
    ``reference``: the reference embedder (default: the bundled MiniLM, loaded here)."""
    from ragsift.embedders import load_embedder

    t0 = time.perf_counter()
    embedded: dict[str, int] = {}
    cases = gather(embedder, model_dir, languages=languages, progress=progress, embedded=embedded)
    if progress:
        progress("asking the English set with the reference model")
    ref = reference if reference is not None else load_embedder(None)
    ref_cases = gather(ref, None, languages=(REFERENCE_LANGUAGE,))
    if progress:
        progress("fitting")
    own = [q for q in cases["dense"] if q.fold == REFERENCE_LANGUAGE]
    dense_map = align_map(own, ref_cases["dense"])
    models, thresholds, figures = align_all(cases, dense_map, languages)
    return Calibration(
        model=str(getattr(embedder, "name", "")),
        fingerprint=str(embedder.fingerprint),
        models=models,
        thresholds=thresholds,
        queries=len(own),
        folds=figures,
        in_sample=figures,
        set=set_digest(languages),
        seconds=time.perf_counter() - t0,
        embedded=embedded,
        dense_map=dense_map,
        reference=str(ref.fingerprint),
    )


def align_all(
    cases: dict[str, list[Case]], dense_map: DenseMap, languages: Sequence[str]
) -> tuple[dict[str, Model], dict[str, float], list[FoldFigures]]:
    """The shipped models read through ``dense_map``, the shipped thresholds, and their
    figures per mode and language."""
    models = {mode: mapped(MODELS[mode], dense_map) for mode in MODES}
    thresholds = {mode: DEFAULT_THRESHOLDS[mode] for mode in MODES}
    figures = []
    for mode in MODES:
        qs = cases[mode]
        orders = {id(q): scored(q, mode, models[mode]) for q in qs}
        figures += [
            _figures(mode, lang, thresholds[mode], [q for q in qs if q.fold == lang], orders)
            for lang in languages
        ]
    return models, thresholds, figures


def gather(
    embedder: Any,
    model_dir: str | None = None,
    *,
    languages: tuple[str, ...] = LANGUAGES,
    progress: Callable[[str], None] | None = None,
    embedded: dict[str, int] | None = None,
) -> dict[str, list[Case]]:
    """Steps 1 and 2: every query of the set as a ``Case`` per mode, from the engine's
    candidates over a temporary index of its language built with ``embedder``.
    ``embedded``: filled with the counts embedded (passages, queries)."""
    sets = load_set(languages)
    cases: dict[str, list[Case]] = {m: [] for m in MODES}
    counts = embedded if embedded is not None else {}
    counts.update(passages=0, queries=0)
    with tempfile.TemporaryDirectory(prefix="ragsift-calibrate-") as tmp:
        for lang_set in sets:
            if progress:
                progress(f"indexing and asking the {lang_set.language} set")
            got = _language_cases(lang_set, Path(tmp), embedder, model_dir, counts)
            for mode in MODES:
                cases[mode] += got[mode]
    return cases


def fit_all(
    cases: dict[str, list[Case]], languages: Sequence[str]
) -> tuple[dict[str, Model], dict[str, float], list[FoldFigures], list[FoldFigures]]:
    """The full refit (the design before ``align``, kept for ``bench/bench_calibrate.py``):
    per mode the model and threshold fitted on every language, the leave-one-language-out
    figures and the final model's in-sample figures per language."""
    models: dict[str, Model] = {}
    thresholds: dict[str, float] = {}
    folds: list[FoldFigures] = []
    in_sample: list[FoldFigures] = []
    for mode in MODES:
        qs = cases[mode]
        for held in languages:
            train = [q for q in qs if q.fold != held]
            test = [q for q in qs if q.fold == held]
            model = fit_model(train, mode)
            orders = {id(q): scored(q, mode, model) for q in qs}
            t = choose_threshold(train, orders, [f for f in languages if f != held])
            folds.append(_figures(mode, held, t, test, orders))
        model = fit_model(qs, mode)
        orders = {id(q): scored(q, mode, model) for q in qs}
        t = choose_threshold(qs, orders, list(languages))
        models[mode], thresholds[mode] = model, t
        in_sample += [
            _figures(mode, lang, t, [q for q in qs if q.fold == lang], orders) for lang in languages
        ]
    return models, thresholds, folds, in_sample


def _figures(mode: str, held: str, t: float, test: list[Case], orders: dict) -> FoldFigures:
    r = rates(test, orders, t)
    return FoldFigures(
        mode,
        held,
        t,
        round(r.answered, 4),
        round(r.first_right, 4),
        round(r.false, 4),
        r.answerable,
        r.unanswerable,
    )


def _language_cases(
    lang_set: LanguageSet, tmp: Path, embedder: Any, model_dir: str | None, embedded: dict[str, int]
) -> dict[str, list[Case]]:
    """Index one language's passages with ``embedder`` and rank its queries in every mode."""
    import numpy as np

    from ragsift.index import open_index
    from ragsift.index.terms import query_words
    from ragsift.ingest import BuildHooks, BuildRequest, build_index, default_embed_chunker
    from ragsift.retrieval.engine import rank

    folder = tmp / lang_set.language
    folder.mkdir()
    for p in lang_set.passages:
        (folder / f"{p.id}.md").write_text(p.document(), encoding="utf-8")
    index = tmp / f"{lang_set.language}.sqlite"
    summary = build_index(
        BuildRequest.of(
            index,
            [str(folder)],
            chunker=default_embed_chunker(model_dir),
            embedder=embedder,
            model=model_dir,
        ),
        BuildHooks(on_warning=lambda *_: None),
    )
    embedded["passages"] += summary.chunks
    queries = lang_set.queries()
    texts = [q.text for q in queries]
    embedded["queries"] += len(texts)
    out: dict[str, list[Case]] = {}
    with open_index(str(index), "r") as store:
        store.load()
        count = int(store.count())
        qvecs = np.asarray(embedder.embed(texts, kind="query").vectors, np.float32)
        records = {r.rowid: r for r in store.chunk_records(store.load_matrix()[0].tolist())}
        gold_of = {rowid: Path(r.path).stem for rowid, r in records.items()}
        for mode in MODES:
            ranked = rank(store, texts, qvecs, mode=mode, n=count)
            out[mode] = [
                _case(lang_set.language, q, len(query_words(q.text)), cands, gold_of)
                for q, cands in zip(queries, ranked)
            ]
    return out


def _case(lang: str, q: Any, words: int, cands: list, gold_of: dict[int, str]) -> Case:
    """A ``Case`` from the engine's ``Ranked`` list, in the engine's candidate order (the
    dense side's list, then the lexical side's own)."""
    import numpy as np

    inf = 1 << 30
    cands = sorted(cands, key=lambda c: (c.dense_rank or inf, c.lexical_rank or inf))

    def arr(values, dtype=np.float64) -> np.ndarray:
        return np.array(list(values), dtype)

    cos = arr(c.dense_score or 0.0 for c in cands)
    return Case(
        fold=lang,
        kind=q.kind,
        answerable=q.gold is not None,
        words=max(words, 1),
        ids=arr((c.rowid for c in cands), np.int64),
        cos=cos,
        unit=arr(c.unit_score if c.unit_score is not None else c.dense_score or 0.0 for c in cands),
        share=arr(c.lexical_share or 0.0 for c in cands),
        dense_rank=arr((c.dense_rank or 0 for c in cands), np.int64),
        lexical_rank=arr((c.lexical_rank or 0 for c in cands), np.int64),
        label=arr((q.gold is not None and gold_of.get(c.rowid) == q.gold for c in cands), bool),
        title=arr(c.title_share or 0.0 for c in cands),
    )
