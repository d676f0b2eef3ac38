"""IndexStore on real SQLite files in tmp_path.

These are unit tests of the store only, so vectors are made here (random, seeded) instead of
by the model: what is tested is that vectors, chunks and the FTS index stay consistent and
come back bit for bit, which does not depend on where the numbers came from. The embed CLI
tests (test_embed_cli.py) use the real model end to end.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsift.errors import RagsiftError
from ragsift.index import migrations, open_index
from ragsift.index.backend import ChunkRow, DocumentWrite

DIM = 8


def _records(path: str, texts: list[str], context: str = "") -> list[ChunkRow]:
    out = []
    pos = 0
    for i, t in enumerate(texts):
        out.append(
            ChunkRow(
                path=path,
                index=i,
                text=t,
                start=pos,
                end=pos + len(t),
                context=context,
                tokens=len(t.split()),
                chars=len(t),
                line_start=i + 1,
                line_end=i + 1,
                headings=("Top", f"Sec {i}"),
                page=None,
                level=i % 2,
                content_hash=hashlib.sha256((context + t).encode()).hexdigest()[:32],
                truncated=0,
            )
        )
        pos += len(t) + 1
    return out


def _doc(path: str, texts: list[str], seed: int = 0, **kw) -> DocumentWrite:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((len(texts), DIM)).astype(np.float32)
    return DocumentWrite(
        key="/abs/" + path,
        path=path,
        sha256=f"sha-{path}-{seed}",
        records=_records(path, texts),
        vectors=vecs,
        **kw,
    )


def _file_digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def index(tmp_path):
    return tmp_path / "t.db"


def test_roundtrip_settings_matrix_and_chunks(index):
    a = _doc("a.md", ["alpha one", "beta two", "gamma three"], seed=1)
    b = _doc("b.md", ["delta four"], seed=2)
    with open_index(index, "w") as s:
        s.set_settings(
            model="m",
            model_fingerprint="fp",
            dimensions=DIM,
            chunker="recursive",
            chunker_options={"size": 10},
        )
        s.write_documents([a, b])
    with open_index(index) as r:
        st_ = r.settings()
        assert st_["model_fingerprint"] == "fp" and st_["dimensions"] == DIM
        assert st_["chunker_options"] == {"size": 10}
        assert st_["schema_version"] == migrations.LATEST
        rowids, matrix = r.load_matrix()
        assert rowids.dtype == np.int64 and matrix.dtype == np.float32
        assert matrix.shape == (4, DIM) and matrix.flags.c_contiguous
        recs = r.chunks(rowids.tolist())
        assert [x["id"] for x in recs] == ["a.md#0", "a.md#1", "a.md#2", "b.md#0"]
        np.testing.assert_array_equal(matrix, np.concatenate([a.vectors, b.vectors]))
        # every ``ragsift chunk`` field comes back, plus rowid / content_hash / truncated
        want = {**a.records[1].to_json(content_hash=True), "truncated": 0}
        got = r.chunks([int(rowids[1])])[0]
        assert got.pop("rowid") == int(rowids[1])
        assert got == want
        # in the order asked, unknown ids left out
        assert [x["id"] for x in r.chunks([int(rowids[3]), 999, int(rowids[0])])] == [
            "b.md#0",
            "a.md#0",
        ]
        assert r.paths() == ["a.md", "b.md"]
        stats = r.stats()
        assert stats["documents"] == 2 and stats["chunks"] == 4 and stats["vectors"] == 4
        assert stats["size_bytes"] > 0


def test_replacing_a_document_keeps_vectors_chunks_and_fts_in_step(index):
    with open_index(index, "w") as s:
        s.write_documents(
            [_doc("a.md", ["apple pie", "banana split"], 1), _doc("b.md", ["cherry tart"], 2)]
        )
        old_ids, _ = s.load_matrix()
        assert [i for i, _ in s.lexical_search("banana", 5)] == [int(old_ids[1])]
        new = _doc("a.md", ["durian cake"], 3)
        s.write_documents([new])
        rowids, matrix = s.load_matrix()
        assert len(rowids) == 2 and not set(old_ids[:2].tolist()) & set(rowids.tolist())
        assert s.lexical_search("banana", 5) == []  # deleted chunk left the FTS index
        assert [r["text"] for r in s.chunks(rowids.tolist())] == ["cherry tart", "durian cake"]
        assert s.verify() == []
        assert s.remove_documents(["/abs/b.md", "/abs/nope"]) == 1
        assert s.lexical_search("cherry", 5) == []
        assert s.verify() == []
        rowids, matrix = s.load_matrix()
        np.testing.assert_array_equal(matrix, new.vectors)


def test_blocks_are_compacted_and_load_stays_exact(index):
    docs = [_doc(f"d{i:03d}.txt", [f"text {i} a", f"text {i} b"], seed=i) for i in range(150)]
    with open_index(index, "w") as s:
        for d in docs:  # one batch per document: many tiny blocks
            s.write_documents([d])
        s.write_documents([_doc("d005.txt", ["changed"], seed=999)])
        s.remove_documents(["/abs/d007.txt"])
        before_ids, before = s.load_matrix()
        assert s.stats()["blocks"] >= 140
        s.compact()
        after_ids, after = s.load_matrix()
        assert s.stats()["blocks"] == 1 and s.stats()["dead_vectors"] == 0
        assert s.verify() == []
    order_a, order_b = np.argsort(before_ids), np.argsort(after_ids)
    np.testing.assert_array_equal(before_ids[order_a], after_ids[order_b])
    np.testing.assert_array_equal(before[order_a], after[order_b])
    assert len(after_ids) == 2 * 150 - 2 + 1 - 2  # d005 replaced by one chunk, d007 gone


def test_vectors_for_hashes_reuses_stored_vectors(index):
    d = _doc("a.md", ["one", "two"], seed=4)
    with open_index(index, "w") as s:
        s.write_documents([d])
        found = s.vectors_for_hashes([r.content_hash for r in d.records] + ["missing"])
    assert set(found) == {r.content_hash for r in d.records}
    np.testing.assert_array_equal(found[d.records[1].content_hash][0], d.vectors[1])


NASTY = [
    '"',
    "'",
    '"unterminated',
    "a AND OR NOT b",
    "NEAR(a b)",
    "col:term",
    "x*",
    "^start",
    "(",
    ")",
    "{a b}",
    "-",
    "+",
    "a - b",
    "C++",
    "naïve café",
    "",
    "   ",
    "\x00",
    "日本語",
    '""""',
    "AND",
    "*",
]


