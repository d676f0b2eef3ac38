"""Pathological inputs take work linear in their size (issue 23, "super-linear time").

No wall-clock timing (CI is a busy machine): each test counts the operation that was, or
could become, super-linear and checks that doubling the input at most about doubles it.

- Deep folders: walking ``depth`` nested folders called ``os.path.realpath`` on every entry,
  one ``lstat`` per path component, so ``lstat`` calls grew with the square of the depth
  (600 levels: 363k lstats, 9 s). Now a real path is the folder's joined with the name
  (only a symlink is resolved), and the ancestors' real paths are one set along the walk.
- One line without a newline, prose-like or a single run of letters: the characters the
  cl100k encoder is given stay a constant multiple of the text.
- One giant markdown table (the ``markdown`` strategy renders it): markdown-it inline
  parses only cells that can hold markup, and the rendered text is the same as with every
  cell parsed.
"""

from __future__ import annotations

import os
import posixpath
import random
from itertools import pairwise
from pathlib import Path

import pytest

from ragsift.sources import discovery, walk
from ragsift.sources import markdown as md_source
from ragsift.sources.markdown import parse_markdown, render_markdown_tables


def _nested(root: Path, depth: int) -> Path:
    root.mkdir()
    p = root
    for i in range(depth):
        p = p / "d"
        p.mkdir()
        (p / "a.md").write_text(f"# Level {i}\n\ntext\n", encoding="utf-8")
    return root


def _count_fs_calls(monkeypatch: pytest.MonkeyPatch, root: Path) -> tuple[int, list[str]]:
    calls = 0
    real_lstat, real_stat, real_scandir = os.lstat, os.stat, os.scandir

    def counting(fn):
        def wrapper(*args, **kwargs):
            nonlocal calls
            calls += 1
            return fn(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as m:
        m.setattr(os, "lstat", counting(real_lstat))
        m.setattr(os, "stat", counting(real_stat))
        m.setattr(os, "scandir", counting(real_scandir))
        w = walk([str(root)])
    return calls, [f.relpath for f in w.files]


def test_walking_nested_folders_is_linear_in_depth(tmp_path, monkeypatch):
    small = _nested(tmp_path / "small", 40)
    large = _nested(tmp_path / "large", 80)
    c_small, files_small = _count_fs_calls(monkeypatch, small)
    c_large, files_large = _count_fs_calls(monkeypatch, large)
    assert len(files_small) == 40 and len(files_large) == 80
    # on main before the fix: 40 levels ~3,400 calls, 80 levels ~13,000 (x3.9)
    assert c_large <= 2.2 * c_small, (c_small, c_large)
    assert c_large <= 10 * 80, c_large  # a few calls per folder, whatever its depth


def test_walk_resolves_only_symlinks(tmp_path, monkeypatch):
    """``os.path.realpath`` runs for symlinks only; the walk still finds what it found."""
    root = _nested(tmp_path / "t", 30)
    deep = root / "/".join(["d"] * 30)
    (deep / "up").symlink_to(root / "d")  # back into its own ancestry: a loop
    (deep / "side.md").symlink_to(root / "d" / "a.md")  # the same file again
    resolved: list[str] = []
    real = posixpath.realpath

    def counting(path, *args, **kwargs):
        resolved.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(posixpath, "realpath", counting)
    w = walk([str(root)])
    assert len(w.files) == 30
    assert [s.reason for s in w.skipped] == ["symlink loop (not followed)"]
    # the root, the two links, and the file named as seen-before by its real path
    assert len(resolved) <= 4, resolved


def test_ancestry_is_one_set_along_the_walk(tmp_path):
    """A link to an ancestor is a loop at any depth; a link to a finished sibling is a
    second sighting (not a loop) and is not walked again."""
    root = tmp_path / "r"
    (root / "a" / "x" / "y").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "x" / "y" / "n.md").write_text("n\n", encoding="utf-8")
    (root / "b" / "to_a").symlink_to(root / "a")  # a was walked before b: seen, no loop
    (root / "a" / "x" / "y" / "to_x").symlink_to(root / "a" / "x")  # ancestor: loop
    w = walk([str(root)])
    assert [f.relpath for f in w.files] == [f"{root}/a/x/y/n.md".replace(os.sep, "/")]
    assert [s.path.rsplit("/", 1)[-1] for s in w.skipped] == ["to_x"]


