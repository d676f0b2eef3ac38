"""``ragsift query`` and ``ragsift explain`` end to end: the real model on an index built from
``fixtures/`` by ``ragsift embed`` (once per session), run as subprocesses like a shell user."""

from __future__ import annotations

import json
import re
import sys

import pytest

from tests.conftest import REPO, run_cli

BEES = "when do honey bees swarm"
NONSENSE = "quantum chromodynamics lattice gauge theory"


def fixture_index(tmp_path_factory) -> str:
    """The index of ``fixtures/``, built once per session (shared with tests/test_tune.py)."""
    path = tmp_path_factory.getbasetemp() / "ragsift-fixtures.db"
    if not path.exists():
        proc = run_cli("embed", "fixtures", "--index", str(path))
        assert proc.returncode in (0, 3), proc.stderr  # 3: fixtures/bad/ is skipped on purpose
    return str(path)


@pytest.fixture(scope="session")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


@pytest.fixture(scope="session")
def truncated_index(tmp_path_factory) -> str:
    """A chunk whose one unit (a 3,000-character run without a space: one word, so never cut
    into smaller units) is longer than the model reads, so it truncates it. (Prose chunks of
    any length are no longer truncated: each of their units is embedded on its own.)"""
    folder = tmp_path_factory.mktemp("long")
    (folder / "swarm.md").write_text(
        "When do honey bees swarm? In spring. " + "-".join(["swarming"] * 330) + "\n",
        encoding="utf-8",
    )
    path = tmp_path_factory.mktemp("idx") / "long.db"
    proc = run_cli(
        "embed",
        str(folder),
        "--index",
        str(path),
        "--strategy",
        "chars",
        "--size",
        "3000",
        "--tokenizer",
        "chars",
    )
    assert proc.returncode == 0, proc.stderr
    return str(path)


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_query_prints_hits_and_exits_0(index):
    proc = run_cli("query", BEES, "--index", index)
    assert proc.returncode == 0, proc.stderr
    assert "beekeeping/handbook.md:" in proc.stdout
    assert re.match(r"^0\.\d{3}  fixtures/\S+:\d+", proc.stdout)


def test_query_json_lines_and_rejected(index):
    proc = run_cli("query", BEES, "-i", index, "--json", "-k", "2")
    assert proc.returncode == 0, proc.stderr
    hits = jsonl(proc.stdout)
    assert 1 <= len(hits) <= 2
    assert all(h["admitted"] and h["reason"] is None for h in hits)
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    for key in ("id", "score", "path", "line_start", "line_end", "headings", "text", "page"):
        assert key in hits[0]
    proc = run_cli(
        "query",
        BEES,
        "-i",
        index,
        "--json",
        "-k",
        "2",
        "--rejected",
        "--reject-window",
        "4",
        "--threshold",
        "0.2",
    )
    rows = jsonl(proc.stdout)
    assert len(rows) == 6
    rejected = [r for r in rows if not r["admitted"]]
    assert rejected and all(r["reason"] in ("over-k", "below-threshold") for r in rejected)
    assert all(r["score"] < 0.2 for r in rows if r["reason"] == "below-threshold")


def test_nothing_above_the_floor_exits_1_and_says_why(index):
    proc = run_cli("query", NONSENSE, "-i", index, "--threshold", "0.9")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "nothing cleared the threshold 0.90" in proc.stderr
    proc = run_cli("query", NONSENSE, "-i", index, "--threshold", "none", "--json")
    assert proc.returncode == 0 and len(jsonl(proc.stdout)) == 3  # no floor: top k


@pytest.mark.parametrize(
    "args, message",
    [
        (("--index", "/nonexistent/x.db"), "no index"),
        (("--threshold", "high"), "--threshold"),
        (("--threshold", "1.5"), "between 0 and 1"),
    ],
)
def test_errors_exit_2(index, args, message):
    full = ["query", BEES, "--index", index, *args]
    if args[0] == "--index":
        full = ["query", BEES, *args]
    proc = run_cli(*full)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_stdin_batch_carries_the_query(index):
    proc = run_cli(
        "query",
        "-",
        "-i",
        index,
        "--json",
        "--threshold",
        "0.3",
        input=f"{BEES}\n\n{NONSENSE}\nfeeding a sourdough starter\n",
    )
    assert proc.returncode == 0, proc.stderr
    rows = jsonl(proc.stdout)
    assert {r["query"] for r in rows} == {BEES, "feeding a sourdough starter"}
    assert NONSENSE in proc.stderr  # the query that admitted nothing is named on stderr


def test_path_filter(index):
    proc = run_cli("query", BEES, "-i", index, "--json", "--threshold", "none", "--path", "*.rst")
    rows = jsonl(proc.stdout)
    assert rows and all(r["path"].endswith(".rst") for r in rows)
    proc = run_cli("query", BEES, "-i", index, "--path", "nowhere/*")
    assert proc.returncode == 1 and "--path" in proc.stderr


