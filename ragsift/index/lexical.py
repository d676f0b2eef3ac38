"""The SQLite backend's lexical side: FTS5's own ``bm25()`` scores, computed from postings.

FTS5 finds the rows matching an OR query fast, but its ``bm25()`` runs once per matching row
(instance list, column sizes): on 100k chunks of real text ~30 ms of a query, 10x the match
itself. This module keeps, beside each vector block (``vec_blocks``), the block's postings:

- ``lex_blocks(block_id, ntok)``: per position of the block, the row's length: its token count
  over the FTS5 columns ``context`` and ``text`` (0 for a deleted row), little-endian uint32.
  The identifier terms (the third column, ``terms``: ``ragsift.index.terms``, schema 4) are
  matched and counted like any token but are not part of the row's length: they re-read words
  the row already holds, so a row full of identifiers is not made longer, and a query without
  identifiers scores every row exactly as before schema 4;
- ``lex_postings(term, block_id, pos, tf)``: for each term of the block, the positions of the
  rows holding it and how often (little-endian uint16 arrays; a reader has SQLite join a
  term's blocks as hex and decodes them with one ``bytes.fromhex``).

They are written in the transaction that writes the block (``write_block``), from the rows'
own ``context``, ``text`` and ``terms`` tokenized by FTS5 itself (a contentless scratch FTS5
table with the index's tokenizer, read through ``fts5vocab``), so a term here is exactly a
term of ``chunks_fts``. A trigger drops them with their block. Which rows are live comes from the
block's ``rowids`` (-1: deleted), as for the vectors.

``Postings.search`` then computes BM25 in numpy: the formula of FTS5's ``bm25()`` (sqlite
``fts5_aux.c``: IDF ``log((N - n + 0.5) / (n + 0.5))`` clamped to 1e-6, one term per query
phrase, the same operation order), but with the constants ``K1``/``B`` (Anserini's BM25
defaults, 0.9 and 0.4; FTS5's own are 1.2 and 0.75 and cannot be changed) and the row's length
over ``context`` and ``text`` only (FTS5 counts every column), ordered by (score, then rowid).
With FTS5's constants, on rows without identifier terms, the scores are bit-identical to
``ORDER BY bm25(chunks_fts), rowid`` (``tests/test_lexical_postings.py`` checks it). A block
without postings (written small and not yet compacted, e.g. after a kill) gets them in memory
when the snapshot is loaded. ``scan`` computes the same scores without postings, from FTS5's
own ``bm25()`` of each query word alone solved for the word's count in each row (with FTS5's
length, every column), then scored with the row's length: for an index
written before schema 2, postings whose totals disagree with FTS5's, and a query word FTS5
splits into several tokens (a phrase).
Every path gives the same scores. Measured in ``bench/bench_hybrid.py``.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

FTS5_TOKENIZE = "porter unicode61 remove_diacritics 2"  # chunks_fts's tokenizer (migrations)
MAX_FIELD = 0xFFFF  # positions and counts are stored as uint16
# BM25's constants: Anserini's defaults. Against FTS5's (1.2, 0.75) they strengthen the lexical
# side on all four evaluation folds and lift SciFact's fused nDCG@10 over 74 (bench/RESULTS.md,
# "BM25 constants: Anserini's defaults").
K1 = 0.9
B = 0.4
FTS5_K1 = 1.2  # what FTS5's own bm25() uses, fixed (fts5_aux.c): ``scan`` solves it for counts
FTS5_B = 0.75
LENGTH_COLUMNS = 2  # chunks_fts's first columns (context, text) make a row's length; not terms

SCHEMA = """
CREATE TABLE lex_blocks (
    block_id INTEGER PRIMARY KEY,
    ntok BLOB NOT NULL
);
CREATE TABLE lex_postings (
    term TEXT NOT NULL,
    block_id INTEGER NOT NULL,
    pos BLOB NOT NULL,
    tf BLOB NOT NULL,
    PRIMARY KEY (term, block_id)
) WITHOUT ROWID;
CREATE INDEX lex_postings_block ON lex_postings(block_id);
CREATE TRIGGER vec_blocks_lex_ad AFTER DELETE ON vec_blocks BEGIN
    DELETE FROM lex_postings WHERE block_id = old.id;
    DELETE FROM lex_blocks WHERE block_id = old.id;
