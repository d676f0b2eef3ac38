"""Run configurations on a labelled set: index → retrieve → score.

For each configuration the corpus is indexed through the pipeline into a temporary SQLite index
(``IndexStore``), with an embedder wrapped in the shared ``EmbeddingCache``; configurations that
share chunker and embedder share one index and differ only in retrieval. Retrieval is the one
engine ``ragsift query`` uses (``ranked`` below: ``engine.rank`` with the configuration's
mode and ``Fusion``), so a ranking measured here is the ranking ``query`` returns. No threshold is applied: the metrics score rankings at k; the candidates' cosines are
collected for the threshold sweep.

Span sets: every corpus file goes into ONE index; each question takes the top ``k`` chunks; a
chunk's span is its record's ``start``/``end`` (offsets into the original file text).
BEIR sets: each document is written as a text file holding ``title + " " + text``; chunks are
ranked, and a document scores as its best chunk. Each side's candidate list is at least 1,000
chunks deep so Recall@100 sees at least 100 documents.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift import metrics as m
from ragsift.errors import EXIT_USAGE, RagsiftError
from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache
from ragsift.evaluation.config import EvalConfig
from ragsift.evaluation.datasets import BeirDataset, SpanDataset

if TYPE_CHECKING:
    from ragsift.index.backend import ChunkRecord
    from ragsift.retrieval.relevance import Ranked

BEIR_DEPTH = 1000  # chunks per side for BEIR runs (≥ 100 documents for Recall@100)
SPAN_METRICS = ("recall", "precision", "iou")
BEIR_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
SWEEP = tuple(round(0.05 * i, 2) for i in range(21))  # 0.00 … 1.00 (the relevance score)

Progress = Callable[[str], None]


@dataclass
class EvalResult:
    """One configuration's scores on one dataset (metrics × 100)."""

    config: EvalConfig
    dataset: str
    format: str
    queries: int
    chunks: int
    overall: dict[str, float]
    std: dict[str, float] = field(default_factory=dict)
    per_corpus: dict[str, dict[str, float]] = field(default_factory=dict)
    per_corpus_std: dict[str, dict[str, float]] = field(default_factory=dict)
    thresholds: list[dict[str, float]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    cache: dict[str, int] = field(default_factory=dict)
    truncated_chunks: int = 0
    mean_chunk_chars: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.as_dict(),
            "dataset": self.dataset,
            "format": self.format,
            "queries": self.queries,
            "chunks": self.chunks,
            "mean_chunk_chars": round(self.mean_chunk_chars, 1),
            "truncated_chunks": self.truncated_chunks,
            "overall": _rounded(self.overall),
            "std": _rounded(self.std),
            "per_corpus": {c: _rounded(v) for c, v in self.per_corpus.items()},
            "per_corpus_std": {c: _rounded(v) for c, v in self.per_corpus_std.items()},
            "thresholds": self.thresholds,
            "timings": {k: round(v, 2) for k, v in self.timings.items()},
            "cache": self.cache,
        }


def _rounded(d: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 2) for k, v in d.items()}


@dataclass
class _Index:
    """A built index, open for searching (``ragsift.api.Index``)."""

    index: Any
    records: list[ChunkRecord]  # every chunk, in the backend's row order
    build_s: float
    embedder: CachingEmbedder
    cache: dict[str, int] = field(default_factory=dict)

    @property
    def by_rowid(self) -> dict[int, ChunkRecord]:
        if not hasattr(self, "_by_rowid"):
            self._by_rowid = {r.rowid: r for r in self.records}
        return self._by_rowid


