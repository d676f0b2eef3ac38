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
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_QUERY_TERMS = 64
MAX_WHOLE = 40  # a longer identifier is indexed by its parts only (kept from schema 4)

TERM = re.compile(r"[^\W_]+", re.UNICODE)
# letter/digit runs joined (no space) by `_`, `.`, `-`, `::` or `/`: one identifier
JOINED = re.compile(r"[^\W_]+(?:(?:_+|-+|\.|::|/)[^\W_]+)+", re.UNICODE)
QUALIFIER = re.compile(r"\.|::|/")  # what qualifies a name; `_` and `-` join one segment
# the parts of an ASCII camelCase word: an upper-case run not followed by a lower-case letter
# (``HTTP`` of ``HTTPResponse``), or a capitalised / lower-case run; digits stay with the part
CAMEL = re.compile(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")
PLURAL_CAPS = re.compile(r"[A-Z]{2,}s")  # ``APIs``, ``URLs``: one word, not ``AP`` + ``Is``
# English function words are dropped from lexical queries (unless nothing else is left): they
# match most rows, so FTS5 scores nearly the whole index for them while BM25 gives them almost
# no weight. Measured on 100k SciFact chunks: OR queries 3x faster (~100 ms -> ~35 ms), with
# retrieval quality unchanged (bench/RESULTS.md, "Lexical query terms").
STOPWORDS = frozenset({
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "during", "each", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "may", "me", "might", "more", "most", "my", "no", "not",
    "of", "on", "only", "or", "other", "our", "she", "should", "so", "some", "such", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to",
    "under", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with",
    "would", "you", "your",
})


def query_words(query: str) -> list[str]:
    """The words a lexical query asks for, on every backend: letter/digit runs, lower-cased,
    each once, English function words dropped unless nothing else is left, at most
    ``MAX_QUERY_TERMS``."""
    terms = list(dict.fromkeys(t.lower() for t in TERM.findall(query or "")))
    terms = [t for t in terms if t not in STOPWORDS] or terms
    return terms[:MAX_QUERY_TERMS]


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
    tail of two segments or more and each compound segment."""
    yield "".join(TERM.findall(ident)).lower()
    segments = QUALIFIER.split(ident)
    if len(segments) > 1:
        for i in range(1, len(segments) - 1):
            yield "".join(TERM.findall("".join(segments[i:]))).lower()
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


def terms_text(*texts: str) -> str:
    """``identifier_terms`` of each text, as one space-separated string: what an index stores
    and tokenizes beside the chunk's ``context`` and ``text``."""
    return " ".join(t for text in texts for t in identifier_terms(text))


def query_terms(query: str, identifiers: bool = True) -> list[str]:
    """What a backend searches for ``query``: ``query_words``, then (``identifiers``: an index
    that holds identifier terms) each identifier's whole form and camelCase parts
    (``identifier_terms`` of the query; a part that is a function word is left out), each
    once, at most ``MAX_QUERY_TERMS``."""
    words = query_words(query)
    if not identifiers:
        return words
    extra = [t for t in identifier_terms(query or "") if t not in STOPWORDS]
    return list(dict.fromkeys(words + extra))[:MAX_QUERY_TERMS]
