"""The words a lexical query asks for, and the identifier terms indexed beside a chunk's words:
one rule for every backend (both score ragsift's BM25 over FTS5's tokens) and for the
relevance score's query-word count.

Identifiers are terms (issue 28). Both tokenizers cut text at every character that is not a
letter or digit, so ``url_for`` is indexed as ``url`` + ``for`` and ``camelCase`` as the one
word ``camelcase``. ``identifier_terms`` gives, for a text, the terms that make an identifier
findable whole and by its parts, whatever its spelling:

- an identifier joined by ``_``, ``.``, ``-``, ``::`` or ``/`` (``url_for``,
  ``flask.Flask.route``, ``--dry-run``, ``MAX_CONTENT_LENGTH``, ``std::vector``): its whole
  form, its letter/digit runs joined and lower-cased (``urlfor``, ``flaskflaskroute``,
  ``dryrun``, ``maxcontentlength``); its parts are already words of the text. A name
  qualified by ``.``, ``::`` or ``/`` also gives the whole form of each of its compound
  segments and of each of its proper tails of two segments or more, since a query names the
  last part (``app.before_request``: ``appbeforerequest``, ``beforerequest``;
  ``flask.Flask.route``: ``flaskflaskroute``, ``flaskroute``);
- a camelCase / PascalCase word (``camelCase``, ``getHTTPResponse``): its parts (``camel``,
  ``case``; ``get``, ``http``, ``response``); its whole form is already a word of the text.

The whole form is the joined word itself, without a marker: ``url_for``, ``urlFor`` and
``URLFor`` meet in one term, as ``--dry-run``, ``dry_run`` and ``dryRun`` do. Every
occurrence counts (a term's count in a row is how often the identifier occurs). A whole form
longer than ``MAX_WHOLE`` characters (a URL, a long path) is left out: Lance drops longer
tokens, and both backends must hold the same terms; so is one of digits only (``3.14``,
``2.0.1``: numbers, whose joined form would meet other numbers).

``query_terms`` is what a backend searches: ``query_words`` plus the same terms of the query
(a chunk holding ``url_for`` scores the rare ``urlfor`` and ranks first; one holding ``url``
and ``for`` apart still matches). ``query_words`` stays the query's words (the relevance
score counts them).

CJK text is searchable by its words (issue 37, index schema 6 on SQLite, 4 on Lance). Both
tokenizers make a run of Han, kana or Hangul between two separators ONE token (``文件上传``,
or ``使用fastapi框架`` with the Latin word inside), which no shorter query matches. Each
letter/digit run is cut where the script changes (``SCRIPT_PART``: CJK, ``CJK_CHARS``, or
anything else), and ``cjk_terms`` adds, as Lucene's CJK analyzer does plus unigrams:

- a run of CJK alone (the text's token already): of 2 characters, its 2 unigrams; of 3 or more,
  its overlapping bigrams and its unigrams; of 1, nothing (the token is that character);
- a run mixing scripts (``使用FastAPI框架``, a token no query asks for): each part, a CJK
  part of 1 or 2 characters whole, a longer one by its bigrams, every CJK part also by its
  unigrams (a part of 1: itself), any other part as the word it is (``fastapi``);

so each bigram and each character is counted once per occurrence. A query's CJK part is asked
for as its character (1) or its overlapping bigrams (2 or more; ``文件上传``: ``文件 件上
上传``), its other parts as words: any 1-4 CJK characters that a chunk holds verbatim match
it. Identifier terms are taken from the text with its CJK characters read as separators, so
``使用url_for函数`` gives ``urlfor`` too. A text without CJK gets exactly today's terms. An
index from before (``cjk=False``) is searched with the old rule: its queries ask for whole
runs, as its rows were indexed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_QUERY_TERMS = 64
MAX_WHOLE = 40  # a longer identifier is indexed by its parts only (kept from schema 4)

TERM = re.compile(r"[^\W_]+", re.UNICODE)
# letter/digit runs joined (no space) by `_`, `.`, `-`, `::` or `/`: one identifier. A match
# starts only where a run starts (the lookbehind): without it the search tried again at every
# letter of a run that joins nothing, each try reading to the run's end (a 16k-letter word:
# 6.4 s, quadratic; issue 40). It finds the same matches: one starting inside a run would
# start at the run's first letter as well.
JOINED = re.compile(r"(?<![^\W_])[^\W_]+(?:(?:_+|-+|\.|::|/)[^\W_]+)+", re.UNICODE)
QUALIFIER = re.compile(r"\.|::|/")  # what qualifies a name; `_` and `-` join one segment
# the parts of an ASCII camelCase word: an upper-case run not followed by a lower-case letter
# (``HTTP`` of ``HTTPResponse``), or a capitalised / lower-case run; digits stay with the part
CAMEL = re.compile(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")
PLURAL_CAPS = re.compile(r"[A-Z]{2,}s")  # ``APIs``, ``URLs``: one word, not ``AP`` + ``Is``
# CJK: Han (with extension A, the compatibility ideographs, 々 〆 〇 and the supplementary
# planes' extensions), Hiragana, Katakana (with ー, the phonetic extensions, the half-width
# forms), Hangul (syllables, jamo, compatibility jamo)
CJK_CHARS = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f"
)
CJK = re.compile(f"[{CJK_CHARS}]")
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
# a letter/digit run's parts: each a run of one script class (CJK, or anything else)
SCRIPT_PART = re.compile(f"[{CJK_CHARS}]+|[^\\W_{CJK_CHARS}]+", re.UNICODE)
# English function words are dropped from lexical queries (unless nothing else is left): they
# match most rows, so FTS5 scores nearly the whole index for them while BM25 gives them almost
# no weight. Measured on 100k SciFact chunks: OR queries 3x faster (~100 ms -> ~35 ms), with
# retrieval quality unchanged (bench/RESULTS.md, "Lexical query terms").
STOPWORDS = frozenset(
    {
        "a",
        "about",
        "after",
        "all",
        "also",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "during",
        "each",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "may",
        "me",
        "might",
        "more",
        "most",
        "my",
        "no",
        "not",
        "of",
        "on",
        "only",
        "or",
        "other",
        "our",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "under",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    }
)


def query_words(query: str, cjk: bool = True) -> list[str]:
    """The words a lexical query asks for, on every backend: letter/digit runs, lower-cased,
    each once, English function words dropped unless nothing else is left, at most
    ``MAX_QUERY_TERMS``. ``cjk`` (an index that holds CJK terms): a run with CJK characters
    gives its parts instead (``cjk_query_parts``: ``文件上传`` as ``文件 件上 上传``)."""
    terms = text_words(query, cjk)
    terms = [t for t in terms if t not in STOPWORDS] or terms
    return terms[:MAX_QUERY_TERMS]


def text_words(text: str, cjk: bool = True) -> list[str]:
    """The words of ``text`` as a query reads them, each once, in order, function words kept:
    letter/digit runs lower-cased, a CJK run as its parts when ``cjk`` (``cjk_query_parts``).
    ``query_words`` and the page title's words (``retrieval.relevance.title_words``)."""
    runs = (t.lower() for t in TERM.findall(text or ""))
    words = (w for run in runs for w in (cjk_query_parts(run) if cjk else (run,)))
    return list(dict.fromkeys(words))


