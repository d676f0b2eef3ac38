"""Issue 13: the fast "can this markdown have a heading?" scan (``sources/markdown.py``)
answers exactly what the original one-regex scan of ``"\\n" + text`` answered."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.sources.markdown import HEADING_LINE, may_have_headings

_PIECES = [
    "#",
    "##",
    " ",
    "   ",
    "    ",
    "\t",
    "=",
    "==",
    "-",
    "---",
    "\n",
    "\r",
    "\r\n",
    "a",
    "x y",
    "# t",
    "* ",
    "+",
    "`",
    ">",
    "\u2028",
    "\x0b",
    "\x0c",
]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
def test_the_fast_scan_answers_as_the_original(text):
    assert may_have_headings(text) == (HEADING_LINE.search("\n" + text) is not None)


def test_the_fast_scan_on_examples():
    for text, want in [
        ("", False),
        ("# a", True),
        ("x\n# a", True),
        ("x\r# a", True),
        ("x\r\n  # a", True),
        ("x\n    # code", False),
        ("a\n===", True),
        ("a\r---\r", True),
        ("a\n--- x", False),
        ("a # b\nc", False),
        ("-", True),
        ("a\n==\t \nb", True),
    ]:
        assert may_have_headings(text) is want, text
