"""`ragsift eval`: metric arithmetic, dataset detection and loading, configurations, the
embedding cache, and end-to-end runs on tiny synthetic datasets with the real model.

The metric tests are pure arithmetic on hand-made spans and qrels with answers computed by hand;
they check the definitions in ../shared/eval/README.md, not the model."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from ragsift.errors import RagsiftError
from ragsift.evaluation.config import EvalConfig, config_from_dict, load_config
from ragsift.evaluation.datasets import BEIR, SPANS, detect_format, load_dataset
from ragsift.metrics import (
    best_chunk_ranking,
    intersect_spans,
    mean_std,
    merge_spans,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
    span_scores,
    spans_length,
)

# ---- span metrics: pure arithmetic ---------------------------------------------------------


def test_span_helpers():
    assert merge_spans([(5, 10), (0, 3), (2, 4), (10, 12), (7, 7)]) == [(0, 4), (5, 12)]
    assert spans_length([(0, 10), (5, 15)]) == 15
    assert intersect_spans([(0, 10), (20, 30)], [(5, 25)]) == [(5, 10), (20, 25)]


def test_span_scores_by_hand():
    # R = [10, 20) ∪ [40, 50): |R| = 20. Chunks (rank order): [0, 15) and [12, 30) overlap
    # each other; [100, 110) misses; one chunk of another corpus covers the same offsets.
    retrieved = [("a", 0, 15), ("a", 12, 30), ("a", 100, 110), ("b", 40, 50)]
    s = span_scores(retrieved, [(10, 20), (40, 50)], "a")
    # union(C ∩ R) = [10, 20) = 10 chars; Σ|c| = 15 + 18 + 10 + 10 = 53 (with multiplicity)
    assert s.recall == pytest.approx(10 / 20)
    assert s.precision == pytest.approx(10 / 53)
    # IoU = 10 / (53 + 10 uncovered reference chars)
    assert s.iou == pytest.approx(10 / 63)


def test_span_scores_edges():
    full = span_scores([("a", 0, 10)], [(0, 10)], "a")
    assert (full.recall, full.precision, full.iou) == (1.0, 1.0, 1.0)
    none = span_scores([], [(0, 10)], "a")
    assert (none.recall, none.precision, none.iou) == (0.0, 0.0, 0.0)
    # a duplicated chunk doubles Σ|c| but not the covered characters
    dup = span_scores([("a", 0, 10), ("a", 0, 10)], [(0, 10)], "a")
    assert (dup.recall, dup.precision, dup.iou) == (1.0, 0.5, 0.5)


def test_mean_and_population_std_times_100():
    mean, std = mean_std([0.5, 1.0, 0.0, 0.5])
    assert mean == pytest.approx(50.0)
    assert std == pytest.approx(100 * math.sqrt(0.125))  # population (ddof = 0)
    assert mean_std([]) == (0.0, 0.0)


# ---- BEIR metrics: pure arithmetic ---------------------------------------------------------


def test_ndcg_by_hand():
    qrels = {"d1": 1, "d2": 1}
    # relevant at ranks 2 and 3: DCG = 1/log2(3) + 1/log2(4); ideal = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["x", "d1", "d2", "y"], qrels, 10) == pytest.approx(expected)
    assert ndcg_at_k(["d1", "d2"], qrels, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "d1"], qrels, 1) == 0.0
    # graded: gain = relevance
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


def test_recall_and_mrr_by_hand():
    qrels = {"d1": 1, "d2": 1, "d3": 1, "d4": 0}
    ranking = ["x", "d4", "d2", "y", "d1"]
    assert recall_at_k(ranking, qrels, 3) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, qrels, 5) == pytest.approx(2 / 3)
    assert mrr_at_k(ranking, qrels, 10) == pytest.approx(1 / 3)  # d4 has relevance 0
    assert mrr_at_k(ranking, qrels, 2) == 0.0


def test_a_document_scores_as_its_best_chunk():
    chunks = [("d2", 0.5), ("d1", 0.9), ("d2", 0.95), ("d3", 0.1), ("d1", 0.2)]
    assert best_chunk_ranking(chunks) == ["d2", "d1", "d3"]
    assert best_chunk_ranking(chunks, limit=2) == ["d2", "d1"]


# ---- dataset detection and loading ---------------------------------------------------------


def make_span_dataset(root, corpora: dict[str, str], questions: list[tuple[str, str, list[str]]]):
    """Write a Chroma-layout set; each question's references are given as substrings."""
    import csv

    (root / "corpora").mkdir(parents=True)
    for cid, text in corpora.items():
        (root / "corpora" / f"{cid}.md").write_text(text, encoding="utf-8", newline="")
    with open(root / "questions.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "references", "corpus_id"])
        for q, cid, parts in questions:
            text = corpora[cid]
            refs = []
            for p in parts:
                s = text.index(p)
                refs.append({"content": p, "start_index": s, "end_index": s + len(p)})
            w.writerow([q, json.dumps(refs), cid])
    return root


def make_beir_dataset(
    root,
    docs: dict[str, tuple[str, str]],
    queries: dict[str, str],
    qrels: list[tuple[str, str]],
    split: str = "test",
):
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(
            json.dumps({"_id": did, "title": title, "text": text, "metadata": {}}) + "\n"
            for did, (title, text) in docs.items()
        )
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(
            json.dumps({"_id": qid, "text": text, "metadata": {}}) + "\n"
            for qid, text in queries.items()
        )
    (root / "qrels").mkdir()
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t1" for q, d in qrels]
    (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_detect_format(tmp_path):
    spans = make_span_dataset(tmp_path / "s", {"c": "Hello world."}, [("hi?", "c", ["Hello"])])
    beir = make_beir_dataset(tmp_path / "b", {"1": ("T", "x")}, {"q": "x"}, [("q", "1")])
    assert detect_format(spans) == SPANS
    assert detect_format(beir) == BEIR
    with pytest.raises(RagsiftError, match="unknown dataset layout"):
        detect_format(tmp_path)
    with pytest.raises(RagsiftError, match="dataset not found"):
        detect_format(tmp_path / "absent")


def test_load_span_dataset_keeps_file_offsets(tmp_path):
    text = "Ünïcode first line\r\nsecond line — answer here.\n"
    root = make_span_dataset(tmp_path / "s", {"c": text}, [("where?", "c", ["answer here"])])
    ds = load_dataset(root)
    ((s, e),) = ds.questions[0].references
    assert text[s:e] == "answer here"  # \r\n kept: offsets are the file's code points
    bad = tmp_path / "bad"
    make_span_dataset(bad, {"c": text}, [("where?", "c", ["answer here"])])
    (bad / "questions.csv").write_text(
        'question,references,corpus_id\nq,"[{""content"": ""nope"", ""start_index"": 0, '
        '""end_index"": 4}]",c\n',
        encoding="utf-8",
    )
    with pytest.raises(RagsiftError, match="does not match"):
        load_dataset(bad)


def test_load_beir_dataset(tmp_path):
    root = make_beir_dataset(
        tmp_path / "b",
        {"1": ("Title", "Body."), "2": ("", "Only body.")},
        {"q1": "a", "q2": "b", "q3": "unjudged"},
        [("q1", "1"), ("q1", "2"), ("q2", "2")],
        split="train",
    )
    ds = load_dataset(root)  # the only split is chosen
    assert ds.split == "train"
    assert ds.docs == {"1": "Title Body.", "2": "Only body."}
    assert ds.queries == {"q1": "a", "q2": "b"}  # only judged queries
    assert ds.qrels == {"q1": {"1": 1, "2": 1}, "q2": {"2": 1}}
    with pytest.raises(RagsiftError, match="no qrels/dev.tsv"):
        load_dataset(root, split="dev")


# ---- configurations ------------------------------------------------------------------------


def test_load_config(tmp_path):
    p = tmp_path / "base.toml"
    p.write_text(
        '[chunker]\nstrategy = "recursive"\nsize = 250\noverlap = 125\n'
        '[retrieval]\nmode = "hybrid"\nfusion = "convex"\nalpha = 0.7\nk = 5\n'
    )
    c = load_config(p)
    assert c.name == "base" and c.chunker == "recursive" and c.tokenizer == "model"
    assert c.chunker_options == {"size": 250, "overlap": 125}
    assert (c.mode, c.fusion, c.alpha, c.k) == ("hybrid", "convex", 0.7, 5)
    assert c.model is None
    assert "rrf_k" not in c.as_dict() and c.as_dict()["alpha"] == 0.7
    assert c.chunker_label() == "recursive 250/125 model"
    assert EvalConfig(mode="dense").as_dict().get("fusion") is None  # dense: no fusion keys
    assert (EvalConfig().mode, EvalConfig().fusion) == ("hybrid", "relevance")  # defaults


@pytest.mark.parametrize(
    "data, message",
    [
        ({"retrieval": {"mode": "sparse"}}, "mode must be"),
        ({"retrieval": {"topk": 3}}, "unknown \\[retrieval\\] keys"),
        ({"retriever": {}}, "unknown keys"),
        ({"retrieval": {"alpha": 2.0}}, "alpha"),
    ],
)
def test_bad_configs(data, message):
    with pytest.raises(RagsiftError, match=message):
        config_from_dict(data)


def test_missing_or_broken_config_file(tmp_path):
    with pytest.raises(RagsiftError, match="config not found"):
        load_config(tmp_path / "nope.toml")
    (tmp_path / "x.toml").write_text("[chunker\n")
    with pytest.raises(RagsiftError, match="not valid TOML"):
        load_config(tmp_path / "x.toml")


def test_threshold_sweep_by_hand():
    from ragsift.metrics import best_threshold, threshold_sweep

    judged = [[(0.7, True), (0.5, False)], [(0.4, False), (0.3, True)]]
    rows = {r["threshold"]: r for r in threshold_sweep(judged, [0.0, 0.45, 0.6, 0.8])}
    assert rows[0.0]["precision"] == 0.5 and rows[0.0]["recall"] == 1.0
    # t = 0.45 admits 0.7 (relevant) and 0.5: P = 1/2, R = 1/2; query 2 admits nothing
    assert rows[0.45]["precision"] == 0.5 and rows[0.45]["recall"] == 0.5
    assert rows[0.45]["empty"] == 0.5 and rows[0.45]["answered"] == 0.5
    assert rows[0.6]["precision"] == 1.0 and rows[0.6]["f1"] == pytest.approx(0.6667, abs=1e-4)
    assert rows[0.8]["empty"] == 1.0 and rows[0.8]["f1"] == 0.0
    assert best_threshold(list(rows.values()))["threshold"] == 0.0  # F1 .667 ties: lowest t


# ---- the embedding cache -------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder():
    from ragsift.embedders import load_embedder

    return load_embedder()


class _Counting:
    """Passes through to the real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner = inner
        self.seen: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts, kind="passage"):
        self.seen.extend(texts)
        return self.inner.embed(texts, kind=kind)


def test_cache_never_re_embeds_and_returns_the_model_vectors(tmp_path, embedder):
    import numpy as np

    from ragsift.evaluation.cache import CachingEmbedder, EmbeddingCache

    texts = ["The cat sat on the mat.", "Photosynthesis makes sugar.", "The cat sat on the mat."]
    counting = _Counting(embedder)
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    cached = CachingEmbedder(counting, cache)
    first = cached.embed(texts)
    assert counting.seen == texts[:2]  # the duplicate is embedded once
    direct = embedder.embed(texts)
    assert np.allclose(first.vectors, direct.vectors, atol=1e-6)
    assert first.truncated == [0, 0, 0]
    cache.close()
    # a new process (new cache object on the same file) embeds nothing it has seen
    counting.seen.clear()
    again = CachingEmbedder(counting, EmbeddingCache(tmp_path / "cache.sqlite"))
    assert np.array_equal(again.embed(texts).vectors, first.vectors)
    assert counting.seen == []
    # queries are keyed separately from passages
    again.embed([texts[0]], kind="query")
    assert counting.seen == [texts[0]]
    assert again.fingerprint == embedder.fingerprint


# ---- end to end through `ragsift eval`, with the real model --------------------------------

ANIMALS = (
    "# Animals\n\nCats are small domesticated felines that purr when content.\n\n"
    "Elephants are the largest land mammals and use their trunks to drink water.\n\n"
    "Penguins are flightless birds that swim in cold southern oceans.\n"
)
PLANETS = (
    "Mars is the red planet, fourth from the Sun, with a thin atmosphere.\n\n"
    "Jupiter is a gas giant famous for its Great Red Spot storm.\n\n"
    "Saturn has spectacular rings made of ice and rock.\n"
)
ELEPHANT = "Elephants are the largest land mammals and use their trunks to drink water."
SATURN = "Saturn has spectacular rings made of ice and rock."
JUPITER = "Jupiter is a gas giant famous for its Great Red Spot storm."


def _write_config(path, strategy_lines: str, retrieval_lines: str):
    path.write_text(f"[chunker]\n{strategy_lines}\n[retrieval]\n{retrieval_lines}\n")
    return path


def _eval_json(*args) -> list[dict]:
    from typer.testing import CliRunner

    from ragsift.cli import app

    result = CliRunner().invoke(app, ["eval", *args, "--json"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_eval_span_dataset_end_to_end(tmp_path):
    root = make_span_dataset(
        tmp_path / "tiny",
        {"animals": ANIMALS, "planets": PLANETS},
        [
            ("Which animal drinks water with its trunk?", "animals", [ELEPHANT]),
            ("Which planet has rings of ice and rock?", "planets", [SATURN]),
            ("What is the giant storm on Jupiter called?", "planets", ["Great Red Spot"]),
        ],
    )
    chunker = 'strategy = "recursive"\ntokenizer = "cl100k"\nsize = 20\nmin_chars = 0'
    dense = _write_config(tmp_path / "dense.toml", chunker, 'mode = "dense"\nk = 1')
    hybrid = _write_config(tmp_path / "hybrid.toml", chunker, 'mode = "hybrid"\nk = 1')
    cache = str(tmp_path / "cache.sqlite")
    first, second = _eval_json(str(root), "--compare", str(dense), str(hybrid), "--cache", cache)
    # every question's best chunk is its sentence: a reference that is the whole chunk scores
    # 1/1/1; "Great Red Spot" (14 chars) inside Jupiter's 59-char sentence: 1, 14/59, 14/59
    partial = len("Great Red Spot") / len(JUPITER)
    for r in (first, second):
        assert r["format"] == "spans" and r["queries"] == 3 and r["chunks"] == 6
        assert r["overall"]["recall"] == pytest.approx(100.0)
        assert r["overall"]["precision"] == pytest.approx(100 * (2 + partial) / 3, abs=0.01)
        assert r["overall"]["iou"] == pytest.approx(100 * (2 + partial) / 3, abs=0.01)
        assert r["per_corpus"]["animals"]["iou"] == pytest.approx(100.0)
        assert r["per_corpus"]["planets"]["precision"] == pytest.approx(
            100 * (1 + partial) / 2, abs=0.01
        )
    assert first["config"]["name"] == "dense" and second["config"]["mode"] == "hybrid"
    assert first["cache"]["passage_misses"] == 6
    assert second["cache"]["passage_misses"] == 0  # same chunker: the index is shared
    # a re-run embeds nothing: every passage and query comes from the cache
    (again,) = _eval_json(str(root), "--config", str(dense), "--cache", cache)
    assert again["cache"]["passage_misses"] == 0 and again["cache"]["query_misses"] == 0
    assert again["overall"] == first["overall"]


def test_eval_beir_dataset_end_to_end(tmp_path):
    docs = {
        "d1": ("Elephants", "Elephants use their trunks to drink water and to greet each other."),
        "d2": ("Saturn", "Saturn has spectacular rings made of ice and rock."),
        "d3": ("Bread", "Sourdough bread rises with wild yeast and lactic acid bacteria."),
        "d4": ("Volcanoes", "Volcanoes erupt when magma rises through the crust."),
    }
    queries = {
        "q1": "How do elephants drink?",
        "q2": "Which planet has rings?",
        "q3": "What makes sourdough rise?",
    }
    root = make_beir_dataset(
        tmp_path / "beir", docs, queries, [("q1", "d1"), ("q2", "d2"), ("q3", "d3")], "train"
    )
    dense = _write_config(tmp_path / "dense.toml", 'strategy = "recursive"', 'mode = "dense"')
    lexical = _write_config(tmp_path / "lex.toml", 'strategy = "recursive"', 'mode = "lexical"')
    runs = _eval_json(
        str(root),
        "--compare",
        str(dense),
        str(lexical),
        "--split",
        "train",
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--save",
        str(tmp_path / "saved.jsonl"),
    )
    saved = [json.loads(line) for line in (tmp_path / "saved.jsonl").read_text().splitlines()]
    assert saved == runs
    assert [r["config"]["mode"] for r in runs] == ["dense", "lexical"]
    for r in runs:
        assert r["format"] == "beir" and r["dataset"] == "beir/train" and r["queries"] == 3
        assert r["chunks"] == 4  # one chunk per short document
        for name in ("ndcg@10", "recall@10", "recall@100", "mrr@10"):
            assert r["overall"][name] == pytest.approx(100.0), (r["config"]["mode"], name)


def test_eval_reports_an_absent_dataset(tmp_path):
    from typer.testing import CliRunner

    from ragsift.cli import app

    result = CliRunner().invoke(app, ["eval", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "dataset not found" in result.output and "../shared/eval" in result.output


# ---- the reference chunker for published rows (Chroma's recursive splitter) ----------------


def test_chroma_recursive_reference_by_hand():
    from ragsift.evaluation.reference import ChromaRecursiveChunker

    text = "one two three four five"
    chunks = ChromaRecursiveChunker(tokenizer="chars", size=10, overlap=5).chunk(text)
    # pieces "one", " two", " three", " four", " five" merged under 10 chars, keeping ≤ 5
    # chars of overlap, then stripped (LangChain's _merge_splits)
    assert [c.text for c in chunks] == ["one two", "two three", "four five"]
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_chroma_recursive_reference_on_a_real_corpus(tmp_path):
    from ragsift.evaluation.reference import ChromaRecursiveChunker

    text = "\n\n".join(
        f"Paragraph {i}. " + " ".join(f"word{i}x{j}." for j in range(i * 7 % 60)) for i in range(40)
    )
    chunker = ChromaRecursiveChunker(size=60, overlap=30)
    chunks = chunker.chunk(text)
    assert chunks and all(text[c.start : c.end] == c.text for c in chunks)
    assert all(0 < c.tokens <= 60 for c in chunks)
    assert all(a.start < b.start for a, b in itertools.pairwise(chunks))
    assert any(b.start < a.end for a, b in itertools.pairwise(chunks))  # overlap happens
    assert chunker.options()["overlap"] == 30
