"""Time linear in the input (issue 40, item 4), pinned by counting, not by the clock.

- Identifier terms: ``JOINED`` tried a match at every letter of a long run that joins
  nothing, each try reading to the run's end (a 16k-letter word: 6.4 s), and ``_wholes``
  joined the rest of a qualified name once per segment (a path of k segments: k joins of
  its rest). Now a match starts only where a run starts, and only tails within
  ``MAX_WHOLE`` letters are built. The terms are those of the rule before, on every text
  (``REFERENCE`` below is that rule, as it was written).
- The characters the term functions hand to a regex stay a constant multiple of the text.
- One slope by the clock, as a ratio only: the terms of one word of 16n letters against n,
  per character and against a plain ``findall`` over the same text, interleaved (a quadratic
  rule is 16x; the bound is 4x).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterator

import pytest

from ragsift.index import terms

# ---- the rule before issue 40, as it was written (the reference for equality) --------------

_JOINED_BEFORE = re.compile(r"[^\W_]+(?:(?:_+|-+|\.|::|/)[^\W_]+)+", re.UNICODE)


def _wholes_before(ident: str) -> Iterator[str]:
    yield "".join(terms.TERM.findall(ident)).lower()
    segments = terms.QUALIFIER.split(ident)
    if len(segments) > 1:
        for i in range(1, len(segments) - 1):
            yield "".join(terms.TERM.findall("".join(segments[i:]))).lower()
        for segment in segments:
            runs = terms.TERM.findall(segment)
            if len(runs) > 1:
                yield "".join(runs).lower()


def identifier_terms_before(text: str) -> Iterator[str]:
    for m in _JOINED_BEFORE.finditer(text or ""):
        for whole in _wholes_before(m.group()):
            if len(whole) <= terms.MAX_WHOLE and not whole.isdigit():
                yield whole
    for m in terms.TERM.finditer(text or ""):
        for part in terms.camel_parts(m.group()):
            yield part.lower()


PIECES = [
    "a",
    "B",
    "z",
    "Q",
    "1",
    "0",
    "_",
    "-",
    ".",
    ":",
    "::",
    "/",
    " ",
    "文",
    "é",
    "İ",
    "Σ",
    "ß",
    "x" * 12,
    "Y" * 9,
    "--",
    "__",
    "getHTTP",
    "url_for",
    "\n",
]


def test_the_terms_are_those_of_the_rule_before_on_random_identifiers():
    rng = random.Random(40)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40)))
        assert list(terms.identifier_terms(text)) == list(identifier_terms_before(text)), text


@pytest.mark.parametrize("segment", ["a", "ab", "Ab_c", "x-y", "1", "文"])
def test_tails_around_max_whole_are_those_of_the_rule_before(segment):
    for n in range(1, 3 * terms.MAX_WHOLE):
        for sep in ("/", ".", "::"):
            text = "pre." + sep.join([segment] * n)
            assert list(terms.identifier_terms(text)) == list(identifier_terms_before(text))


def test_the_terms_of_the_repository_texts_are_those_of_the_rule_before(repo_root):
    seen = 0
    for top in ("fixtures", "docs", "ragsift"):
        for path in sorted((repo_root / top).rglob("*")):
            if (
                path.suffix not in (".md", ".rst", ".txt", ".py", ".json", ".html")
                or path.stat().st_size > 400_000
            ):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            assert list(terms.identifier_terms(text)) == list(identifier_terms_before(text)), path
            seen += 1
    assert seen > 100


# ---- counted: the characters handed to the regexes -------------------------------------------


class Counting:
    """A compiled pattern that counts the characters of every string it is handed."""

    def __init__(self, pattern: re.Pattern) -> None:
        self.pattern = pattern
        self.chars = 0

    def __getattr__(self, name: str):
        fn = getattr(self.pattern, name)

        def call(string, *args, **kwargs):
            self.chars += len(string)
            return fn(string, *args, **kwargs)

        return call


def _handed(monkeypatch, text: str) -> int:
    with monkeypatch.context() as m:
        counters = [Counting(getattr(terms, name)) for name in ("TERM", "QUALIFIER", "JOINED")]
        for name, counter in zip(("TERM", "QUALIFIER", "JOINED"), counters):
            m.setattr(terms, name, counter)
        list(terms.text_terms(text))
        return sum(c.chars for c in counters)


@pytest.mark.parametrize("sep", ["/", ".", "::", "_"])
def test_a_long_qualified_name_hands_each_character_to_a_regex_a_few_times(monkeypatch, sep):
    """A path of k segments joined its rest k times (the characters handed grew as k^2)."""
    for k in (2_000, 8_000):
        text = sep.join(["seg"] * k)
        assert _handed(monkeypatch, text) <= 8 * len(text), (sep, k)


# ---- one slope by the clock: a ratio, interleaved, with a wide margin -----------------------


def _cpu(fn, text: str, calls: int) -> float:
    t0 = time.process_time()
    for _ in range(calls):
        fn(text)
    return time.process_time() - t0


def test_the_terms_of_one_long_word_take_time_linear_in_its_length():
    """Per character, against ``TERM.findall`` over the same text (load hits both alike):
    16x the letters cost at most 4x per character (the rule before: ~16x)."""
    rng = random.Random(7)
    small = "".join(rng.choices("abcdefghij", k=2_000))
    large = "".join(rng.choices("abcdefghij", k=32_000))

    def work(text):
        list(terms.text_terms(text))

    def base(text):
        terms.TERM.findall(text)

    ratios = {len(small): [], len(large): []}
    for _ in range(5):
        for text, calls in ((small, 400), (large, 25)):  # the same characters in each
            ratios[len(text)].append(_cpu(work, text, calls) / max(_cpu(base, text, calls), 1e-9))
    assert min(ratios[len(large)]) < 4 * min(ratios[len(small)]), ratios


# ---- readers and the query path --------------------------------------------------------------


@pytest.mark.parametrize("size", [1 << 20, 1 << 21])
def test_a_markdown_file_past_the_bound_still_loses_its_html_attributes(size):
    """A one-line 1 MiB inlined image puts a markdown file past the block bound (read as
    plain text, one warning); its tags are still reduced, so the text a reader reads, and so
    what is chunked and embedded, does not grow with the attribute (it was 750,000 tokens of
    base64 at 1 MiB, minutes of embedding)."""
    import base64

    from ragsift.sources import markdown as md

    image = base64.b64encode(random.Random(size).randbytes(size)).decode()
    text = (
        f'# A page\n\nSome text before, and <img alt="a picture" '
        f'src="data:image/png;base64,{image}"> after it.\n\nA last &amp; paragraph.\n'
    )
    doc = md.parse_markdown(text, "page.md")
    assert len(doc.warnings) == 1 and doc.warnings[0].endswith("read as plain text")
    assert doc.text == "# A page\n\nSome text before, and  after it.\n\nA last & paragraph.\n"
    assert doc.line_at(doc.text.index("A last")) == 5


def test_a_long_query_is_cut_where_it_comes_in():
    """``Searcher`` cuts each query to ``MAX_QUERY_CHARS`` before it is embedded or read for
    words: the work of a query is bounded whatever its length (a 100,000-character query got
    no answer in 120 s)."""
    from ragsift.retrieval import search
    from ragsift.retrieval.request import SearchRequest

    class Embedder:
        def __init__(self):
            self.seen = []

        def embed(self, texts, kind="query"):
            import numpy as np

            self.seen += texts

            class Result:
                vectors = np.ones((len(texts), 4), np.float32) / 2
                truncated = [0] * len(texts)

            return Result

    class Store:
        def __init__(self):
            self.asked = []

        def settings(self):
            return {"dimensions": 4}

        def load(self):
            pass

        def count(self, paths=None):
            return 0

        def lexical_candidates(self, text, n, paths=None):
            self.asked.append(text)
            return []

    store, embedder = Store(), Embedder()
    query = "honey bees " * 20_000
    lexical = SearchRequest(mode="lexical")
    searcher = search.Searcher(store, embedder=embedder, prefetch=[query], request=lexical)
    assert store.asked == [query[: search.MAX_QUERY_CHARS]]
    searcher.embed_queries([query, "short"])
    assert embedder.seen == [query[: search.MAX_QUERY_CHARS], "short"]
    assert search.bounded([query]) == [query[: search.MAX_QUERY_CHARS]]