END;
"""


def _scratch(db: sqlite3.Connection, name: str, columns: str) -> None:
    """A contentless FTS5 table in the connection's temp schema, with the index's tokenizer,
    and its ``fts5vocab`` instance view (``<name>_v``): FTS5's own tokenization of any text.
    Emptied here, before each use (so a use that failed half-way leaves nothing behind)."""
    db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING fts5({columns}, "
        f"content='', tokenize='{FTS5_TOKENIZE}')"
    )
    db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name}_v USING fts5vocab(temp, {name}, instance)"
    )
    db.execute(f"INSERT INTO temp.{name}({name}) VALUES ('delete-all')")


def memory_db() -> sqlite3.Connection:
    """A private in-memory database for FTS5 tokenization (an index reader is query-only)."""
    return sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)


_INSTANCES = "SELECT term, doc, col = 'terms' FROM temp.{}_v"  # (term, row, not in length)


def terms_column(db: sqlite3.Connection) -> str:
    """The SQL of a chunk's identifier terms in ``chunks c``: ``c.terms``, or ``''`` in an
    index from before schema 4 (no such column; e.g. schema 2's backfill of an old index)."""
    cols = {r[1] for r in db.execute("PRAGMA table_info(chunks)")}
    return "c.terms" if "terms" in cols else "''"


def _tokenize(
    mem: sqlite3.Connection, rows: Iterable[tuple[int, str, str, str]]
) -> list[tuple[str, int, int]]:
    """FTS5's tokens of ``rows`` (key, context, text, terms), as (term, key, in terms) per
    token instance, in fts5vocab's order (term, then key); keys must be positive."""
    _scratch(mem, "lex_mem", "context, text, terms")
    mem.executemany(
        "INSERT INTO temp.lex_mem(rowid, context, text, terms) VALUES (?, ?, ?, ?)", rows
    )
    return mem.execute(_INSTANCES.format("lex_mem")).fetchall()


def _pairs(
    terms: Sequence[str], docs: np.ndarray, n: int, extra: np.ndarray | None = None
) -> tuple[np.ndarray, ...]:
    """From token instances in (term, row) order, rows ``0..n-1``: each row's length (its
    token count, the instances flagged in ``extra``, identifier terms, left out), then one
    (term id, row, count) triple per (term, row), and where each term starts."""
    import numpy as np

    ntok = np.bincount(docs if extra is None else docs[~extra], minlength=n)
    words = np.asarray(terms, dtype=object)
    new_term = np.empty(len(words), bool)
    new_term[:1] = True
    new_term[1:] = words[1:] != words[:-1]
    term_id = np.cumsum(new_term) - 1
    key = term_id * max(n, 1) + docs
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if key.size else key
    tf = np.diff(np.append(first, key.size))
    ends = np.searchsorted(term_id[first], np.arange(int(new_term.sum()) + 1))
    return ntok, docs[first], tf, ends, np.flatnonzero(new_term)


def write_block(db: sqlite3.Connection, block_id: int, rowids: Sequence[int]) -> None:
    """Postings of vector block ``block_id`` whose positions hold chunk ids ``rowids``
    (-1: deleted). Runs inside the caller's transaction, after the chunks were written."""
    import numpy as np

    _scratch(db, "lex_tok", "context, text, terms")
    db.execute(
        "INSERT INTO temp.lex_tok(rowid, context, text, terms) SELECT p.key + 1, "
        f"c.context, c.text, {terms_column(db)} FROM json_each(?) p "
        "JOIN chunks c ON c.id = p.value",
        (json.dumps([int(r) for r in rowids]),),
    )
    # every token instance, ordered by term then row (fts5vocab's own order)
    rows = db.execute(_INSTANCES.format("lex_tok")).fetchall()
    n = len(rowids)
    if not rows:
        terms: list[str] = []
        docs = np.empty(0, np.int64)
        extra = np.empty(0, bool)
    else:
        terms, doc_list, flags = zip(*rows)
        docs = np.asarray(doc_list, np.int64) - 1
        extra = np.asarray(flags, bool)
    ntok, rows_of, tf, ends_a, heads_a = _pairs(terms, docs, n, extra)
    if n > MAX_FIELD or (tf.size and int(tf.max()) > MAX_FIELD):
        return  # no postings for this block: readers build them in memory (blocks hold
        # 1,024 rows; a term 65,536 times in one chunk has not been seen)
    pos = rows_of.astype("<u2").tobytes()
    tfs = tf.astype("<u2").tobytes()
    ntok = ntok.astype("<u4")
    # where each term's pairs start and end (pairs are in term order)
    ends, heads = ends_a.tolist(), heads_a.tolist()
    db.execute("INSERT INTO lex_blocks(block_id, ntok) VALUES (?, ?)", (block_id, ntok.tobytes()))
    db.executemany(
        "INSERT INTO lex_postings(term, block_id, pos, tf) VALUES (?, ?, ?, ?)",
        [
            (terms[h], block_id, pos[2 * a : 2 * b], tfs[2 * a : 2 * b])
            for h, a, b in zip(heads, ends, ends[1:])
        ],
    )


_MISSING = "FROM vec_blocks WHERE id NOT IN (SELECT block_id FROM lex_blocks)"


def missing_blocks(db: sqlite3.Connection) -> bool:
    """Whether some vector block has no postings (written small, or before schema 2)."""
    return db.execute(f"SELECT 1 {_MISSING} LIMIT 1").fetchone() is not None


def backfill(db: sqlite3.Connection) -> int:
    """Write the postings of every vector block that has none (an index from before schema
    2, or a block written below ``SMALL_BLOCK`` rows that ``compact`` did not merge); returns
    the blocks done. Inside the caller's transaction."""
    todo = [(bid, rid) for bid, rid in db.execute(f"SELECT id, rowids {_MISSING} ORDER BY id")]
    if not todo:
        return 0  # (a new index is created without importing numpy)
    import numpy as np

    for block_id, rid in todo:
        write_block(db, block_id, np.frombuffer(rid, "<i8").tolist())
    return len(todo)


def fts5_totals(
    db: sqlite3.Connection, columns: int | None = LENGTH_COLUMNS
) -> tuple[int, int] | None:
    """(rows, tokens) from ``chunks_fts``'s averages record (what FTS5's ``xRowCount`` and
    ``xColumnTotalSize`` read): a varint row count, then one varint per column; the tokens of
    the first ``columns`` columns (``LENGTH_COLUMNS``: a row's length; None: every column, as
    FTS5's ``bm25()`` counts). None if the record cannot be read."""
    row = db.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0  # nothing was ever inserted (FTS5 starts with an empty record)
    values = _varints(bytes(row[0]))
    if not values:
        return None
    return values[0], sum(values[1:][:columns])


def _varints(data: bytes) -> list[int]:
    """SQLite varints: 7 bits per byte, most significant first, the 9th byte all 8 bits."""
    out: list[int] = []
    i = 0
    while i < len(data):
        value = 0
        for k in range(9):
            if i >= len(data):
                return []  # cut short: not a record we understand
            byte = data[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


class Postings:
    """One snapshot of the index's postings: block offsets, live rows, row lengths, and the
    postings built in memory for blocks that have none on disk (``extra``)."""

    def __init__(
        self,
        offsets: dict[int, int],
        rowids: np.ndarray,
        ntok: np.ndarray,
        extra: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> None:
        import numpy as np

        self.offsets = offsets  # block id -> first slot of the block
        self.rowids = rowids  # slot -> chunk id (-1: deleted)
        self.live = rowids >= 0
        self.ntok = ntok.astype(np.float64)
        self.rows = int(self.live.sum())
        self.tokens = int(ntok[self.live].sum(dtype=np.int64))
        self.extra = extra or {}  # term -> (slots, counts) of the blocks without postings
        self._memory: sqlite3.Connection | None = None

    @classmethod
    def load(cls, db: sqlite3.Connection) -> Postings | None:
        """The postings of ``db``'s current snapshot (a block without postings on disk gets
        them in memory), or None where they cannot stand in for FTS5's index (schema before
        2, totals that disagree): ``scan`` answers then."""
        import numpy as np

        try:
            rows = db.execute(
                "SELECT b.id, b.rowids, l.ntok FROM vec_blocks b "
                "LEFT JOIN lex_blocks l ON l.block_id = b.id ORDER BY b.id"
            ).fetchall()
        except sqlite3.OperationalError:  # no lex_blocks: written before schema 2
            return None
        offsets: dict[int, int] = {}
        ids: list[np.ndarray] = []
        lens: list[np.ndarray] = []
        missing: list[int] = []  # slots of live rows whose block has no postings
        at = 0
        for block_id, rid, ntok in rows:
            r = np.frombuffer(rid, "<i8")
            if ntok is None:
                t = np.zeros(r.shape, np.uint32)
                missing.extend((at + np.flatnonzero(r >= 0)).tolist())
            else:
                t = np.frombuffer(ntok, "<u4")
                if t.shape != r.shape:
                    return None
            offsets[block_id] = at
            at += r.shape[0]
            ids.append(r)
            lens.append(t)
        rowids = np.concatenate(ids) if ids else np.empty(0, np.int64)
        ntoks = np.concatenate(lens) if lens else np.empty(0, np.uint32)
        extra = None
        if missing:
            extra = _memory_postings(db, rowids, ntoks, np.asarray(missing, np.int64))
        postings = cls(offsets, rowids, ntoks, extra)
        if fts5_totals(db) != (postings.rows, postings.tokens):
            return None
        return postings

    def phrases(self, words: Sequence[str]) -> list[str] | None:
        """The FTS5 token of each query word (``"word"`` is one phrase of the OR query), or
        None when some word is not exactly one token (FTS5 would make it a longer phrase)."""
        if self._memory is None:
            self._memory = memory_db()
        got = query_tokens(self._memory, words)
        if any(len(t) != 1 for t in got):
            return None
        return [t[0] for t in got]

    def search(
        self,
        db: sqlite3.Connection,
        phrases: Sequence[str],
        limit: int,
        rowids_filter: Iterable[int] | None = None,
        out: dict | None = None,
    ) -> list[tuple[int, float]]:
        """[(rowid, -bm25)] best first, at most ``limit`` (the sign of FTS5's ``bm25()``:
        more negative is better) for the OR query of ``phrases`` (one token each).
        ``out["ceiling"]``, when ``out`` is given: the query's BM25 ceiling (``ceiling``)."""
        import numpy as np

        merged: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # one row per term, its blocks' lists joined by SQLite: the block ids and how many
        # positions each holds, then all positions and all counts (4 hex digits each)
        for term, blocks, sizes, pos, tf in db.execute(
            "SELECT term, group_concat(block_id), group_concat(length(pos) / 2), "
            "group_concat(hex(pos), ''), group_concat(hex(tf), '') FROM ("
            "  SELECT term, block_id, pos, tf FROM lex_postings "
            "  WHERE term IN (SELECT value FROM json_each(?)) ORDER BY term, block_id) "
            "GROUP BY term",
            (json.dumps(list(dict.fromkeys(phrases))),),
        ):
            block_ids = blocks.split(",")
            starts = np.fromiter(
                (self.offsets.get(int(b), -1) for b in block_ids), np.int64, len(block_ids)
            )
            s = np.frombuffer(bytes.fromhex(pos), "<u2").astype(np.int64)
            f = np.frombuffer(bytes.fromhex(tf), "<u2").astype(np.float64)
            shift = np.repeat(starts, np.asarray(sizes.split(","), np.int64))
            keep = shift >= 0  # a block this snapshot does not hold has no live rows here
            s = s + shift
            keep &= self.live[np.where(keep, s, 0)]
            merged[term] = (s[keep], f[keep])
        for term in dict.fromkeys(phrases):
            more = self.extra.get(term)
            if more is not None:
                old = merged.get(term)
                merged[term] = (
                    more
                    if old is None
                    else (np.concatenate((old[0], more[0])), np.concatenate((old[1], more[1])))
                )
        return score_postings(
            phrases,
            merged,
            SlotCollection(self.rowids, self.ntok, self.rows, self.tokens),
            limit,
            rowids_filter,
            out,
        )


@dataclass(frozen=True, eq=False)
class SlotCollection:
    """What BM25 scores against (``score_postings``): ``rowids``/``ntok``, each slot's chunk id
    and length (float64); ``rows``/``tokens``, the collection's totals (live rows, their
    summed lengths)."""

    rowids: np.ndarray
    ntok: np.ndarray
    rows: int
    tokens: int


def score_postings(
    phrases: Sequence[str],
    merged: dict[str, tuple[np.ndarray, np.ndarray]],
    collection: SlotCollection,
    limit: int,
    rowids_filter: Iterable[int] | None = None,
    out: dict | None = None,
) -> list[tuple[int, float]]:
    """The one BM25 of every backend: [(rowid, -bm25)] best first, at most ``limit``, for the
    OR query of ``phrases`` (one token each, in query order; a repeated token counts each
    time, as in FTS5). ``merged``: term -> (slots, counts) of the live rows holding it;
    ``collection``: the slots' chunk ids and lengths and the totals. ``out["ceiling"]``, when
    ``out`` is given: the query's BM25 ceiling (``ceiling``). ``Postings.search`` (SQLite)
    and the Lance backend (``lance_lexical``) both call it, so equal postings give equal
    scores."""
    import numpy as np

    rowids, ntok = collection.rowids, collection.ntok
    rows, tokens = collection.rows, collection.tokens

    score = np.zeros(rowids.shape[0], np.float64)
    matched = np.zeros(rowids.shape[0], bool)
    for term in phrases:  # FTS5 adds phrase after phrase, in query order
        if term in merged:
            s, f = merged[term]
            _add_bm25(score, s, f, ntok[s], rows, tokens)
            matched[s] = True
    if out is not None:
        out["ceiling"] = ceiling(
            rows, [merged[t][0].shape[0] if t in merged else 0 for t in dict.fromkeys(phrases)]
        )
    cand = np.flatnonzero(matched)
    if rowids_filter is not None:
        wanted = np.fromiter((int(r) for r in rowids_filter), np.int64)
        cand = cand[np.isin(rowids[cand], wanted)]
    return _best(rowids[cand], score[cand], limit)


def _add_bm25(
    score: np.ndarray, at: np.ndarray, tf: np.ndarray, length: np.ndarray, rows: int, tokens: int
) -> None:
    """Add one query phrase's BM25 to ``score[at]``: ``tf`` its count in each of those rows,
    ``length`` their token counts; ``rows``/``tokens``: the index's totals (FTS5's)."""
    avgdl = float(tokens) / float(rows) if rows else 0.0
    idf = _idf(rows, at.shape[0])
    score[at] += idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * length / avgdl)))


