"""A query longer than the model reads (issue 41, item 2): a real pasted traceback (Flask's
``TemplateNotFound`` through its test client, 4,129 characters, paths renamed) and a one-line
question after it. Before, the model read the traceback's first 256 tokens (test-client and
WSGI frames) and the page on application dispatching was admitted; now the dense side is
given the question, the error line and the identifiers, and the page on templates is.
Real model, real index, real subprocesses."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, run_cli

DATA = REPO / "tests" / "data" / "long_query"
QUESTION = "I get this when I open a product page. Why?"


def pasted() -> str:
    return (DATA / "template_not_found.txt").read_text(encoding="utf-8").rstrip("\n") + (
        "\n" + QUESTION + "\n"
    )


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("long_query") / "docs.db"
    proc = run_cli("embed", str(DATA / "docs"), "--index", str(path))
    assert proc.returncode == 0, proc.stderr
    return str(path)


def test_a_pasted_traceback_with_its_question_finds_the_page_on_its_error(index):
    query = pasted()
    assert len(query) > 4000
    proc = run_cli("query", query, "-i", index, "--json")
    assert proc.returncode == 0, proc.stderr
    admitted = [json.loads(line)["path"] for line in proc.stdout.splitlines()]
    assert admitted[0].endswith("docs/templates.md"), admitted
    assert not any(p.endswith("dispatching.md") for p in admitted)  # what the head matched
    # one stderr line says what the dense side was given and what it left out
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "query truncated to 256 model tokens;" in lines[0]
    assert "the dense side was given the last line, 1 error line and" in lines[0]
    assert "lines left out" in lines[0] and "the lexical side reads the query as given" in lines[0]


def test_explain_json_counts_what_the_model_did_not_see(index):
    record = json.loads(run_cli("explain", pasted(), "-i", index, "--json").stdout)
    assert record["query_truncated"] > 1000  # the traceback's frames the model never read
    assert record["candidates"][0]["path"].endswith("docs/templates.md")


def test_the_view_keeps_the_question_and_the_error_line_and_fits():
    from ragsift.embedders import load_embedder
    from ragsift.retrieval.search import dense_view

    emb = load_embedder()
    view = dense_view(pasted(), emb.count_tokens, emb.max_length)
    assert view is not None
    assert QUESTION in view.text.splitlines()
    assert "jinja2.exceptions.TemplateNotFound: product.html" in view.text.splitlines()
    assert "render_template" in view.text  # an identifier of a frame left out
    assert view.kept_tokens <= emb.max_length
    assert emb.count_tokens([view.text])[0] == view.kept_tokens
    assert (view.question, view.error_lines) == (1, 1)
    assert dense_view(QUESTION, emb.count_tokens, emb.max_length) is None  # fits: unchanged


def test_a_long_paragraph_keeps_its_last_sentences():
    from ragsift.embedders import load_embedder
    from ragsift.retrieval.search import dense_view

    emb = load_embedder()
    filler = " ".join(f"Step {i} copies the files and checks them again." for i in range(120))
    text = filler + " How do I make the copy skip files that did not change?"
    view = dense_view(text, emb.count_tokens, emb.max_length)
    assert view is not None and view.kept_tokens <= emb.max_length
    assert "How do I make the copy skip files that did not change?" in view.text


@pytest.mark.parametrize(
    "line",
    [
        "jinja2.exceptions.TemplateNotFound: product.html",
        'Exception in thread "main" java.lang.NullPointerException: name',
        "Caused by: java.io.IOException: closed",
        "TypeError: Cannot read properties of undefined (reading 'map')",
        "error[E0382]: borrow of moved value: `v`",
        "panic: runtime error: index out of range [3] with length 3",
        "src/main.c:3:5: error: expected ';' before '}' token",
        "npm ERR! code ERESOLVE",
    ],
)
def test_error_lines_of_several_tools_are_kept(line):
    from ragsift.embedders import load_embedder
    from ragsift.retrieval.search import dense_view

    emb = load_embedder()
    frames = "\n".join(
        f"    at com.shop.cart.Service.step{i}(Service.java:{i})" for i in range(300)
    )
    view = dense_view(f"{line}\n{frames}\nwhat does this mean?", emb.count_tokens, 256)
    assert view is not None and view.error_lines >= 1
    assert line in view.text.splitlines()
