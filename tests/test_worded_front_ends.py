"""Hints, notices and the model-mismatch refusal in each front end's words (issue 39, item 2):
the core names parameters and commands (``ragsift.errors.Words``), the CLI words them as the
running command's flags (``cli._common.flag_name``: the lines pinned here byte for byte as
the core used to spell them), the API and the MCP server as arguments."""

from __future__ import annotations

import pytest
import typer
from typer._click.core import Context  # typer vendors its click

from ragsift.cli import app
from ragsift.cli._common import flag_name
from ragsift.errors import Action, RagsiftError, api_words
from tests.test_explain_layout import _record

MISMATCH = (
    "the index was built with model m1 (A); this run uses m2 (B) (index built with "
    "--pooling cls --no-normalize; this run: {now}). Vectors of different models or embedder "
    "options cannot be mixed: pass --rebuild to re-embed everything, or use the index's "
    "model and options"
)
UNDER_FLOOR = (
    "nothing cleared the threshold 0.17: best candidate 0.120 at doc.md:1; `{threshold}` would "
    "admit 1"
)
MORE_K = "1 candidate past rank 1 clear the floor; `{k}` would admit 1 more above the threshold"


def _in_command(name: str) -> Context:
    """A click context of the ``ragsift`` command ``name``, as while it runs."""
    return Context(typer.main.get_command(app).commands[name])


def test_a_switch_set_to_false_is_worded_as_its_negative_spelling():
    with _in_command("embed"):  # embed's own switches: --no-normalize, --no-prune
        assert flag_name("normalize", False) == "--no-normalize"
        assert flag_name("prune", False) == "--no-prune"
        assert flag_name("pooling", "cls") == "--pooling cls"
    # an option with both spellings (--color/--no-color): its secondary one
    other = typer.Typer()

    @other.command()
    def show(color: bool = typer.Option(True, "--color/--no-color")) -> None:
        """(a command with a two-way switch)"""

    with Context(typer.main.get_command(other)):
        assert flag_name("color", False) == "--no-color" and flag_name("color") == "--color"
    # outside a command, and in an action
    assert flag_name("normalize", False) == "--no-normalize"
    assert flag_name(Action("build", "PATH...", normalize=False)) == (
        "ragsift embed PATH... --no-normalize"
    )
    assert api_words("normalize", False) == "normalize=False"


@pytest.mark.parametrize(
    ("options", "now", "api_now"),
    [
        (
            {"pooling": "mean", "query_prefix": "q: "},
            "--pooling mean --query-prefix 'q: '",
            "pooling=mean query_prefix='q: '",
        ),
        (None, "no embedder options", "no embedder options"),
    ],
)
def test_the_model_mismatch_names_embedder_options_in_each_front_ends_words(options, now, api_now):
    from ragsift.embedders.binding import bind
    from ragsift.embedders.evidence import EVIDENCE_KIND

    class Embedder:
        fingerprint, name = "B", "m2"

    settings = {
        "model": "m1",
        "model_fingerprint": "A",
        "evidence": EVIDENCE_KIND,
        "embedder_options": {"pooling": "cls", "normalize": False},
    }
    with pytest.raises(RagsiftError) as refused:
        bind(settings, Embedder(), "default", options, "the index")
    with _in_command("embed"):
        assert refused.value.worded(flag_name) == MISMATCH.format(now=now)
    assert refused.value.message == (
        "the index was built with model m1 (A); this run uses m2 (B) (index built with "
        f"pooling=cls normalize=False; this run: {api_now}). Vectors of different models or "
        "embedder options cannot be mixed: pass rebuild to re-embed everything, or use the "
        "index's model and options"
    )


def _near_miss():
    """A retrieval whose best candidate (0.12) is under the floor (0.17) but plausible, with
    one candidate past k that clears it: every hint kind but the path's."""
    from ragsift.retrieval.threshold import MEASURED, ThresholdInForce

    return _record([0.12, 0.03, 0.5], k=1, threshold=0.17), ThresholdInForce(0.17, MEASURED)


