"""The one retrieval engine end to end: `eval` ranks exactly as `query` does, the threshold
policy (measured / tuned / given), `tune --save`, `ls`, `rm`, an index with no chunks, and the
README's Python API example. Real model, real indexes, the CLI run as subprocesses."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.conftest import REPO, run_cli
from tests.test_query_cli import fixture_index

QUERIES = [
    "when do honey bees swarm",
    "how warm should the oven be",
    "zq7x reference code",
    "sourdough starter feeding",
]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_eval_and_query_json_rank_and_score_identically(index, mode):
    """The ranking `eval` scores (``runner.ranked``, what ``_score_spans``/``_score_beir``
    consume) is the ranking `query --json` prints: same chunks, same order, same scores."""
    import ragsift.api as rs
    from ragsift.evaluation.config import EvalConfig
    from ragsift.evaluation.runner import ranked

    k = 6
    proc = run_cli(
        "query",
        "-",
        "-i",
        index,
        "--json",
        "--rejected",
        "--threshold",
        "none",
        "-k",
        str(k),
        "--reject-window",
        "0",
        "--mode",
        mode,
        input="\n".join(QUERIES) + "\n",
    )
    assert proc.returncode == 0, proc.stderr
    by_query: dict[str, list[tuple[str, float]]] = {q: [] for q in QUERIES}
    for row in jsonl(proc.stdout):
        by_query[row["query"]].append((row["id"], row["score"]))
    with rs.open_index(index) as ix:
        cfg = EvalConfig(mode=mode, k=k)
        got = list(ranked(ix, cfg, QUERIES, k))
    assert len(got) == len(QUERIES)
    for q, cands in zip(QUERIES, got):
        ours = [(rec.id, round(c.score, 6)) for rec, c in cands]
        assert ours == by_query[q], (mode, q)
    assert any(by_query[q] for q in QUERIES)


@pytest.fixture
def small_index(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "bees.md").write_text("# Bees\n\nHoney bees swarm in late spring.\n")
    (docs / "bread.md").write_text("# Bread\n\nFeed the sourdough starter every day.\n")
    (docs / "sub" / "oven.md").write_text("# Oven\n\nBake the loaf at 230 degrees.\n")
    path = str(tmp_path / "small.db")
    proc = run_cli("embed", "docs", "--index", path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return path, tmp_path


def test_ls_lists_documents(small_index):
    path, cwd = small_index
    proc = run_cli("ls", "--index", path, "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    rows = jsonl(proc.stdout)
    assert [r["path"] for r in rows] == ["docs/bees.md", "docs/bread.md", "docs/sub/oven.md"]
    for r in rows:
        assert r["chunks"] >= 1 and r["tokens"] > 0 and r["size"] > 0
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", r["indexed_at"])
    proc = run_cli("ls", "docs/sub/*", "--index", path, cwd=cwd)
    assert proc.returncode == 0 and "oven.md" in proc.stdout and "bees.md" not in proc.stdout
    assert run_cli("ls", "nothing/*", "--index", path, cwd=cwd).returncode == 1


def test_rm_removes_documents_atomically_and_respects_the_lock(small_index):
    from ragsift.index import open_index

    path, cwd = small_index
    dry = run_cli("rm", "docs/b*", "--index", path, "--dry-run", cwd=cwd)
    assert dry.returncode == 0 and dry.stdout.split() == ["docs/bees.md", "docs/bread.md"]
    with open_index(path, "w"):  # another writer holds the lock
        busy = run_cli("rm", "docs/bees.md", "--index", path, cwd=cwd)
    assert busy.returncode == 2 and "PID" in busy.stderr
    proc = run_cli("rm", "docs/b*", "--index", path, "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert [r["path"] for r in jsonl(proc.stdout)] == ["docs/bees.md", "docs/bread.md"]
    assert "removed 2 documents" in proc.stderr
    with open_index(path, "r") as s:
        assert s.paths() == ["docs/sub/oven.md"] and s.verify() == []
        assert s.lexical_candidates("swarm sourdough", 10) == []
        assert s.count() == len(s.document_chunks("docs/sub/oven.md"))
    q = run_cli("query", "honey bees swarm", "-i", path, "--json", "--rejected", cwd=cwd)
    assert all(r["path"] == "docs/sub/oven.md" for r in jsonl(q.stdout))
    assert run_cli("rm", "docs/bees.md", "--index", path, cwd=cwd).returncode == 1
    assert run_cli("rm", "x", "--index", str(cwd / "missing.db"), cwd=cwd).returncode == 2


def test_tune_save_is_used_by_query_and_explain(small_index):
    path, cwd = small_index
    labelled = cwd / "labelled.jsonl"
    labelled.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"query": "when do bees swarm", "relevant": ["docs/bees.md"]},
                {"query": "feeding a sourdough starter", "relevant": ["docs/bread.md"]},
                {"query": "oven temperature for bread", "relevant": ["docs/sub/oven.md"]},
                {"query": "quantum chromodynamics", "relevant": []},
            ]
        )
        + "\n"
    )
    before = json.loads(
        run_cli("explain", "when do bees swarm", "-i", path, "--json", cwd=cwd).stdout
    )
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS

    assert before["threshold_source"] == "model default"
    assert before["threshold"] == DEFAULT_THRESHOLDS["hybrid"]
    assert before["threshold_origin"] == "measured default"
    proc = run_cli("tune", "-i", path, "--queries", str(labelled), "--save", "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    value = report["recommended"]["threshold"]
    assert report["saved"]["value"] == value and report["saved"]["queries"] == 4
    # the score it was tuned on: its kind and the coefficients (the shipped ones here)
    from ragsift.retrieval.relevance import MODELS, SCORE_KIND, score_digest

    assert report["saved"]["score"] == SCORE_KIND
    assert report["saved"]["calibration"] == score_digest(MODELS)
    after = json.loads(
        run_cli("explain", "when do bees swarm", "-i", path, "--json", cwd=cwd).stdout
    )
    assert after["threshold"] == value and after["threshold_source"] == "tuned"
    assert after["threshold_origin"] == "tuned on 4 queries"
    text = run_cli("explain", "when do bees swarm", "-i", path, cwd=cwd).stdout
    assert "tuned on 4 queries" in text
    info = json.loads(run_cli("info", "-i", path, "--json", cwd=cwd).stdout)
    assert (info["threshold"], info["threshold_origin"]) == (value, "tuned on 4 queries")
    flag = json.loads(
        run_cli("explain", "when do bees swarm", "-i", path, "--json", "-t", "0.2", cwd=cwd).stdout
    )
    assert flag["threshold"] == 0.2 and flag["threshold_origin"] == "given on the command line"
    rows = jsonl(
        run_cli("query", "when do bees swarm", "-i", path, "--json", "--rejected", cwd=cwd).stdout
    )
    assert rows and all(r["admitted"] == (r["score"] >= value) for r in rows[:3])


def test_a_model_without_a_measured_threshold_has_none(tmp_path):
    from ragsift.embedders import DEFAULT_MODEL_DIR

    other = tmp_path / "other-model"
    shutil.copytree(DEFAULT_MODEL_DIR, other)
    from ragsift.embedders.weights import default_weights_path

    shutil.copy(default_weights_path(), other / "model.onnx")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bees.md").write_text("Honey bees swarm in late spring.\n")
    path = str(tmp_path / "other.db")
    # uncalibrated (embed would calibrate it by itself: tests/test_calibrate.py)
    proc = run_cli("embed", str(docs), "-i", path, "--model", str(other), "--no-calibrate")
    assert proc.returncode == 0, proc.stderr
    for cmd in ("query", "explain"):
        refused = run_cli(cmd, "bees", "-i", path, "--model", str(other))
        assert refused.returncode == 2
        assert "no measured threshold" in refused.stderr and "--save" in refused.stderr
        assert "ragsift calibrate" in refused.stderr
    given = run_cli("explain", "bees", "-i", path, "--model", str(other), "-t", "0.1", "--json")
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout)["threshold_origin"] == "given on the command line"


def test_an_index_without_chunks(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    path = str(tmp_path / "empty.db")
    run_cli("embed", str(empty), "-i", path)
    for args in (
        ("query", "bees"),
        ("explain", "bees"),
        ("query", "bees", "--mode", "dense"),
        ("explain", "bees", "--json"),
    ):
        proc = run_cli(*args, "-i", path)
        assert proc.returncode == 1, (args, proc.stderr)
        assert "the index holds no chunks" in proc.stderr and "internal error" not in proc.stderr


def test_the_readme_python_example_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python API") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    text = out.getvalue()
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS

    default = DEFAULT_THRESHOLDS["hybrid"]
    assert "chunks indexed" in text and f"threshold {default} measured default" in text
    assert re.search(r"^0\.\d{3} .*bees\.md:\d+", text, re.M)


def test_model_tokenizer_counts_without_an_onnxruntime_session():
    """`--tokenizer model` needs the tokenizer only: counting never imports onnxruntime."""
    import subprocess
    import sys

    code = (
        "import sys; from ragsift.chunkers.counters import get_counter; "
        "c = get_counter('model'); n = c.count('honey bees swarm'); "
        "print(n, c.max_length, 'onnxruntime' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout.split()
    assert out == ["5", "256", "False"]


def test_hybrid_overlap_gives_the_sequential_ranking_and_raises_lexical_errors(index):
    """In hybrid mode the lexical side runs in a thread beside the dense scan (issue 13): the
    ranking must equal the two sides run one after the other, and an error raised by the
    lexical side must reach the caller (not vanish in the thread)."""
    from ragsift.index import open_index
    from ragsift.retrieval import engine
    from ragsift.retrieval.search import embedder_for

    with open_index(index, "r") as store:
        qvecs = embedder_for(store.settings()).embed(QUERIES, kind="query").vectors
        threaded = engine.rank(store, QUERIES, qvecs, mode="hybrid", n=8)
        original = engine.both_sides
        engine.both_sides = lambda first, second: (first(), second())
        try:
            sequential = engine.rank(store, QUERIES, qvecs, mode="hybrid", n=8)
        finally:
            engine.both_sides = original
        assert threaded == sequential and any(threaded)

        def broken(*_args, **_kw):
            raise RuntimeError("lexical side failed")

        store.lexical_candidates = broken
        with pytest.raises(RuntimeError, match="lexical side failed"):
            engine.rank(store, QUERIES, qvecs, mode="hybrid", n=8)
