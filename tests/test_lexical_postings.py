"""The lexical side scores from per-block postings (``ragsift/index/lexical.py``, issue 13) or,
without them, by ``lexical.scan`` (the matching rows tokenized at query time). Both must give
the same rowids, in the same order, with bit-identical scores, after any mix of writes,
replacements, deletions, compaction, blocks left without postings; and with FTS5's own
constants (k1 1.2, b 0.75) both must return exactly what FTS5's ``bm25()`` query returns, the
oracle for the formula. An index from before the postings is read by the scan and upgraded by
a writer.

No embedder here: the documents are written with random unit vectors straight through the
store, because the lexical side never reads vectors and these tests need many small indexes.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsift.index import lexical, migrations, open_index
from ragsift.index import store as store_module
from ragsift.index.backend import ChunkRow, DocumentWrite
from ragsift.index.store import IndexStore

DIM = 4
WORDS = [
    "bee",
    "bees",
    "hive",
    "hives",
    "honey",
    "queen",
    "Queens",
    "larva",
    "larvae",
    "wax",
    "café",
    "cafe",
    "naïve",
    "résumé",
    "Straße",
    "temperature",
    "of",
    "the",
    "and",
    "x2",
    "42",
    "nectar",
    "pollen",
    "swarm",
    "swarming",
    "ΔT",
    "日本",
]


def record(path: str, i: int, text: str, context: str = "") -> ChunkRow:
    return ChunkRow(
        path=path,
        index=i,
        text=text,
        context=context,
        start=0,
        end=len(text),
        tokens=len(text.split()),
        line_start=1,
        line_end=1,
        content_hash=f"{i}:{hash(text)}",
    )


def doc(key: str, texts: list[tuple[str, str]], rng: np.random.Generator) -> DocumentWrite:
    vecs = rng.standard_normal((len(texts), DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return DocumentWrite(
        key=key,
        path=key,
        sha256="0" * 64,
        records=[record(key, i, t, c) for i, (t, c) in enumerate(texts)],
        vectors=vecs,
    )


FTS5_CONSTANTS = {"K1": 1.2, "B": 0.75}  # fts5_aux.c: what FTS5's bm25() always uses


def fts5(store: IndexStore, query: str, limit: int, rowids=None) -> list[tuple[int, float]]:
    """FTS5's own ``bm25()`` query (its fixed constants): the oracle. Where rows hold
    identifier terms (schema 4: not part of a row's length), FTS5's ``bm25()`` of a copy of
    the rows' ``context`` and ``text`` alone (the queries here ask for no identifier term)."""
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in store_module.query_words(query))
    db, table = store.db, "chunks_fts"
    if store.db.execute("SELECT 1 FROM chunks WHERE terms != '' LIMIT 1").fetchone():
        db, table = sqlite3.connect(":memory:"), "oracle"
        db.execute(
            f"CREATE VIRTUAL TABLE oracle USING fts5(context, text, "
            f"tokenize='{lexical.FTS5_TOKENIZE}')"
        )
        db.executemany(
            "INSERT INTO oracle(rowid, context, text) VALUES (?, ?, ?)",
            store.db.execute("SELECT id, context, text FROM chunks"),
        )
    sql = f"SELECT rowid, bm25({table}) AS s FROM {table} WHERE {table} MATCH ?"
    params: list = [match]
    if rowids is not None:
        sql += " AND rowid IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(rowids)))
    return [
        (int(r), float(s))
        for r, s in db.execute(sql + " ORDER BY s, rowid LIMIT ?", [*params, limit])
    ]


def both(store: IndexStore, query: str, limit: int, rowids=None):
    """(postings answer, scan answer) for one query; the postings must be in use."""
    assert store._lexical_postings() is not None, "the postings path is not in use"
    fast = store.lexical_search(query, limit, rowids)
    slow = lexical.scan(store.db, store_module.query_words(query), limit, rowids)
    return fast, slow