def test_records_word_hints_as_their_front_end_says():
    from ragsift.retrieval.records import ExplainRecord, SearchRecord

    r, floor = _near_miss()
    tune_note = "; or tune a threshold on your own questions and keep it: `{tune}`"
    # the CLI (explain --json, explain's text): its flags and its command, as before
    with _in_command("explain"):
        cli = ExplainRecord.of(r, floor, setting=flag_name, commands=True)
    first = UNDER_FLOOR.format(threshold="--threshold 0.12")
    assert cli.hint == first
    assert cli.hints == (
        first + tune_note.format(tune="ragsift tune --save"),
        MORE_K.format(k="-k 3"),
    )
    # the API (Index.explain, SearchRecord.of with no words given): arguments and calls
    first = UNDER_FLOOR.format(threshold="threshold=0.12")
    api = (first + tune_note.format(tune="tune(save=True)"), MORE_K.format(k="k=3"))
    assert SearchRecord.of(r, floor).hints == api
    assert ExplainRecord.of(r, floor).hints == api

    # the MCP server (its own words for its tools' arguments): no command to run, as before
    def tool_words(name, value=None):
        return name if value is None else f"{name}={value}"

    mcp = (first, MORE_K.format(k="k=3"))
    assert SearchRecord.of(r, floor, None, tool_words).hints == mcp
    assert ExplainRecord.of(r, floor, setting=tool_words).hints == mcp
    # ``commands`` said outright wins over the default
    assert SearchRecord.of(r, floor, commands=False).hints == mcp
    assert SearchRecord.of(r, floor, None, tool_words, commands=True).hints == api


def test_query_words_its_hint_and_the_ignored_threshold_as_flags(tmp_path, tmp_path_factory):
    """``query``'s stderr: the nothing-admitted hint and the ignored saved threshold, each in
    the CLI's words (the flag, the command line), never the API's."""
    import shutil

    from ragsift.index import open_index
    from tests.conftest import run_cli
    from tests.test_query_cli import fixture_index

    index = tmp_path / "idx.db"
    shutil.copy(fixture_index(tmp_path_factory), index)
    with open_index(str(index), "w") as store:
        store.set_settings(tuned_threshold={"value": 0.3, "queries": 4})
    proc = run_cli("query", "when do bees swarm", "-i", str(index), "-t", "0.99")
    assert proc.returncode == 1, proc.stderr
    assert "`--threshold 0." in proc.stderr and "`ragsift tune --save`" in proc.stderr
    assert "threshold=" not in proc.stderr and "tune(" not in proc.stderr
    proc = run_cli("query", "when do bees swarm", "-i", str(index))
    notice = (
        "the threshold saved in this index (0.3) is a cosine from ragsift < 0.2 and is "
        "ignored: scores are now relevance scores; re-run `ragsift tune --queries FILE --save`"
    )
    assert "ragsift: " + notice in proc.stderr.splitlines(), proc.stderr


def test_chunk_and_embed_word_an_ignore_reason_as_their_flag(tmp_path):
    """Discovery's reason for a link out of the folder names the parameter (the API's key:
    ``follow_links``); both commands' summary lines say ``--follow-links`` as before."""
    from tests.conftest import run_cli

    (tmp_path / "outside.md").write_text("# Outside\n\nNot in the folder.\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# Page\n\nBees swarm in spring.\n")
    (docs / "out.md").symlink_to(tmp_path / "outside.md")
    said = "1 ignored: symlink out of the folder (see --follow-links)"
    chunked = run_cli("chunk", str(docs))
    assert chunked.returncode == 0 and said in chunked.stderr, chunked.stderr
    embedded = run_cli("embed", str(docs), "--index", str(tmp_path / "idx.db"))
    assert embedded.returncode == 0 and said in embedded.stderr, embedded.stderr