def test_explain_shows_rejected_and_hint_below_threshold(index):
    proc = run_cli("explain", NONSENSE, "-i", index, "--threshold", "0.9", env={"COLUMNS": "160"})
    assert proc.returncode == 1
    out = proc.stdout
    assert "nothing admitted" in out and "rejected" in out and "below-threshold" in out
    assert "score picture" in out and "threshold 0.90" in out
    # its best candidate scores like an off-topic question's: no threshold is proposed (#41)
    assert "hint:" in out and "no lower threshold is proposed" in " ".join(out.split())


def test_explain_admitted_with_attribution(index):
    proc = run_cli("explain", BEES, "-i", index, "--threshold", "0.2", env={"COLUMNS": "160"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "admitted" in out and "closest units" in out and "margin" in out
    flat = " ".join(out.split())
    assert "embedding-similarity proxy" in flat and "not a causal explanation" in flat


def test_explain_json_and_window_independence(index):
    def admitted(window):
        proc = run_cli(
            "explain",
            BEES,
            "-i",
            index,
            "--json",
            "--threshold",
            "0.25",
            "--reject-window",
            str(window),
        )
        assert proc.returncode == 0, proc.stderr
        rec = json.loads(proc.stdout)
        return rec, [c["id"] for c in rec["candidates"] if c["admitted"]]

    rec0, ids0 = admitted(0)
    rec20, ids20 = admitted(20)
    assert ids0 == ids20
    assert rec20["considered"] >= rec0["considered"]
    assert rec20["attributions"] and rec20["attributions"][0]["units"]
    assert "proxy" in rec20["attribution_note"]
    units = rec20["attributions"][0]["units"]
    assert sum(u["share"] for u in units) <= 1.0 + 1e-6
    for key in (
        "strategy",
        "query_hash",
        "k",
        "threshold",
        "dimensions",
        "considered",
        "admitted",
        "rejected",
        "candidates_complete",
        "corpus_empty",
    ):
        assert key in rec20
    assert rec20["dimensions"] == 384


def test_explain_marks_truncated_hits(truncated_index):
    proc = run_cli(
        "explain", BEES, "-i", truncated_index, "--threshold", "none", env={"COLUMNS": "200"}
    )
    assert proc.returncode == 0, proc.stderr
    assert "⚠ truncated:" in proc.stdout
    proc = run_cli("query", BEES, "-i", truncated_index, "--json", "--threshold", "none")
    assert jsonl(proc.stdout)[0]["truncated"] > 0


def test_help_does_not_import_numpy():
    import subprocess

    code = (
        "import sys, ragsift.cli; import ragsift.cli.query, ragsift.cli.explain, "
        "ragsift.cli.tune; print('numpy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO
    ).stdout.strip()
    assert out == "False"


def test_char_budget_and_human_rejected(index):
    proc = run_cli("query", BEES, "-i", index, "--threshold", "none", "--max-chars", "10")
    assert proc.returncode == 1 and "does not fit --max-chars 10" in proc.stderr
    proc = run_cli(
        "query",
        BEES,
        "-i",
        index,
        "--threshold",
        "0.2",
        "-k",
        "1",
        "--rejected",
        "--reject-window",
        "2",
    )
    assert proc.returncode == 0
    assert (
        proc.stdout.count("rejected (over-k)") + proc.stdout.count("rejected (below-threshold)")
        == 2
    )


def test_highlight_keeps_unit_offsets_after_joining_wrapped_lines():
    from records import retrieval as build_retrieval

    from ragsift.cli.explain import highlighted, score_picture
    from ragsift.retrieval.attribution import Attribution, UnitScore
    from ragsift.retrieval.topk import TopK

    text = "Swarming is how colonies\nreproduce. Split the colony\nbefore it swarms.\n\n- item"
    r = build_retrieval(
        TopK(k=1, threshold=0.5, reject_window=1),
        query="q",
        scores=[0.7, 0.2],
        dimensions=3,
        model="m",
        searched=2,
        records=[
            {"rowid": 1, "id": "a#0", "path": "a.md", "text": text},
            {"rowid": 2, "id": "a#1", "path": "a.md", "text": "x"},
        ],
    )
    start = text.index("Split")
    unit = UnitScore(
        text="Split the colony before it swarms.",
        score=0.6,
        share=1.0,
        rank=1,
        start=start,
        end=text.index("swarms.") + len("swarms."),
    )
    shown = highlighted(r.candidates[0], Attribution(id="a#0", units=(unit,), total_units=1))
    assert "colonies reproduce." in shown.plain and "\n\n- item" in shown.plain
    [span] = shown.spans
    assert shown.plain[span.start : span.end] == "Split the colony before it swarms."
    lines = score_picture(r)
    assert "✓" in lines[0] and "┃" in lines[0] and "threshold 0.50" in lines[-1]
