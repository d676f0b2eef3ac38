"""``ragsift embed`` and ``ragsift info`` through the real CLI, with the real model and chunker.

Each call is a subprocess (what a shell user gets); the model loads in ~1 s per run, so the
corpora are small: the fixture corpus once, and a few generated files in tmp_path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragsift.index import open_index

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def run(
    *args: str, cwd: Path | None = None, input: str | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_DEBUG", "RAGSIFT_INDEX")}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ragsift", *args],
        cwd=cwd or REPO,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
        check=False,
    )


def embed_json(*args: str, **kw) -> tuple[int, dict, str]:
    proc = run("embed", *args, "--json", **kw)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def info(index: Path) -> dict:
    proc = run("info", "--index", str(index), "--json", "--check")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _write_corpus(root: Path) -> None:
    root.mkdir()
    (root / "bees.md").write_text(
        "# Bees\n\nHoneybees live in colonies with one queen.\n\n"
        "## Hives\n\nWorkers build wax combs and store nectar as honey.\n"
    )
    (root / "tides.txt").write_text("Tide pools hold anemones, crabs and sea stars.\n")
    (root / "bread.txt").write_text("Sourdough needs a lively starter and a long, cool rise.\n")
    sub = root / "sub"
    sub.mkdir()
    (sub / "lamp.txt").write_text("A lantern's wick must be trimmed before lighting.\n")


@pytest.fixture(scope="module")
def fixtures_index(tmp_path_factory) -> tuple[Path, dict, str, int]:
    index = tmp_path_factory.mktemp("fx") / "fixtures.db"
    rc, summary, err = embed_json(str(FIXTURES), "--index", str(index))
    return index, summary, err, rc


def test_embed_fixtures_end_to_end(fixtures_index):
    index, s, err, rc = fixtures_index
    assert rc == 3  # fixtures/bad holds files that must be skipped
    bad = {Path(x["path"]).name for x in s["skipped"]}
    assert {"broken.json", "empty.txt"} <= bad
    assert s["ignored"] == 1  # blob.bin: not a document type, counted, not a skip
    for x in s["skipped"]:
        assert f"ragsift: skipped {x['path']}: {x['reason']}" in err
    assert s["parsed"] >= 6 and s["chunks"] == s["embedded"] > 0 and s["reused"] == 0
    assert s["truncated"] == 0  # the default chunker fits the model
    assert s["model_loaded"] is True
    for key in (
        "discovered",
        "unchanged",
        "parsed",
        "chunks",
        "embedded",
        "reused",
        "removed",
        "skipped",
        "truncated",
        "seconds",
    ):
        assert key in s
    got = info(index)
    assert got["documents"] == s["parsed"] and got["chunks"] == got["vectors"] == s["chunks"]
    assert got["model"] == "all-MiniLM-L6-v2" and got["dimensions"] == 384
    assert got["model_fingerprint"].startswith("all-MiniLM-L6-v2/384/")
    assert got["chunker"] == "recursive" and got["truncated"] == 0 and got["problems"] == []
    with open_index(index) as r:
        rowids, matrix = r.load_matrix()
        recs = r.chunks(rowids.tolist())
    assert len(recs) == len(rowids) == matrix.shape[0]
    assert all(rec["tokens"] <= 256 and rec["truncated"] == 0 for rec in recs)


def test_rerun_on_unchanged_fixtures_loads_no_model(fixtures_index, tmp_path):
    index, first, _, _ = fixtures_index
    copy = tmp_path / "again.db"
    shutil.copy(index, copy)
    rc, s, _err = embed_json(str(FIXTURES), "--index", str(copy))
    assert rc == 3
    assert s["unchanged"] == first["parsed"] and s["parsed"] == 0
    assert s["embedded"] == 0 and s["model_loaded"] is False and s["chunks"] == 0


def test_info_table_and_missing_index(fixtures_index, tmp_path):
    index = fixtures_index[0]
    proc = run("info", "--index", str(index))
    assert proc.returncode == 0
    for word in (
        "documents",
        "chunks",
        "vectors",
        "truncated",
        "all-MiniLM-L6-v2",
        "recursive",
        "size on disk",
    ):
        assert word in proc.stdout
    proc = run("info", "--index", str(tmp_path / "none.db"))
    assert proc.returncode == 2 and "no index at" in proc.stderr


def test_incremental_changes_deletions_and_chunker_change(tmp_path):
    corpus = tmp_path / "c"
    _write_corpus(corpus)
    index = tmp_path / "i.db"
    rc, s, _ = embed_json(str(corpus), "--index", str(index))
    assert rc == 0 and s["parsed"] == 4 and s["embedded"] == s["chunks"]
    # same content, new mtime: hashed, not re-parsed; content change: re-chunked
    os.utime(corpus / "tides.txt", (time.time() + 5, time.time() + 5))
    (corpus / "bread.txt").write_text("Rye bread is dense and keeps for a week.\n")
    (corpus / "sub" / "lamp.txt").unlink()
    rc, s, _ = embed_json(str(corpus), "--index", str(index))
    assert rc == 0
    assert (s["unchanged"], s["parsed"], s["removed"]) == (2, 1, 1)
    assert s["embedded"] == 1 and s["model_loaded"]
    with open_index(index) as r:
        assert sorted(Path(p).name for p in r.paths()) == ["bees.md", "bread.txt", "tides.txt"]
        assert r.verify() == []
        assert r.lexical_search("sourdough", 5) == []
        assert len(r.lexical_search("rye", 5)) == 1
    # the touched file is not even hashed next time
    rc, s, _ = embed_json(str(corpus), "--index", str(index))
    assert (s["unchanged"], s["parsed"], s["model_loaded"]) == (3, 0, False)
    # a file outside the given roots is never pruned; --no-prune keeps vanished files
    (corpus / "tides.txt").unlink()
    rc, s, _ = embed_json(str(corpus / "bees.md"), "--index", str(index))
    assert s["removed"] == 0
    rc, s, _ = embed_json(str(corpus), "--index", str(index), "--no-prune")
    assert s["removed"] == 0 and info(index)["documents"] == 3
    # new chunker options re-chunk everything; identical chunk texts keep their vectors
    rc, s, _ = embed_json(str(corpus), "--index", str(index), "--size", "12")
    assert s["parsed"] == 2 and s["removed"] == 1
    assert s["reused"] + s["embedded"] == s["chunks"] and s["chunks"] > 2
    assert info(index)["chunker_options"]["size"] == 12


def test_changing_the_model_is_refused_unless_rebuild(tmp_path):
    from ragsift.embedders import DEFAULT_MODEL_DIR
    from ragsift.embedders.weights import default_weights_path

    corpus = tmp_path / "c"
    _write_corpus(corpus)
    index = tmp_path / "i.db"
    assert embed_json(str(corpus), "--index", str(index))[0] == 0
    other = tmp_path / "other-model"
    shutil.copytree(DEFAULT_MODEL_DIR, other)
    shutil.copy(default_weights_path(), other / "model.onnx")
    before = hashlib.sha256(index.read_bytes()).hexdigest()
    proc = run("embed", str(corpus), "--index", str(index), "--model", str(other))
    assert proc.returncode == 2
    assert "was built with model all-MiniLM-L6-v2" in proc.stderr and "--rebuild" in proc.stderr
    assert hashlib.sha256(index.read_bytes()).hexdigest() == before
    rc, s, _ = embed_json(str(corpus), "--index", str(index), "--model", str(other), "--rebuild")
    assert rc == 0 and s["parsed"] == 4 and s["embedded"] == s["chunks"]
    assert info(index)["model"] == "other-model"


def test_stdin_chunk_records(tmp_path):
    corpus = tmp_path / "c"
    _write_corpus(corpus)
    chunked = run("chunk", str(corpus), "--size", "16")
    assert chunked.returncode == 0, chunked.stderr
    records = [json.loads(line) for line in chunked.stdout.splitlines()]
    index = tmp_path / "s.db"
    rc, s, _ = embed_json("-", "--index", str(index), input=chunked.stdout)
    assert rc == 0 and s["chunks"] == len(records) and s["parsed"] == 4
    with open_index(index) as r:
        rowids, _ = r.load_matrix()
        stored = {rec["id"]: rec for rec in r.chunks(rowids.tolist())}
    for rec in records:
        got = stored[rec["id"]]
        assert {k: got[k] for k in rec} == rec
    # the same records again: nothing to do
    rc, s, _ = embed_json("-", "--index", str(index), input=chunked.stdout)
    assert (s["unchanged"], s["embedded"]) == (4, 0)
    # bad lines are reported one by one, good ones indexed, exit 3
    bad = (
        "\n".join(
            [
                "not json",
                json.dumps({"path": "x.md", "text": "no index"}),
                json.dumps({"path": "x.md", "index": 0, "text": 5}),
                json.dumps([1, 2]),
                json.dumps({"path": "y.md", "index": 0, "text": "fine text here"}),
            ]
        )
        + "\n"
    )
    proc = run("embed", "-", "--index", str(tmp_path / "b.db"), input=bad)
    assert proc.returncode == 3
    for n in (1, 2, 3, 4):
        assert f"ragsift: skipped stdin line {n}:" in proc.stderr
    assert "missing field 'index'" in proc.stderr and "field 'text' must be str" in proc.stderr
    assert info(tmp_path / "b.db")["chunks"] == 1
    proc = run("embed", "-", str(corpus), "--index", str(tmp_path / "b.db"), input=bad)
    assert proc.returncode == 2 and "cannot be combined" in proc.stderr


def test_truncation_is_counted_and_warned(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "long.txt").write_text(" ".join(f"word{i}" for i in range(600)) + "\n")
    index = tmp_path / "t.db"
    rc, s, err = embed_json(
        str(corpus), "--index", str(index), "--tokenizer", "chars", "--size", "20000"
    )
    assert rc == 0 and s["truncated"] == 1 and s["truncated_tokens"] > 0
    assert "1 chunk was longer than the model's max length" in err
    assert info(index)["truncated"] == 1
    with open_index(index) as r:
        assert r.chunks(r.load_matrix()[0].tolist())[0]["truncated"] == s["truncated_tokens"]


def test_foreign_index_busy_index_and_exit_codes(tmp_path):
    corpus = tmp_path / "c"
    _write_corpus(corpus)
    foreign = tmp_path / "notes.db"
    foreign.write_text("my precious notes\n" * 10)
    proc = run("embed", str(corpus), "--index", str(foreign))
    assert proc.returncode == 2 and "not a ragsift index" in proc.stderr
    assert foreign.read_text() == "my precious notes\n" * 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "notes.db"]

    index = tmp_path / "i.db"
    holder = open_index(index, "w")
    try:
        proc = run("embed", str(corpus), "--index", str(index))
        assert proc.returncode == 2
        assert f"is being written by PID {os.getpid()}" in proc.stderr
        waiter = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragsift",
                "embed",
                str(corpus),
                "--index",
                str(index),
                "--wait",
                "--json",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        time.sleep(1.0)
        assert waiter.poll() is None  # waiting for the lock
    finally:
        holder.close()
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    assert json.loads(out)["parsed"] == 4

    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run("embed", str(empty), "--index", str(tmp_path / "e.db"))
    assert proc.returncode == 1  # nothing indexed
    proc = run("embed", str(tmp_path / "missing"), "--index", str(tmp_path / "e.db"))
    assert proc.returncode == 2 and "missing: no such file or directory" in proc.stderr


def test_default_index_and_env(tmp_path):
    corpus = tmp_path / "c"
    _write_corpus(corpus)
    proc = run("embed", str(corpus), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == ""
    assert (tmp_path / "ragsift.db").is_file()
    env_index = tmp_path / "env.db"
    proc = run("info", "--json", cwd=tmp_path, env={"RAGSIFT_INDEX": str(env_index)})
    assert proc.returncode == 2 and str(env_index) in proc.stderr


def test_cli_modules_import_nothing_heavy():
    code = (
        "import sys, ragsift.cli; "
        "heavy = [m for m in ('numpy', 'onnxruntime', 'tokenizers', 'sqlite3', 'tiktoken') "
        "if m in sys.modules]; print(heavy)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]"


def test_unsized_strategy_gets_no_default_size(tmp_path):
    # `whole` takes no --size: embed must not pass its model-length default to it.
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "long.txt").write_text(" ".join(f"word{i}" for i in range(600)) + "\n")
    rc, s, err = embed_json(str(corpus), "--index", str(tmp_path / "w.db"), "--strategy", "whole")
    assert rc == 0, err
    assert s["chunks"] == 1 and s["truncated"] == 1
