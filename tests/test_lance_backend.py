"""The Lance backend (ragsift/index/lance.py) through the real CLI, side by side with SQLite.

The backend contract itself runs in tests/test_backend_contract.py (parametrized over both
backends). Here: every command works on a ``.lance`` index with the same flags, JSON and exit
codes, dense results equal SQLite's to the last digit, and incremental runs (hash skip, prune,
model refusal) behave exactly as on SQLite. Real model, CLI as subprocesses, tiny corpora.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")

QUERIES = [
    "when do honey bees swarm",
    "sourdough starter feeding",
    "tide pool animals",
    "trimming a lantern wick",
]


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _corpus(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "bees.md").write_text(
        "# Bees\n\nHoneybees live in colonies with one queen and swarm in late spring.\n\n"
        "## Hives\n\nWorkers build wax combs and store nectar as honey.\n"
    )
    (root / "tides.txt").write_text("Tide pools hold anemones, crabs and sea stars.\n")
    (root / "bread.txt").write_text("Sourdough needs a lively starter fed every day.\n")
    (root / "sub" / "lamp.txt").write_text("A lantern's wick must be trimmed before lighting.\n")
    return root


def _embed(cwd: Path, index: str, *args: str) -> tuple[int, dict, str]:
    proc = run_cli("embed", "docs", "--index", index, "--json", *args, cwd=cwd)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> Path:
    """The same corpus indexed into ``i.db`` and ``i.lance``."""
    cwd = tmp_path_factory.mktemp("both")
    _corpus(cwd / "docs")
    for index in ("i.db", "i.lance"):
        rc, s, err = _embed(cwd, index)
        assert rc == 0 and s["parsed"] == 4 and s["embedded"] == s["chunks"] > 0, err
    return cwd


def _query(cwd: Path, index: str, mode: str) -> list[dict]:
    proc = run_cli(
        "query",
        "-",
        "-i",
        index,
        "--json",
        "--rejected",
        "--threshold",
        "none",
        "-k",
        "4",
        "--reject-window",
        "0",
        "--mode",
        mode,
        cwd=cwd,
        input="\n".join(QUERIES) + "\n",
    )
    assert proc.returncode == 0, proc.stderr
    return jsonl(proc.stdout)


def test_every_mode_gives_the_records_sqlite_gives(both):
    """The CLI's JSON records are the same on both backends in every mode: one tokenizer, one
    BM25, one relevance score (the contract suite's answers test checks 50 queries)."""
    fields = (
        "query",
        "id",
        "path",
        "text",
        "score",
        "line_start",
        "line_end",
        "headings",
        "dense_score",
        "lexical_score",
        "lexical_share",
    )
    for mode in ("dense", "lexical", "hybrid"):
        sqlite = _query(both, "i.db", mode)
        lance = _query(both, "i.lance", mode)
        assert len(sqlite) == (4 * len(QUERIES) if mode == "dense" else len(sqlite)) > 0
        assert [{f: r.get(f) for f in fields} for r in lance] == [
            {f: r.get(f) for f in fields} for r in sqlite
        ], mode
        assert [set(r) for r in lance] == [set(r) for r in sqlite]  # same JSON record shape


def test_an_index_from_schema_2_is_read_alike_then_upgraded(both, tmp_path, monkeypatch):
    """A Lance index written before schema 3 (no postings) scores as SQLite does when read
    (its postings built in memory), and a writer upgrades it: postings stored, one batch."""
    from ragsift.index import lance as lance_module
    from ragsift.index import lance_compact, lance_rows, lance_write, open_index
    from ragsift.index.backend import ChunkRow, DocumentWrite

    with open_index(str(both / "i.lance")) as src:
        rowids, matrix = src.load_matrix()
        recs = src.chunk_records(rowids.tolist())
        model = {k: src.settings()[k] for k in ("model", "model_fingerprint", "dimensions")}
    by_doc: dict = {}
    for rec, vec in zip(recs, matrix):
        by_doc.setdefault(rec.path, ([], []))
        stored = {
            f.name: getattr(rec, f.name) for f in dataclasses.fields(ChunkRow) if f.name != "units"
        }
        by_doc[rec.path][0].append(ChunkRow(**stored))
        by_doc[rec.path][1].append(vec)
    docs = [
        DocumentWrite(key=p, path=p, sha256="0" * 64, records=r, vectors=v)
        for p, (r, v) in by_doc.items()
    ]
    path = str(tmp_path / "old.lance")
    with monkeypatch.context() as m:  # written as schema 2 was: no postings columns or rows
        m.setattr(lance_module, "SCHEMA_VERSION", 2)
        m.setattr(lance_rows, "lex_fields", lambda: [])
        m.setattr(lance_write, "lexical_rows", lambda rows: [])
        m.setattr(
            lance_compact.LanceCompaction, "_merge_postings", lambda self, postings=None: None
        )
        with open_index(path, "w") as ix:
            ix.set_settings(**model)  # vectors without their model's record are damage
            ix.write_documents(docs)
            ix.compact()
    queries = [*QUERIES, "honey", "crabs and sea stars", "queen"]
    with open_index(str(both / "i.db")) as ref:
        want = [(ref.lexical_candidates(q, 10), ref.lexical_ceiling(q)) for q in queries]
    with open_index(path) as ix:
        assert ix.settings()["schema_version"] == 2
        assert "lex_term" not in ix._ds.schema.names
        assert [(ix.lexical_candidates(q, 10), ix.lexical_ceiling(q)) for q in queries] == want
    with open_index(path, "w") as ix:
        ix.compact()  # a writer upgrades with its first write (issue 40)
        assert ix.settings()["schema_version"] == lance_module.SCHEMA_VERSION >= 3
        assert ix.verify() == []
    with open_index(path) as ix:
        postings = ix._lexical_postings()
        assert postings.complete() and not postings.extra and postings.batches == 1
        assert [(ix.lexical_candidates(q, 10), ix.lexical_ceiling(q)) for q in queries] == want


def test_info_ls_explain_tune_on_lance(both):
    info = run_cli("info", "--index", "i.lance", "--json", "--check", cwd=both)
    assert info.returncode == 0, info.stderr
    got = json.loads(info.stdout)
    ref = json.loads(run_cli("info", "--index", "i.db", "--json", cwd=both).stdout)
    for key in (
        "documents",
        "chunks",
        "vectors",
        "tokens",
        "model",
        "model_fingerprint",
        "dimensions",
        "chunker",
        "chunker_options",
    ):
        assert got[key] == ref[key], key
    assert got["problems"] == [] and got["size_bytes"] > 0
    ls = [
        {k: r[k] for k in ("path", "chunks", "tokens", "size")}
        for r in jsonl(run_cli("ls", "--index", "i.lance", "--json", cwd=both).stdout)
    ]
    assert ls == [
        {k: r[k] for k in ("path", "chunks", "tokens", "size")}
        for r in jsonl(run_cli("ls", "--index", "i.db", "--json", cwd=both).stdout)
    ]
    assert run_cli("ls", "nothing/*", "--index", "i.lance", cwd=both).returncode == 1
    ex = [
        json.loads(
            run_cli(
                "explain",
                "when do honey bees swarm",
                "-i",
                ix,
                "--json",
                "--mode",
                "dense",
                cwd=both,
            ).stdout
        )
        for ix in ("i.db", "i.lance")
    ]
    assert ex[1]["threshold_origin"] == "measured default" and ex[1]["candidates"]
    assert ex[1]["candidates"] == ex[0]["candidates"]
    assert ex[1]["attributions"] == ex[0]["attributions"]
    labelled = both / "labelled.jsonl"
    labelled.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"query": "when do bees swarm", "relevant": ["docs/bees.md"]},
                {"query": "feeding a sourdough starter", "relevant": ["docs/bread.txt"]},
                {"query": "crabs in rock pools", "relevant": ["docs/tides.txt"]},
                {"query": "quantum chromodynamics", "relevant": []},
            ]
        )
        + "\n"
    )
    work = both / "tuned.lance"
    shutil.copytree(both / "i.lance", work)
    reports = []
    for ix in ("i.db", str(work)):
        proc = run_cli(
            "tune",
            "-i",
            ix,
            "--queries",
            str(labelled),
            "--json",
            *(["--save"] if ix.endswith(".lance") else []),
            cwd=both,
        )
        assert proc.returncode == 0, proc.stderr
        reports.append(json.loads(proc.stdout))
    assert reports[1]["recommended"] == reports[0]["recommended"]
    after = json.loads(run_cli("explain", "bees", "-i", str(work), "--json", cwd=both).stdout)
    assert after["threshold_origin"] == "tuned on 4 queries"
    assert after["threshold"] == reports[1]["recommended"]["threshold"]


