"""What a new user tripped on in the first hour (issue 41): a question that starts with a dash,
a paged document's hit in ``--format grep``, a query of common words only. Real model on the
fixtures' index, real subprocesses."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.test_query_cli import fixture_index


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


@pytest.mark.parametrize("command", ["query", "explain"])
def test_a_query_that_starts_with_a_dash_is_an_error_that_names_the_form_that_works(index, command):
    proc = run_cli(command, "--show-default", "-i", index, env={"COLUMNS": "200"})
    assert proc.returncode == 2
    assert "No such option: --show-default" in proc.stderr
    assert f"ragsift {command} -- --show-default" in proc.stderr
    # the form it names works: the word is the query
    proc = run_cli(command, "-i", index, "--json", "--", "--show-default")
    assert proc.returncode in (0, 1), proc.stderr
    assert "No such option" not in proc.stderr


def test_a_mistyped_option_stays_an_error_with_its_suggestion(index):
    proc = run_cli("query", "bees", "--treshold", "0.3", "-i", index, env={"COLUMNS": "200"})
    assert proc.returncode == 2
    assert "No such option: --treshold" in proc.stderr and "--threshold" in proc.stderr
    assert proc.stdout == ""  # nothing was searched


def test_a_dash_query_with_spaces_is_quoted_for_the_shell(index):
    proc = run_cli("query", "-i", index, "--foo bar", env={"COLUMNS": "200"})
    assert proc.returncode == 2
    assert "ragsift query -- '--foo bar'" in proc.stderr


def test_grep_line_of_a_paged_document_names_its_page():
    from ragsift.api import Candidate
    from ragsift.cli.render import grep_line

    hit = Candidate(
        id="x", rowid=1, score=0.5, rank=1, admitted=True, reason=None, path="libtasn1.pdf",
        page=3, text="DER encoding of the\nstructure",
    )  # fmt: skip
    assert grep_line(hit) == "libtasn1.pdf:1: p.3 DER encoding of the structure"
    assert grep_line(hit, "../libtasn1.pdf").startswith("../libtasn1.pdf:1: p.3 ")


def test_json_of_a_dash_query_carries_it(index):
    proc = run_cli("explain", "-i", index, "--json", "-t", "none", "--", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["query"] == "--dry-run"


def test_a_query_of_common_words_only_admits_nothing_and_says_why(index):
    proc = run_cli("query", "how do I", "-i", index)
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "only common words (how, do, i)" in lines[0]
    record = json.loads(run_cli("explain", "how do I", "-i", index, "--json").stdout)
    assert record["admitted"] == 0 and record["candidates"]  # the candidates are still shown
    assert {c["reason"] for c in record["candidates"]} == {"common-words-only"}


@pytest.mark.parametrize(
    "query",
    [
        "how do I feed a sourdough starter",  # English with a word of content
        "when do honey bees swarm",
        "--dry-run",  # an identifier
        "蜂蜜",  # CJK
    ],
)
def test_queries_with_a_word_of_content_are_not_caught(index, query):
    record = json.loads(run_cli("explain", "-i", index, "--json", "--", query).stdout)
    assert "common-words-only" not in {c["reason"] for c in record["candidates"]}


def test_with_no_floor_common_words_are_searched_as_asked(index):
    proc = run_cli("query", "how do I", "-i", index, "-t", "none", "--json")
    assert proc.returncode == 0, proc.stderr


def test_common_words_that_a_page_holds_verbatim_admit_nothing(tmp_path):
    """A page made of the same common words scores high on both sides (0.61 before: admitted);
    the words still say nothing about what to find."""
    (tmp_path / "faq.md").write_text("# FAQ\n\nHow do I start? How do I stop? How do I do it?\n")
    (tmp_path / "bees.md").write_text("# Bees\n\nHoney bees swarm when the hive is full.\n")
    index = str(tmp_path / "faq.db")
    assert run_cli("embed", str(tmp_path), "-i", index).returncode == 0
    proc = run_cli("query", "how do I", "-i", index)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert "only common words" in proc.stderr
    proc = run_cli("query", "how do I start", "-i", index, "--json")
    assert proc.returncode == 0, proc.stderr  # a word of content: searched as before


def test_grep_line_of_a_markdown_page_break_keeps_the_file_line():
    from ragsift.api import Candidate
    from ragsift.cli.render import grep_line

    hit = Candidate(
        id="x", rowid=1, score=0.5, rank=1, admitted=True, reason=None, path="guide.md",
        page=2, line_start=40, text="Inspect every week",
    )  # fmt: skip
    assert grep_line(hit) == "guide.md:40: Inspect every week"  # lines are the file's own
