"""An index knows what built it (issue 30): a pipeline fingerprint per document (reader of its
format, chunker, unit rule), the version that last wrote it, and the oldest version that may
write it. ``tests/data/index-0.3.0.db.gz`` was written by ragsift 0.3.0 (commit 29fadd7,
``ragsift embed docs -i old.db`` over fixtures/sourdough.rst, fixtures/field-notes.txt and
fixtures/beekeeping/handbook.md copied into ``/tmp/v030/docs``)."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3

import pytest

import ragsift.api as rs
from tests.conftest import REPO, run_cli

OLD_ROOT = "/tmp/v030/docs"  # where 0.3.0 read the documents (its keys are absolute paths)
FILES = {
    "sourdough.rst": "fixtures/sourdough.rst",
    "field-notes.txt": "fixtures/field-notes.txt",
    "handbook.md": "fixtures/beekeeping/handbook.md",
}


def _reweigh(index) -> None:
    """Give the 0.3.0 index the evidence layout of this ragsift, as a --rebuild would: each
    chunk's vector the length-weighted mean of its stored units (0.3.0 stored their plain
    mean, ``units-1``; its chunks have no context). What an index of another layout gets is
    tested below (one line, --rebuild); the tests here are about pipeline fingerprints."""
    import numpy as np

    from ragsift.embedders import evidence

    db = sqlite3.connect(index)
    units = {}
    for rowid, blob, context in db.execute("SELECT id, units, context FROM chunks"):
        assert not context.strip()
        starts, ends, _, _ = evidence.decode(blob)
        units[rowid] = evidence.aggregate(
            evidence.unit_vectors(blob), evidence.weights(list(zip(starts, ends)))
        )
    for block, rowids, data, dim in db.execute(
        "SELECT id, rowids, data, dim FROM vec_blocks"
    ).fetchall():
        ids = np.frombuffer(rowids, "<i8")
        m = np.frombuffer(data, "<f4").reshape(len(ids), dim).copy()
        for i, r in enumerate(ids.tolist()):
            if r >= 0:
                m[i] = units[r]
        db.execute(
            "UPDATE vec_blocks SET data = ? WHERE id = ?", (m.astype("<f4").tobytes(), block)
        )
    db.execute(
        "UPDATE settings SET value = ? WHERE key = 'evidence'",
        (json.dumps(evidence.EVIDENCE_KIND),),
    )
    db.commit()
    db.close()


def _old_index(tmp_path):
    """The 0.3.0 index, its documents at this test's ``docs/`` (keys re-pointed there, as if
    it had been built in this folder), mtimes as 0.3.0 recorded them."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, src in FILES.items():
        shutil.copy2(REPO / src, docs / name)
    index = tmp_path / "old.db"
    index.write_bytes(gzip.decompress((REPO / "tests/data/index-0.3.0.db.gz").read_bytes()))
    db = sqlite3.connect(index)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4  # what 0.3.0 wrote
    db.execute(
        "UPDATE documents SET key = replace(key, ?, ?), path = replace(path, ?, ?)",
        (OLD_ROOT, str(docs), OLD_ROOT, str(docs)),
    )
    db.commit()
    db.close()
    return index, docs


@pytest.fixture
def old_index(tmp_path):
    """The 0.3.0 index with this ragsift's evidence layout (``_reweigh``)."""
    index, docs = _old_index(tmp_path)
    _reweigh(index)
    return index, docs


def test_an_index_of_the_first_unit_layout_is_refused_with_one_line(tmp_path):
    """0.3.0 as it is (``units-1``): reading and writing stop with one line and --rebuild;
    --rebuild makes it this version's."""
    index, docs = _old_index(tmp_path)
    for args in (("query", "When do honey bees swarm?"), ("embed", str(docs))):
        proc = run_cli(*args, "-i", str(index))
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "plain mean of their units" in proc.stderr
        assert "--rebuild" in proc.stderr
    proc = run_cli("embed", str(docs), "-i", str(index), "--rebuild", "--json")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("query", "When do honey bees swarm?", "-i", str(index)).returncode == 0


