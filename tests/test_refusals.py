"""A refusal changes nothing (issue 40, item 5): every command that refuses an index (a newer
writer bound it, a newer schema, another model, an older evidence layout, the writer lock
held by another process) leaves it byte for byte as it was, on SQLite (the file's sha256)
and on Lance (the folder's listing and every file's sha256).

Opening an index to write wrote before: SQLite ran the missing migrations and both backends
recorded ``written_by``/``min_writer_version`` before any check could refuse (a 0.2.0 index
refused by ``embed`` for its evidence layout came out migrated, schema 2 to 5 in the issue,
which neither 0.2.0 nor this version would then write). Now opening writes nothing, and the first write does the
upgrade and the stamp in its own transaction: a write that fails takes them back with it.

Each index here is of an older schema (SQLite 5, Lance 3), so that a writer opening it has an
upgrade to make; the vectors are random, the model a stand-in (nothing is ever embedded).
``tests/data/index-0.2.0.db.gz`` was written by ragsift 0.2.0 (the tree of 9ef5013^, schema 2:
``ragsift embed docs -i old.db`` over the three files ``test_versions.py``'s 0.3.0 index
holds, copied into ``/tmp/v020w/docs``)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ragsift.errors import RagsiftError
from ragsift.index import migrations, open_index
from ragsift.index.backend import ChunkRow, DocumentWrite
from tests.conftest import REPO, run_cli

BACKENDS = ["sqlite", "lance"]
DIM = 8
TEXTS = {
    "a.md": ["Honeybees swarm in late spring.", "call url_for in a view"],
    "b.md": ["Sourdough needs a lively starter."],
}


class StandIn:
    """An embedder that is never asked to embed: what ``embed`` binds to the index."""

    def __init__(self, fingerprint: str) -> None:
        self.name = fingerprint.split("/")[0]
        self.fingerprint = fingerprint
        self.dimensions = DIM
        self.max_length = 128

    def embed(self, texts, kind="passage"):  # pragma: no cover - a refusal comes first
        raise AssertionError("a refused run embedded something")


def snapshot(location: str) -> dict[str, str]:
    """What must not change: each file's sha256 by its path under the index (SQLite: the
    file, and its write-ahead log where one holds anything; Lance: every file of the folder,
    so a file added or removed shows too)."""
    if os.path.isdir(location):
        out = {}
        for root, _dirs, files in os.walk(location):
            for name in files:
                full = os.path.join(root, name)
                out[os.path.relpath(full, location)] = hashlib.sha256(
                    Path(full).read_bytes()
                ).hexdigest()
        return out
    out = {".": hashlib.sha256(Path(location).read_bytes()).hexdigest()}
    wal = location + "-wal"
    if os.path.exists(wal) and os.path.getsize(wal):
        out["-wal"] = hashlib.sha256(Path(wal).read_bytes()).hexdigest()
    return out


def _writes() -> list[DocumentWrite]:
    rng = np.random.default_rng(40)
    out = []
    for path, texts in TEXTS.items():
        vecs = rng.standard_normal((len(texts), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        out.append(
            DocumentWrite(
                key=path,
                path=path,
                sha256="0" * 64,
                vectors=vecs,
                records=[
                    ChunkRow(
                        path=path,
                        index=i,
                        text=t,
                        content_hash=f"{path}-{i}",
                        tokens=len(t.split()),
                    )
                    for i, t in enumerate(texts)
                ],
            )
        )
    return out


def _old_index(tmp_path: Path, backend: str, monkeypatch, **settings) -> str:
    """An index of the schema before this one (SQLite 5, Lance 3) as a writer of that time
    left it, with ``settings`` on top of the model's."""
    from ragsift.embedders.evidence import EVIDENCE_KIND

    values = {
        "model": "test",
        "model_fingerprint": "test/8/x",
        "dimensions": DIM,
        "model_source": "test",
        "evidence": EVIDENCE_KIND,
        **settings,
    }
    if backend == "lance":
        pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")
        from ragsift.index import lance as lance_module

        location = str(tmp_path / "old.lance")
        with monkeypatch.context() as m:
            m.setattr(lance_module, "SCHEMA_VERSION", 3)
            with open_index(location, "w") as ix:
                ix.write_documents(_writes())
                ix.set_settings(**values)
                ix.compact()
            with open_index(location, "r") as ix:
                assert ix.settings()["schema_version"] == 3
        return location
    location = str(tmp_path / "old.db")
    with open_index(location, "w") as ix:
        ix.write_documents(_writes())
        ix.set_settings(**values)
        ix.compact()
    db = sqlite3.connect(location, isolation_level=None)
    db.execute("PRAGMA user_version = 5")  # m006 has work to do: the CJK terms' upgrade
    db.execute("DELETE FROM settings WHERE key = 'written_by'")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return location


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "new.md").write_text("Something new to embed.\n")
    return docs