def evaluate(
    dataset: SpanDataset | BeirDataset,
    configs: Sequence[EvalConfig],
    *,
    cache: EmbeddingCache,
    progress: Progress | None = None,
    workdir: str | Path | None = None,
) -> list[EvalResult]:
    """Score every configuration on ``dataset``; indexes live in a temporary folder."""
    say = progress or (lambda _msg: None)
    with tempfile.TemporaryDirectory(prefix="ragsift-eval-", dir=workdir) as tmp:
        tmpdir = Path(tmp)
        paths, doc_of_path = materialize(dataset, tmpdir)
        embedders: dict[tuple, CachingEmbedder] = {}
        built: dict[tuple, _Index] = {}
        results = []
        try:
            for n, cfg in enumerate(configs, start=1):
                key = _index_key(cfg)
                if key not in built:
                    for old in built.values():  # one open index at a time
                        old.index.close()
                    built.clear()
                    emb_key = (cfg.model, tuple(sorted(cfg.embedder_options.items())))
                    if emb_key not in embedders:
                        embedders[emb_key] = CachingEmbedder(embedder_for_config(cfg), cache)
                    say(f"[{n}/{len(configs)}] {cfg.name}: indexing ({cfg.chunker_label()})")
                    hits0, misses0 = cache.hits, cache.misses
                    built[key] = build_config_index(
                        paths, tmpdir / f"index-{n}.{cfg.backend}", cfg, embedders[emb_key]
                    )
                    built[key].cache = {
                        "passage_hits": cache.hits - hits0,
                        "passage_misses": cache.misses - misses0,
                    }
                index = built[key]
                say(f"[{n}/{len(configs)}] {cfg.name}: searching ({cfg.retrieval_label()})")
                hits0, misses0 = cache.hits, cache.misses
                t0 = time.perf_counter()
                if isinstance(dataset, SpanDataset):
                    result = _score_spans(dataset, cfg, index, doc_of_path)
                else:
                    result = _score_beir(dataset, cfg, index, doc_of_path)
                result.timings = {"index_s": index.build_s, "search_s": time.perf_counter() - t0}
                result.cache = {
                    **index.cache,
                    "query_hits": cache.hits - hits0,
                    "query_misses": cache.misses - misses0,
                }
                results.append(result)
                # a later configuration on the same index embeds no passage
                index.cache = {"passage_hits": 0, "passage_misses": 0}
        finally:
            for old in built.values():
                old.index.close()
        return results


def _index_key(cfg: EvalConfig) -> tuple:
    return (
        cfg.chunker,
        cfg.tokenizer,
        tuple(sorted((k, repr(v)) for k, v in cfg.chunker_options.items())),
        cfg.model,
        tuple(sorted(cfg.embedder_options.items())),
        cfg.backend,
    )


def embedder_for_config(cfg: EvalConfig) -> Any:
    from ragsift.embedders import load_embedder
    from ragsift.embedders.options import EmbedderOptions

    return load_embedder(cfg.model, EmbedderOptions.of(cfg.embedder_options))


def materialize(dataset: SpanDataset | BeirDataset, tmpdir: Path) -> tuple[list[str], Any]:
    """Paths to index and a function record-path → corpus/document id."""
    if isinstance(dataset, SpanDataset):
        by_name = {p.name: cid for cid, p in dataset.corpora.items()}
        paths = [str(p) for p in dataset.corpora.values()]

        def corpus_of(path: str) -> str:
            return by_name[Path(path).name]

        return paths, corpus_of
    docs_dir = tmpdir / "docs"
    docs_dir.mkdir()
    ids = list(dataset.docs)
    for i, did in enumerate(ids):
        (docs_dir / f"{i:07d}.txt").write_text(dataset.docs[did], encoding="utf-8", newline="")

    def doc_of(path: str) -> str:
        return ids[int(Path(path).stem)]

    return [str(docs_dir)], doc_of


