"""Errors and hints name parameters and actions; each front end words them (issue 39, item 2).

The CLI's lines are pinned as they were when the core spelled them itself (byte for byte);
the API's words (``message``, ``str``) name keyword arguments and calls instead.
"""

from __future__ import annotations

import pickle
import sqlite3

import pytest

from ragsift.cli._common import flag_name
from ragsift.errors import Action, RagsiftError, Worded, Words, api_words, worded


def test_words_name_parameters_settings_and_actions_in_each_front_ends_words():
    text = Words(
        "{k} and {threshold=t}; run `{fix}` (or {include=}); {s}",
        {"t": "0.35", "fix": Action("tune", queries="FILE", save=True), "s": "{not a field}"},
    )
    assert str(text) == (
        "k and threshold=0.35; run `tune(queries=FILE, save=True)` (or include); {not a field}"
    )
    assert text.worded(flag_name) == (
        "-k and --threshold 0.35; run `ragsift tune --queries FILE --save` (or --include); "
        "{not a field}"
    )
    assert flag_name(Action("build", "PATH...", index="x.db", rebuild=True)) == (
        "ragsift embed PATH... --index x.db --rebuild"
    )
    assert flag_name("wait", True) == "--wait" and api_words("wait", True) == "wait=True"
    joined = "before: " + Words("{k}") + "; after"
    assert joined.worded(flag_name) == "before: -k; after" and str(joined) == "before: k; after"
    assert worded("plain", flag_name) == "plain" and worded(None) is None


def test_an_error_keeps_its_words_as_a_string_and_through_a_pickle():
    err = RagsiftError(Words("pass {wait=on}", {"on": True}), 4)
    assert isinstance(err.message, Worded) and err.message == "pass wait=True"
    assert worded(err.message, flag_name) == "pass --wait"  # a list of problems is worded so
    again = pickle.loads(pickle.dumps(err))
    assert again.worded(flag_name) == "pass --wait" and again.exit_code == 4
    plain = RagsiftError("a {brace} kept")
    assert plain.message == plain.worded(flag_name) == "a {brace} kept"


def test_an_index_without_a_floor_is_refused_in_each_front_ends_words():
    from ragsift.retrieval.threshold import ThresholdInForce, no_threshold

    err = no_threshold({"model": "m"}, ThresholdInForce(None, None))
    assert err.worded(flag_name) == (
        "model m has no measured threshold; calibrate it with `ragsift calibrate` (the set "
        "that ships with ragsift), pass --threshold VALUE (or --threshold none), or store one "
        "in the index with `ragsift tune --queries FILE --save`"
    )
    assert err.message == (
        "model m has no measured threshold; calibrate it with `calibrate()` (the set that "
        "ships with ragsift), pass threshold=VALUE (or threshold=none), or store one in the "
        "index with `tune(queries=FILE, save=True)`"
    )


def test_an_ignored_saved_threshold_is_a_notice_the_cli_words():
    from ragsift.retrieval.threshold import resolve_threshold

    floor = resolve_threshold(
        "auto", {"tuned_threshold": {"value": 0.3, "queries": 4}}, required=False
    )
    cli = (
        "the threshold saved in this index (0.3) is a cosine from ragsift < 0.2 and is "
        "ignored: scores are now relevance scores; re-run `ragsift tune --queries FILE --save`"
    )
    assert floor.notice.worded(flag_name) == cli
    # .warning: the notice as text in the API's words, which the CLI can word again
    api = str(floor.notice)
    assert api.endswith("re-run `tune(queries=FILE, save=True)`")
    assert isinstance(floor.warning, Worded) and floor.warning == api
    assert worded(floor.warning, flag_name) == cli


def test_a_corrupt_index_names_the_rebuild_in_each_front_ends_words():
    from ragsift.index.sqlite_file import corrupt

    exc = sqlite3.DatabaseError("file is not a database")
    exc.sqlite_errorcode = 26  # SQLITE_NOTADB
    err = corrupt("x.db", exc)
    assert err.worded(flag_name) == (
        "index x.db is corrupt (file is not a database); it was not modified; build it again "
        "with `ragsift embed PATH... --index INDEX --rebuild`"
    )
    assert err.message.endswith("build it again with `build(PATH..., index=INDEX, rebuild=True)`")


@pytest.mark.parametrize("name", ["include", "exclude"])
def test_a_bad_glob_names_its_option_not_its_values(name):
    from ragsift.sources.discovery import check_arguments

    with pytest.raises(RagsiftError) as refused:
        check_arguments([], **{name: ["[z-a]"]})
    said = "invalid pattern '[z-a]': bad character range z-a"
    assert refused.value.worded(flag_name) == f"--{name}: {said}"
    assert refused.value.message == f"{name}: {said}"