def _embed(tmp_path: Path, location: str, embedder) -> None:
    from ragsift.chunkers import make_chunker
    from ragsift.ingest import BuildRequest, build_index

    chunker = make_chunker("recursive", tokenizer="cl100k", size=200, min_chars=0)
    build_index(
        BuildRequest.of(location, [str(_docs(tmp_path))], chunker=chunker, embedder=embedder)
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_model_is_refused_and_the_index_is_byte_identical(tmp_path, backend, monkeypatch):
    location = _old_index(tmp_path, backend, monkeypatch)
    before = snapshot(location)
    with pytest.raises(RagsiftError, match="was built with model test"):
        _embed(tmp_path, location, StandIn("other/8/y"))
    assert snapshot(location) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_older_evidence_layout_is_refused_and_the_index_is_byte_identical(
    tmp_path, backend, monkeypatch
):
    location = _old_index(tmp_path, backend, monkeypatch, evidence="units-1")
    before = snapshot(location)
    with pytest.raises(
        RagsiftError, match=r"build\(PATH\.\.\., index=INDEX, rebuild=True\)"
    ) as err:
        _embed(tmp_path, location, StandIn("test/8/x"))
    assert snapshot(location) == before
    # the way out in the CLI's words (issue 39, item 2: the API's message names the call)
    from ragsift.cli._common import flag_name

    assert "`ragsift embed PATH... --index INDEX --rebuild`" in err.value.worded(flag_name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_newer_writer_bound_is_refused_and_the_index_is_byte_identical(
    tmp_path, backend, monkeypatch
):
    location = _old_index(
        tmp_path, backend, monkeypatch, written_by="9.1.0", min_writer_version="9.0.0"
    )
    before = snapshot(location)
    with pytest.raises(RagsiftError, match="only ragsift 9.0.0 or newer may write it"):
        open_index(location, "w")
    with pytest.raises(RagsiftError, match="only ragsift 9.0.0 or newer may write it"):
        _embed(tmp_path, location, StandIn("test/8/x"))
    assert snapshot(location) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_held_lock_is_refused_and_the_index_is_byte_identical(tmp_path, backend, monkeypatch):
    from ragsift.index.locking import WriterLock

    location = _old_index(tmp_path, backend, monkeypatch)
    before = snapshot(location)
    lock = WriterLock(location)
    lock.acquire()
    try:
        with pytest.raises(RagsiftError, match="is being written by PID"):
            _embed(tmp_path, location, StandIn("test/8/x"))
    finally:
        lock.release()
    assert snapshot(location) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_newer_schema_is_refused_and_the_index_is_byte_identical(tmp_path, backend, monkeypatch):
    location = _old_index(tmp_path, backend, monkeypatch)
    if backend == "lance":
        with open_index(location, "w") as ix:  # what a future ragsift would have recorded
            ix._put_settings({"schema_version": 99})
    else:
        db = sqlite3.connect(location, isolation_level=None)
        db.execute("PRAGMA user_version = 99")
        db.close()
    before = snapshot(location)
    with pytest.raises(RagsiftError, match="schema version 99, newer than this ragsift"):
        _embed(tmp_path, location, StandIn("test/8/x"))
    assert snapshot(location) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_writer_that_writes_nothing_changes_nothing(tmp_path, backend, monkeypatch):
    """``rm`` of a pattern no document matches, and a writer opened and closed: the older
    schema stays (readers read it with its own rule), nothing is stamped."""
    import ragsift.api as rs

    location = _old_index(tmp_path, backend, monkeypatch)
    before = snapshot(location)
    assert rs.remove(location, ["nothing-matches-*"]) == []
    with open_index(location, "w") as ix:
        assert ix.documents_state().keys() == set(TEXTS)
        assert ix.vectors_for_hashes(["a.md-0"])
    assert snapshot(location) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_upgrade_and_the_stamp_come_with_the_first_write(tmp_path, backend, monkeypatch):
    """The first write upgrades the schema and records the writer; on SQLite in its own
    transaction, so a write that fails (here: vectors of another width) takes both back."""
    from ragsift.version import MIN_WRITER_VERSION, __version__

    location = _old_index(tmp_path, backend, monkeypatch)
    if backend == "sqlite":
        before = snapshot(location)
        bad = DocumentWrite(
            key="c.md",
            path="c.md",
            sha256="0" * 64,
            vectors=np.ones((1, DIM + 1), np.float32),
            records=[ChunkRow(path="c.md", index=0, text="x", content_hash="c")],
        )
        with open_index(location, "w") as ix, pytest.raises(RagsiftError, match="dimensions"):
            ix.write_documents([bad])
        assert snapshot(location) == before
    with open_index(location, "w") as ix:
        ix.touch_document("a.md", size=12)
    with open_index(location, "r") as ix:
        settings = ix.settings()
        latest = migrations.LATEST if backend == "sqlite" else ix.settings()["schema_version"]
        assert settings["schema_version"] == latest
        assert settings["written_by"] == __version__
        assert settings["min_writer_version"] == MIN_WRITER_VERSION
        assert ix.verify() == []
    if backend == "lance":
        from ragsift.index.lance import SCHEMA_VERSION

        assert latest == SCHEMA_VERSION


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_rebuild_keeps_who_may_write_the_index(tmp_path, backend, monkeypatch):
    """``--rebuild`` (``clear``) drops every setting but ``written_by`` and the version
    floors: an older ragsift stays refused after it."""
    from ragsift.version import MIN_WRITER_VERSION, __version__

    location = _old_index(tmp_path, backend, monkeypatch)
    with open_index(location, "w") as ix:
        ix.clear()
    with open_index(location, "r") as ix:
        settings = ix.settings()
    assert settings["written_by"] == __version__
    assert settings["min_writer_version"] == MIN_WRITER_VERSION
    assert settings["model_fingerprint"] is None


# ---- the indexes of earlier releases, through the CLI ---------------------------------------

OLD_FILES = {
    "sourdough.rst": "fixtures/sourdough.rst",
    "field-notes.txt": "fixtures/field-notes.txt",
    "handbook.md": "fixtures/beekeeping/handbook.md",
}


@pytest.mark.parametrize("release", ["0.2.0", "0.3.0"])
def test_embed_on_an_index_of_an_earlier_release_refuses_and_changes_nothing(tmp_path, release):
    """The issue's case: ``embed`` on a 0.2.0 index (schema 2, one vector per chunk) and on a
    0.3.0 one (schema 4, ``units-1``) exits 2 with the ``--rebuild`` line; the file is the
    same after (it was migrated to schema 5 and stamped before the refusal). ``rm`` of
    nothing and ``query`` leave it too; ``--rebuild`` then makes it this version's."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, src in OLD_FILES.items():
        shutil.copy2(REPO / src, docs / name)
    index = tmp_path / "old.db"
    index.write_bytes(gzip.decompress((REPO / f"tests/data/index-{release}.db.gz").read_bytes()))
    before = snapshot(str(index))
    proc = run_cli("embed", str(docs), "-i", str(index))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "--rebuild" in proc.stderr
    assert snapshot(str(index)) == before
    assert run_cli("rm", "nothing-matches", "-i", str(index)).returncode == 1
    assert run_cli("query", "bees", "-i", str(index)).returncode == 2
    assert snapshot(str(index)) == before
    proc = run_cli("embed", str(docs), "-i", str(index), "--rebuild", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["index"]["schema_version"] == migrations.LATEST
