"""An index that does not grow with the runs (issue 40, item 3): repeated small incremental
runs keep a Lance folder and a SQLite file within 1.5x of a fresh build of the same folder;
a reader that holds a version across a writer's compaction still answers; ``info`` shows the
Lance fragments and versions.

Real model (MiniLM, loaded once for the module) on a copy of a few fixture pages; every run is
``api.build``, what ``ragsift embed`` runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")

PAGES = (
    "beekeeping/handbook.md",
    "lantern/guide.md",
    "sourdough.rst",
    "tidepools.html",
    "field-notes.txt",
)
RUNS = 5  # the bench runs 15 on a 24-page site (bench/RESULTS.md, "Lance stays compact")


@pytest.fixture(scope="module")
def embedder():
    from ragsift.embedders import load_embedder

    return load_embedder()


def site(root: Path) -> Path:
    out = root / "site"
    for page in PAGES:
        dest = out / page
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / page, dest)
    return out


def size_on_disk(index: Path) -> int:
    if index.is_dir():
        return sum(f.stat().st_size for f in index.rglob("*") if f.is_file())
    return sum(
        Path(str(index) + s).stat().st_size
        for s in ("", "-wal", "-shm")
        if Path(str(index) + s).exists()
    )


def embed(folder: Path, index: Path, embedder) -> None:
    from ragsift.api import build

    build(index, [folder], embedder=embedder)


def edit(folder: Path, i: int) -> None:
    with open(folder / "beekeeping" / "handbook.md", "a", encoding="utf-8") as fh:
        fh.write(f"\nA note added on visit {i}: the bees were calm.\n")


@pytest.mark.parametrize("name", ["i.lance", "i.db"])
def test_repeated_small_runs_stay_within_1_5x_of_a_fresh_build(tmp_path, embedder, name):
    folder = site(tmp_path)
    index = tmp_path / name
    embed(folder, index, embedder)
    first = size_on_disk(index)
    sizes = []
    for i in range(RUNS):
        edit(folder, i)
        embed(folder, index, embedder)
        sizes.append(size_on_disk(index))
    fresh = tmp_path / ("fresh" + index.suffix)
    embed(folder, fresh, embedder)
    assert sizes[-1] <= 1.5 * size_on_disk(fresh), (sizes, size_on_disk(fresh))
    assert max(sizes) <= 1.5 * first, (first, sizes)
    from ragsift.api import open_index

    with open_index(index) as ix:  # the runs' edits are there, once
        texts = [r.text for r in ix.records()]
        assert sum(f"visit {RUNS - 1}:" in t for t in texts) == 1


def test_info_shows_lance_fragments_and_versions(tmp_path, embedder):
    folder = site(tmp_path)
    index = tmp_path / "i.lance"
    embed(folder, index, embedder)
    edit(folder, 0)
    embed(folder, index, embedder)
    got = run_cli("info", "--index", str(index), "--json")
    assert got.returncode == 0, got.stderr
    import json

    info = json.loads(got.stdout)
    import lance

    from ragsift.index.lance_compact import COMPACT_FRAGMENTS

    ds = lance.dataset(str(index / "chunks.lance"))
    assert info["fragments"] == len(ds.get_fragments()) <= COMPACT_FRAGMENTS
    assert info["versions"] == len(ds.versions()) == 1  # the old versions are gone
    assert info["version"] == ds.version
    text = run_cli("info", "--index", str(index)).stdout
    assert "fragments" in text and "versions kept" in text
    sq = tmp_path / "i.db"
    embed(folder, sq, embedder)
    info = json.loads(run_cli("info", "--index", str(sq), "--json").stdout)
    assert "fragments" not in info and "versions" not in info  # no such thing in SQLite
    assert 0 <= info["free_bytes"] <= info["size_bytes"]  # freed pages, reused by writes
    assert "free pages" in run_cli("info", "--index", str(sq)).stdout


def test_a_reader_open_across_a_compaction_still_answers(tmp_path, embedder):
    """Readers that opened before a run (one that had read, one that had not) answer after
    the run removed their version (``KEEP_VERSIONS``): they move to the newest version."""
    from ragsift.api import open_index

    folder = site(tmp_path)
    index = tmp_path / "i.lance"
    embed(folder, index, embedder)
    question = "how do I keep a lantern wick from smoking"
    chunks = str(index / "chunks.lance")
    with open_index(index, embedder=embedder) as warm, open_index(index, embedder=embedder) as cold:
        before = warm.query(question, k=2, threshold=0.0).admitted
        assert before
        old = warm.store._ds.version
        for i in range(2):  # two runs: the first removes the readers' version
            edit(folder, i)
            if i == 1:
                (folder / "tidepools.html").unlink()
            embed(folder, index, embedder)
        import lance

        kept = [v["version"] for v in lance.dataset(chunks).versions()]
        assert len(kept) == 1 and kept[0] > old  # the readers' version is gone
        for reader in (warm, cold):
            got = reader.query(question, k=2, threshold=0.0).admitted
            assert [(c.path, c.text) for c in got] == [(c.path, c.text) for c in before]
            notes = reader.query("the note on the last visit", k=1, mode="lexical").admitted
            assert notes and "visit 1:" in notes[0].text  # they moved to the newest version
            assert all("tidepools" not in d.path for d in reader.documents())


def test_files_no_version_uses_are_removed_by_the_next_run(tmp_path, embedder):
    """What a killed run (or a refused Ray run) left in a folder: data files written but never
    committed. The next run that writes removes them (``LanceCompaction._cleanup``)."""
    from ragsift.index.backend import ChunkRow
    from ragsift.index.lance import LanceIndex
    from ragsift.index.lance_rows import rows_table, write_fragments

    folder = site(tmp_path)
    index = tmp_path / "i.lance"
    embed(folder, index, embedder)
    data = index / "chunks.lance" / "data"
    before = set(p.name for p in data.iterdir())
    with LanceIndex.open(str(index)) as ix:
        rowid = int(ix.load_matrix()[0].max()) + 1
        rec = ChunkRow(
            path="orphan.md", text="never committed", index=0, content_hash="0" * 64, tokens=2
        )
        row = ix.chunk_row("orphan.md", rowid, rec)
        dim = ix.dimensions()
    write_fragments(str(index / "chunks.lance"), rows_table([row], [[0.0] * dim], dim), None)
    orphans = set(p.name for p in data.iterdir()) - before
    assert orphans  # written, referenced by no version
    edit(folder, 0)
    embed(folder, index, embedder)
    assert not orphans & set(p.name for p in data.iterdir())
    with LanceIndex.open(str(index)) as ix:
        assert ix.verify() == [] and "orphan.md" not in {d.key for d in ix.documents()}


def test_the_ann_index_stays_valid_across_a_rewrite(tmp_path, monkeypatch):
    """The IVF-PQ index (``ann.py``; ``ANN_MIN_ROWS`` lowered to 1,000) across a run that
    replaces a third of the documents, so ``compact`` rewrites the data and removes the old
    version: it still exists, proposes only live rows, agrees with the exact scan, and a
    reader opened before the rewrite answers through it. Synthetic clustered vectors (an
    index-level test, as ``test_lance_backend``'s ANN test: the model plays no part in it)."""
    import numpy as np

    from ragsift.index import ann
    from ragsift.index.backend import ChunkRow, DocumentWrite
    from ragsift.index.lance import LanceIndex
    from ragsift.index.lance_compact import COMPACT_FRAGMENTS
    from ragsift.index.lance_lexical import LancePostings

    rng = np.random.default_rng(3)
    centres = rng.standard_normal((30, 384)).astype(np.float32)

    def vectors(n):
        v = centres[rng.integers(0, 30, n)] + 0.7 * rng.standard_normal((n, 384), np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def doc(d, rows, tag):
        recs = [
            ChunkRow(
                path=f"doc{d}.md",
                index=i,
                text=f"{tag} {d} {i}",
                content_hash=f"{tag}-{d}-{i}",
                tokens=3,
            )
            for i in range(len(rows))
        ]
        return DocumentWrite(key=f"k{d}", path=f"doc{d}.md", sha256=tag, records=recs, vectors=rows)

    monkeypatch.setattr(ann, "ANN_MIN_ROWS", 1000)
    path = str(tmp_path / "ann.lance")
    with LanceIndex.open(path, "w") as w:
        w.write_documents([doc(d, vectors(60), "a") for d in range(30)])
        w.compact()
        assert w.has_index("vector")
    queries = vectors(10)
    with LanceIndex.open(path) as before:
        assert ann.use_ann(before, None) and before.dense_candidates(queries[:1], 5)[0]
        old_live = set(before.load_matrix()[0].tolist())
        with LanceIndex.open(path, "w") as w:
            w.write_documents([doc(d, vectors(60), "b") for d in range(10)])  # a third
            assert w._needs_rewrite(LancePostings.load(w._ds))  # a third replaced
            w.compact()
            assert w.has_index("vector") and w.stats()["versions"] == 1
            assert w._deleted_share() == 0.0  # the replaced rows are gone from the data
            # one segment (``_merge_index_segments``), so the fragments could merge
            assert [len(ix.segments) for ix in w._ds.describe_indices()] == [1]
            assert w.stats()["fragments"] == 1
        with LanceIndex.open(path) as r:
            live = set(r.load_matrix()[0].tolist())
            approx = r.dense_candidates(queries, 10)
            assert all(rowid in live for q in approx for rowid, _ in q)
            monkeypatch.setattr(ann, "ANN_MIN_ROWS", 10**9)
            r._ann = None
            exact = r.dense_candidates(queries, 10)
            monkeypatch.setattr(ann, "ANN_MIN_ROWS", 1000)
            recall = np.mean(
                [len({a for a, _ in x} & {e for e, _ in y}) / 10 for x, y in zip(approx, exact)]
            )
            assert recall >= 0.9
        with LanceIndex.open(path) as r:
            fresh = r.stats()["size_bytes"]
        segments = []
        for run in range(8):  # one document a run: a delta segment each, merged on rewrites
            with LanceIndex.open(path, "w") as w:
                w.write_documents([doc(20 + run, vectors(60), "c")])
                w.compact()
                segments.append(len(w._ds.describe_indices()[0].segments))
                assert w.stats()["fragments"] <= COMPACT_FRAGMENTS
        assert max(segments) < 8 and 1 in segments[1:], segments  # before: 2, 3, ... 9
        with LanceIndex.open(path) as r:
            assert r.stats()["size_bytes"] <= 2 * fresh
            live = set(r.load_matrix()[0].tolist())  # the newest version's rows
        got = before.dense_candidates(queries, 10)  # its version is gone: it still answers,
        assert all(len(q) == 10 for q in got)  # from the newest (or from files it holds open)
        assert all(r in live for q in got for r, _ in q) or all(
            r in old_live for q in got for r, _ in q
        )
