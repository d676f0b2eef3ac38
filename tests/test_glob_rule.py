"""One glob dialect (issue 39, item 4): ``--path``/``ls``/``rm`` read a glob as
``--include``/``--exclude`` do (``sources.globs.glob_regex``, ``*`` crossing ``/``), where they
used ``fnmatch`` beside it: the check (``check_globs``) and the match now read the same
dialect. Where ``fnmatch`` and the shared dialect differ, only ``**`` does: ``**/`` also
matches zero folders, as it does for ``--include``."""

from __future__ import annotations

import fnmatch

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.retrieval.engine import path_matches
from ragsift.sources import globs

paths = st.text("ab/.", min_size=1, max_size=8)
patterns = st.text("ab/.*?", min_size=1, max_size=6).filter(lambda g: "**" not in g)


@settings(max_examples=300, deadline=None)
@given(paths, patterns)
def test_without_double_stars_the_rule_is_fnmatch_s(path, pattern):
    """What ``--path`` matched before (``fnmatch``) it matches now, and nothing more."""
    assert path_matches(path, [pattern]) == (path == pattern or fnmatch.fnmatchcase(path, pattern))


def test_double_star_slash_also_matches_zero_folders_as_include_does():
    for path, pattern in [
        ("x.md", "**/x.md"),
        ("a/b.md", "a/**/b.md"),
        ("a/c/d/b.md", "a/**/b.md"),
    ]:
        assert path_matches(path, [pattern]), (path, pattern)
        assert globs.path_matches(pattern, path), (path, pattern)  # --include, the same verdict
    # what fnmatch said for the first two (a top-level file escaped `**/*.md`)
    assert not fnmatch.fnmatchcase("x.md", "**/x.md")
    assert not fnmatch.fnmatchcase("a/b.md", "a/**/b.md")
    assert not path_matches("b/x.md", ["a/**/x.md"])