def all_agree(store: IndexStore, query: str, limit: int, rowids=None) -> list:
    """Postings and scan agree at the default constants and, with FTS5's, with FTS5."""
    fast, slow = both(store, query, limit, rowids)
    assert fast == slow  # same rowids, order and bit-identical scores
    with mock.patch.multiple(lexical, **FTS5_CONSTANTS):
        store._postings = None
        fast5, slow5 = both(store, query, limit, rowids)
        assert fast5 == slow5 == fts5(store, query, limit, rowids)
    store._postings = None
    return fast


text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join)
chunk = st.tuples(text, st.one_of(st.just(""), text))
documents = st.lists(st.lists(chunk, min_size=1, max_size=6), min_size=1, max_size=8)
queries = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), min_size=1, max_size=5
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    docs=documents,
    edits=st.lists(
        st.tuples(
            st.sampled_from(["replace", "remove"]),
            st.integers(0, 7),
            st.lists(chunk, min_size=1, max_size=4),
        ),
        max_size=4,
    ),
    qs=queries,
    limit=st.integers(1, 40),
    compact=st.booleans(),
    small=st.sampled_from([1, store_module.SMALL_BLOCK]),
)
def test_postings_scan_and_fts5_agree(docs, edits, qs, limit, compact, small):
    # ``small``: the rows below which a written block waits for ``compact`` to get its
    # postings on disk. 1 stands in for blocks of a big run (postings at once, then rows
    # deleted inside them); the real value leaves these small blocks to ``compact``, and a
    # reader before it builds their postings in memory.
    rng = np.random.default_rng(0)
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(store_module, "SMALL_BLOCK", small),
    ):
        path = str(Path(tmp) / "i.sqlite")
        with open_index(path, "w") as store:
            store.write_documents([doc(f"d{i}", t, rng) for i, t in enumerate(docs)])
            for action, which, texts in edits:
                key = f"d{which % len(docs)}"
                if action == "remove":
                    store.remove_documents([key])
                else:
                    store.write_documents([doc(key, texts, rng)])
            if compact:
                store.compact()
            assert store.verify() == []
        with open_index(path, "r") as store:
            if not store.count():
                return
            rowids = [r[0] for r in store.db.execute("SELECT id FROM chunks ORDER BY id")]
            on_disk = not store.db.execute(
                "SELECT 1 FROM vec_blocks WHERE id NOT IN (SELECT block_id FROM lex_blocks)"
            ).fetchone()
            assert on_disk == (compact or small == 1)
            assert bool(store._lexical_postings().extra) <= (not on_disk)
            for q in qs:
                all_agree(store, q, limit)
                all_agree(store, q, limit, rowids[::2])


def test_real_text_many_blocks_and_deletions(tmp_path, monkeypatch):
    # more than one vector block (1,024 rows each), rows deleted inside blocks; every block
    # written gets its postings at once (as a big run's blocks do)
    monkeypatch.setattr(store_module, "SMALL_BLOCK", 1)
    rng = np.random.default_rng(1)
    corpus = (Path(__file__).resolve().parent.parent / "fixtures").rglob("*.md")
    sentences = [s.strip() for p in corpus for s in p.read_text().split(".") if s.strip()]
    assert len(sentences) > 50
    docs = [
        doc(
            f"d{i}",
            [(sentences[(i * 7 + j) % len(sentences)], "Heading " + str(i % 9)) for j in range(25)],
            rng,
        )
        for i in range(100)
    ]
    path = str(tmp_path / "i.sqlite")
    with open_index(path, "w") as store:
        store.write_documents(docs[:50])
        store.write_documents(docs[50:])
        store.remove_documents([f"d{i}" for i in range(0, 100, 7)])
        assert store.db.execute("SELECT count(*) FROM vec_blocks").fetchone()[0] >= 2
        assert store.db.execute("SELECT sum(dead) FROM vec_blocks").fetchone()[0] > 0
    with open_index(path, "r") as store:
        for q in [
            "the honey bees",
            "queen larvae temperature",
            "Heading 3",
            "swarm of bees",
            "what is wax made of",
            "the",
        ]:
            assert all_agree(store, q, 1000)


