"""Evidence spans (``ragsift.retrieval.spans``, ``query --span best``, ``eval --span best``).

The span rule reads only texts (no model), so the property test needs no embedder at all;
the CLI tests run the real model through ``ragsift embed`` / ``query`` / ``eval``."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.retrieval.spans import MIN_CHARS, best_spans, query_terms, unit_bounds
from tests.conftest import REPO, run_cli
from tests.test_eval import _eval_json, _write_config, make_span_dataset

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400)
WORDY = st.lists(st.sampled_from(["bee", "swarm", "hive", "queen", ". ", "\n", "\n\n", " ",
                                  "Bees!", "é", "日本", "x"]), max_size=120).map("".join)


@settings(max_examples=300, deadline=None)
@given(document=st.one_of(TEXT, WORDY), query=st.one_of(TEXT, WORDY),
       cuts=st.lists(st.integers(0, 10_000), min_size=2, max_size=8),
       min_chars=st.integers(0, 600))
def test_a_span_is_always_a_slice_of_the_document_inside_its_chunk(document, query, cuts,
                                                                   min_chars):
    # chunks: arbitrary slices of one document (a chunk's text is document.text[start:end])
    bounds = sorted({c % (len(document) + 1) for c in cuts})
    chunks = [(s, e) for s, e in zip(bounds, bounds[1:])] or [(0, len(document))]
    spans = best_spans(query, [document[s:e] for s, e in chunks], [s for s, _ in chunks],
                       min_chars)
    assert len(spans) == len(chunks)
    for (s, e), span in zip(chunks, spans):
        assert s <= span.start <= span.end <= e
        assert document[span.start:span.end] == span.text
        if document[s:e].strip():
            assert span.text.strip()  # a chunk with any text never gets an empty span


@given(text=st.one_of(TEXT, WORDY))
def test_units_are_verbatim_ordered_slices(text):
    last = 0
    for s, e in unit_bounds(text):
        assert last <= s < e <= len(text)
        assert text[s:e] == text[s:e].strip()
        last = e


HIVE = ("The apiary sits behind the barn. Honey is harvested in late summer. "
        "A colony swarms when the queen leaves with half the workers, usually in spring. "
        "Smoke calms the bees during inspections. The shed stores spare frames.")


def test_the_span_is_the_evidence_and_grows_over_every_query_term():
    (span,) = best_spans("when does a colony swarm with its queen", [HIVE], [100], min_chars=0)
    sentence = "A colony swarms when the queen leaves with half the workers, usually in spring."
    assert span.text == sentence and span.start == 100 + HIVE.index(sentence)
    # a second query term two sentences away pulls the window over the sentence between
    (span,) = best_spans("swarm queen smoke", [HIVE], min_chars=0)
    assert span.text == HIVE[HIVE.index("A colony"):HIVE.index("The shed")].strip()
    # min_chars widens the window with context around the evidence, up to the whole chunk
    (wide,) = best_spans("swarm queen", [HIVE], min_chars=10_000)
    assert wide.text == HIVE


def test_no_query_term_in_a_chunk_keeps_the_whole_chunk():
    spans = best_spans("volcano eruption", [HIVE, "Lava flows after an eruption."], [0, 500])
    assert (spans[0].start, spans[0].end, spans[0].score) == (0, len(HIVE), 0.0)
    assert spans[1].text == "Lava flows after an eruption." and spans[1].score > 0


def test_query_terms_drop_function_words_and_stem_by_truncation():
    assert query_terms("When do the honey bees swarming?") == ["honey", "bees", "swarmi"]
    assert query_terms("the of") == ["the", "of"]  # nothing else left: keep them


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_query_span_best_json_fields(tmp_path):
    index = str(tmp_path / "idx.db")
    proc = run_cli("embed", "fixtures/field-notes.txt", "fixtures/beekeeping", "-i", index)
    assert proc.returncode == 0, proc.stderr
    plain = _jsonl(run_cli("query", "when do honey bees swarm", "-i", index, "--json",
                           "-k", "3").stdout)
    assert plain and not any("span_start" in h for h in plain)
    proc = run_cli("query", "when do honey bees swarm", "-i", index, "--json", "-k", "3",
                   "--span", "best", "--rejected")
    assert proc.returncode == 0, proc.stderr
    hits = _jsonl(proc.stdout)
    assert [h["id"] for h in hits if h["admitted"]] == [h["id"] for h in plain]
    for h in hits:
        if not h["admitted"]:
            assert "span_start" not in h  # spans are for admitted hits
            continue
        s, e = h["span_start"], h["span_end"]
        assert h["start"] <= s < e <= h["end"]
        assert h["text"][s - h["start"]:e - h["start"]] == h["span_text"]
        if h["path"].endswith(".txt"):  # a plain text file's document text is the file
            text = (REPO / h["path"]).read_text(encoding="utf-8")
            assert text[s:e] == h["span_text"]
    # the admitted hit whose chunk holds the query's word (on these 8 chunks it ranks first at
    # α 0.5 and second at 0.6, behind the chunk with the best cosine): its span holds the word
    best = next(h for h in hits if h["admitted"] and "swarm" in h["text"].lower())
    assert "swarm" in best["span_text"].lower()
    assert len(best["span_text"]) <= max(len(best["text"]), MIN_CHARS)
    # explain carries the same span fields in its JSON record
    proc = run_cli("explain", "when do honey bees swarm", "-i", index, "--json", "-k", "3",
                   "--span", "best")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    admitted = [c for c in record["candidates"] if c["admitted"]]
    assert [(c["span_start"], c["span_text"]) for c in admitted] == \
        [(h["span_start"], h["span_text"]) for h in hits if h["admitted"]]
    bad = run_cli("query", "bees", "-i", index, "--span", "sentence")
    assert bad.returncode == 2 and "--span must be chunk or best" in bad.stderr
    assert "Traceback" not in bad.stderr


ANIMALS = ("Cats sleep for most of the day in warm places. "
           "Elephants are the largest land mammals and use their trunks to drink water. "
           "Dogs were domesticated from wolves thousands of years ago. "
           "Owls hunt at night and can turn their heads very far. "
           "Salmon swim upstream to spawn in the rivers where they hatched. "
           "Bats find insects in the dark by listening to the echoes of their calls. "
           "Penguins cannot fly but they are fast swimmers in cold southern seas. "
           "Octopuses have three hearts and blue blood. "
           "Camels store fat in their humps and cross deserts for days. "
           "Honey bees dance to tell the hive where flowers are. "
           "Tortoises can live for more than a century on dry land.")


def test_eval_span_best_scores_the_spans(tmp_path):
    root = make_span_dataset(
        tmp_path / "tiny", {"animals": ANIMALS},
        [("Which animal drinks water with its trunk?", "animals",
          ["Elephants are the largest land mammals and use their trunks to drink water."])])
    cfg = _write_config(tmp_path / "one.toml", 'strategy = "chars"\ntokenizer = "chars"\n'
                        "size = 1000", 'mode = "hybrid"\nk = 1')
    cache = str(tmp_path / "cache.sqlite")
    (chunk,) = _eval_json(str(root), "--config", str(cfg), "--cache", cache)
    (span,) = _eval_json(str(root), "--config", str(cfg), "--cache", cache, "--span", "best")
    assert "span" not in chunk["config"] and span["config"]["span"] == "best"
    # one chunk holds the whole corpus; its span (min width MIN_CHARS) still covers the
    # reference, and scores a smaller denominator than the chunk
    assert chunk["overall"]["recall"] == span["overall"]["recall"] == 100.0
    ref = len("Elephants are the largest land mammals and use their trunks to drink water.")
    assert chunk["overall"]["iou"] == round(100 * ref / len(ANIMALS), 2)
    # the span is MIN_CHARS wide, plus at most one sentence (< 100 characters here)
    assert len(ANIMALS) > MIN_CHARS + 200
    assert span["overall"]["iou"] >= 100 * ref / (MIN_CHARS + 100) > chunk["overall"]["iou"]


def test_explain_underlines_the_span():
    from ragsift.cli.explain import highlighted
    from ragsift.retrieval.topk import Candidate

    (span,) = best_spans("swarm queen", [HIVE], [1000], min_chars=0)
    c = Candidate(id="x", rowid=1, score=0.5, rank=1, admitted=True, reason=None, path="h.md",
                  start=1000, end=1000 + len(HIVE), text=HIVE, span_start=span.start,
                  span_end=span.end, span_text=span.text)
    out = highlighted(c, None)
    under = [(s.start, s.end) for s in out.spans if "underline" in str(s.style)]
    assert [out.plain[s:e] for s, e in under] == [span.text]
    assert [s.style for s in highlighted(Candidate(**{**c.__dict__, "span_start": None,
                                                       "span_end": None}), None).spans] == []