def ceiling(rows: int, n_hits: Sequence[int]) -> float:
    """The largest BM25 any row could score for a query whose phrases are held by ``n_hits``
    rows each: ``Σ idf·(K1 + 1)`` (a phrase's BM25 tends to ``idf·(K1 + 1)`` as its count
    grows). A phrase no row holds counts with the idf of ``n_hit = 0``: a query word the index
    lacks lowers every chunk's share of the ceiling. Dividing a row's BM25 by it gives a
    lexical score in [0, 1) that means the same on every query
    (``ragsift.retrieval.relevance``)."""
    return sum(_idf(rows, n) for n in n_hits) * (K1 + 1.0) if rows else 0.0


def _idf(rows: int, n_hit: int) -> float:
    """FTS5's IDF of a phrase held by ``n_hit`` of ``rows`` rows, clamped to 1e-6."""
    idf = math.log((float(rows) - float(n_hit) + 0.5) / (float(n_hit) + 0.5))
    return idf if idf > 0.0 else 1e-6


def _best(rowids: np.ndarray, score: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best (rowid, -score), by score then rowid."""
    from ragsift.index.dense import top_order

    if not rowids.size or limit <= 0:
        return []
    best = top_order(score, int(limit), rowids)
    return [(int(r), -float(v)) for r, v in zip(rowids[best].tolist(), score[best].tolist())]


def query_tokens(mem: sqlite3.Connection, words: Sequence[str]) -> list[list[str]]:
    """FTS5's tokens of each query word, in order (a word may give none, or several)."""
    _scratch(mem, "lex_q", "text")
    mem.executemany("INSERT INTO temp.lex_q(rowid, text) VALUES (?, ?)", list(enumerate(words, 1)))
    got: dict[int, list[str]] = {}
    for doc, term in mem.execute("SELECT doc, term FROM temp.lex_q_v ORDER BY doc, offset"):
        got.setdefault(doc, []).append(term)
    return [got.get(i, []) for i in range(1, len(words) + 1)]


def _memory_postings(
    db: sqlite3.Connection, rowids: np.ndarray, ntok: np.ndarray, slots: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Postings, in memory, of the rows at ``slots`` (their blocks have none on disk); sets
    their token counts in ``ntok``. The rows are tokenized by FTS5 itself."""
    import numpy as np

    ids = rowids[slots].tolist()
    texts = {
        rid: (context, text, terms)
        for rid, context, text, terms in db.execute(
            f"SELECT c.id, c.context, c.text, {terms_column(db)} FROM chunks c "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }
    counts, found = tokenize_rows([texts.get(rid, ("", "", "")) for rid in ids])
    ntok[slots] = counts
    return {term: (slots[rows_of], tf.astype(np.float64)) for term, (rows_of, tf) in found.items()}


def tokenize_rows(
    texts: Sequence[tuple[str, str, str]],
) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The postings of rows given as (context, text, terms), tokenized by FTS5 itself (the
    index's tokenizer, ``FTS5_TOKENIZE``, in a private in-memory database): each row's length
    (its tokens in ``context`` and ``text``; int64) and, for each term, the rows holding it
    (indexes into ``texts``, ascending) and how often (int64). The one tokenization of every
    backend: SQLite's blocks without postings and the Lance backend's postings
    (``lance_rows.lexical_rows``) come from here."""
    import numpy as np

    mem = memory_db()
    try:
        inst = _tokenize(mem, [(k, *t) for k, t in enumerate(texts, 1)])
    finally:
        mem.close()
    terms = [t for t, _, _ in inst]
    docs = np.fromiter((d - 1 for _, d, _ in inst), np.int64, len(inst))
    extra = np.fromiter((bool(e) for _, _, e in inst), bool, len(inst))
    counts, rows_of, tf, ends, heads = _pairs(terms, docs, len(texts), extra)
    return counts, {
        terms[h]: (rows_of[a:b], tf[a:b])
        for h, a, b in zip(heads.tolist(), ends.tolist(), ends[1:].tolist())
    }


def scan(
    db: sqlite3.Connection,
    words: Sequence[str],
    limit: int,
    rowids_filter: Iterable[int] | None = None,
    out: dict | None = None,
) -> list[tuple[int, float]]:
    """``Postings.search``'s scores without postings, from FTS5 alone: for each query word
    (one FTS5 phrase, as FTS5 tokenizes it) FTS5's own ``bm25()`` of that phrase alone gives
    the rows holding it, and solving its formula (constants ``FTS5_K1``/``FTS5_B``, the row's
    length from ``chunks_fts_docsize``, FTS5's totals, every column) for the count gives the
    phrase's count in each row; the scores are then recomputed with ``K1``/``B`` and the row's
    length (``LENGTH_COLUMNS``). One FTS5 query per word, in one read transaction, so every
    number comes from one snapshot."""
    import numpy as np

    own = not db.in_transaction
    if own:
        db.execute("BEGIN")
    try:
        totals = fts5_totals(db, None)
        length_totals = fts5_totals(db)
        hits = [
            db.execute(
                "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?",
                ('"' + w.replace('"', '""') + '"',),
            ).fetchall()
            for w in words
        ]
        keys = sorted({r for got in hits for r, _ in got})
        sizes = dict(
            db.execute(
                "SELECT id, sz FROM chunks_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(keys),),
            )
        )
        if totals is None or length_totals is None:  # an averages record we cannot read:
            # the same totals, counted
            sz_all = [
                _varints(bytes(sz)) for (sz,) in db.execute("SELECT sz FROM chunks_fts_docsize")
            ]
            totals = (len(sz_all), sum(sum(v) for v in sz_all))
            length_totals = (len(sz_all), sum(sum(v[:LENGTH_COLUMNS]) for v in sz_all))
    finally:
        if own:
            db.execute("COMMIT")
    rows_n, tokens = totals
    avgdl = float(tokens) / float(rows_n) if rows_n else 0.0
    where = {k: i for i, k in enumerate(keys)}
    sz = [_varints(bytes(sizes.get(k, b""))) for k in keys]
    fts5_length = np.fromiter((sum(v) for v in sz), np.float64, len(keys))  # bm25()'s
    length = np.fromiter((sum(v[:LENGTH_COLUMNS]) for v in sz), np.float64, len(keys))
    score = np.zeros(len(keys), np.float64)
    matched = np.zeros(len(keys), bool)
    for got in hits:  # in query order, as FTS5 adds the phrases
        if not got:
            continue
        at = np.fromiter((where[r] for r, _ in got), np.int64, len(got))
        x = -np.fromiter((v for _, v in got), np.float64, len(got)) / _idf(rows_n, len(got))
        k = FTS5_K1 * (1 - FTS5_B + FTS5_B * fts5_length[at] / avgdl)
        tf = np.maximum(np.rint(x * k / (FTS5_K1 + 1.0 - x)), 1.0)
        _add_bm25(score, at, tf, length[at], rows_n, length_totals[1])
        matched[at] = True
    if out is not None:
        out["ceiling"] = ceiling(rows_n, [len(got) for got in hits])
    cand = np.flatnonzero(matched)
    keys_a = np.asarray(keys, np.int64)
    if rowids_filter is not None:
        wanted = np.fromiter((int(r) for r in rowids_filter), np.int64)
        cand = cand[np.isin(keys_a[cand], wanted)]
    return _best(keys_a[cand], score[cand], limit)
