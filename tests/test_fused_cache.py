"""Issue 13: the optimised fused graph is cached on disk and checked; vectors stay identical.

Real model throughout (the default all-MiniLM-L6-v2 int8 weights)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragsift.embedders import load_embedder
from ragsift.embedders.fused import fused_cache_path
from ragsift.embedders.weights import DEFAULT_SHA256, hash_file

TEXTS = [
    "Bees cluster in winter to keep the queen warm.",
    "A lantern needs a dry wick and clean glass.",
    "short",
    "x " * 300,
]  # the last one is truncated at the model's max length


def _vectors(emb):
    return np.asarray(emb.embed(TEXTS, kind="passage").vectors)


@pytest.fixture()
def in_memory(tmp_path, monkeypatch):
    """Vectors of the in-memory build: the cache dir is under a regular file, so it cannot
    be created and the loader silently builds the graph in memory (as before issue 13)."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("RAGSIFT_CACHE_DIR", str(blocker / "cache"))
    vecs = _vectors(load_embedder())
    assert not (blocker.parent / "cache").exists()
    return vecs


def test_first_load_writes_the_cache_and_every_load_gives_identical_vectors(
    in_memory, tmp_path, monkeypatch
):
    monkeypatch.setenv("RAGSIFT_CACHE_DIR", str(tmp_path / "cache"))
    path = fused_cache_path(DEFAULT_SHA256)
    assert not path.exists()
    first = _vectors(load_embedder())
    assert path.is_file()
    meta = json.loads(path.with_name(path.name + ".json").read_text())
    assert meta["sha256"] == hash_file(path) and meta["size"] == path.stat().st_size
    stamp = path.stat().st_mtime_ns
    second = _vectors(load_embedder())
    assert path.stat().st_mtime_ns == stamp  # a hit: not rewritten
    assert np.array_equal(first, in_memory) and np.array_equal(second, in_memory)
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_damaged_cache_file_is_detected_and_rebuilt(in_memory, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSIFT_CACHE_DIR", str(tmp_path / "cache"))
    load_embedder()
    path = fused_cache_path(DEFAULT_SHA256)
    good = hash_file(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, new mtime, one byte flipped inside a weight
    path.write_bytes(bytes(data))
    vecs = _vectors(load_embedder())
    assert np.array_equal(vecs, in_memory)
    assert hash_file(path) == good  # rewritten from the weights
