"""A damaged index is a user error with a way out (issue 23): a SQLite vector block cut short
and a Lance data file cut short make `query`, `explain`, `info --check` (and an `embed` that
needs the vectors) exit 2 with one line, "index damaged: … --rebuild", never "internal
error"; `embed --rebuild` then makes a sound index again."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli


def _check_commands(idx: str) -> None:
    for args in (["query", "when do honey bees swarm"], ["explain", "bees"], ["info", "--check"]):
        proc = run_cli(*args, "--index", idx)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and "index damaged: " in lines[0] and "--rebuild" in lines[0], (
            args,
            proc.stderr,
        )
        assert "internal error" not in proc.stderr


def test_a_truncated_sqlite_vector_block(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "fixtures", docs)
    idx = str(tmp_path / "idx.db")
    assert run_cli("embed", str(docs), "--index", idx).returncode == 3
    db = sqlite3.connect(idx)
    bid, data = db.execute("SELECT id, data FROM vec_blocks ORDER BY id LIMIT 1").fetchone()
    db.execute("UPDATE vec_blocks SET data = ? WHERE id = ?", (data[: len(data) // 2], bid))
    db.commit()
    db.close()
    _check_commands(idx)
    with open(docs / "field-notes.txt", "a", encoding="utf-8") as fh:
        fh.write("\nA late swarm left the apple tree at noon.\n")
    proc = run_cli("embed", str(docs), "--index", idx)  # reuses stored vectors: reads blocks
    assert proc.returncode == 2 and "index damaged: " in proc.stderr, proc.stderr
    assert run_cli("embed", str(docs), "--index", idx, "--rebuild").returncode == 3
    assert run_cli("info", "--check", "--index", idx).returncode == 0


def test_a_truncated_lance_data_file(tmp_path):
    pytest.importorskip("lance", reason="the Lance backend is part of [test]")
    idx = str(tmp_path / "idx.lance")
    assert run_cli("embed", "fixtures", "--index", idx).returncode == 3
    data = sorted((Path(idx) / "chunks.lance" / "data").glob("*.lance"))
    assert data
    for f in data:
        with open(f, "r+b") as fh:
            fh.truncate(f.stat().st_size // 2)
    _check_commands(idx)
    assert run_cli("embed", "fixtures", "--index", idx, "--rebuild").returncode == 3
    assert run_cli("info", "--check", "--index", idx).returncode == 0


def test_sqlite_pages_damaged_under_an_open_index(tmp_path):
    """The file opens (its header, schema and settings are sound) but the chunk pages a
    query reads are garbage: each command says so in the one line opening it would give,
    and closing the damaged file does not replace that line with an internal error."""
    idx = str(tmp_path / "idx.db")
    assert run_cli("embed", "fixtures", "--index", idx).returncode == 3
    db = sqlite3.connect(idx)
    size = db.execute("PRAGMA page_size").fetchone()[0]
    pages = [n for (n,) in db.execute("SELECT pageno FROM dbstat WHERE name = 'chunks'")]
    db.close()
    assert pages
    with open(idx, "r+b") as fh:
        for n in pages:
            fh.seek((n - 1) * size)
            fh.write(b"\xa5" * size)
    for args in (["query", "when do honey bees swarm"], ["explain", "bees"], ["ls"]):
        proc = run_cli(*args, "--index", idx)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and "is corrupt" in lines[0] and "--rebuild" in lines[0], (
            args,
            proc.stderr,
        )