def _bigrams(part: str) -> Iterator[str]:
    return (part[i : i + 2] for i in range(len(part) - 1))


def cjk_query_parts(run: str) -> list[str] | tuple[str, ...]:
    """What a query asks for in place of one letter/digit run: the run itself when it has no
    CJK character; else each part (``SCRIPT_PART``), a CJK part as its character (1) or its
    overlapping bigrams (2 or more), any other part as it is (``使用fastapi框架``: ``使用
    fastapi 框架``)."""
    if not CJK.search(run):
        return (run,)
    out: list[str] = []
    for part in SCRIPT_PART.findall(run):
        if len(part) > 1 and CJK.match(part):
            out.extend(_bigrams(part))
        else:
            out.append(part)
    return out


def cjk_terms(text: str) -> Iterator[str]:
    """The extra lexical terms of ``text``'s CJK (module docstring), in text order, one per
    occurrence: a pure CJK run of 2 characters by its unigrams, of 3 or more by its bigrams
    and unigrams; a run mixing scripts by each of its parts (a CJK part of 1-2 characters
    whole, longer ones by bigrams, and every CJK part of 2 or more by its unigrams; other
    parts lower-cased). Nothing for a text without CJK. Linear in the text."""
    if not text or not CJK.search(text):
        return
    for m in TERM.finditer(text):
        run = m.group()
        if not CJK.search(run):
            continue
        parts = SCRIPT_PART.findall(run)
        pure = len(parts) == 1
        for part in parts:
            if not CJK.match(part):
                yield part.lower()
                continue
            if not pure and len(part) <= 2:
                yield part  # the whole part: its only bigram, or its one character
            if len(part) >= 3:
                yield from _bigrams(part)
            if len(part) >= 2:
                yield from part


