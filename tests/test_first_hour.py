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
