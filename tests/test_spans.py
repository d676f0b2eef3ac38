"""Evidence spans (``ragsift.retrieval.spans``, ``query --span best``, ``eval --span best``).

The span rule reads only texts and the hits' cosines (given as numbers here), so the property
test needs no embedder at all; the CLI tests run the real model through ``ragsift embed`` /
``query`` / ``eval``."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.retrieval.spans import (
    MIN_CHARS,
    STRONG,
    best_spans,
    evidence_strengths,
    query_terms,
    unit_bounds,
)
from tests.conftest import REPO, run_cli
from tests.test_eval import _eval_json, _write_config, make_span_dataset

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400)
WORDY = st.lists(
    st.sampled_from(
        ["bee", "swarm", "hive", "queen", ". ", "\n", "\n\n", " ", "Bees!", "é", "日本", "x"]
    ),
    max_size=120,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    document=st.one_of(TEXT, WORDY),
    query=st.one_of(TEXT, WORDY),
    cuts=st.lists(st.integers(0, 10_000), min_size=2, max_size=8),
    min_chars=st.integers(0, 600),
    cosines=st.one_of(st.none(), st.lists(st.floats(-1, 1), min_size=8, max_size=8)),
    strong=st.sampled_from([0.0, STRONG, 1.0, math.inf]),
)
def test_a_span_is_always_a_slice_of_the_document_inside_its_chunk(
    document, query, cuts, min_chars, cosines, strong
):
    # chunks: arbitrary slices of one document (a chunk's text is document.text[start:end])
    bounds = sorted({c % (len(document) + 1) for c in cuts})
    chunks = [(s, e) for s, e in zip(bounds, bounds[1:])] or [(0, len(document))]
    scores = None if cosines is None else cosines[: len(chunks)]
    spans = best_spans(
        query, [document[s:e] for s, e in chunks], [s for s, _ in chunks], min_chars, scores, strong
    )
    assert len(spans) == len(chunks)
    for (s, e), span in zip(chunks, spans):
        assert s <= span.start <= span.end <= e
        assert document[span.start : span.end] == span.text
        if document[s:e].strip():
            assert span.text.strip()  # a chunk with any text never gets an empty span
        assert 0.0 <= span.strength <= 1.0
        if span.strength >= strong:
            assert (span.start, span.end) == (s, e)  # a strong hit keeps its whole chunk


@given(text=st.one_of(TEXT, WORDY))
def test_units_are_verbatim_ordered_slices(text):
    last = 0
    for s, e in unit_bounds(text):
        assert last <= s < e <= len(text)
        assert text[s:e] == text[s:e].strip()
        last = e


HIVE = (
    "The apiary sits behind the barn. Honey is harvested in late summer. "
    "A colony swarms when the queen leaves with half the workers, usually in spring. "
    "Smoke calms the bees during inspections. The shed stores spare frames."
)


CUT = math.inf  # no hit is strong enough to keep its chunk: every hit is cut to its window


def test_the_span_is_the_evidence_and_grows_over_every_query_term():
    (span,) = best_spans(
        "when does a colony swarm with its queen", [HIVE], [100], min_chars=0, strong=CUT
    )
    sentence = "A colony swarms when the queen leaves with half the workers, usually in spring."
    assert span.text == sentence and span.start == 100 + HIVE.index(sentence)
    # a second query term two sentences away pulls the window over the sentence between
    (span,) = best_spans("swarm queen smoke", [HIVE], min_chars=0, strong=CUT)
    assert span.text == HIVE[HIVE.index("A colony") : HIVE.index("The shed")].strip()
    # min_chars widens the window with context around the evidence, up to the whole chunk
    (wide,) = best_spans("swarm queen", [HIVE], min_chars=10_000, strong=CUT)
    assert wide.text == HIVE


def test_evidence_strength_is_the_mean_of_relative_bm25_and_min_max_cosine():
    # two texts with the same one term at the same length tie on BM25; the third has none
    tf, lengths = [{"a": 1}, {"a": 1}, {}], [10, 10, 10]
    assert evidence_strengths(tf, lengths, [0.9, 0.5, 0.7]) == pytest.approx([1.0, 0.5, 0.25])
    assert evidence_strengths(tf, lengths, None) == [1.0, 1.0, 0.0]  # lexical part alone
    assert evidence_strengths(tf, lengths, [0.9, math.nan, 0.7]) == [1.0, 1.0, 0.0]
    # equal cosines say nothing against any hit; no query term says nothing for any
    assert evidence_strengths(tf, lengths, [0.4, 0.4, 0.4]) == [1.0, 1.0, 0.5]
    assert evidence_strengths([{}, {}], [5, 9], [0.3, 0.1]) == [0.5, 0.0]
    # more occurrences in a text of the same length: a higher BM25, the best scales to 1
    more = evidence_strengths([{"a": 3}, {"a": 1}, {}], lengths, None)
    assert more[0] == 1.0 > more[1] > 0.0 == more[2]


LAVA = "Lava flows after an eruption. The crater glows at night."


def test_a_strong_hit_keeps_its_chunk_and_a_weak_one_is_cut():
    query = "when does a colony swarm with its queen"
    texts = [HIVE, "The queen bee lays eggs all summer. Drones do not work.", LAVA]
    spans = best_spans(query, texts, [0, 1000, 2000], scores=[0.7, 0.15, 0.1])
    assert spans[0].strength == 1.0 and spans[2].strength == 0.0
    # the best hit by both measures keeps its whole chunk
    assert (spans[0].start, spans[0].end, spans[0].text) == (0, len(HIVE), HIVE)
    assert spans[0].strength >= STRONG
    # a weak hit holding a query term is cut to the unit(s) with it
    assert spans[1].strength < STRONG
    assert spans[1].text == "The queen bee lays eggs all summer."
    assert spans[1].start == 1000
    # a weak hit with no query term gets its first unit, the least span there is
    assert spans[2].text == "Lava flows after an eruption." and spans[2].start == 2000


def test_no_query_term_anywhere_the_cosine_decides():
    spans = best_spans("volcano eruption", [HIVE, LAVA], [0, 500], scores=[0.2, 0.6])
    assert spans[1].text == LAVA  # strongest on both sides: the whole chunk
    assert spans[0].text == "The apiary sits behind the barn." and spans[0].score == 0.0
    # the best cosine alone is half the strength, above STRONG: a chunk with no query term
    # but the best cosine keeps its whole chunk
    spans = best_spans("volcano eruption", [HIVE, LAVA], [0, 500], scores=[0.6, 0.2])
    assert spans[0].text == HIVE and spans[0].strength == 0.5 >= STRONG


def test_query_terms_drop_function_words_and_stem_by_truncation():
    assert query_terms("When do the honey bees swarming?") == ["honey", "bees", "swarmi"]
    assert query_terms("the of") == ["the", "of"]  # nothing else left: keep them


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_query_span_best_json_fields(tmp_path):
    index = str(tmp_path / "idx.db")
    proc = run_cli("embed", "fixtures/field-notes.txt", "fixtures/beekeeping", "-i", index)
    assert proc.returncode == 0, proc.stderr
    plain = _jsonl(
        run_cli("query", "when do honey bees swarm", "-i", index, "--json", "-k", "3").stdout
    )
    assert plain and not any("span_start" in h for h in plain)
    proc = run_cli(
        "query",
        "when do honey bees swarm",
        "-i",
        index,
        "--json",
        "-k",
        "3",
        "--span",
        "best",
        "--rejected",
    )
    assert proc.returncode == 0, proc.stderr
    hits = _jsonl(proc.stdout)
    assert [h["id"] for h in hits if h["admitted"]] == [h["id"] for h in plain]
    for h in hits:
        if not h["admitted"]:
            assert "span_start" not in h  # spans are for admitted hits
            continue
        s, e = h["span_start"], h["span_end"]
        assert h["start"] <= s < e <= h["end"]
        assert h["text"][s - h["start"] : e - h["start"]] == h["span_text"]
        if h["path"].endswith(".txt"):  # a plain text file's document text is the file
            text = (REPO / h["path"]).read_text(encoding="utf-8")
            assert text[s:e] == h["span_text"]
    # the admitted hit whose chunk holds the query's word (on these 8 chunks it ranks first at
    # α 0.5 and second at 0.6, behind the chunk with the best cosine): its span holds the word
    best = next(h for h in hits if h["admitted"] and "swarm" in h["text"].lower())
    assert "swarm" in best["span_text"].lower()
    assert len(best["span_text"]) <= max(len(best["text"]), MIN_CHARS)
    # explain carries the same span fields in its JSON record
    proc = run_cli(
        "explain", "when do honey bees swarm", "-i", index, "--json", "-k", "3", "--span", "best"
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    admitted = [c for c in record["candidates"] if c["admitted"]]
    assert [(c["span_start"], c["span_text"]) for c in admitted] == [
        (h["span_start"], h["span_text"]) for h in hits if h["admitted"]
    ]
    bad = run_cli("query", "bees", "-i", index, "--span", "sentence")
    assert bad.returncode == 2 and "--span must be chunk or best" in bad.stderr
    assert "Traceback" not in bad.stderr


ANIMALS = (
    "Cats sleep for most of the day in warm places. "
    "Elephants are the largest land mammals and use their trunks to drink water. "
    "Dogs were domesticated from wolves thousands of years ago. "
    "Owls hunt at night and can turn their heads very far. "
    "Salmon swim upstream to spawn in the rivers where they hatched. "
    "Bats find insects in the dark by listening to the echoes of their calls. "
    "Penguins cannot fly but they are fast swimmers in cold southern seas. "
    "Octopuses have three hearts and blue blood. "
    "Camels store fat in their humps and cross deserts for days. "
    "Honey bees dance to tell the hive where flowers are. "
    "Tortoises can live for more than a century on dry land."
)


def test_eval_span_best_scores_the_spans(tmp_path):
    ref = "Elephants are the largest land mammals and use their trunks to drink water."
    root = make_span_dataset(
        tmp_path / "tiny",
        {"animals": ANIMALS},
        [("Which animal drinks water with its trunk?", "animals", [ref])],
    )
    cfg = _write_config(
        tmp_path / "one.toml",
        'strategy = "chars"\ntokenizer = "chars"\nsize = 200\noverlap = 0',
        'mode = "hybrid"\nk = 3',
    )
    cache = str(tmp_path / "cache.sqlite")
    (chunk,) = _eval_json(str(root), "--config", str(cfg), "--cache", cache)
    (span,) = _eval_json(str(root), "--config", str(cfg), "--cache", cache, "--span", "best")
    assert "span" not in chunk["config"] and span["config"]["span"] == "best"
    # the hit holding the reference is the strongest: it keeps its chunk (the reference is
    # still found); the weakest of the three is cut, so the spans score a smaller
    # denominator than the three whole chunks
    assert chunk["overall"]["recall"] == span["overall"]["recall"] == 100.0
    assert span["overall"]["iou"] > chunk["overall"]["iou"]
    assert span["overall"]["precision"] > chunk["overall"]["precision"]


def test_explain_underlines_the_span():
    from ragsift.cli.explain import highlighted
    from ragsift.retrieval.topk import Candidate

    (span,) = best_spans("swarm queen", [HIVE], [1000], min_chars=0)
    c = Candidate(
        id="x",
        rowid=1,
        score=0.5,
        rank=1,
        admitted=True,
        reason=None,
        path="h.md",
        start=1000,
        end=1000 + len(HIVE),
        text=HIVE,
        span_start=span.start,
        span_end=span.end,
        span_text=span.text,
    )
    out = highlighted(c, None)
    under = [(s.start, s.end) for s in out.spans if "underline" in str(s.style)]
    assert [out.plain[s:e] for s, e in under] == [span.text]
    assert [
        s.style
        for s in highlighted(
            Candidate(**{**c.__dict__, "span_start": None, "span_end": None}), None
        ).spans
    ] == []


def test_a_cut_hit_starts_from_its_best_unit():
    """The window of a weak hit is seeded by its best unit (what the dense evidence found,
    ``ragsift.retrieval.units``), then grows over the query's words; with no query word in
    the chunk, the best unit alone is the span (before unit evidence: the first unit)."""
    from ragsift.retrieval.spans import best_spans

    strong = "Swarming bees leave the hive with the old queen in spring."
    weak = "Intro line here. The colony splits when it runs out of room. Unrelated end."
    seed = (weak.index("The colony"), weak.index("room.") + len("room."))
    [_, cut] = best_spans(
        "when do bees swarm", [strong, weak], [0, 100], scores=[0.9, 0.1], seeds=[None, seed]
    )
    assert cut.text == "The colony splits when it runs out of room."
    assert (cut.start, cut.end) == (100 + seed[0], 100 + seed[1])
    [_, unseeded] = best_spans("when do bees swarm", [strong, weak], [0, 100], scores=[0.9, 0.1])
    assert unseeded.text == "Intro line here."
