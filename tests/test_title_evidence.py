"""The page title as evidence of the relevance score (issue 41, item 7; ``SCORE_KIND``
relevance-4): each candidate whose units the engine reads also has its page title read
(``IndexReader.page_titles``, the same answers on both backends) and the share of the query's
words found in it, from half of them (``relevance.TITLE_MIN_SHARE``), adds
``relevance.TITLE_WEIGHT`` × that share to the score's logit, in every mode. The fixture
(tests/data/title_evidence) is the Typer case of the docs-site sets in small: "autocompletion"
matches the release notes' text more often than the page about it, whose title names it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragsift import api
from ragsift.index import open_index
from ragsift.retrieval import relevance
from tests.conftest import REPO, run_cli

DOCS = REPO / "tests" / "data" / "title_evidence"
QUERY = "autocompletion"
RIGHT = "docs/options-autocompletion.md"
NOTES = "docs/release-notes.md"
MODES = ("hybrid", "dense", "lexical")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("title")
    shutil.copytree(DOCS, root / "docs")
    return root


@pytest.fixture(scope="module")
def index(folder) -> Path:
    out = folder / "i.db"
    proc = run_cli("embed", "docs", "--index", str(out), "-q", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return out


def _order(index: Path, query: str, mode: str) -> list[tuple[str, float, float | None]]:
    with api.open_index(index) as ix:
        r = ix.query(query, k=5, threshold=0, mode=mode)
    return [(c.path, c.score, c.title_share) for c in r.candidates]


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_the_page_whose_title_names_the_query_comes_first(index, mode, monkeypatch):
    """Without the title term the release notes (more of the word in their text) come first
    and the right page second; with it the right page is first: its title holds the query's
    one word (share 1.0), the notes' title none (0.0)."""
    got = _order(index, QUERY, mode)
    assert [p for p, _, _ in got[:2]] == [RIGHT, NOTES]
    shares = {p: t for p, _, t in got}
    assert shares[RIGHT] == 1.0 and shares[NOTES] == 0.0

    monkeypatch.setattr(relevance, "TITLE_WEIGHT", 0.0)  # the score before relevance-4
    before = _order(index, QUERY, mode)
    assert [p for p, _, _ in before[:2]] == [NOTES, RIGHT]
    # the title term moves only the candidate whose title holds query words
    was = {p: s for p, s, _ in before}
    now = {p: s for p, s, _ in got}
    assert now[RIGHT] > was[RIGHT] and now[NOTES] == pytest.approx(was[NOTES], abs=1e-12)


def test_a_page_without_headings_has_share_zero_and_a_stop_word_query_none(index):
    got = {p: t for p, _, t in _order(index, "configuration file upgrade", "hybrid")}
    assert got["docs/faq.md"] == 0.0  # read, no title
    assert relevance.title_share([], "Anything") == 0.0
    assert relevance.title_share(["options", "cli"], "Autocompletion for CLI Options") == 1.0
    assert relevance.title_share(["文件", "上传"], "文件上传") == 1.0  # CJK: by bigrams


def test_a_title_counts_from_half_the_query_words():
    """``TITLE_MIN_SHARE``: a title holding fewer than half the query's words counts nothing
    (one generic shared word is no evidence), from half on it counts its share."""
    assert relevance.TITLE_MIN_SHARE == 0.5
    dockerfile = ["write", "dockerfile", "python", "web", "app"]  # 1 of 5 in the title
    assert relevance.title_share(dockerfile, "Python virtual environments") == 0.0
    assert relevance.title_share(["python", "web", "app"], "Python web apps") == pytest.approx(
        2 / 3
    )
    assert relevance.title_share(["cli", "rust"], "Autocompletion for CLI Options") == 0.5
    assert relevance.title_share(["cli", "rust", "program"], "Autocompletion for CLI") == 0.0


def test_one_shared_word_of_an_off_topic_question_no_longer_admits_it(index, monkeypatch):
    """An off-topic question sharing one word of four with a page title: counting any share
    (relevance-4 as first committed: ``TITLE_MIN_SHARE`` 0) lifted the page over the default
    floor; from half the words the title counts nothing and nothing is admitted."""
    query = "Shell autocompletion for a Rust program"

    def ask() -> tuple[list[str], float | None, float]:
        with api.open_index(index) as ix:
            r = ix.query(query, k=3, mode="hybrid")
        top = r.candidates[0]
        assert top.path == RIGHT
        return [c.path for c in r.admitted], top.title_share, r.threshold

    admitted, share, floor = ask()
    assert admitted == [] and share == 0.0 and floor == pytest.approx(0.17)
    monkeypatch.setattr(relevance, "TITLE_MIN_SHARE", 0.0)
    admitted, share, _ = ask()
    assert admitted == [RIGHT] and share == 0.25