def test_rm_and_missing_or_foreign_locations(both, tmp_path):
    work = tmp_path / "rm.lance"
    shutil.copytree(both / "i.lance", work)
    dry = run_cli("rm", "docs/b*", "--index", str(work), "--dry-run", cwd=both)
    assert dry.returncode == 0 and dry.stdout.split() == ["docs/bees.md", "docs/bread.txt"]
    from ragsift.index import open_index

    with open_index(str(work), "w"):  # another writer holds the lock
        busy = run_cli("rm", "docs/bees.md", "--index", str(work), cwd=both)
    assert busy.returncode == 2 and "PID" in busy.stderr
    proc = run_cli("rm", "docs/b*", "--index", str(work), "--json", cwd=both)
    assert proc.returncode == 0 and "removed 2 documents" in proc.stderr
    with open_index(str(work)) as s:
        assert s.paths() == ["docs/sub/lamp.txt", "docs/tides.txt"] and s.verify() == []
        assert s.lexical_candidates("sourdough honeybees", 5) == []
    assert run_cli("rm", "docs/bees.md", "--index", str(work), cwd=both).returncode == 1
    missing = run_cli("query", "x", "-i", str(tmp_path / "none.lance"), cwd=both)
    assert missing.returncode == 2 and "no index at" in missing.stderr
    foreign = tmp_path / "foreign.lance"
    foreign.mkdir()
    (foreign / "data.bin").write_bytes(b"not ours")
    proc = run_cli("embed", "docs", "--index", str(foreign), cwd=both)
    assert proc.returncode == 2 and "not a ragsift index" in proc.stderr
    assert sorted(os.listdir(foreign)) == ["data.bin"]