def _embed(docs, index):
    proc = run_cli("embed", str(docs), "-i", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_an_index_from_the_previous_release_is_read_then_upgraded_once(old_index):
    index, docs = old_index
    proc = run_cli("query", "When do honey bees swarm?", "-i", str(index), "--json")
    assert proc.returncode == 0, proc.stderr  # a reader reads it as it is
    summary, stderr = _embed(docs, index)
    # every document lacked a pipeline fingerprint: re-chunked once, no vector re-embedded
    assert summary["rechunked"] == 3 and summary["parsed"] == 3
    assert summary["embedded"] == 0 and summary["reused"] == summary["chunks"]
    assert "3 documents re-chunked: built before ragsift recorded its pipeline" in stderr
    info = json.loads(run_cli("info", "--json", "-i", str(index)).stdout)
    from ragsift.version import MIN_WRITER_VERSION, __version__

    assert info["written_by"] == __version__ and info["min_writer_version"] == MIN_WRITER_VERSION
    assert info["documents"] == 3
    again, stderr = _embed(docs, index)
    assert again["unchanged"] == 3 and again["rechunked"] == 0 and "re-chunked" not in stderr


def test_only_the_documents_whose_reader_changed_are_re_chunked(old_index, monkeypatch):
    index, docs = old_index
    _embed(docs, index)  # upgraded: every document carries this version's fingerprint
    from ragsift.sources import formats

    number, library = formats.READERS["rst"]
    monkeypatch.setitem(formats.READERS, "rst", (number + 1, library))  # a new rst reader
    monkeypatch.setattr(formats, "_FINGERPRINTS", {})
    summary = rs.build(index, [docs])
    assert summary.rechunked == {"the rst reader changed": 1}
    assert summary.parsed == 1 and summary.unchanged == 2 and summary.embedded == 0
    assert summary.rechunked_line() == "1 document re-chunked: the rst reader changed"
    assert summary.as_dict()["rechunked_because"] == {"the rst reader changed": 1}
    again = rs.build(index, [docs])
    assert again.unchanged == 3 and not again.rechunked


def test_an_older_ragsift_never_writes_an_index_a_newer_one_bound(old_index):
    """A ragsift from the future raised ``min_writer_version`` past ours: writing is refused
    with one line naming both versions; reading goes on. (Releases before 0.4.0 know no such
    setting: schema 5 stops them, `index ... has schema version 5, newer than this ragsift
    understands (4)`, exit 2: checked by hand against 0.3.0, see the closing note.)"""
    index, docs = old_index
    _embed(docs, index)
    db = sqlite3.connect(index)
    db.executemany(
        "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
        [("written_by", json.dumps("9.1.0")), ("min_writer_version", json.dumps("9.0.0"))],
    )
    db.commit()
    db.close()
    from ragsift.version import __version__

    for args in (("embed", str(docs)), ("rm", "*"), ("embed", str(docs), "--rebuild")):
        proc = run_cli(*args, "-i", str(index))
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1
        assert (
            f"written by ragsift 9.1.0; only ragsift 9.0.0 or newer may write it, and this "
            f"is ragsift {__version__}"
        ) in proc.stderr
    assert run_cli("query", "bees", "-i", str(index)).returncode in (0, 1)
    assert run_cli("ls", "-i", str(index)).returncode == 0
    db = sqlite3.connect(index)
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 3  # nothing written
    db.close()


def test_the_schema_moves_past_what_the_previous_release_reads():
    """0.3.0 refuses any schema above 4 (its ``migrations.LATEST``): the schema number this
    release writes is what keeps the previous release from writing under absolute keys."""
    from ragsift.index import migrations

    assert migrations.LATEST >= 5