def _cl100k_chars(monkeypatch: pytest.MonkeyPatch, text: str) -> int:
    """Characters handed to the cl100k encoder while chunking ``text``."""
    from ragsift.chunkers import counters, make_chunker

    seen = 0
    counter = counters.get_counter("cl100k")
    real_encode = counter.encode

    def encode(s, *a, **k):
        nonlocal seen
        seen += len(s)
        return real_encode(s, *a, **k)

    real_init = counters.Encode.__init__

    def init(self, encoding, t, **kw):
        nonlocal seen
        seen += len(t)
        real_init(self, encoding, t, **kw)

    with monkeypatch.context() as m:
        m.setattr(counter, "encode", encode)
        m.setattr(counters.Encode, "__init__", init)
        chunker = make_chunker("recursive", tokenizer=counter, size=128)
        chunks = chunker.chunk(text)
    assert chunks and chunks[-1].end == len(text)
    assert all(text[c.start : c.end] == c.text for c in chunks)
    return seen


@pytest.mark.parametrize("kind", ["words", "letters"])
def test_one_long_line_encodes_a_constant_multiple_of_its_size(monkeypatch, kind):
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "index", "chunk", "token", "vector", "query"]

    def make(n: int) -> str:
        if kind == "words":
            out, size = [], 0
            while size < n:
                w = rng.choice(words)
                out.append(w)
                size += len(w) + 1
            return " ".join(out)[:n]
        return "".join(rng.choice("abcdefghij") for _ in range(n))

    a = _cl100k_chars(monkeypatch, make(40_000))
    b = _cl100k_chars(monkeypatch, make(80_000))
    assert b <= 2.2 * a, (a, b)
    assert b <= 4 * 80_000, b


def _table(rows: int, rng: random.Random) -> str:
    plain = ["alpha", "beta", "gamma", "delta", "12", "3.5", "x", "y"]
    markup = [
        "`code`",
        "**bold**",
        "*em*",
        "a\\|b",
        "[l](http://x)",
        "&amp;",
        "<b>h</b>",
        "~~s~~",
        "a_b_c",
        "x: y",
        "-1",
        "#5",
        "!",
        "{x}",
        "a^b",
        "= q",
        "+1",
        "%",
        "$",
        "@",
    ]
    lines = ["| name | value | note |", "|---|---:|:--|"]
    for i in range(rows):
        cells = [rng.choice(markup if rng.random() < 0.3 else plain) for _ in range(3)]
        if rng.random() < 0.1:
            cells[rng.randrange(3)] = ""
        lines.append("| " + " | ".join(cells) + f" {i} |")
    return "\n".join(lines) + "\n"


def test_giant_table_inline_parses_only_cells_with_markup(monkeypatch):
    rng = random.Random(11)
    parsed: list[int] = []
    real = md_source._parse_inline

    def counting(tokens, env):
        parsed.append(len(tokens))
        return real(tokens, env)

    monkeypatch.setattr(md_source, "_parse_inline", counting)
    text = _table(2000, rng)
    render_markdown_tables(parse_markdown(text, "t.md"))
    cells = 3 * 2000 + 3
    # ~30% of cells hold a markup character (plus the row numbers' cells never do)
    assert sum(parsed) < 0.5 * cells, (sum(parsed), cells)


def test_giant_table_renders_as_with_every_cell_parsed(monkeypatch):
    rng = random.Random(5)
    text = "# Data\n\n" + _table(1500, rng) + "\nAfter the table.\n\n" + _table(50, rng)
    doc = parse_markdown(text, "t.md")
    fast = render_markdown_tables(doc)
    monkeypatch.setattr(md_source, "_with_markup", lambda tokens: tokens)
    full = render_markdown_tables(doc)
    assert fast.text == full.text
    assert fast.lines == full.lines and fast.headings == full.headings