def test_incremental_runs_behave_as_on_sqlite(tmp_path):
    """The SQLite scenario of tests/test_embed_cli.py, run on both backends: same counts."""
    from ragsift.index import open_index

    results: dict[str, list] = {}
    for name in ("i.db", "i.lance"):
        cwd = tmp_path / name.replace(".", "_")
        corpus = _corpus(cwd / "docs")
        steps = []
        steps.append(_embed(cwd, name)[1])
        os.utime(corpus / "tides.txt", (time.time() + 5, time.time() + 5))
        (corpus / "bread.txt").write_text("Rye bread is dense and keeps for a week.\n")
        (corpus / "sub" / "lamp.txt").unlink()
        steps.append(_embed(cwd, name)[1])
        steps.append(_embed(cwd, name)[1])  # the touched file is not even hashed
        (corpus / "tides.txt").unlink()
        steps.append(_embed(cwd, name, "--no-prune")[1])
        steps.append(_embed(cwd, name, "--size", "12")[1])
        with open_index(str(cwd / name)) as r:
            assert r.verify() == []
            steps.append(
                (
                    sorted(r.paths()),
                    r.count(),
                    [x for x, _ in r.lexical_candidates("sourdough", 5)],
                    len(r.lexical_candidates("rye", 5)),
                )
            )
        results[name] = steps
    keys = (
        "discovered",
        "unchanged",
        "parsed",
        "removed",
        "chunks",
        "embedded",
        "reused",
        "model_loaded",
        "skipped",
    )
    for a, b in zip(results["i.db"][:-1], results["i.lance"][:-1]):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
    assert results["i.db"][-1] == results["i.lance"][-1]
    s = results["i.lance"]
    assert (s[1]["unchanged"], s[1]["parsed"], s[1]["removed"]) == (2, 1, 1)
    assert (s[2]["unchanged"], s[2]["parsed"], s[2]["model_loaded"]) == (3, 0, False)
    assert s[-1][2] == [] and s[-1][3] == 1