def camel_parts(word: str) -> list[str]:
    """The parts of a camelCase / PascalCase word (``getHTTPResponse``: ``get``, ``HTTP``,
    ``Response``), or ``[]`` when it has fewer than two (``flask``, ``Flask``, ``HTTP``,
    ``APIs``, ``md5``). ASCII words only."""
    if not word.isascii() or word.islower() or word.isupper() or PLURAL_CAPS.fullmatch(word):
        return []
    parts = CAMEL.findall(word)
    if len(parts) < 2 or "".join(parts) != word:
        return []
    return parts


def _wholes(ident: str) -> Iterator[str]:
    """The whole forms of one joined identifier: itself, then (a qualified name) each proper
    tail of two segments or more and each compound segment. Linear in ``ident``: a tail over
    ``MAX_WHOLE`` letters is never built (``identifier_terms`` would drop it: lower-casing
    never shortens a string), so a path of 100,000 segments makes no 100,000 joins of its
    rest, only those of its last few segments."""
    yield "".join(TERM.findall(ident)).lower()
    segments = QUALIFIER.split(ident)
    if len(segments) > 1:
        letters = ["".join(TERM.findall(segment)) for segment in segments]
        first, size = len(segments) - 1, len(letters[-1])  # the longest tail kept: first...
        while first > 1 and size + len(letters[first - 1]) <= MAX_WHOLE:
            first -= 1
            size += len(letters[first])
        for i in range(first, len(segments) - 1):
            yield "".join(letters[i:]).lower()
        for segment in segments:
            runs = TERM.findall(segment)
            if len(runs) > 1:
                yield "".join(runs).lower()


def identifier_terms(text: str) -> Iterator[str]:
    """The extra lexical terms of ``text``'s identifiers (module docstring), in text order,
    one per occurrence, lower-case: each joined identifier's whole form, each camelCase word's
    parts. Pure: the same text always gives the same terms (an index is backfilled from its
    rows' text)."""
    for m in JOINED.finditer(text or ""):
        for whole in _wholes(m.group()):
            if len(whole) <= MAX_WHOLE and not whole.isdigit():  # 3.14, 2.0.1: numbers
                yield whole
    for m in TERM.finditer(text or ""):
        for part in camel_parts(m.group()):
            yield part.lower()


def without_cjk(text: str) -> str:
    """``text`` with each CJK run read as a separator (a space): what identifiers are taken
    from, so ``使用url_for函数`` holds ``url_for``. The text itself when it has no CJK."""
    return CJK_RUN.sub(" ", text) if text and CJK.search(text) else text


def text_terms(text: str, cjk: bool = True) -> Iterator[str]:
    """Every extra lexical term of one text: ``identifier_terms`` and (``cjk``) ``cjk_terms``;
    ``cjk=False`` is the rule before CJK terms (identifiers read through CJK characters)."""
    if not cjk or not text or not CJK.search(text):  # no CJK: the identifiers alone
        yield from identifier_terms(text)
        return
    yield from identifier_terms(CJK_RUN.sub(" ", text))
    yield from cjk_terms(text)


def terms_text(*texts: str, cjk: bool = True) -> str:
    """The extra terms of each text (``text_terms``: identifiers, CJK n-grams), as one
    space-separated string: what an index stores and tokenizes beside the chunk's
    ``context`` and ``text``. A text without CJK gives what it gave before CJK terms."""
    return " ".join(t for text in texts for t in text_terms(text, cjk))


def query_terms(query: str, identifiers: bool = True, cjk: bool = True) -> list[str]:
    """What a backend searches for ``query``: ``query_words``, then (``identifiers``: an index
    that holds identifier terms) each identifier's whole form and camelCase parts
    (``identifier_terms`` of the query; a part that is a function word is left out), each
    once, at most ``MAX_QUERY_TERMS``. ``cjk`` (an index that holds CJK terms, schema 6 on
    SQLite, 4 on Lance): CJK runs asked for by their parts, identifiers read without CJK;
    ``cjk=False``: the rule the index was written with."""
    words = query_words(query, cjk)
    if not identifiers:
        return words
    extra = [
        t
        for t in identifier_terms(without_cjk(query or "") if cjk else query or "")
        if t not in STOPWORDS
    ]
    return list(dict.fromkeys(words + extra))[:MAX_QUERY_TERMS]