def test_discovery_real_path_helper_matches_realpath(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.md").write_text("x\n", encoding="utf-8")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    real_root = os.path.realpath(tmp_path)
    with os.scandir(tmp_path) as it:
        for entry in it:
            assert discovery._real_below(real_root, entry, entry.is_symlink()) == os.path.realpath(
                entry.path
            )


# -- cl100k: long runs without spaces ---------------------------------------------------------


def _pieces_seen(monkeypatch: pytest.MonkeyPatch, text: str) -> list[int]:
    """Lengths of the pieces the encode of ``text`` hands to tiktoken."""
    from ragsift.chunkers import counters

    enc = counters.get_counter("cl100k").encoding
    out = counters.Encode(enc, text, threads=2)
    lengths = [b - a for a, b in pairwise(out.offsets)]
    want = enc.encode_to_numpy(text, disallowed_special=()).tolist()
    assert out.result().tolist() == want
    return lengths


@pytest.mark.parametrize("alphabet", ["abcdefghijklmnopqrstuvwxyz", ".,;:!?-()[]{}<>=+*&%$#@~|/"])
def test_a_long_run_without_spaces_is_encoded_in_bounded_pieces(monkeypatch, alphabet):
    """tiktoken byte-pair merges one regex piece at a time, super-linearly in its length; a
    run of letters (or punctuation) is one piece. On main before the fix: one piece of the
    whole 600k characters. Now pieces of about RUN_STEP, with the tokens of one encode."""
    from ragsift.chunkers import encode

    rng = random.Random(3)
    text = "".join(rng.choices(alphabet, k=600_000))
    lengths = _pieces_seen(monkeypatch, text)
    assert max(lengths) <= 4 * encode.RUN_STEP, max(lengths)


def test_a_run_of_one_repeated_letter_stays_whole_and_exact(monkeypatch):
    """Every pair of a repeated letter is inside some token: no exact cut exists there."""
    text = "a" * 600_000
    assert _pieces_seen(monkeypatch, text) == [600_000]


_RUN_PIECES = [
    "qz",
    "jx",
    "wv",
    "ab",
    "Q",
    "zq",
    "'s",
    "'",
    "!?",
    "--",
    ".;",
    "=",
    " ",
    "\n",
    "é",
    "12",
    "x\n",
    "'ll",
    "''",
    "#",
    "\r\n",
    "<|endoftext|>",
]


def test_cuts_inside_runs_give_the_tokens_of_one_encode(monkeypatch):
    """Adversarial texts with many runs (short RUN_MIN/RUN_STEP so that they are cut often):
    the pieces encode to exactly the whole text's tokens."""
    from ragsift.chunkers import counters, encode

    monkeypatch.setattr(encode, "RUN_MIN", 400)
    monkeypatch.setattr(encode, "RUN_STEP", 1)  # every possible cut, margin apart
    enc = counters.get_counter("cl100k").encoding
    rng = random.Random(17)
    cut_any = 0
    for _ in range(60):
        parts = []
        for _ in range(rng.randint(1, 8)):
            alphabet = rng.choice(["qzjxvwk", "abcdefgh", "QZJXabc", "!?.,;-=()[]'\"", "ab'"])
            parts.append("".join(rng.choices(alphabet, k=rng.choice([50, 399, 400, 401, 2000]))))
            parts.append("".join(rng.choices(_RUN_PIECES, k=rng.randint(0, 4))))
        text = "".join(parts)
        cuts = encode.run_cuts(enc, text, [0, len(text)])
        cut_any += len(cuts) > 2
        got = [
            t
            for a, b in pairwise(cuts)
            for t in enc.encode_to_numpy(text[a:b], disallowed_special=()).tolist()
        ]
        assert got == enc.encode_to_numpy(text, disallowed_special=()).tolist()
    assert cut_any > 20


# -- JSON on one line, written with ASCII escapes ---------------------------------------------


class _CountingStr(str):
    """A str that counts the characters its ``find`` calls scan."""

    scanned = 0

    def find(self, sub, start=0, end=None):
        found = super().find(sub, start, len(self) if end is None else end)
        stop = (found + len(sub)) if found >= 0 else (len(self) if end is None else end)
        _CountingStr.scanned += max(0, stop - start)
        return found


def _json_scanned(strings: int) -> int:
    import json

    from ragsift.sources.json_reader import parse_json

    rng = random.Random(strings)
    words = ["café", "naïve", "über", "index", "chunk", "token", "straße", "query"]
    values = [" ".join(rng.choice(words) for _ in range(10)) + "." for _ in range(strings)]
    text = json.dumps(values)  # ASCII escapes, one line: the anchors of most strings miss
    _CountingStr.scanned = 0
    doc = parse_json(_CountingStr(text), "x.json", lines_format=False)
    assert len(doc.text.splitlines()) == strings
    return _CountingStr.scanned


def test_minified_json_with_ascii_escapes_finds_its_anchors_in_linear_work():
    """Each string's anchor (as written without escapes) is looked for from the cursor; with
    ``\\u00e9`` escapes it is not there, and every miss scanned the rest of the file (a 2 MB
    list of strings: 7 s in ``find``). On main before the fix: 1k -> 2k strings scanned x4."""
    small, large = _json_scanned(1000), _json_scanned(2000)
    assert large <= 2.2 * small + 10_000, (small, large)
