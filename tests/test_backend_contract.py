"""The index-backend contract (ragsift/index/backend.py, docs/CONTRACTS.md), as a suite any
backend must pass unchanged: add a backend to ``BACKENDS`` and run it. Reads (``IndexReader``)
and writes (``IndexWriter``: what ``embed``, ``rm`` and ``tune --save`` call), kill-safety and
error mapping. Every backend is opened the way every caller opens it, ``open_index``. Vectors are
synthetic unit vectors (the contract is about storage and candidates, not about a model)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragsift.embedders import evidence
from ragsift.errors import RagsiftError
from ragsift.index.backend import (
    SETTING_KEYS,
    ChunkRecord,
    ChunkRow,
    DocState,
    DocumentInfo,
    DocumentWrite,
    FragmentCommits,
    IndexReader,
    IndexWriter,
)
from tests.conftest import RAY_GROUP

DIM = 8


def _sqlite(path, mode="r", wait=False):
    from ragsift.index import open_index

    return open_index(str(path), mode, wait=wait)


def _lance(path, mode="r", wait=False):
    pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")
    from ragsift.index import open_index

    return open_index(f"{path}.lance", mode, wait=wait)


BACKENDS = {"sqlite": _sqlite, "lance": _lance}


@pytest.fixture(params=sorted(BACKENDS))
def open_backend(request):
    return BACKENDS[request.param]


def _unit(rng, n):
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _units(text, vector):
    """Unit evidence of a chunk: its words as units, each with the chunk's vector turned by a
    little (what ``embed`` stores: ``ragsift.embedders.evidence.encode``)."""
    bounds, at = [], 0
    for w in text.split():
        at = text.index(w, at)
        bounds.append((at, at + len(w)))
        at += len(w)
    vecs = np.stack([np.roll(vector, i) for i in range(len(bounds))])
    return evidence.encode(bounds, vecs)


def _doc(path, texts, vectors, key=None):
    records = [
        ChunkRow(
            path=path,
            index=i,
            text=t,
            start=0,
            end=len(t),
            tokens=len(t.split()),
            chars=len(t),
            line_start=i + 1,
            line_end=i + 1,
            headings=("H",),
            page=None,
            level=0,
            content_hash=f"{path}-{i}-{t}",
            truncated=0,
            units=_units(t, vectors[min(i, len(vectors) - 1)]),
        )
        for i, t in enumerate(texts)
    ]
    return DocumentWrite(
        key=key or path,
        path=path,
        sha256="0" * 64,
        records=records,
        vectors=vectors,
        size=100,
        mtime=1.0,
        format="markdown",
        chunker="test",
    )


TEXTS = {
    "docs/cats.md": ["cats purr when content", "a cat sleeps all day"],
    "docs/dogs.md": ["dogs bark at strangers", "a dog wags its tail"],
    "notes/log.md": ["reference code zq7x in the build log"],
}


@pytest.fixture
def filled(tmp_path, open_backend):
    """An index with three documents (5 chunks); returns (path, {path: vectors})."""
    rng = np.random.default_rng(7)
    vectors = {p: _unit(rng, len(t)) for p, t in TEXTS.items()}
    path = tmp_path / "index"
    with open_backend(path, "w") as b:
        b.set_settings(model="test", model_fingerprint="test/8/x", dimensions=DIM)
        b.write_documents([_doc(p, t, vectors[p]) for p, t in TEXTS.items()])
    return path, vectors


def _all(b):
    """rowid -> (record, vector) of everything, through the contract only."""
    probe = np.eye(DIM, dtype=np.float32)[:1]
    (hits,) = b.dense_candidates(probe, 1000)
    recs = b.chunk_records([r for r, _ in hits])
    return {r.rowid: r for r in recs}


def test_is_an_index_reader_and_a_writer_when_opened_to_write(filled, open_backend):
    with open_backend(filled[0]) as b:
        assert isinstance(b, IndexReader)
    with open_backend(filled[0], "w") as b:
        assert isinstance(b, IndexWriter)


def test_settings_round_trip(filled, open_backend):
    path, _ = filled
    with open_backend(path, "w") as b:
        b.set_settings(tuned_threshold={"value": 0.47, "queries": 13})
    with open_backend(path) as b:
        s = b.settings()
        assert set(SETTING_KEYS) <= set(s)
        assert s["model_fingerprint"] == "test/8/x" and s["dimensions"] == DIM
        assert s["tuned_threshold"] == {"value": 0.47, "queries": 13}


def test_documents_and_records_are_typed(filled, open_backend):
    with open_backend(filled[0]) as b:
        docs = b.documents()
        assert all(isinstance(d, DocumentInfo) for d in docs)
        assert [d.path for d in docs] == sorted(TEXTS) == b.paths()
        cats = next(d for d in docs if d.path == "docs/cats.md")
        assert (cats.chunks, cats.tokens, cats.size) == (2, 9, 100) and cats.indexed_at > 0
        recs = _all(b)
        assert len(recs) == 5 == b.count() and all(
            isinstance(r, ChunkRecord) for r in recs.values()
        )
        r = next(r for r in recs.values() if r.path == "docs/dogs.md" and r.index == 1)
        assert (r.id, r.text, r.headings, r.line_start) == (
            "docs/dogs.md#1",
            "a dog wags its tail",
            ("H",),
            2,
        )
        ids = list(recs)
        asked = [ids[3], 10**9, ids[0]]
        assert [x.rowid for x in b.chunk_records(asked)] == [ids[3], ids[0]]  # order asked


def test_dense_candidates_are_exact_ordered_and_filtered(filled, open_backend):
    path, vectors = filled
    rng = np.random.default_rng(3)
    queries = _unit(rng, 4)
    with open_backend(path) as b:
        recs = _all(b)
        vec_of = {rid: vectors[r.path][r.index] for rid, r in recs.items()}
        batch = b.dense_candidates(queries, 3)
        for q, hits in zip(queries, batch):
            want = sorted(
                ((rid, float(v @ q)) for rid, v in vec_of.items()), key=lambda x: (-x[1], x[0])
            )[:3]
            assert [r for r, _ in hits] == [r for r, _ in want]
            assert [s for _, s in hits] == pytest.approx([s for _, s in want], abs=1e-5)
            # a query's scores never depend on the batch; a deeper list extends, never reshuffles
            assert b.dense_candidates(q[None, :], 3)[0] == hits
            assert b.dense_candidates(q[None, :], 5)[0][:3] == hits
            # cosines agree with dense_candidates exactly; unknown ids give None
            assert b.cosines(q, [r for r, _ in hits] + [10**9]) == [s for _, s in hits] + [None]
        (only,) = b.dense_candidates(queries[:1], 10, paths={"docs/dogs.md"})
        assert {recs[r].path for r, _ in only} == {"docs/dogs.md"} and len(only) == 2
        assert b.dense_candidates(queries[:1], 10, paths=set()) == [[]]
        assert b.count({"docs/dogs.md", "notes/log.md"}) == 3


def test_dense_ties_break_by_rowid(tmp_path, open_backend):
    same = np.tile(np.eye(DIM, dtype=np.float32)[:1], (4, 1))
    with open_backend(tmp_path / "ties", "w") as b:
        b.write_documents([_doc("a.md", ["one", "two", "three", "four"], same)])
        hits = b.dense_candidates(np.eye(DIM, dtype=np.float32)[:1], 2)[0]
        ids = sorted(r.rowid for r in _all(b).values())
        assert [r for r, _ in hits] == ids[:2]


def test_lexical_candidates(filled, open_backend):
    with open_backend(filled[0]) as b:
        recs = _all(b)
        hits = b.lexical_candidates("zq7x build", 10)
        assert [recs[r].path for r, _ in hits] == ["notes/log.md"]
        assert all(s > 0 for _, s in hits)  # larger is better
        both = b.lexical_candidates("cat dog", 10)
        assert [s for _, s in both] == sorted((s for _, s in both), reverse=True)
        assert {
            recs[r].path for r, _ in b.lexical_candidates("cat dog", 10, paths={"docs/dogs.md"})
        } == {"docs/dogs.md"}
        assert len(b.lexical_candidates("cat dog", 1)) == 1
        for text in ("", "   ", '"AND OR NOT (*', "NEAR(", "-- ; DROP TABLE"):
            assert isinstance(b.lexical_candidates(text, 5), list)


def test_identifiers_match_whole_first_and_by_their_parts(tmp_path, open_backend):
    # issue 28: an identifier is a term whole (`url_for`, `--dry-run`, `typer.echo`) beside
    # its parts, and a camelCase word is findable by its parts, on every backend alike
    texts = {
        "docs/api.md": [
            "build a link with url_for here",
            "pass --dry-run first",
            "print with typer.echo",
            "names in camelCase style",
        ],
        "docs/decoys.md": [
            "url url for url for rules",
            "a dry run, run run dry",
            "typer echo typer echo",
            "a camel in case of camel",
        ],
    }
    rng = np.random.default_rng(11)
    with open_backend(tmp_path / "ids", "w") as b:
        b.set_settings(model="test", model_fingerprint="test/8/x", dimensions=DIM)
        b.write_documents([_doc(p, t, _unit(rng, len(t))) for p, t in texts.items()])
        b.compact()
    with open_backend(tmp_path / "ids") as b:
        recs = _all(b)

        def texts_of(query):
            return [recs[r].text for r, _ in b.lexical_candidates(query, 10)]

        for query, whole, parts in [
            ("url_for", "build a link with url_for here", "url url for url for rules"),
            ("--dry-run", "pass --dry-run first", "a dry run, run run dry"),
            ("typer.echo", "print with typer.echo", "typer echo typer echo"),
            ("camelCase", "names in camelCase style", "a camel in case of camel"),
        ]:
            got = texts_of(query)
            assert got[:2] == [whole, parts], (query, got)  # whole first; parts still match
            assert b.lexical_ceiling(query) >= max(s for _, s in b.lexical_candidates(query, 10))
        assert "names in camelCase style" in texts_of("camel case")  # by its parts


def test_lexical_ceiling_bounds_every_score(filled, open_backend):
    """The BM25 ceiling is above every lexical score of the query (the relevance score's
    share lies in [0, 1)), grows with a word no chunk holds, and is 0 without query words."""
    with open_backend(filled[0]) as b:
        for text in ("cat dog", "zq7x build", "cat"):
            hits = b.lexical_candidates(text, 10)
            ceiling = b.lexical_ceiling(text)
            assert hits and all(0 < s < ceiling for _, s in hits), (text, hits, ceiling)
        assert b.lexical_ceiling("cat qqqzzx") > b.lexical_ceiling("cat")
        for text in ("", "   ", "!!!"):
            assert b.lexical_ceiling(text) == 0.0


def test_replace_and_remove_keep_every_side_in_step(filled, open_backend):
    path, _ = filled
    rng = np.random.default_rng(11)
    with open_backend(path, "w") as b:
        old = {rid for rid, r in _all(b).items() if r.path == "docs/cats.md"}
        b.write_documents([_doc("docs/cats.md", ["lions roar at dusk"], _unit(rng, 1))])
        recs = _all(b)
        assert not old & set(recs) and b.count() == 4
        assert b.lexical_candidates("purr", 5) == []
        assert [recs[r].text for r, _ in b.lexical_candidates("lions", 5)] == ["lions roar at dusk"]
        assert b.remove_documents(["docs/dogs.md", "missing.md"]) == 1
        assert b.paths() == ["docs/cats.md", "notes/log.md"] and b.count() == 2
        assert b.lexical_candidates("dog", 5) == []
        assert {
            recs[r].path for r, _ in b.dense_candidates(np.eye(DIM, dtype=np.float32)[:1], 10)[0]
        } == {"docs/cats.md", "notes/log.md"}


def test_a_failed_write_changes_nothing(filled, open_backend):
    path, _ = filled
    rng = np.random.default_rng(5)
    with open_backend(path, "w") as b:
        before = sorted(_all(b))
        good = _doc("docs/new.md", ["fresh text"], _unit(rng, 1))
        bad = _doc("docs/cats.md", ["x", "y"], _unit(rng, 1))  # 2 records, 1 vector
        with pytest.raises((ValueError, RagsiftError)):
            b.write_documents([good, bad])
        assert sorted(_all(b)) == before and "docs/new.md" not in b.paths()


def test_one_writer_at_a_time_and_readers_never_block(filled, open_backend):
    path, _ = filled
    with open_backend(path, "w") as writer:
        with pytest.raises(RagsiftError, match="PID|being written"):
            open_backend(path, "w")
        with open_backend(path) as reader:  # a reader while the writer holds the lock
            assert reader.count() == 5
        writer.remove_documents(["notes/log.md"])
    done = []

    def second():
        with open_backend(path, "w", wait=True) as b:
            done.append(b.count())

    t = threading.Thread(target=second)
    t.start()
    t.join(60)
    assert done == [4]


def test_readers_see_a_snapshot(filled, open_backend):
    path, _ = filled
    with open_backend(path) as reader:
        n = reader.count()
        with open_backend(path, "w") as w:
            w.remove_documents(["docs/cats.md"])
        assert reader.count() == n and len(_all(reader)) == n


def test_a_reader_knows_when_it_is_stale_and_refreshes(filled, open_backend):
    """A reader's snapshot stays put while a writer commits; ``stale()`` then says so and
    ``refresh()`` moves to the new data (what a long-lived reader such as the MCP server
    does before each call); with nothing committed it is not stale."""
    path, _ = filled
    with open_backend(path) as reader:
        n = reader.count()
        assert not reader.stale()
        with open_backend(path, "w") as w:
            w.remove_documents(["docs/cats.md"])
        assert reader.count() == n and reader.stale()
        reader.refresh()
        assert reader.count() < n and "docs/cats.md" not in reader.paths()
        assert not reader.stale()


# -- the writer's side (IndexWriter) ------------------------------------------------------------


def test_documents_state_is_what_change_detection_compares(filled, open_backend):
    path, _ = filled
    with open_backend(path, "w") as b:
        state = b.documents_state()
        assert set(state) == set(TEXTS)
        st = state["docs/cats.md"]
        assert isinstance(st, DocState)
        assert (st.path, st.sha256, st.chunker, st.size, st.mtime) == (
            "docs/cats.md",
            "0" * 64,
            "test",
            100,
            1.0,
        )


def test_touch_document_changes_only_what_it_names(filled, open_backend):
    path, _ = filled
    with open_backend(path, "w") as b:
        before = {r.rowid: r.text for r in _all(b).values()}
        b.touch_document("docs/cats.md", size=120, mtime=2.5)
        b.touch_document("docs/dogs.md", path="pets/dogs.md")
        b.touch_document("no/such/key.md", size=1)  # unknown key: nothing happens
    with open_backend(path, "w") as b:
        state = b.documents_state()
        assert (state["docs/cats.md"].size, state["docs/cats.md"].mtime) == (120, 2.5)
        assert state["docs/cats.md"].path == "docs/cats.md"
        assert state["docs/dogs.md"].path == "pets/dogs.md"
        assert state["docs/dogs.md"].size == 100 and "no/such/key.md" not in state
        assert "pets/dogs.md" in b.paths()
        # the chunks themselves are untouched
        assert {r.rowid: r.text for r in _all(b).values()} == before


def test_vectors_for_hashes_give_back_what_was_written(filled, open_backend):
    path, vectors = filled
    with open_backend(path, "w") as b:
        got = b.vectors_for_hashes(["docs/cats.md-1-a cat sleeps all day", "unknown-hash"])
        assert set(got) == {"docs/cats.md-1-a cat sleeps all day"}
        vec, truncated, units = got["docs/cats.md-1-a cat sleeps all day"]
        np.testing.assert_allclose(vec, vectors["docs/cats.md"][1], rtol=1e-6)
        assert truncated == 0
        assert units == _units("a cat sleeps all day", vectors["docs/cats.md"][1])
        assert b.vectors_for_hashes([]) == {}
        assert b.dimensions() == DIM


def test_unit_evidence_gives_back_each_chunks_units(filled, open_backend):
    path, vectors = filled
    with open_backend(path) as b:
        probe = np.eye(DIM, dtype=np.float32)[:1]
        (hits,) = b.dense_candidates(probe, 1000)
        by_rowid = {r.rowid: r for r in b.chunk_records([r for r, _ in hits])}
        got = b.unit_evidence(list(by_rowid) + [10**9])
        assert set(got) == set(by_rowid)  # an unknown rowid is left out
        for rowid, blob in got.items():
            rec = by_rowid[rowid]
            starts, ends, _, _ = evidence.decode(blob)
            assert [rec.text[a:z] for a, z in zip(starts, ends)] == rec.text.split()
            i = TEXTS[rec.path].index(rec.text)
            assert blob == _units(rec.text, vectors[rec.path][i])
        assert b.unit_evidence([]) == {}


def test_a_transaction_is_all_or_nothing(filled, open_backend):
    path, _ = filled
    rng = np.random.default_rng(3)
    with open_backend(path, "w") as b:
        with pytest.raises(KeyboardInterrupt):
            with b.transaction():
                b.write_documents([_doc("docs/a.md", ["alpha text"], _unit(rng, 1))])
                b.write_documents([_doc("docs/b.md", ["beta text"], _unit(rng, 1))])
                raise KeyboardInterrupt  # e.g. Ctrl-C between two writes of a batch
        assert "docs/a.md" not in b.paths() and b.count() == 5
        with b.transaction():
            b.write_documents([_doc("docs/a.md", ["alpha text"], _unit(rng, 1))])
            b.write_documents([_doc("docs/b.md", ["beta text"], _unit(rng, 1))])
    with open_backend(path) as r:
        assert {"docs/a.md", "docs/b.md"} <= set(r.paths()) and r.count() == 7


def test_compact_never_changes_what_a_reader_sees(filled, open_backend):
    path, _ = filled
    rng = np.random.default_rng(9)
    with open_backend(path, "w") as b:
        for i in range(6):  # many small writes: small blocks / fragments to merge
            b.write_documents([_doc(f"more/{i}.md", [f"note {i} on hives"], _unit(rng, 1))])
        b.remove_documents(["more/2.md"])
        probe = np.eye(DIM, dtype=np.float32)[:2]
        before = (
            b.dense_candidates(probe, 20),
            b.lexical_candidates("hives", 20),
            sorted(b.paths()),
        )
        b.compact()
        after = (
            b.dense_candidates(probe, 20),
            b.lexical_candidates("hives", 20),
            sorted(b.paths()),
        )
        assert [[r for r, _ in q] for q in after[0]] == [[r for r, _ in q] for q in before[0]]
        assert [r for r, _ in after[1]] == [r for r, _ in before[1]] and after[2] == before[2]
        assert b.verify() == []


def test_clear_drops_documents_vectors_and_settings(filled, open_backend):
    path, _ = filled
    with open_backend(path, "w") as b:
        b.clear()
        assert b.count() == 0 and b.paths() == [] and b.documents_state() == {}
        assert b.settings()["model_fingerprint"] is None
        assert b.vectors_for_hashes(["docs/cats.md-0-cats purr when content"]) == {}
    with open_backend(path) as r:
        assert r.count() == 0 and r.verify() == []


def test_writes_need_a_writer(filled, open_backend):
    path, _ = filled
    rng = np.random.default_rng(1)
    with open_backend(path) as r:
        with pytest.raises(RagsiftError):
            r.write_documents([_doc("docs/x.md", ["x"], _unit(rng, 1))])
    with open_backend(path) as r:
        assert "docs/x.md" not in r.paths()


def test_fragment_commits_is_a_declared_capability(filled, open_backend):
    """``embed --engine ray`` picks the fragment path by type; a backend declares it."""
    path, _ = filled
    with open_backend(path, "w") as b:
        declared = FragmentCommits in type(b).__mro__
        assert isinstance(b, FragmentCommits) == declared
        if declared:
            first = b.alloc_rowids(3)
            assert b.alloc_rowids(1) == first + 3
            import pickle

            writer = pickle.loads(pickle.dumps(b.fragment_writer()))  # goes to a worker
            row = b.chunk_row(
                "docs/cats.md",
                first,
                ChunkRow(path="docs/cats.md", index=0, text="t", content_hash="h"),
            )
            assert callable(writer) and row["rowid"] == first


def test_a_document_touched_before_a_fragment_commit_keeps_its_new_size(tmp_path):
    """A run that found a file unchanged but moved (new size/mtime: ``touch_document``) and then
    commits workers' fragments (``embed --engine ray`` on Lance, the backend with
    ``FragmentCommits``) writes the touched row with the commit. Before: TypeError (the
    touched row's own ``doc_key`` given twice)."""
    rng = np.random.default_rng(7)
    path = tmp_path / "index.lance"
    with _lance(path, "w") as b:
        assert isinstance(b, FragmentCommits)
        b.set_settings(model="test", model_fingerprint="test/8/x", dimensions=DIM)
        b.write_documents([_doc(p, t, _unit(rng, len(t))) for p, t in TEXTS.items()])
    with _lance(path, "w") as b:
        key = next(d.key for d in b.documents() if d.path == "docs/cats.md")
        b.touch_document(key, size=12345)
        b.commit_fragments([], [], [], [], DIM)
    with _lance(path) as r:
        assert {d.path: d.size for d in r.documents()}["docs/cats.md"] == 12345


_KILLED_WRITER = """
import os, signal, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_backend_contract import _doc, _unit, BACKENDS
opener = BACKENDS[{name!r}]
rng = np.random.default_rng(2)
with opener({path!r}, "w") as b:
    b.write_documents([_doc("docs/committed.md", ["kept after the kill"], _unit(rng, 1))])
    with b.transaction():
        b.write_documents([_doc("docs/lost.md", ["never committed"], _unit(rng, 1))])
        b.remove_documents(["docs/cats.md"])
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_writer_loses_only_its_uncommitted_work(filled, open_backend, request):
    """A writer killed inside a transaction (SIGKILL: no cleanup runs): what it committed
    before is there, nothing of the open transaction is, the index reads clean, and the
    next writer gets the lock (the dead holder's is taken over)."""
    import subprocess
    import sys
    from pathlib import Path

    path, _ = filled
    name = request.node.callspec.params["open_backend"]
    code = _KILLED_WRITER.format(tests=str(Path(__file__).parent), name=name, path=str(path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    with open_backend(path) as r:
        paths = set(r.paths())
        assert "docs/committed.md" in paths and "docs/lost.md" not in paths
        assert "docs/cats.md" in paths and r.count() == 6
        assert r.verify() == []
    with open_backend(path, "w") as b:  # the lock of the dead writer does not hold us up
        assert b.remove_documents(["docs/committed.md"]) == 1


def _damage(path):
    """Cut every file of the index in half (a disk that lost the end of each file)."""
    from pathlib import Path

    root = Path(str(path))
    files = (
        [root]
        if root.is_file()
        else sorted(
            p for p in Path(f"{path}.lance").rglob("*") if p.is_file() and p.suffix == ".lance"
        )
    )
    if not files:  # the SQLite index is one file named as given
        files = [root]
    for f in files:
        with open(f, "r+b") as fh:
            fh.truncate(max(1, f.stat().st_size // 2))


def test_storage_errors_are_ragsift_errors(filled, open_backend):
    """A damaged index gives ``RagsiftError`` (one line for the user), never the storage
    library's own exception, on every read and write ``embed`` makes."""
    path, _ = filled
    _damage(path)
    rng = np.random.default_rng(4)
    probe = np.eye(DIM, dtype=np.float32)[:1]
    calls = [
        lambda b: b.settings(),
        lambda b: b.documents_state(),
        lambda b: b.count(),
        lambda b: b.dense_candidates(probe, 5),
        lambda b: b.lexical_candidates("cat", 5),
        lambda b: b.vectors_for_hashes(["docs/cats.md-0-cats purr when content"]),
        lambda b: b.write_documents([_doc("docs/new.md", ["fresh"], _unit(rng, 1))]),
        lambda b: b.compact(),
    ]
    for mode in ("r", "w"):
        for call in calls if mode == "w" else calls[:6]:
            try:
                with open_backend(path, mode) as b:
                    b.load()
                    call(b)
            except RagsiftError:
                pass  # the one-line error the CLI prints
            except Exception as exc:
                pytest.fail(f"{mode}: {type(exc).__module__}.{type(exc).__name__}: {exc}")


# -- the same answers on every backend (issue 29) --------------------------------------------
# Varied queries over fixtures/: questions, keywords, identifiers, numbers, single words,
# stemming and accents, punctuation, and off-topic ones (weak or no lexical evidence).
ANSWER_QUERIES = [
    "What does a queen excluder do?",
    "How long does honey take to crystallise?",
    "When should I add a super to the hive?",
    "How do I treat varroa mites?",
    "swarm prevention in spring",
    "beeswax candles",
    "smoker fuel",
    "How do I feed a sourdough starter?",
    "starter hydration ratio",
    "oven temperature for bread",
    "proofing dough overnight in the fridge",
    "What lives in a tide pool?",
    "sea anemones and crabs",
    "low tide safety",
    "How do I trim a lantern wick?",
    "kerosene lantern chimney soot",
    "lamp oil",
    "field notes from the marsh",
    "birds seen at dawn",
    "recipe with lentils",
    "kitchen notes about knives",
    "market prices",
    "legacy notes",
    "bees",
    "honey",
    "tide",
    "wick",
    "flour",
    "salt",
    "water",
    "crystallised",
    "crystallization",
    "Bienenkönigin",
    "café crème",
    "25",
    "1.5 kg",
    "350 °F",
    "2024",
    "queen_excluder",
    "hiveTool",
    "starter.feed()",
    "tide-pool",
    "What is the capital of France?",
    "quantum chromodynamics lattice",
    "How do I configure nginx as a reverse proxy?",
    "the of and",
    "?!",
    "honey honey honey bees bees",
    "a very long question about how to keep bees healthy through a cold and wet winter",
    "HONEY Extraction",
]
ANSWER_MODES = ("dense", "lexical", "hybrid")


def _answers(index: str) -> dict:
    """Every query's admitted hits in every mode, through the Python API, with no threshold:
    (id, score and its evidence) in order."""
    from ragsift import api

    ix = api.open_index(index)
    out = {}
    for mode in ANSWER_MODES:
        for q in ANSWER_QUERIES:
            r = ix.query(q, k=10, threshold=None, mode=mode)
            out[mode, q] = [
                (c.id, c.score, c.dense_score, c.lexical_score, c.lexical_share, c.unit_score)
                for c in r.admitted
            ]
    return out


@pytest.fixture(scope="module")
def answer_indexes(tmp_path_factory):
    """fixtures/ embedded by the real model into SQLite and Lance (local engine), and into
    Lance by ``--engine ray`` (a local Ray of 2 CPUs) when Ray is installed."""
    from pathlib import Path

    from ragsift import api

    pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")
    root = tmp_path_factory.mktemp("answers")
    corpus = str(Path(__file__).resolve().parent.parent / "fixtures")
    out = {}
    for name, index in (("sqlite", root / "i.db"), ("lance", root / "i.lance")):
        api.build(index, [corpus])
        out[name] = str(index)
    try:
        import ray
    except ImportError:
        return out
    import os

    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        api.build(root / "ray.lance", [corpus], engine="ray")
    finally:
        ray.shutdown()
    out["lance-ray"] = str(root / "ray.lance")
    return out


@pytest.mark.xdist_group(RAY_GROUP)  # its fixture starts a Ray cluster: one at a time
@pytest.mark.parametrize("backend", ["lance", "lance-ray"])
def test_every_backend_gives_the_same_answers(answer_indexes, backend):
    """50 varied queries in each mode give the same ids, in the same order, with the same
    scores (relevance score, cosine, BM25, its share of the ceiling, best unit) within 1e-6 on
    Lance (built locally or by Ray) as on SQLite: one tokenizer, one BM25, one collection."""
    if backend not in answer_indexes:
        pytest.skip("--engine ray needs: pip install 'ragsift[ray]'")
    want = _answers(answer_indexes["sqlite"])
    got = _answers(answer_indexes[backend])
    assert len(want) == 150 and sum(1 for hits in want.values() if hits) > 100
    assert sum(1 for (m, _), hits in want.items() if m == "lexical" and hits) > 30
    for key, hits in want.items():
        assert [h[0] for h in got[key]] == [h[0] for h in hits], key
        for a, b in zip(got[key], hits):
            for x, y in zip(a[1:], b[1:]):
                assert (x is None) == (y is None), (key, a, b)
                assert x is None or abs(x - y) <= 1e-6, (key, a, b)
