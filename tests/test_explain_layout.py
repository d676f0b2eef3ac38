"""How ``explain`` and ``query`` read at 80 and 120 columns (issue 10 §2), on the index of
``fixtures/`` built by ``ragsift embed`` with the real model, run as subprocesses.

At both widths ``explain`` shows one block per candidate: it must fit (no line wider than the
terminal, at most 60 lines for k 3 and a reject window of 10) and still name every candidate
with its rank, score, margin/gap, reason (the heading of its group) and path:line. From 100
columns the numbers are labelled once, in a column header. (The properties on messier paths
and text, at both widths: tests/test_terminal_widths.py.)"""

from __future__ import annotations

import json
import math
import re

import pytest
from rich.cells import cell_len

from tests.conftest import run_cli
from tests.test_query_cli import BEES, fixture_index

NARROW = {"COLUMNS": "80"}
WIDE = {"COLUMNS": "120"}
BRACKETS = (
    "See [red] and [pytest](https://docs.pytest.org) failures.\n"
    "Write [bold]care[/bold] into the notes.\n"
)


@pytest.fixture(scope="session")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


@pytest.fixture(scope="session")
def bracket_index(tmp_path_factory) -> tuple[str, str]:
    """A one-document index whose text looks like rich markup."""
    folder = tmp_path_factory.mktemp("brackets")
    (folder / "testing.md").write_text("# Testing\n\n" + BRACKETS, encoding="utf-8")
    db = str(tmp_path_factory.mktemp("brackets-db") / "b.db")
    proc = run_cli("embed", str(folder), "--index", db)
    assert proc.returncode == 0, proc.stderr
    return db, str(folder)


def explain(index: str, query: str, env: dict, *args: str):
    return run_cli(
        "explain", query, "-i", index, "-k", "3", "--reject-window", "10", *args, env=env
    )