def test_a_different_model_is_refused_and_nothing_changes(tmp_path):
    from ragsift.embedders import DEFAULT_MODEL_DIR
    from ragsift.embedders.weights import default_weights_path
    from ragsift.index import open_index

    _corpus(tmp_path / "docs")
    assert _embed(tmp_path, "m.lance")[0] == 0
    other = tmp_path / "other-model"
    shutil.copytree(DEFAULT_MODEL_DIR, other)
    shutil.copy(default_weights_path(), other / "model.onnx")
    with open_index(str(tmp_path / "m.lance")) as r:
        before = r.stats()["version"]
    (tmp_path / "docs" / "new.txt").write_text("Something new to embed.\n")
    proc = run_cli("embed", "docs", "--index", "m.lance", "--model", str(other), cwd=tmp_path)
    assert proc.returncode == 2
    assert "was built with model all-MiniLM-L6-v2" in proc.stderr and "--rebuild" in proc.stderr
    with open_index(str(tmp_path / "m.lance")) as r:
        assert r.stats()["version"] == before and len(r.paths()) == 4
    rc, s, _ = _embed(tmp_path, "m.lance", "--model", str(other), "--rebuild")
    assert rc == 0 and s["parsed"] == 5 and s["embedded"] == s["chunks"]
    info = json.loads(run_cli("info", "-i", "m.lance", "--json", "--check", cwd=tmp_path).stdout)
    assert info["model"] == "other-model" and info["documents"] == 5 and info["problems"] == []


def test_the_index_is_a_lancedb_database(both):
    """The folder is LanceDB's layout: LanceDB opens the table ragsift wrote."""
    lancedb = pytest.importorskip("lancedb")
    db = lancedb.connect(str(both / "i.lance"))
    table = db.open_table("chunks")
    chunks = table.count_rows("kind = 'chunk'")
    info = json.loads(run_cli("info", "-i", "i.lance", "--json", cwd=both).stdout)
    assert chunks == info["chunks"] and table.count_rows("kind = 'doc'") == info["documents"]


