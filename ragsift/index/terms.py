"""The words a lexical query asks for: one rule for every backend (SQLite's FTS5 scoring,
Lance's inverted index) and for the relevance score's query-word count."""

from __future__ import annotations

import re

MAX_QUERY_TERMS = 64

TERM = re.compile(r"[^\W_]+", re.UNICODE)
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