def _make_chunker(cfg: EvalConfig) -> Any:
    """The configuration's chunker; ``tokenizer = "model"`` sizes chunks in the embedder's own
    tokens and, without a ``size`` (or a ``max_chars``), at ``ingest.embed_size`` (what
    ``ragsift embed`` does: the max length less the passage prefix; one definition:
    ``api.sized_for_embed``)."""
    from ragsift.api import sized_for_embed
    from ragsift.chunkers import OPTIONS, make_chunker
    from ragsift.evaluation.reference import REFERENCE_CHUNKERS

    options = dict(cfg.chunker_options)
    tokenizer: Any = cfg.tokenizer
    if cfg.tokenizer == "model":
        sized = cfg.chunker in REFERENCE_CHUNKERS or "size" in OPTIONS.get(cfg.chunker, ())
        tokenizer, options = sized_for_embed(
            options,
            takes_size=sized and "max_chars" not in options,
            model_dir=cfg.model,
            max_length=cfg.embedder_options.get("max_length") or None,
            passage_prefix=cfg.embedder_options.get("passage_prefix"),
        )
    try:
        if cfg.chunker in REFERENCE_CHUNKERS:
            return REFERENCE_CHUNKERS[cfg.chunker](tokenizer=tokenizer, **options)
        return make_chunker(cfg.chunker, tokenizer=tokenizer, **options)
    except (TypeError, ValueError) as exc:
        raise RagsiftError(f"config {cfg.name}: chunker options: {exc}") from None


def build_config_index(
    paths: list[str], index_path: Path, cfg: EvalConfig, embedder: CachingEmbedder
) -> _Index:
    import ragsift.api as rs

    t0 = time.perf_counter()
    rs.build(index_path, paths, chunker=_make_chunker(cfg), embedder=embedder)
    index = rs.open_index(index_path, embedder=embedder)
    records = index.records()
    try:  # nothing to evaluate on: a usage error (exit 2)
        rs.require_chunks(len(records), EXIT_USAGE, subject=f"config {cfg.name}: the index")
    except RagsiftError:
        index.close()
        raise
    return _Index(index, records, time.perf_counter() - t0, embedder)


QUERY_BLOCK = 64  # queries retrieved at a time (bounds the candidate records held)


def ranked(
    index: Any,
    cfg: EvalConfig,
    queries: Sequence[str],
    depth: int,
    records: Mapping[int, ChunkRecord] | None = None,
) -> Iterator[list[tuple[ChunkRecord, Ranked]]]:
    """Each query's best ``depth`` candidates in the configuration's mode, best first, as
    (chunk record, ranked candidate): the ranking ``ragsift query`` applies its threshold to
    (``api.Index.rank``: the engine's one function that orders candidates). No top-K record
    is built: eval needs no admission, and at BEIR depth (1,000 per query) the records would
    double the search time."""
    fusion = cfg.fusion_settings()
    for lo in range(0, len(queries), QUERY_BLOCK):
        block = list(queries[lo : lo + QUERY_BLOCK])
        lists = index.rank(block, depth=depth, mode=cfg.mode, fusion=fusion)
        recs = (
            records
            if records is not None
            else {
                r.rowid: r
                for r in index.records(sorted({c.rowid for cands in lists for c in cands}))
            }
        )
        for cands in lists:
            yield [(recs[c.rowid], c) for c in cands]


def _common(cfg: EvalConfig, dataset: Any, index: _Index, n_queries: int) -> dict[str, Any]:
    return {
        "config": cfg,
        "dataset": dataset.name,
        "format": dataset.format,
        "queries": n_queries,
        "chunks": len(index.records),
        "truncated_chunks": sum(1 for r in index.records if r.truncated),
        "mean_chunk_chars": (sum(r.end - r.start for r in index.records) / len(index.records)),
    }


