"""Unit evidence (issue 28): each chunk's units are embedded and stored with exact offsets, a
chunk's dense evidence is computed from them, and an index built before them gets one line.

Everything here runs the real model on the bundled fixtures."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from conftest import FIXTURES, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.embedders import evidence


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("units") / "fixtures.db"
    proc = run_cli("embed", str(FIXTURES), "--index", str(path))
    assert proc.returncode == 3, proc.stderr  # fixtures/bad holds files that are skipped
    return str(path)


def _stored(index: str) -> list[tuple]:
    """(path, chunk start, text, context, units blob, rowid) of every chunk."""
    db = sqlite3.connect(index)
    rows = db.execute(
        "SELECT d.path, c.start, c.text, c.context, c.units, c.id FROM chunks c "
        "JOIN documents d ON d.id = c.doc_id ORDER BY c.id"
    ).fetchall()
    db.close()
    return rows


# -- the units of a text -----------------------------------------------------------------------


def test_hard_wrapped_prose_gives_sentences_and_items_stay_apart():
    text = (
        "# Swarming\n\nSwarming is how colonies\nreproduce: the old queen leaves with\n"
        "half the bees. A new queen takes over the hive after that.\n\n"
        "- inspect the brood frames every week\n- add a super before the flow starts\n"
    )
    units = [text[a:z] for a, z in evidence.unit_bounds(text)]
    # the heading (2 words) reads with the sentence under it; the wrapped sentence is one unit
    assert units[0] == (
        "# Swarming\n\nSwarming is how colonies\nreproduce: the old queen "
        "leaves with\nhalf the bees."
    )
    assert units[1] == "A new queen takes over the hive after that."
    assert units[2:] == [
        "- inspect the brood frames every week",
        "- add a super before the flow starts",
    ]


def test_short_pieces_join_a_neighbour_and_long_ones_are_cut():
    assert evidence.unit_bounds("") == []
    assert evidence.unit_bounds("Yes.") == [(0, 4)]  # a text shorter than a unit is one
    code = "x = 1\ny = 2\nz = x + y\nprint(z)\n"
    assert len(evidence.unit_bounds(code)) == 1  # short code lines are grouped
    long = " ".join(f"w{i}" for i in range(3 * evidence.MAX_WORDS))
    bounds = evidence.unit_bounds(long)
    assert len(bounds) == 3 and all(len(long[a:z].split()) == evidence.MAX_WORDS for a, z in bounds)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab .!?\n\t-|#`*1)"), max_size=300))
def test_units_are_ordered_trimmed_slices_covering_every_non_blank_character(text):
    bounds = evidence.unit_bounds(text)
    covered = np.zeros(len(text), bool)
    last = 0
    for a, z in bounds:
        assert last <= a < z <= len(text)
        assert text[a:z] == text[a:z].strip()
        covered[a:z] = True
        last = z
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())


def test_int8_storage_keeps_the_cosine_within_0_003():
    from ragsift.embedders import load_embedder

    emb = load_embedder()
    texts = [
        "Bees swarm in late spring.",
        "A sourdough starter needs daily feeding.",
        "Turn stones over gently in tide pools.",
        "Set a password for the slideshow.",
    ]
    vecs = np.asarray(emb.embed(texts).vectors, np.float32)
    q = np.asarray(emb.embed(["when do honey bees swarm"], kind="query").vectors[0])
    blob = evidence.encode([(0, 1)] * len(texts), vecs)
    back = evidence.unit_vectors(blob)
    assert np.abs(back @ q - vecs @ q).max() < 0.003


# -- what embed stores -------------------------------------------------------------------------


def test_every_units_offsets_slice_the_document(index):
    from ragsift.ingest.load import iter_documents

    docs = {d.path: d.text for d in iter_documents([str(FIXTURES)])}
    rows = _stored(index)
    assert rows and all(blob for *_, blob, _ in rows)
    for path, start, text, _, blob, _ in rows:
        starts, ends, _, _ = evidence.decode(blob)
        assert len(starts) >= 1
        doc = docs[path]
        assert doc[start : start + len(text)] == text
        for a, z in zip(starts.tolist(), ends.tolist()):
            assert 0 <= a < z <= len(text)
            assert doc[start + a : start + z] == text[a:z]
        # the units are the text's own units, in order
        assert list(zip(starts.tolist(), ends.tolist())) == (
            evidence.unit_bounds(text) or [(0, len(text))]
        )


def test_a_chunks_vector_is_the_length_weighted_mean_of_its_units(index):
    from ragsift.embedders import load_embedder

    emb = load_embedder()
    db = sqlite3.connect(index)
    matrix_rows = {}
    for rowids, data, dim in db.execute("SELECT rowids, data, dim FROM vec_blocks"):
        ids = np.frombuffer(rowids, "<i8")
        m = np.frombuffer(data, "<f4").reshape(len(ids), dim)
        matrix_rows.update({int(r): m[i] for i, r in enumerate(ids) if r >= 0})
    db.close()
    checked = 0
    for _, _, _text, context, blob, rowid in _stored(index):
        units = evidence.unit_vectors(blob)
        starts, ends, _, _ = evidence.decode(blob)
        bounds = list(zip(starts.tolist(), ends.tolist()))
        parts = [units]
        if context.strip():
            parts.append(np.asarray(emb.embed([context.strip()]).vectors, np.float32))
        lengths = evidence.weights(bounds, context)
        assert lengths[: len(bounds)] == [max(z - a, 1) for a, z in bounds]
        want = evidence.aggregate(np.vstack(parts), lengths)
        # the stored units are int8: their mean is within a rounding of the float32 one
        assert float(want @ matrix_rows[rowid]) > 0.999
        if len(bounds) > 1 and len(set(lengths)) > 1:  # the weights are not a plain mean
            plain = evidence.aggregate(np.vstack(parts))
            assert float(plain @ matrix_rows[rowid]) < float(want @ matrix_rows[rowid])
            checked += 1
    assert checked  # some chunk has units of different lengths


def test_aggregate_weighs_each_vector_by_its_weight():
    a, b = np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)
    assert evidence.aggregate(np.stack([a, b])) == pytest.approx([2**-0.5, 2**-0.5])
    v = evidence.aggregate(np.stack([a, b]), [3, 1])
    assert v == pytest.approx(np.array([3.0, 1.0]) / 10**0.5)
    assert evidence.weights([(0, 10), (10, 12)], "  Title ") == [10, 2, 5]
    assert evidence.weights([(4, 4)], " ") == [1]


def test_the_engine_scores_a_chunk_by_its_best_unit(index):
    from ragsift import api
    from ragsift.embedders import load_embedder
    from ragsift.retrieval import relevance

    query = "how do I keep a slideshow private"
    ix = api.open_index(index)
    try:
        rec = ix.explain(query, k=1, threshold=0.0)
    finally:
        ix.close()
    hit = rec["candidates"][0]
    qvec = np.asarray(load_embedder().embed([query], kind="query").vectors[0])
    blob = next(b for p, s, t, c, b, r in _stored(index) if r == hit["rowid"])
    starts, ends, scales, q8 = evidence.decode(blob)
    cos = (q8.astype(np.float32) @ qvec) * scales
    best = int(np.argmax(cos))
    assert hit["unit_score"] == pytest.approx(float(cos[best]), abs=1e-5)
    assert (hit["unit_start"] - hit["start"], hit["unit_end"] - hit["start"]) == (
        int(starts[best]),
        int(ends[best]),
    )
    assert "password" in hit["unit_text"]
    # the dense evidence the score weighs is the unit's and the aggregate's, mixed
    assert relevance.dense_evidence(np.array([hit["dense_score"]]), np.array([hit["unit_score"]]))[
        0
    ] == pytest.approx(
        relevance.UNIT_WEIGHT * hit["unit_score"] + (1 - relevance.UNIT_WEIGHT) * hit["dense_score"]
    )
    words = 7
    with_unit = relevance.scores("dense", [0.3, 0.3], [0, 0], words, units=[0.8, 0.3])
    assert with_unit[0] > with_unit[1]  # same aggregate, the better unit ranks first
    # and explain's closest unit is that same unit, read from the index
    best_unit = rec["attributions"][0]["units"][0]
    assert best_unit["text"] == hit["unit_text"]
    assert best_unit["score"] == pytest.approx(hit["unit_score"], abs=1e-5)


# -- an index from before unit evidence ----------------------------------------------------------


def test_an_index_without_unit_evidence_gets_one_line_and_rebuild(tmp_path):
    path = tmp_path / "old.db"
    proc = run_cli("embed", str(FIXTURES / "lantern"), "--index", str(path))
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(path)  # what ragsift 0.2 left: no evidence setting, no units
    with db:
        db.execute("DELETE FROM settings WHERE key = 'evidence'")
        db.execute("UPDATE chunks SET units = NULL")
    db.close()
    for args in (
        ("query", "password"),
        ("explain", "password"),
        ("embed", str(FIXTURES / "lantern")),
    ):
        proc = run_cli(*args, "--index", str(path))
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "--rebuild" in lines[0] and "Traceback" not in proc.stderr
    proc = run_cli("embed", str(FIXTURES / "lantern"), "--index", str(path), "--rebuild")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("query", "password", "--index", str(path)).returncode == 0


def test_an_index_of_the_first_unit_layout_gets_one_line_and_rebuild(tmp_path):
    """units-1 (ragsift 0.3-0.5): chunk vectors the plain mean of their units; mixing them
    with length-weighted ones would rank two kinds of vector as one."""
    path = tmp_path / "units1.db"
    proc = run_cli("embed", str(FIXTURES / "lantern"), "--index", str(path))
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE settings SET value = ? WHERE key = 'evidence'", (json.dumps("units-1"),))
    db.close()
    for args in (("query", "password"), ("embed", str(FIXTURES / "lantern"))):
        proc = run_cli(*args, "--index", str(path))
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "plain mean of their units" in lines[0]
        assert "--rebuild" in lines[0]
    proc = run_cli("embed", str(FIXTURES / "lantern"), "--index", str(path), "--rebuild")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("query", "password", "--index", str(path)).returncode == 0
