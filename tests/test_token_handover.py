"""Issue 13 (target 2): ``embed`` encodes each chunk once. The chunker's model-token counter
keeps the ids of what it counts (``TokenMemo``); the embedder on the same tokenizer takes them
instead of encoding the chunk text again. The ids are those of a fresh encode and the stored
vectors are byte-identical to a run without the hand-over; a batch's texts are embedded
shortest first across the whole batch, which changes no vector either. Real model throughout.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.embedders import load_embedder, model_counter
from ragsift.embedders.onnx import ModelTokenCounter, TokenMemo
from ragsift.embedders.options import EmbedderOptions
from ragsift.index import open_index
from ragsift.ingest import BuildRequest, build_index, default_embed_chunker


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, fixtures_dir):
    folder = tmp_path_factory.mktemp("corpus")
    for name in ("beekeeping/handbook.md", "lantern/guide.md", "field-notes.txt", "sourdough.rst"):
        shutil.copy(fixtures_dir / name, folder / name.replace("/", "-"))
    return folder


TEXTS = [
    "Bees keep the hive warm in winter.",
    "naïve café — ünïcödé and emoji 🐝!",
    "x",
    "Heading > Sub\n\nA paragraph with a [link](http://example.com).",
    "word " * 300,
]


def test_kept_ids_are_a_fresh_encode_and_give_identical_vectors(embedder):
    counter = embedder.counter()
    fresh_ids, fresh_cut = embedder._token_ids(TEXTS)
    plain = embedder.embed(TEXTS).vectors
    counter.keep_token_ids(True)
    try:
        assert embedder.take_token_ids_from(counter)
        counts = [counter.count(t) for t in TEXTS]
        assert len(counter.memo) == len(TEXTS)
        tok = counter._tok
        for t, n in zip(TEXTS, counts):
            assert counter.memo._ids[t] == tok.encode(t).ids and n == len(tok.encode(t).ids)
        ids, cut = embedder._token_ids(TEXTS)
        # taken ids are removed; the text over max_length was encoded and truncated as before
        assert len(counter.memo) == 0
        assert ids == fresh_ids and cut == fresh_cut and cut[-1] > 0
        for t in TEXTS:
            counter.count(t)
        shared = embedder.embed(TEXTS).vectors
        assert np.array_equal(shared, plain)
    finally:
        embedder.take_token_ids_from(None)
        counter.keep_token_ids(False)
    assert embedder._memo is None and counter.memo is None


def test_only_the_exact_text_and_the_same_tokenizer_object_share(embedder):
    counter = embedder.counter()
    counter.keep_token_ids(True)
    counter.count("Bees keep the hive warm.")
    # a passage prefix changes the text encoded: no hit, a fresh encode
    e5 = load_embedder(None, EmbedderOptions(passage_prefix="passage: "))
    assert e5.take_token_ids_from(counter)
    e5.embed(["Bees keep the hive warm."])
    assert len(counter.memo) == 1
    # a counter on another tokenizer object is never linked
    from tokenizers import Tokenizer

    other = ModelTokenCounter(Tokenizer.from_str(counter._tok.to_str()), 256)
    other.keep_token_ids(True)
    assert not embedder.take_token_ids_from(other) and embedder._memo is None
    assert not embedder.take_token_ids_from(object())


def test_memo_is_bounded_oldest_first():
    memo = TokenMemo(capacity=3)
    for i in range(5):
        memo.put(f"t{i}", [i])
    assert len(memo) == 3
    assert memo.take(["t0", "t1", "t2", "t4", "t9"]) == [None, None, [2], [4], None]
    assert len(memo) == 1


def _vectors(path) -> dict[str, bytes]:
    with open_index(str(path), "r") as st:
        rowids, mat = st.load_matrix()
        recs = st.chunks([int(r) for r in rowids])
    return {r["context"] + r["text"]: mat[i].tobytes() for i, r in enumerate(recs)}


def test_embed_hands_over_no_ids_and_stores_what_each_unit_gets_alone(
    corpus, tmp_path, monkeypatch, embedder
):
    """``embed`` embeds each chunk's units (``embedders.evidence``), texts the chunker never
    counted, so the chunker keeps no ids for the embedder (no ``TokenMemo`` is taken from);
    every stored vector is the aggregate of its units each embedded on its own (batch of
    one): the order and grouping of a batch's texts changes no byte."""
    from ragsift.embedders import evidence

    taken: list[int] = []
    real_take = TokenMemo.take

    def spy(self, texts):
        out = real_take(self, texts)
        taken.append(sum(x is not None for x in out))
        return out

    monkeypatch.setattr(TokenMemo, "take", spy)
    chunker = default_embed_chunker()
    summary = build_index(BuildRequest.of(tmp_path / "shared.db", [str(corpus)], chunker=chunker))
    assert summary.embedded > 10 and sum(taken) == 0 and chunker.counter.memo is None
    stored = _vectors(tmp_path / "shared.db")
    with open_index(str(tmp_path / "shared.db"), "r") as st:
        rowids, _ = st.load_matrix()
        recs = st.chunks([int(r) for r in rowids])
    for r in recs:
        bounds = evidence.unit_bounds(r["text"]) or [(0, len(r["text"]))]
        parts = [embedder.embed([r["text"][a:z]]).vectors[0] for a, z in bounds]
        if r["context"].strip():
            parts.append(embedder.embed([r["context"].strip()]).vectors[0])
        want = evidence.aggregate(np.stack(parts), evidence.weights(bounds, r["context"]))
        assert stored[r["context"] + r["text"]] == want.tobytes()


