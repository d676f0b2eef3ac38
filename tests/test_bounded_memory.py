"""Bounded tokenization (issue 40, items 1 and 2).

The model tokenizer's per-document index works in windows, word by word
(``model_index.WindowedModelIndex``): every answer it gives must be the one-encode
``ModelIndex``'s, whatever the window and however few windows it keeps, so no chunk changes;
and a large file's whole ``ragsift chunk`` process must stay within a memory bound (read in a
subprocess from the kernel's peak RSS of its child, never timed).
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.chunkers import make_chunker
from ragsift.embedders import model_counter, model_index
from ragsift.embedders.model_index import ModelIndex, WindowedModelIndex
from ragsift.embedders.tokens import ModelTokenCounter

PIECES = st.sampled_from(
    [
        " ",
        "  ",
        "\n",
        "\n\n",
        "\t",
        "\r\n",
        "\r",
        "word",
        "Bees",
        "hive's",
        "U.S.A.",
        "e-mail",
        "naïve",
        "cafe\u0301",
        "\u0301",
        "İstanbul",
        "ß",
        "日本語",
        "한국어",
        "🐝",
        "[SEP]",
        "[UNK]",
        "##ing",
        "\x00",
        "\ufffd",
        "\u200b",
        "\xa0",
        "\u2028",
        "\x0b",
        "\x85",
        "—",
        "(",
        "!",
        "…",
        "1,000.5",
        "x" * 120,
        "y" * 300,  # longer than PieceCache.LONG: encoded, never kept
        "### Heading",
        "| a | b |",
        "https://example.com/a?b=c",
    ]
)
DOCS = st.lists(PIECES, min_size=1, max_size=60).map("".join)


@pytest.fixture(scope="module")
def counter():
    return model_counter()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(DOCS, st.sampled_from([1, 3, 8, 40, 10_000]), st.data())
def test_windowed_index_answers_as_one_encode(text, window, data):
    counter = model_counter()
    old = ModelIndex(counter, text)
    new = WindowedModelIndex(counter, text, window=window)
    n = len(text)
    # questions in a random order, so windows are evicted and encoded again
    for _ in range(12):
        s = data.draw(st.integers(0, n))
        e = data.draw(st.integers(s, n))
        units = data.draw(st.integers(1, 12))
        assert new.limit(s, units) == old.limit(s, units)
        assert new.overlap_start(e, units) == old.overlap_start(e, units)
        assert new.approx(s, e) == old.approx(s, e)
        ctx = data.draw(st.sampled_from(["", "doc: ", "Guide > Install\n\n", "x"]))
        assert new.ids(ctx, s, e) == old.ids(ctx, s, e)
        if e > s:
            assert new.exact(ctx, s, e) == old.exact(ctx, s, e)
    assert new.starts == old.starts == counter.offsets(text)
    assert new.ntok == old.ntok


def test_windows_evicted_and_encoded_again_answer_the_same(counter, monkeypatch):
    monkeypatch.setattr(model_index, "KEEP", 2)
    text = _varied_text(random.Random(3), 20_000) + (" z" + "é" * 300) * 40
    old = ModelIndex(counter, text)
    new = WindowedModelIndex(counter, text, window=500)
    rng = random.Random(4)
    for _ in range(300):  # back and forth across ~40 windows, two kept
        s = rng.randrange(len(text))
        assert new.limit(s, 50) == old.limit(s, 50)
        assert new.overlap_start(s, 7) == old.overlap_start(s, 7)
    assert len(new._kept) <= 2


WORDS = (
    "the bees keep warm in winter while the hive hums ; naïve café résumé über 日本語 "
    "tokenization [SEP] e-mail U.S.A. 1,000.5 https://example.com/a?b=c — (note) x" * 1
).split() + ["supercalifragilistic" * 8, "😀", "İstanbul"]


def _varied_text(rng: random.Random, size: int) -> str:
    """Prose with headings, lists, code, CJK, accents, long words and odd whitespace."""
    out: list[str] = []
    total = 0
    while total < size:
        kind = rng.random()
        if kind < 0.1:
            part = "#" * rng.randint(1, 3) + " " + " ".join(rng.choices(WORDS, k=4))
        elif kind < 0.2:
            part = "\n".join("- " + " ".join(rng.choices(WORDS, k=6)) for _ in range(4))
        elif kind < 0.25:
            part = (
                "```\n" + "\n".join("x = f(y)  # " + rng.choice(WORDS) for _ in range(5)) + "\n```"
            )
        else:
            sents = (
                " ".join(rng.choices(WORDS, k=rng.randint(3, 30))).capitalize() + rng.choice(".!?")
                for _ in range(rng.randint(1, 8))
            )
            part = rng.choice([" ", "\n", "  ", "\t", "\r\n"]).join(sents)
        out.append(part)
        total += len(part) + 2
    return "\n\n".join(out)


STRATEGIES = [
    ("recursive", {"size": 64}),
    ("recursive", {"size": 48, "overlap": 12}),
    ("sentence", {"size": 40, "overlap": 8}),
    ("markdown", {"size": 64}),
    ("tokens", {"size": 50, "overlap": 10}),
    ("heading", {"size": 80}),
]


@pytest.mark.parametrize(("strategy", "options"), STRATEGIES)
def test_chunks_unchanged_by_the_windowed_path(counter, monkeypatch, strategy, options):
    rng = random.Random(strategy + str(options))
    texts = [_varied_text(rng, size) for size in (300, 5_000, 30_000)]
    chunker = make_chunker(strategy, tokenizer=counter, **options)
    windowed = [chunker.chunk(t) for t in texts]  # SMALL, one window, several windows
    monkeypatch.setattr(model_index, "WINDOW", 701)  # many windows, evicted and re-encoded
    monkeypatch.setattr(model_index, "KEEP", 2)
    small = [chunker.chunk(t) for t in texts]
    monkeypatch.setattr(ModelTokenCounter, "index", lambda self, text: ModelIndex(self, text))
    whole = [chunker.chunk(t) for t in texts]
    assert windowed == whole and small == whole
    assert sum(map(len, whole)) > 10


PEAK = """import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_kb(*args: str) -> int:
    """Peak RSS (KB) of a ``ragsift`` process, read by a wrapper process that waits for it
    (so no other child of this test process counts)."""
    cmd = [sys.executable, "-c", PEAK, sys.executable, "-m", "ragsift", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def test_chunk_of_a_large_file_has_bounded_memory(tmp_path):
    """8 MB of text with the default (model) tokenizer: before the windows, one encode of the
    whole document held ~120x the file (1.3 GB for 10 MB); now the peak above a small file's
    is the text, its chunks and their JSON (~7x). Bound: 20x the file above a small file."""
    rng = random.Random(1)
    big = tmp_path / "big.txt"
    big.write_text(_varied_text(rng, 8_000_000), encoding="utf-8")
    small = tmp_path / "small.txt"
    small.write_text("Bees keep warm in winter.\n", encoding="utf-8")
    size_kb = big.stat().st_size // 1024
    base = _peak_kb("chunk", str(small))
    peak = _peak_kb("chunk", str(big))
    assert peak - base <= 20 * size_kb, (peak, base, size_kb)


# -- markdown: pieces that can hold no heading and no HTML are not parsed -------------------


def _markdown(rng: random.Random, size: int) -> str:
    """Long markdown: plain paragraphs, and in its middle third a few headings (ATX and
    setext), raw HTML, entities, reference links and definitions (inside quotes too), fences
    and tables; so the pieces at both ends hold neither a heading nor HTML."""
    rare = [
        "# Title [ref]",
        "Setext title\n------------",
        "## Second *level* `code`",
        "<div>\n<b>bold</b> text\n</div>",
        "Entities &amp; &#42; and a <span>tag</span>.",
        "[ref]: https://example.com/a",
        "> [quoted]: /b\n> # Quoted heading",
        "```\n# not a heading\n<div>\n```",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "    # indented code",
        "p < 0.05 & q > 1 and [quoted] and [ref]",
    ]
    out: list[str] = []
    total = 0
    while total < size:
        middle = size / 3 < total < 2 * size / 3
        if middle and rng.random() < 0.05:
            part = rng.choice(rare)
        else:
            part = " ".join(rng.choices(WORDS[:20], k=rng.randint(5, 60)))
        out.append(part)
        total += len(part) + 2
    return "\n\n".join(out)


@pytest.mark.parametrize("seed", range(6))
def test_markdown_skipping_pieces_reads_the_same_document(monkeypatch, seed):
    from ragsift.sources import markdown

    text = _markdown(random.Random(seed), 400_000)  # ~6 pieces of PIECE_CHARS
    original = markdown.token_pieces
    declined = []

    def counting(text, starts, need=None):
        def asked(src):
            declined.append(not need(src))
            return not declined[-1]

        return original(text, starts, asked)

    monkeypatch.setattr(markdown, "token_pieces", counting)
    skipped = markdown.parse_markdown(text, "a.md")
    assert any(declined) and not all(declined)
    monkeypatch.setattr(
        markdown, "token_pieces", lambda text, starts, need=None: original(text, starts)
    )
    whole = markdown.parse_markdown(text, "a.md")
    assert skipped.text == whole.text
    assert skipped.headings == whole.headings and skipped.lines == whole.lines
    assert skipped.warnings == whole.warnings
    assert whole.headings is not None and whole.text != text  # headings found, HTML reduced


def test_the_windows_encode_each_character_about_once(counter, monkeypatch):
    """Linear work without a clock: chunking 4x the text encodes ~4x the characters, each
    window about once (re-encoded only when a question goes back past the kept windows)."""
    from ragsift.embedders.model_index import PieceCache

    monkeypatch.setattr(model_index, "WINDOW", 5_000)
    seen: list[int] = []
    original = PieceCache.window

    def window(self, text):
        seen.append(len(text))
        return original(self, text)

    monkeypatch.setattr(PieceCache, "window", window)
    chunker = make_chunker("recursive", tokenizer=counter, size=128, overlap=16)
    work = []
    for size in (50_000, 200_000):
        text = _varied_text(random.Random(size), size)
        seen.clear()
        assert chunker.chunk(text)
        work.append(sum(seen) / len(text))
    assert all(1.0 <= w <= 1.3 for w in work), work  # each character about once, at any size


def test_a_chunker_that_has_chunked_still_pickles(counter):
    """Ray sends the chunker to its workers: the piece cache goes as an empty one."""
    import pickle

    chunker = make_chunker("recursive", tokenizer=counter, size=64)
    text = _varied_text(random.Random(7), 10_000)
    before = chunker.chunk(text)
    assert counter.piece_cache()._slot  # filled
    again = pickle.loads(pickle.dumps(chunker))
    assert again.counter.piece_cache()._slot == {}
    assert again.chunk(text) == before