def record(index: str, query: str, *args: str) -> dict:
    proc = explain(index, query, NARROW, "--json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


HEAD = re.compile(r"^\s*(\d+) (\d\.\d{3})\s+([+−]\d\.\d{2}) ", re.MULTILINE)


def reasons_by_rank(stdout: str) -> dict[int, str]:
    """Each head line's rank with the section or group heading above it: "admitted", or the
    rejection reason that heads its run of rejected candidates."""
    out, heading = {}, None
    for line in stdout.splitlines():
        if line.startswith("admitted ("):
            heading = "admitted"
        group = re.match(r"^  (below-threshold|over-k|over-char-budget)\b", line)
        if group:
            heading = group.group(1)
        head = HEAD.match(line)
        if head:
            out[int(head.group(1))] = heading
    return out


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_explain_fits_80_columns_and_names_every_candidate(index, mode):
    proc = explain(index, BEES, NARROW, "--mode", mode)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert len(lines) <= 60, proc.stdout  # was 286 lines with the tables
    assert "┏" not in proc.stdout  # no table squeezed into 80 columns
    rec = record(index, BEES, "--mode", mode)
    assert len(rec["candidates"]) == 13
    reasons = reasons_by_rank(proc.stdout)
    for c in rec["candidates"]:
        # one head line per candidate: rank, score, margin or gap, under its reason
        margin = c["score"] - rec["threshold"]
        sign = "+" if margin >= 0 else "−"
        head = re.compile(
            rf"^\s*{c['rank']} {c['score']:.3f}\s+{re.escape(sign)}"
            rf"{abs(margin):.2f} ",
            re.MULTILINE,
        )
        assert head.search(proc.stdout), (c["rank"], proc.stdout)
        assert reasons[c["rank"]] == ("admitted" if c["admitted"] else c["reason"])
        location = f"{c['path']}:{c['line_start']}"
        assert location in proc.stdout
    for a in rec["attributions"]:
        for u in a["units"]:
            assert f"unit {u['score']:.3f} share" in proc.stdout  # the closest units, labelled


def test_wide_layout_labels_columns_once_and_shows_everything(index):
    proc = explain(index, BEES, WIDE)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert max(cell_len(line) for line in out.splitlines()) <= 120
    assert len(out.splitlines()) <= 60, out
    assert "score picture" in out and "closest units" in out
    header = next(line for line in out.splitlines() if "margin" in line)
    for name in ("score", "margin", "0" + "─" * 18 + "1", "unit · cos", "lexical", "via"):
        assert name in header, header
    rec = record(index, BEES)
    reasons = reasons_by_rank(out)
    for c in rec["candidates"]:
        assert re.search(rf"^\s*{c['rank']} {c['score']:.3f} ", out, re.MULTILINE)
        assert reasons[c["rank"]] == ("admitted" if c["admitted"] else c["reason"])
    assert "over-k (rank > k 3)" in out or not any(
        c["reason"] == "over-k" for c in rec["candidates"]
    )


def test_over_k_says_the_rule_and_the_hint_what_k_would_admit(index):
    # a floor just under the 5th candidate's score: ranks 4 and 5 clear it and k 3 stops them
    fifth = record(index, BEES, "--threshold", "none")["candidates"][4]["score"]
    floor = f"{math.floor(fifth * 1000) / 1000:.3f}"
    rec = record(index, BEES, "--threshold", floor)
    over = [c for c in rec["candidates"] if c["reason"] == "over-k"]
    assert over, "the fixture query should leave candidates past k above the floor"
    assert {c["reason"] for c in rec["candidates"]} <= {None, "over-k", "below-threshold"}
    proc = explain(index, BEES, NARROW, "--threshold", floor)
    assert "  over-k (rank > k 3)" in proc.stdout.splitlines()
    reasons = reasons_by_rank(proc.stdout)
    for c in over:
        assert reasons[c["rank"]] == "over-k"
    k = max(c["rank"] for c in over)
    hint = f"`-k {k}` would admit {len(over)} more above the threshold"
    assert hint in " ".join(proc.stdout.split())
    assert any(hint in h for h in rec["hints"])
    # the threshold-independent JSON reason stays the bare name (an API)
    assert all(c["reason"] == "over-k" for c in over)


def test_empty_result_names_the_best_candidate_and_tune_save(index):
    proc = run_cli("query", "required option", "-i", index, "--threshold", "0.9")
    assert proc.returncode == 1 and proc.stdout == ""
    rec = json.loads(
        run_cli("explain", "required option", "-i", index, "--threshold", "0.9", "--json").stdout
    )
    best = max(rec["candidates"][:3], key=lambda c: c["score"])  # the best that k admits
    assert "nothing cleared the threshold 0.90" in proc.stderr
    assert f"{best['path']}:{best['line_start']}" in proc.stderr
    assert f"{best['score']:.3f}" in proc.stderr
    assert "tune --save" in proc.stderr and "--threshold 0." in proc.stderr
    proc = explain(index, "required option", NARROW, "--threshold", "0.9")
    assert proc.returncode == 1
    assert "tune --save" in proc.stdout and f"{best['score']:.3f}" in proc.stdout


def test_path_without_match_shows_the_stored_paths(index):
    proc = run_cli("query", BEES, "-i", index, "--path", "beekeeping/*")
    assert proc.returncode == 1
    assert "no document path matches --path 'beekeeping/*'" in proc.stderr
    assert "stored paths look like fixtures/" in proc.stderr
    assert "--path '*beekeeping/*' matches 1" in proc.stderr
    proc = explain(index, BEES, NARROW, "--path", "beekeeping/*")
    assert "stored paths look like fixtures/" in " ".join(proc.stdout.split())


def test_long_query_warns_and_explain_marks_it(index):
    long_query = "when do honey bees swarm and how do I stop it " * 60
    proc = run_cli("query", long_query, "-i", index)
    warning = re.search(
        r"ragsift: warning: query truncated to (\d+) model tokens; (\d+) tokens "
        r"ignored",
        proc.stderr,
    )
    assert warning, proc.stderr
    assert int(warning.group(1)) == 256 and int(warning.group(2)) > 300
    proc = explain(index, long_query, NARROW)
    assert warning.group(0).removeprefix("ragsift: warning: ") in proc.stderr
    assert "⚠ query truncated to 256 model tokens" in proc.stdout
    rec = record(index, long_query)
    assert rec["query_truncated"] == int(warning.group(2))
    assert record(index, BEES)["query_truncated"] == 0
    proc = run_cli("query", BEES, "-i", index)
    assert "truncated" not in proc.stderr


def test_query_format_grep_one_line_per_hit(index):
    hits = [
        json.loads(line)
        for line in run_cli("query", BEES, "-i", index, "--json").stdout.splitlines()
    ]
    proc = run_cli("query", BEES, "-i", index, "--format", "grep")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(hits) >= 1
    for line, hit in zip(lines, hits):
        assert line.startswith(f"{hit['path']}:{hit['line_start']}: ")
        assert (
            line[len(f"{hit['path']}:{hit['line_start']}: ") :][:30]
            == " ".join(hit["text"].split())[:30]
        )
    same = run_cli("query", BEES, "-i", index, "--format", "json")
    assert same.stdout == run_cli("query", BEES, "-i", index, "--json").stdout
    bad = run_cli("query", BEES, "-i", index, "--format", "table")
    assert bad.returncode == 2 and "--format must be text, grep or json" in bad.stderr
    nothing = run_cli("query", BEES, "-i", index, "--format", "grep", "--threshold", "0.99")
    assert nothing.returncode == 1 and nothing.stdout == ""


def test_query_text_fits_80_columns(index):
    proc = run_cli("query", BEES, "-i", index, env=NARROW)
    assert proc.returncode == 0
    assert max(cell_len(line) for line in proc.stdout.splitlines()) <= 80
    assert re.match(r"^0\.\d{3}  fixtures/\S+:\d+", proc.stdout)


@pytest.mark.parametrize("env", [NARROW, WIDE])
def test_bracketed_text_is_shown_literally(bracket_index, env):
    db, folder = bracket_index
    for args in (
        ("query", "pytest failures", "-i", db, "--threshold", "none"),
        ("explain", "pytest failures", "-i", db, "--threshold", "none"),
    ):
        proc = run_cli(*args, env=env)
        assert proc.returncode == 0, proc.stderr
        flat = " ".join(proc.stdout.replace("│", " ").split())
        assert "[pytest](https://docs.pytest.org)" in flat, proc.stdout
        assert "[red]" in flat and "[bold]care[/bold]" in flat
    proc = run_cli("chunk", folder, "--format", "table", env={"COLUMNS": "200"})
    assert "[pytest](https://docs.pytest.org)" in proc.stdout
    assert "[red]" in proc.stdout


# -- the words, on records built without an index (pure arithmetic, no model) ----------------


def _record(scores, k=3, threshold=0.4, max_chars=None, texts=None):
    from ragsift.retrieval.topk import TopK
    from tests.records import retrieval

    recs = [
        {
            "id": f"doc.md#{i}",
            "path": "doc.md",
            "line_start": 10 * i + 1,
            "text": (texts or {}).get(i, f"chunk {i} [red] text"),
        }
        for i in range(len(scores))
    ]
    return retrieval(
        TopK(k=k, threshold=threshold, reject_window=len(scores), max_chars=max_chars),
        scores=scores,
        records=recs,
        dimensions=3,
        model="m",
        searched=len(scores),
    )


def test_reason_labels_say_the_rule():
    from ragsift.cli.render import reason_label

    r = _record([0.9, 0.8, 0.7, 0.6, 0.3], k=2)
    assert [reason_label(c, r) for c in r.candidates] == [
        "admitted",
        "admitted",
        "over-k (rank 3 > k 2)",
        "over-k (rank 4 > k 2)",
        "below-threshold",
    ]
    budget = _record([0.9, 0.8], k=2, max_chars=25, texts={0: "x" * 20, 1: "y" * 20})
    assert reason_label(budget.candidates[1], budget) == "over-char-budget (--max-chars 25)"


def test_k_hint_counts_what_a_larger_k_admits():
    from ragsift.cli._common import flag_name
    from ragsift.retrieval.hints import k_hint

    r = _record([0.9, 0.8, 0.7, 0.6, 0.3], k=2)
    # the hint names the parameter; the CLI says -k, the API and MCP k=
    assert "`-k 4` would admit 2 more above the threshold" in k_hint(r).worded(flag_name)
    assert "`k=4` would admit 2 more above the threshold" in str(k_hint(r))
    assert k_hint(_record([0.9, 0.8, 0.3, 0.2], k=2)) is None  # nothing past k clears the floor
    # an over-k candidate scoring above an admitted hit (a fused order) is named
    fused = _record([0.5, 0.45, 0.7], k=2)
    assert "rank 3 scores 0.700, more than admitted hits" in str(k_hint(fused))


def test_path_hint_shows_the_shape_of_stored_paths():
    from ragsift.cli._common import flag_name
    from ragsift.retrieval.hints import path_hint

    paths = [f"docs/guide/{n}.md" for n in "abcdefgh"]
    text = path_hint("guide/*", paths).worded(flag_name)
    assert "stored paths look like docs/guide/a.md, docs/guide/c.md, docs/guide/e.md" in text
    assert "(8 documents)" in text and "--path '*guide/*' matches 8" in text
    assert "; path '*guide/*' matches 8" in str(path_hint("guide/*", paths))  # the API's words
    assert "matches" not in str(path_hint("nothing*", paths)).split(";")[-1]
    assert "holds no documents" in str(path_hint("x", []))
    # a path with braces is text, not a template field
    assert "'{a}*'" in str(path_hint("{a}*", ["{a}b.md"]))


def test_grep_line_is_one_line_and_literal():
    from ragsift.cli.render import GREP_PREVIEW, grep_line

    r = _record([0.9], k=1, texts={0: "line one [red]\n\n  line two " + "z" * 400})
    line = grep_line(r.candidates[0])
    assert line.startswith("doc.md:1: line one [red] line two ")
    assert "\n" not in line and len(line) <= len("doc.md:1: ") + GREP_PREVIEW


def test_chunk_table_under_100_columns_is_one_block_per_chunk(tmp_path):
    """`chunk --format table` at 80 columns: every chunk's full id with its lines and tokens on
    one line, its heading trail and text start below, nothing wider than the terminal, control
    characters visible and brackets literal; 120 columns keeps the table."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text(
        "# Guide\n\n## Setup\n\nRun [red]pytest[/red] with care; " + "words " * 60 + "\n",
        encoding="utf-8",
    )
    (folder / "bell\x07name.txt").write_text("a note \x1b[31mred\x1b[0m here\n", encoding="utf-8")
    want = [json.loads(line)["id"] for line in run_cli("chunk", str(folder)).stdout.splitlines()]
    proc = run_cli("chunk", str(folder), "--format", "table", env=NARROW)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert "┃" not in proc.stdout  # no table
    heads = [line for line in lines if re.search(r"  lines \d+-\d+ · \d+ tokens · lvl \d+$", line)]
    assert len(heads) == len(want)
    for cid, head in zip(want, heads):  # in output order; a long id keeps its end
        shown = cid.replace("\x07", "␇")
        name = head.split("  lines ")[0]
        assert name == shown or (name.startswith("…") and shown.endswith(name[1:])), head
        assert shown.endswith(("guide.md#0", "␇name.txt#0"))
    assert "  Guide" in lines  # the heading trail
    assert any(
        line.startswith("  # Guide ## Setup Run [red]pytest[/red] with care; words")
        and line.endswith("…")
        for line in lines
    )
    assert "  a note ␛[31mred␛[0m here" in lines
    wide = run_cli("chunk", str(folder), "--format", "table", env=WIDE)
    assert "┃" in wide.stdout


def test_a_hint_proposes_only_a_plausible_threshold():
    """Issue 41 item 6: for a plainly off-topic question the hint proposed `--threshold 0.03`,
    which admits noise. A threshold is proposed only for a best candidate scoring at least
    PLAUSIBLE_SHARE of the measured default (0.17 here: 0.085); under it, none, and no
    "tune --save" either."""
    from ragsift.cli._common import flag_name
    from ragsift.retrieval.hints import hints
    from ragsift.retrieval.topk import PLAUSIBLE_SHARE, outcome_hint, plausible_floor

    assert PLAUSIBLE_SHARE == 0.5 and plausible_floor(0.17, "dense") == pytest.approx(0.085)
    assert plausible_floor(0.9, "dense") == pytest.approx(0.085)  # the default, if lower
    assert plausible_floor(0.1, "dense") == pytest.approx(0.05)  # the threshold, if lower
    off_topic = _record([0.042, 0.03, 0.02], threshold=0.17)
    hint = outcome_hint(off_topic, flag_name)
    assert "best candidate 0.042" in hint and "no lower threshold is proposed" in hint
    said = " ".join(hints(off_topic, hint, setting=flag_name))
    assert "--threshold" not in said and "tune" not in said
    near = _record([0.12, 0.03], threshold=0.17)
    assert "`--threshold 0.12` would admit 1" in outcome_hint(near, flag_name)
    assert "tune --save" in hints(near, outcome_hint(near, flag_name), setting=flag_name)[0]
    # the API's words by default; the lasting fix is named only for a reader that can run it
    assert "`tune(save=True)`" in hints(near, outcome_hint(near))[0]
    assert "tune" not in hints(near, outcome_hint(near), commands=False)[0]


def test_an_off_topic_query_gets_no_threshold_proposal_on_the_cli(index):
    proc = run_cli("query", "What is the capital of France?", "-i", index)
    assert proc.returncode == 1
    assert "no lower threshold is proposed" in proc.stderr, proc.stderr
    assert "--threshold" not in proc.stderr and "tune --save" not in proc.stderr