def test_the_chunk_command_keeps_no_ids():
    counter = model_counter()
    assert counter.memo is None
    counter.count("some text")
    assert counter.memo is None


# -- ModelIndex: a range's ids sliced from the document's one encode -------------------------

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
        "ǅ",
        "ß",
        "日本語",
        "中",
        "한국어",
        "🐝",
        "😀x",
        "[SEP]",
        "[CLS]",
        "[MASK]",
        "[UNK]",
        "##ing",
        "\x00",
        "\ufffd",
        "\u200b",
        "\xa0",
        "\u2028",
        "\x0b",
        "\x0c",
        "\x85",
        "—",
        "(",
        ")",
        "!",
        "?",
        "…",
        "1,000.5",
        "x" * 120,
        "a" * 99,
        "### Heading",
        "> quote",
        "| a | b |",
        "`code`",
        "https://example.com/a?b=c",
    ]
)
DOCS = st.lists(PIECES, min_size=1, max_size=40).map("".join)
CONTEXTS = st.sampled_from(["", "doc: ", "Guide > Install\n\n", "\n", "x", "[SEP] ", "日本 "])


@settings(max_examples=700, deadline=None, derandomize=True)
@given(DOCS, st.data(), CONTEXTS)
def test_model_index_exact_and_ids_equal_a_fresh_encode(text, data, context):
    counter = model_counter()
    index = counter.index(text)
    tok = counter._tok
    assert index.starts == counter.offsets(text)  # the boundaries the chunkers see: unchanged
    spaces = [i for i, c in enumerate(text) if c in " \t\n\r"]
    points = sorted({0, len(text), *spaces, *(i + 1 for i in spaces)})
    s = data.draw(st.sampled_from(points[:-1]) | st.integers(0, len(text) - 1))
    e = data.draw(
        st.sampled_from([p for p in points if p > s] or [len(text)]) | st.integers(s + 1, len(text))
    )
    fresh = tok.encode(context + text[s:e]).ids
    ids = index.ids(context, s, e)
    assert ids is None or ids == fresh
    counter.keep_token_ids(True)
    assert index.exact(context, s, e) == len(fresh)
    assert counter.memo.take([context + text[s:e]]) == [fresh]


def test_model_index_slices_whitespace_ranges_and_encodes_the_rest():
    counter = model_counter()
    text = "Bees keep warm.\n\nThe hive, in winter: 日本語 cafe\u0301 [SEP] end"
    index = counter.index(text)
    cut = text.index("The")
    assert index.ids("", 0, cut) is not None and index.ids("", cut, len(text)) is not None
    assert index.ids("Guide > ", cut, len(text)) is not None
    assert index.ids("", 1, cut) is None  # starts inside a word: encoded afresh
    assert index.ids("doc:", cut, len(text)) is None  # the context joins a word
    for s, e in ((0, cut), (cut, len(text)), (1, cut), (3, 9)):
        assert index.exact("", s, e) == counter.count(text[s:e])


def test_only_a_bert_wordpiece_tokenizer_is_sliced():
    from tokenizers import Tokenizer, models, pre_tokenizers

    counter = model_counter()
    assert counter.sliceable() == (101, 102)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Whitespace()
    other = ModelTokenCounter(bpe, 64)
    assert other.sliceable() is None
    index = other.index("some words here")
    assert index.ids("", 0, 4) is None