@pytest.fixture(scope="module")
def lance_index(folder) -> Path:
    pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")
    out = folder / "i.lance"
    proc = run_cli("embed", "docs", "--index", str(out), "-q", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return out


def test_sqlite_and_lance_read_the_same_titles_and_give_the_same_order(index, lance_index):
    titles = []
    for path in (index, lance_index):
        with open_index(str(path)) as b:
            b.load()
            ids = b.rowids_of_paths(b.paths())
            by_id = {r.rowid: r.id for r in b.chunk_records(ids)}
            got = b.page_titles([*ids, 10**9])  # an unknown rowid is left out
            titles.append({by_id[r]: t for r, t in got.items()})
            assert b.page_titles([]) == {}
    assert titles[0] == titles[1]
    assert titles[0][RIGHT + "#0"] == "Autocompletion for CLI Options"
    assert not any(k.startswith("docs/faq.md#") for k in titles[0])  # no headings: left out
    for mode in MODES:
        for query in (QUERY, "install the completion script", "configuration file"):
            a, b = _order(index, query, mode), _order(lance_index, query, mode)
            assert [(p, t) for p, _, t in a] == [(p, t) for p, _, t in b], (mode, query)
            assert [s for _, s, _ in a] == pytest.approx([s for _, s, _ in b], abs=1e-6)


def test_a_calibration_stored_under_relevance_3_is_still_applied(index, tmp_path):
    """relevance-4 adds a term outside the calibrated ``Model``s: an ``align-1`` calibration
    stored under relevance-3 is what relevance-4 fits (the same models and thresholds), so it
    is applied; one of an earlier score, or of another method, is not."""
    copy = tmp_path / "cal.db"
    shutil.copy(index, copy)
    with open_index(str(copy)) as b:
        fingerprint = b.settings()["model_fingerprint"]
    models = {
        m: relevance.model_record(relevance.Model(v.bias - 0.5, v.weights))
        for m, v in relevance.MODELS.items()
    }
    cal = {
        "fingerprint": fingerprint,
        "score": "relevance-3",
        "method": "align-1",
        "models": models,
        "thresholds": {"hybrid": 0.31, "dense": 0.32, "lexical": 0.33},
    }
    assert relevance.SCORE_KIND == "relevance-4"
    for stored, applied in (
        (cal, True),
        ({**cal, "score": relevance.SCORE_KIND}, True),
        ({**cal, "score": "relevance-2"}, False),
        ({**cal, "method": "fit-all-1"}, False),
        ({k: v for k, v in cal.items() if k != "method"}, False),
    ):
        with open_index(str(copy), "w") as b:
            b.set_settings(**{relevance.CALIBRATION: stored})
        with api.open_index(copy) as ix:
            floor = ix.threshold(required=False)
            shipped = relevance.models_for(ix.settings) is relevance.MODELS
            assert (floor.origin == "calibrated", not shipped) == (applied, applied), stored
            if applied:
                assert floor.value == 0.31
                assert relevance.models_for(ix.settings)["hybrid"].bias == pytest.approx(
                    relevance.MODELS["hybrid"].bias - 0.5
                )


def test_title_share_in_query_and_explain_json_and_the_explain_table(index):
    proc = run_cli("query", QUERY, "-i", str(index), "--json", "--threshold", "0")
    assert proc.returncode == 0, proc.stderr
    hits = [json.loads(line) for line in proc.stdout.splitlines()]
    assert hits[0]["path"] == RIGHT and hits[0]["title_share"] == 1.0
    assert {h["path"]: h["title_share"] for h in hits}[NOTES] == 0.0
    # every field a hit had before is still there
    for field in ("score", "dense_score", "lexical_share", "unit_score", "headings", "rank"):
        assert field in hits[0]

    proc = run_cli("explain", QUERY, "-i", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    cands = json.loads(proc.stdout)["candidates"]
    assert cands[0]["title_share"] == 1.0

    for columns, shown in (("80", "title 1/1"), ("120", "title")):
        text = run_cli("explain", QUERY, "-i", str(index), env={"COLUMNS": columns}).stdout
        first = next(line for line in text.splitlines() if line.lstrip().startswith("1 "))
        assert shown in (first if columns == "80" else text), text
        assert all(len(line) <= int(columns) for line in text.splitlines())
    # the wide layout's title column: "1/1" on the right page's row
    text = run_cli("explain", QUERY, "-i", str(index), env={"COLUMNS": "120"}).stdout
    first = next(line for line in text.splitlines() if line.lstrip().startswith("1 "))
    assert "1/1" in first