@pytest.mark.parametrize("query", NASTY)
def test_lexical_search_never_raises_on_punctuation(index, query):
    with open_index(index, "w") as s:
        s.write_documents([_doc("a.md", ["C++ is fun", "naive cafe AND near", "日本語 text"])])
        hits = s.lexical_search(query, 10)
        assert all(isinstance(r, int) and isinstance(x, float) for r, x in hits)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=40))
def test_lexical_search_any_text(tmp_path, text):
    index = tmp_path / "h.db"
    with open_index(index, "w") as s:
        if not s.paths():
            s.write_documents([_doc("a.md", ["some words here", "other words"])])
        s.lexical_search(text, 5)


def test_lexical_search_drops_function_words_unless_nothing_else(index):
    # "of"/"the" would match every row below; dropped, only the content word decides
    with open_index(index, "w") as s:
        s.write_documents(
            [_doc("a.md", ["the history of the bees", "the end of the road", "rules of the game"])]
        )
        ids, _ = s.load_matrix()
        assert [r for r, _ in s.lexical_search("the history of", 10)] == [int(ids[0])]
        # a query made only of function words still searches with them
        assert len(s.lexical_search("of the", 10)) == 3


def test_lexical_search_ranks_filters_and_stems(index):
    with open_index(index, "w") as s:
        s.write_documents([_doc("a.md", ["the cat sat", "cats and dogs running", "nothing"])])
        ids, _ = s.load_matrix()
        hits = s.lexical_search("dogs run", 10)
        assert hits[0][0] == int(ids[1]) and hits[0][1] < 0  # raw bm25: negative, best first
        assert {r for r, _ in s.lexical_search("cat", 10)} == {int(ids[0]), int(ids[1])}
        assert [r for r, _ in s.lexical_search("cat", 10, rowids_filter=[int(ids[0])])] == [
            int(ids[0])
        ]
        assert s.lexical_search("cat", 10, rowids_filter=[]) == []
        assert len(s.lexical_search("cat", 1)) == 1


def test_context_is_searchable(index):
    d = _doc("a.md", ["plain body"])
    d = replace(d, records=tuple(replace(r, context="Installation guide\n") for r in d.records))
    with open_index(index, "w") as s:
        s.write_documents([d])
        assert len(s.lexical_search("installation", 5)) == 1