def _score_spans(
    dataset: SpanDataset, cfg: EvalConfig, index: _Index, corpus_of: Callable[[str], str]
) -> EvalResult:
    questions = dataset.questions
    per_q: list[tuple[str, m.SpanScores]] = []
    judged: list[list[tuple[float, bool]]] = []
    tops = ranked(index.index, cfg, [q.question for q in questions], cfg.k, index.by_rowid)
    corpus_by_rowid = {r.rowid: corpus_of(r.path) for r in index.records}  # once per chunk
    from ragsift.api import spans_of_ranked

    for q, top in zip(questions, tops):
        retrieved = [(corpus_by_rowid[rec.rowid], int(rec.start), int(rec.end)) for rec, _ in top]
        if cfg.span != "chunk":
            # score each hit's evidence span: the rule `query --span best` applies to the same
            # hits (ragsift.retrieval.spans; eval admits the whole top k, no threshold)
            spans = spans_of_ranked(
                q.question,
                [rec.text for rec, _ in top],
                [rec.start for rec, _ in top],
                [c for _, c in top],
            )
            retrieved = [(cid, sp.start, sp.end) for (cid, _, _), sp in zip(retrieved, spans)]
        per_q.append((q.corpus_id, m.span_scores(retrieved, q.references, q.corpus_id)))
        judged.append(
            [
                (c.score, cid == q.corpus_id and bool(m.intersect_spans([(s, e)], q.references)))
                for (cid, s, e), (_, c) in zip(retrieved, top)
            ]
        )
    overall, std = _aggregate([s for _, s in per_q])
    per_corpus, per_corpus_std = {}, {}
    for cid in dataset.corpora:
        sub = [s for c, s in per_q if c == cid]
        if sub:
            per_corpus[cid], per_corpus_std[cid] = _aggregate(sub)
    return EvalResult(
        **_common(cfg, dataset, index, len(per_q)),
        overall=overall,
        std=std,
        per_corpus=per_corpus,
        per_corpus_std=per_corpus_std,
        thresholds=m.threshold_sweep(judged, SWEEP),
    )


def _aggregate(scores: list[m.SpanScores]) -> tuple[dict[str, float], dict[str, float]]:
    mean, std = {}, {}
    for name in SPAN_METRICS:
        mean[name], std[name] = m.mean_std([getattr(s, name) for s in scores])
    return mean, std


def _score_beir(
    dataset: BeirDataset, cfg: EvalConfig, index: _Index, doc_of: Callable[[str], str]
) -> EvalResult:
    if cfg.span != "chunk":
        raise RagsiftError(
            f"config {cfg.name}: span = {cfg.span!r} scores span-reference sets; "
            'a BEIR set is scored per document (use span = "chunk")'
        )
    qids = list(dataset.queries)
    values: dict[str, list[float]] = {name: [] for name in BEIR_METRICS}
    judged: list[list[tuple[float, bool]]] = []
    depth = max(BEIR_DEPTH, cfg.k)
    tops = ranked(index.index, cfg, [dataset.queries[q] for q in qids], depth, index.by_rowid)
    doc_by_rowid = {r.rowid: doc_of(r.path) for r in index.records}  # once per chunk
    for qid, top in zip(qids, tops):
        docs = [doc_by_rowid[rec.rowid] for rec, _ in top]
        # a document scores as its best chunk: rank documents by first appearance
        doc_ranking = m.best_chunk_ranking((d, -float(i)) for i, d in enumerate(docs))
        qrels = dataset.qrels[qid]
        values["ndcg@10"].append(m.ndcg_at_k(doc_ranking, qrels, 10))
        values["recall@10"].append(m.recall_at_k(doc_ranking, qrels, 10))
        values["recall@100"].append(m.recall_at_k(doc_ranking, qrels, 100))
        values["mrr@10"].append(m.mrr_at_k(doc_ranking, qrels, 10))
        judged.append([(c.score, qrels.get(d, 0) > 0) for (_, c), d in zip(top[: cfg.k], docs)])
    overall, std = {}, {}
    for name, vals in values.items():
        overall[name], std[name] = m.mean_std(vals)
    return EvalResult(
        **_common(cfg, dataset, index, len(qids)),
        overall=overall,
        std=std,
        thresholds=m.threshold_sweep(judged, SWEEP),
    )