def test_ann_path_refines_by_exact_cosine(tmp_path, monkeypatch):
    """Above ``ANN_MIN_ROWS`` (lowered here to 1,000) compact builds IVF-PQ; the candidates it
    proposes are re-scored by exact cosine: every returned score is the exact path's score
    for that row, recall@10 against exact stays high, a path filter and rows written after
    the index was built are honoured; a deep list shares the proposals of its head."""
    import numpy as np

    from ragsift.index import ann
    from ragsift.index.backend import ChunkRow, DocumentWrite
    from ragsift.index.lance import LanceIndex

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((40, 384)).astype(np.float32)
    vecs = centres[rng.integers(0, 40, 3000)] + 0.7 * rng.standard_normal(
        (3000, 384), dtype=np.float32
    )
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)

    def doc(d, rows):
        recs = [
            ChunkRow(
                path=f"doc{d}.md", index=i, text=f"chunk {d} {i}", content_hash=f"{d}-{i}", tokens=3
            )
            for i in range(len(rows))
        ]
        return DocumentWrite(key=f"k{d}", path=f"doc{d}.md", sha256="0", records=recs, vectors=rows)

    monkeypatch.setattr(ann, "ANN_MIN_ROWS", 1000)
    path = str(tmp_path / "ann.lance")
    with LanceIndex.open(path, "w") as w:
        w.write_documents([doc(d, vecs[d * 100 : (d + 1) * 100]) for d in range(30)])
        w.compact()
        assert w.has_index("vector")
        fresh = vecs[:5] * -1  # written after the ANN index: searched flat until compacted
        w.write_documents([doc(99, fresh)])
    queries = vecs[rng.integers(0, 3000, 20)] + 0.1 * rng.standard_normal(
        (20, 384), dtype=np.float32
    )
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    with LanceIndex.open(path) as r:
        assert ann.use_ann(r, None)
        r.load()
        approx = r.dense_candidates(queries, 10)
        assert r._dense is None  # the ANN path never reads the whole matrix into memory
        monkeypatch.setattr(ann, "ANN_MIN_ROWS", 10**9)
        r._ann = None
        exact = r.dense_candidates(queries, 10)
        monkeypatch.setattr(ann, "ANN_MIN_ROWS", 1000)
        r._ann = None
        recall = np.mean(
            [len({a for a, _ in x} & {e for e, _ in y}) / 10 for x, y in zip(approx, exact)]
        )
        assert recall >= 0.9
        # a deep list (hybrid fuses 1,000 per side) gets proposals for its first REFINE_DEPTH
        # ranks only: 10 ranks × REFINE here, the same proposals as n = 10, so the same head
        monkeypatch.setattr(ann, "REFINE_DEPTH", 10)
        asked, to_table = [], r._ds.to_table

        def spy(*args, **kw):
            asked.append(kw["nearest"]["k"])
            return to_table(*args, **kw)

        monkeypatch.setattr(r._ds, "to_table", spy)
        deep = r.dense_candidates(queries, 200)
        assert set(asked) == {10 * ann.REFINE}  # not 200 × REFINE
        assert all(len(d) == 200 and d[:10] == a for d, a in zip(deep, approx))
        monkeypatch.setattr(r._ds, "to_table", to_table)
        for x, y in zip(approx, exact):
            scores = dict(y)
            for rowid, s in x:
                if rowid in scores:
                    assert s == pytest.approx(scores[rowid], abs=1e-6)
            assert [s for _, s in x] == sorted((s for _, s in x), reverse=True)
            assert r.cosines(queries[0], [x[0][0]])[0] is not None
        (only,) = r.dense_candidates(queries[:1], 5, paths={"doc3.md"})
        assert {rec.path for rec in r.chunk_records([i for i, _ in only])} == {"doc3.md"}
        (hit,) = r.dense_candidates(-vecs[:1], 1)
        assert r.chunk_records([hit[0][0]])[0].path == "doc99.md"
        assert hit[0][1] == pytest.approx(1.0, abs=1e-5)


def test_eval_scores_the_same_on_a_lance_index(tmp_path):
    """``[retrieval] backend = "lance"`` builds each configuration's index as Lance: dense
    metrics equal the SQLite run's."""
    from tests.test_eval import (
        ANIMALS,
        ELEPHANT,
        PLANETS,
        SATURN,
        _eval_json,
        _write_config,
        make_span_dataset,
    )

    root = make_span_dataset(
        tmp_path / "tiny",
        {"animals": ANIMALS, "planets": PLANETS},
        [
            ("Which animal drinks water with its trunk?", "animals", [ELEPHANT]),
            ("Which planet has rings of ice and rock?", "planets", [SATURN]),
        ],
    )
    chunker = 'strategy = "recursive"\ntokenizer = "cl100k"\nsize = 20\nmin_chars = 0'
    runs = []
    for backend in ("sqlite", "lance"):
        for mode in ("dense", "hybrid"):
            cfg = _write_config(
                tmp_path / f"{backend}-{mode}.toml",
                chunker,
                f'mode = "{mode}"\nk = 2\nbackend = "{backend}"',
            )
            (r,) = _eval_json(str(root), "--config", str(cfg))
            runs.append(r)
    assert runs[2]["chunks"] == runs[0]["chunks"] == 6
    assert runs[2]["overall"] == runs[0]["overall"]  # dense: identical
    assert runs[3]["overall"]["recall"] == runs[1]["overall"]["recall"]
