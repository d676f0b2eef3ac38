"""The embedder: fp32 reference agreement, truncation accounting, batching, and refusals.

Reference vectors come from the fp32 sentence-transformers model (made once by
``bench/tools/make_minilm_reference.py``); these tests need no torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragsift.chunkers.base import TokenCounter
from ragsift.embedders import load_embedder, model_counter
from ragsift.embedders import weights as weights_mod
from ragsift.embedders.options import EmbedderOptions
from ragsift.errors import RagsiftError

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
MODEL_FILES = Path(__file__).resolve().parent.parent / "ragsift" / "embedders" / "models"


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory):
    # Keep the checksum cache out of the user's home while testing.
    old = os.environ.get("RAGSIFT_CACHE_DIR")
    os.environ["RAGSIFT_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("RAGSIFT_CACHE_DIR", None)
    else:
        os.environ["RAGSIFT_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def embedder(_private_cache):
    return load_embedder()


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def _vectors(items: list[dict]) -> np.ndarray:
    return np.asarray([i["vector"] for i in items], dtype=np.float32)


def test_attributes(embedder):
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.dimensions == 384
    assert embedder.max_length == 256
    assert embedder.fingerprint == f"all-MiniLM-L6-v2/384/{weights_mod.DEFAULT_SHA256}"
    assert embedder.query_prefix == "" and embedder.passage_prefix == ""


def test_matches_fp32_reference(embedder, reference):
    items = reference["items"]
    result = embedder.embed([i["text"] for i in items])
    cosines = (result.vectors * _vectors(items)).sum(axis=1)
    assert cosines.min() >= 0.999, cosines
    # 1-3 token inputs drift most under int8 weights (measured 0.995-0.9997): looser bound.
    short = reference["short_items"]
    cosines = (embedder.embed([i["text"] for i in short]).vectors * _vectors(short)).sum(axis=1)
    assert cosines.min() >= 0.99, cosines


def test_token_counts_match_reference_tokenizer(embedder, reference):
    items = reference["items"] + reference["short_items"]
    assert embedder.count_tokens([i["text"] for i in items]) == [i["tokens"] for i in items]


def test_truncation_is_counted(embedder, reference):
    long_text = max(reference["items"], key=lambda i: i["tokens"])
    assert long_text["tokens"] > 256
    result = embedder.embed(["short text", long_text["text"]])
    assert result.truncated == [0, long_text["tokens"] - 256]
    # the model saw exactly the first 255 tokens + [SEP]: appending text changes nothing
    longer = long_text["text"] + " and a tail the model never sees"
    more = embedder.embed([longer])
    assert more.truncated == [embedder.count_tokens([longer])[0] - 256] == [result.truncated[1] + 7]
    assert np.abs(more.vectors[0] - result.vectors[1]).max() < 1e-5


def test_shapes_norms_determinism(embedder):
    texts = ["alpha", "beta gamma delta", "a somewhat longer sentence " * 5, ""]
    first = embedder.embed(texts)
    assert first.vectors.shape == (4, 384) and first.vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(first.vectors, axis=1), 1.0, atol=1e-5)
    second = embedder.embed(texts)
    assert np.array_equal(first.vectors, second.vectors)
    empty = embedder.embed([])
    assert empty.vectors.shape == (0, 384) and empty.truncated == []


def test_batch_equals_single(embedder, reference):
    texts = [i["text"] for i in reference["items"]] + ["x"] * 3 + ["word " * 40] * 4
    batched = embedder.embed(texts).vectors
    single = np.stack([embedder.embed([t]).vectors[0] for t in texts])
    assert np.abs(batched - single).max() <= 1e-5


def test_query_and_passage_prefixes(_private_cache):
    e5 = load_embedder(None, EmbedderOptions(query_prefix="query: ", passage_prefix="passage: "))
    plain = load_embedder()
    q = e5.embed_query("cats")
    assert q.shape == (384,)
    assert np.allclose(q, plain.embed(["query: cats"]).vectors[0], atol=1e-6)
    assert np.allclose(
        e5.embed(["cats"]).vectors[0], plain.embed(["passage: cats"]).vectors[0], atol=1e-6
    )
    assert e5.fingerprint != plain.fingerprint  # stored vectors differ
    with pytest.raises(ValueError):
        plain.embed(["x"], kind="document")


def test_counter_is_a_token_counter(embedder):
    counter = embedder.counter()
    assert isinstance(counter, TokenCounter) and counter.name == "model"
    text = "  Héllo wörld, naïve café.\nSecond line!"
    assert counter.count(text) == embedder.count_tokens([text])[0]
    offsets = counter.offsets(text)
    assert offsets[0] == 0 and offsets == sorted(set(offsets))
    assert text[offsets[1] :].startswith("wörld")
    assert counter.count("") == 2 and counter.offsets("") == []
    # a text whose count is exactly max_length is embedded whole
    text = "word " * 254
    assert counter.count(text) == 256
    assert embedder.embed([text]).truncated == [0]
    cheap = model_counter()
    assert cheap.count(text) == 256 and cheap.max_length == 256


def _tampered_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(weights_mod.default_weights_path(), copy)
    with open(copy, "r+b") as fh:
        fh.seek(-100, os.SEEK_END)
        byte = fh.read(1)
        fh.seek(-100, os.SEEK_END)
        fh.write(bytes([byte[0] ^ 0xFF]))
    return copy


def test_checksum_mismatch_is_refused(tmp_path):
    with pytest.raises(RagsiftError, match="do not match the pinned checksum"):
        load_embedder(weights=_tampered_copy(tmp_path))


def test_checksum_cache_is_keyed_by_size_and_mtime(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSIFT_CACHE_DIR", str(tmp_path / "cache"))
    good = tmp_path / "good.onnx"
    shutil.copyfile(weights_mod.default_weights_path(), good)
    assert weights_mod.verify_weights(good, weights_mod.DEFAULT_SHA256)
    calls = []
    real_hash = weights_mod.hash_file
    monkeypatch.setattr(weights_mod, "hash_file", lambda p: calls.append(p) or real_hash(p))
    weights_mod.verify_weights(good, weights_mod.DEFAULT_SHA256)
    assert calls == []  # served from the cache
    # rewritten in place (new mtime): hashed again, and the tampering is caught
    data = bytearray(good.read_bytes())
    data[-100] ^= 0xFF
    good.write_bytes(bytes(data))
    os.utime(good, ns=(good.stat().st_atime_ns, good.stat().st_mtime_ns + 1_000_000))
    with pytest.raises(RagsiftError):
        weights_mod.verify_weights(good, weights_mod.DEFAULT_SHA256)
    assert calls == [good]


def _model_folder(tmp_path: Path, pooling: str = "mean") -> Path:
    folder = tmp_path / "my-model"
    (folder / "1_Pooling").mkdir(parents=True)
    os.symlink(weights_mod.default_weights_path(), folder / "model.onnx")
    shutil.copyfile(MODEL_FILES / "all-MiniLM-L6-v2" / "tokenizer.json", folder / "tokenizer.json")
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": 384,
                "pooling_mode_cls_token": pooling == "cls",
                "pooling_mode_mean_tokens": pooling == "mean",
            }
        )
    )
    return folder


def test_model_dir(tmp_path, embedder):
    folder = _model_folder(tmp_path)
    other = load_embedder(str(folder))
    assert other.name == "my-model" and other.dimensions == 384
    assert other.max_length == 512  # no sentence_bert_config: the position table's limit
    assert other.fingerprint.split("/")[2] == embedder.fingerprint.split("/")[2]
    texts = ["the same model in a folder", "gives the same vectors"]
    assert np.allclose(other.embed(texts).vectors, embedder.embed(texts).vectors, atol=1e-6)
    short = load_embedder(folder, EmbedderOptions(max_length=16))
    assert short.embed(["word " * 20]).truncated == [6]
    cls = load_embedder(folder, EmbedderOptions(pooling="cls", normalize=False))
    vec = cls.embed(["cls pooling"]).vectors[0]
    assert abs(np.linalg.norm(vec) - 1.0) > 1e-3  # not normalised
    assert "pooling=cls" in cls.fingerprint and "normalize=false" in cls.fingerprint


def test_bad_model_dirs(tmp_path):
    with pytest.raises(RagsiftError, match="not a folder"):
        load_embedder(tmp_path / "missing")
    with pytest.raises(RagsiftError, match="no tokenizer.json"):
        load_embedder(tmp_path)
    folder = _model_folder(tmp_path)
    with pytest.raises(RagsiftError, match="exceeds"):
        load_embedder(folder, EmbedderOptions(max_length=1024))
    with pytest.raises(RagsiftError, match="pooling"):
        load_embedder(folder, EmbedderOptions(pooling="max"))
    (folder / "model.onnx").unlink()
    with pytest.raises(RagsiftError, match="no model.onnx"):
        load_embedder(folder)
    (folder / "model.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(RagsiftError, match="cannot load ONNX model"):
        load_embedder(folder)
    (folder / "tokenizer.json").write_text("{broken")
    with pytest.raises(RagsiftError, match="cannot load tokenizer"):
        load_embedder(folder)


def test_import_is_cheap():
    code = (
        "import sys, ragsift.embedders\n"
        "heavy = {'numpy', 'onnxruntime', 'tokenizers'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fused_graph_equals_exported_graph(embedder, reference):
    plain = load_embedder(graph="plain")
    assert embedder.fused_minilm and not plain.fused_minilm
    assert plain.fingerprint == embedder.fingerprint  # same weights, same function
    texts = [i["text"] for i in reference["items"]] + ["short", "word " * 100]
    fused_vecs = embedder.embed(texts).vectors
    plain_vecs = plain.embed(texts).vectors
    assert np.abs(fused_vecs - plain_vecs).max() <= 1e-5
    with pytest.raises(RagsiftError, match="graph must be"):
        load_embedder(graph="fast")


def test_the_model_tokenizer_is_loaded_once_per_file_and_reloaded_when_it_changes(tmp_path):
    """`embed` asks for the tokenizer twice (chunk counts, then the embedder): one object."""
    from ragsift.embedders import DEFAULT_MODEL_DIR
    from ragsift.embedders.onnx import load_tokenizer

    src = Path(DEFAULT_MODEL_DIR) / "tokenizer.json"
    path = tmp_path / "tokenizer.json"
    shutil.copyfile(src, path)
    first = load_tokenizer(path)
    assert load_tokenizer(path) is first
    assert model_counter()._tok is load_tokenizer(src)  # the counter and embedder share it
    assert load_embedder(lazy=True)._tok is load_tokenizer(src)
    # a rewritten file (other size) is a new object, with padding/truncation off as before
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    second = load_tokenizer(path)
    assert second is not first
    assert second.encode("honey bees").ids == first.encode("honey bees").ids
    assert second.padding is None and second.truncation is None