def _write_schema_1(store, docs) -> None:
    """Documents, chunks and one vector block as ragsift wrote them at schema 1 (no unit
    evidence, no identifier terms, no postings), through SQL."""
    ids, vecs = [], []
    with store.transaction():
        for d in docs:
            cur = store.db.execute(
                "INSERT INTO documents(key, path, sha256, n_chunks, indexed_at) "
                "VALUES (?, ?, ?, ?, 0)",
                (d.key, d.path, d.sha256, len(d.records)),
            )
            for rec, vec in zip(d.records, d.vectors):
                c = store.db.execute(
                    'INSERT INTO chunks(doc_id, idx, text, context, start, "end", tokens, '
                    "content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        cur.lastrowid,
                        rec.index,
                        rec.text,
                        rec.context,
                        rec.start,
                        rec.end,
                        rec.tokens,
                        rec.content_hash,
                    ),
                )
                ids.append(c.lastrowid)
                vecs.append(vec)
        data = np.asarray(vecs, "<f4")
        b = store.db.execute(
            "INSERT INTO vec_blocks(n, dead, dim, rowids, data) VALUES (?, 0, ?, ?, ?)",
            (len(ids), DIM, np.asarray(ids, "<i8").tobytes(), data.tobytes()),
        )
        store.db.executemany(
            "UPDATE chunks SET block_id = ?, block_pos = ? WHERE id = ?",
            [(b.lastrowid, i, r) for i, r in enumerate(ids)],
        )
        store.db.execute("INSERT INTO settings(key, value) VALUES ('dimensions', ?)", (str(DIM),))