@pytest.mark.parametrize(
    "content", [b"just some text\n" * 20, os.urandom(4096), b"SQLite format 3\x00" + b"\x00" * 50]
)
def test_foreign_files_are_refused_and_untouched(tmp_path, content):
    f = tmp_path / "notes.db"
    f.write_bytes(content)
    digest = _file_digest(f)
    for mode in ("r", "w"):
        with pytest.raises(RagsiftError, match="not a ragsift index|corrupt"):
            open_index(f, mode)
    assert _file_digest(f) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_other_sqlite_database_is_refused_and_untouched(tmp_path):
    f = tmp_path / "app.db"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE t(x)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    con.close()
    digest = _file_digest(f)
    with pytest.raises(RagsiftError, match="SQLite database but not a ragsift index"):
        open_index(f, "w")
    assert _file_digest(f) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_truncated_index_is_refused(tmp_path, index):
    with open_index(index, "w") as s:
        s.write_documents([_doc(f"d{i}.md", ["x " * 2000] * 3, seed=i) for i in range(20)])
    data = index.read_bytes()
    bad = tmp_path / "bad.db"
    bad.write_bytes(data[: len(data) // 3])
    digest = _file_digest(bad)
    with pytest.raises(RagsiftError), open_index(bad) as r:
        r.load_matrix()
        r.chunks(list(range(1, 100)))
    assert _file_digest(bad) == digest


def test_missing_empty_directory_and_newer_schema(tmp_path, index):
    with pytest.raises(RagsiftError, match="no index at"):
        open_index(tmp_path / "none.db")
    with pytest.raises(RagsiftError, match="directory"):
        open_index(tmp_path, "w")
    with open_index(index, "w"):
        pass
    con = sqlite3.connect(index)
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    with pytest.raises(RagsiftError, match="newer"):
        open_index(index)
    with pytest.raises(RagsiftError, match="newer"):
        open_index(index, "w")


def test_second_writer_is_refused_with_the_pid_or_waits(index):
    first = open_index(index, "w")
    try:
        with pytest.raises(RagsiftError, match=f"being written by PID {os.getpid()}"):
            open_index(index, "w")
        got: list = []

        def waiter():
            with open_index(index, "w", wait=True) as s:
                got.append(s.stats()["documents"])

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.3)
        assert not got  # still waiting
        first.write_documents([_doc("a.md", ["x"])])
    finally:
        first.close()
    t.join(10)
    assert got == [1]
    assert not os.path.exists(f"{index}-lock")  # removed on release


def test_reader_keeps_a_snapshot_during_a_write(index):
    with open_index(index, "w") as w:
        w.write_documents([_doc("a.md", ["first"])])
        reader = open_index(index)
        with w.transaction():
            w.write_documents([_doc("b.md", ["second"])])
            # uncommitted: a new reader does not see it, and is not blocked
            with open_index(index) as r2:
                assert r2.paths() == ["a.md"]
        assert reader.paths() == ["a.md"]  # snapshot taken at open
        ids, _m = reader.load_matrix()
        assert len(reader.chunks(ids.tolist())) == len(ids) == 1
        reader.refresh()
        assert reader.paths() == ["a.md", "b.md"]
        reader.close()


def test_reader_cannot_write_and_rollback_leaves_nothing(index):
    with open_index(index, "w") as w:
        w.write_documents([_doc("a.md", ["first"])])
        with pytest.raises(ValueError), w.transaction():
            w.write_documents([_doc("b.md", ["second"])])
            raise ValueError("boom")
        assert w.paths() == ["a.md"] and w.verify() == []
    with open_index(index) as r, pytest.raises(RagsiftError, match="read-only"):
        r.write_documents([_doc("c.md", ["x"])])


def test_dimension_mismatch_and_clear(index):
    with open_index(index, "w") as s:
        s.write_documents([_doc("a.md", ["x"])])
        bad = replace(_doc("b.md", ["y"]), vectors=np.zeros((1, DIM + 1), np.float32))
        with pytest.raises(RagsiftError, match="dimensions"):
            s.write_documents([bad])
        s.clear()
        assert s.stats()["chunks"] == 0 and s.lexical_search("x", 5) == []
        assert s.settings()["dimensions"] is None
        s.write_documents([bad])  # a cleared index takes the new width
        assert s.load_matrix()[1].shape == (1, DIM + 1)
        assert s.verify() == []


def test_empty_document_is_recorded(index):
    with open_index(index, "w") as s:
        s.write_documents(
            [
                DocumentWrite(
                    key="/e",
                    path="e.txt",
                    sha256="0",
                    records=[],
                    vectors=np.zeros((0, DIM), np.float32),
                )
            ]
        )
        assert s.paths() == ["e.txt"] and s.stats()["chunks"] == 0
        assert s.documents_state()["/e"].n_chunks == 0