def test_an_index_from_before_the_postings_is_scanned_then_upgraded(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    path = str(tmp_path / "old.sqlite")
    with monkeypatch.context() as m:  # write the index as schema 1 did (its own columns)
        m.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
        m.setattr(migrations, "LATEST", 1)
        with open_index(path, "w") as store:
            _write_schema_1(
                store,
                [
                    doc("a", [("honey bees and wax", ""), ("queen bee", "")], rng),
                    doc("b", [("the hive temperature", "Hive")], rng),
                ],
            )
    with open_index(path, "r") as store:
        assert migrations.schema_version(store.db) == 1
        assert store._lexical_postings() is None  # no lex tables: the scan answers
        before = store.lexical_search("bee hive", 10)
        assert [r for r, _ in before]
        assert before == lexical.scan(store.db, ["bee", "hive"], 10)
    with open_index(path, "w") as store:  # a writer upgrades and backfills
        store.compact()  # with its first write (issue 40: opening writes nothing)
        assert migrations.schema_version(store.db) == migrations.LATEST
        assert store.verify() == []
    with open_index(path, "r") as store:
        assert store._lexical_postings() is not None
        assert store.lexical_search("bee hive", 10) == before


def test_postings_that_disagree_with_fts5_are_not_used(tmp_path):
    rng = np.random.default_rng(3)
    path = str(tmp_path / "i.sqlite")
    with open_index(path, "w") as store:
        store.write_documents([doc("a", [("honey bees and wax", ""), ("queen bee", "")], rng)])
        store.compact()  # a small block's postings come with the run's compaction
    with open_index(path, "r") as store:
        want = store.lexical_search("bee wax", 10)
    db = sqlite3.connect(path)
    (ntok,) = db.execute("SELECT ntok FROM lex_blocks").fetchone()
    wrong = np.frombuffer(ntok, "<u4") + 1
    db.execute("UPDATE lex_blocks SET ntok = ?", (wrong.astype("<u4").tobytes(),))
    db.commit()
    db.close()
    with open_index(path, "r") as store:
        assert store._lexical_postings() is None  # token totals differ from FTS5's
        assert store.lexical_search("bee wax", 10) == want  # the scan answers
        assert any("lexical postings" in p for p in store.verify())


def test_query_words_are_tokenized_by_fts5_itself(tmp_path):
    rng = np.random.default_rng(4)
    path = str(tmp_path / "i.sqlite")
    with open_index(path, "w") as store:
        store.write_documents([doc("a", [("Swarming bees in the Café", "")], rng)])
        store.compact()
    with open_index(path, "r") as store:
        postings = store._lexical_postings()
        # porter stems, folded case and diacritics, as chunks_fts stores them
        assert postings.phrases(["Swarming", "bees", "café"]) == ["swarm", "bee", "cafe"]
        assert postings.phrases(["two words"]) is None  # FTS5 would make it a phrase
        assert postings.phrases(["-"]) is None  # no token at all


@pytest.mark.parametrize("pathological", ["rows", "count"])
def test_a_block_beyond_uint16_has_postings_in_memory_only(tmp_path, monkeypatch, pathological):
    monkeypatch.setattr(lexical, "MAX_FIELD", 2)  # stands in for 65,535
    rng = np.random.default_rng(5)
    texts = (
        [("bee", ""), ("wax", ""), ("hive", "")]
        if pathological == "rows"
        else [("bee bee bee", "")]
    )
    path = str(tmp_path / "i.sqlite")
    with open_index(path, "w") as store:
        store.write_documents([doc("a", texts, rng)])
        store.compact()
        assert store.db.execute("SELECT count(*) FROM lex_blocks").fetchone()[0] == 0
        assert store.verify() == []
    with open_index(path, "r") as store:
        assert store._lexical_postings().extra  # built when the snapshot is loaded
        assert all_agree(store, "bee", 5)


def test_a_new_and_an_emptied_index_agree_with_fts5(tmp_path):
    # FTS5 starts with an empty averages record: zero rows, zero tokens
    rng = np.random.default_rng(6)
    path = str(tmp_path / "i.sqlite")
    with open_index(path, "w") as store:
        assert store.verify() == []
        assert lexical.fts5_totals(store.db) == (0, 0)
        store.write_documents([doc("a", [("honey bees", "")], rng)])
        store.remove_documents(["a"])
        assert store.verify() == []
    with open_index(path, "r") as store:
        assert store._lexical_postings() is not None
        assert store.lexical_search("bees", 5) == []


def test_each_row_of_a_run_of_small_flushes_is_tokenized_once(tmp_path, monkeypatch):
    # a run commits small blocks (a few files each) and compact merges them at the end: the
    # postings are built once, in the merge, not once per flush and again in the merge
    tokenized: list[int] = []
    real = lexical.write_block

    def counting(db, block_id, rowids):
        tokenized.extend(int(r) for r in rowids if r >= 0)
        return real(db, block_id, rowids)

    monkeypatch.setattr(lexical, "write_block", counting)
    rng = np.random.default_rng(7)
    path = str(tmp_path / "i.sqlite")
    with open_index(path, "w") as store:
        for i in range(3):
            store.write_documents([doc(f"d{i}", [("honey bees", ""), (f"wax {i}", "H")], rng)])
        assert tokenized == []  # committed; a reader meanwhile builds them in memory
        assert store.compact() == 2  # three small blocks became one
        rows = [r for (r,) in store.db.execute("SELECT id FROM chunks ORDER BY id")]
        assert sorted(tokenized) == rows  # every row once
        assert store.verify() == []
    with open_index(path, "r") as store:
        assert len(all_agree(store, "wax bees", 10)) == 6


def test_the_scan_counts_a_word_fts5_splits_as_a_phrase(tmp_path):
    # a query word of several FTS5 tokens is one phrase: its tokens at consecutive offsets of
    # one column, overlapping instances counted each (``"bee bee"`` twice in "bee bee bee")
    rng = np.random.default_rng(8)
    path = str(tmp_path / "i.sqlite")
    texts = [
        ("honey bees make wax", ""),
        ("bees honey", "honey bees"),
        ("bee bee bee", ""),
        ("honey", "bees"),
        ("wax honey bees honey bees", ""),
    ]
    with open_index(path, "w") as store:
        store.write_documents([doc("a", texts, rng)])
        store.compact()
    with open_index(path, "r") as store:
        words = ["honey bees", "bee bee", "wax"]
        got = lexical.scan(store.db, words, 10)
        assert {r for r, _ in got} == {1, 2, 3, 5}  # not 4: the tokens are in two columns
        with mock.patch.multiple(lexical, **FTS5_CONSTANTS):
            want = [
                (int(r), float(s))
                for r, s in store.db.execute(
                    "SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH "
                    '\'"honey bees" OR "bee bee" OR "wax"\' ORDER BY s, rowid'
                )
            ]
            assert lexical.scan(store.db, words, 10) == want
