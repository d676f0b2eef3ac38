"""The SQLite backend's lexical side: FTS5's own ``bm25()`` scores, computed from postings.

FTS5 finds the rows matching an OR query fast, but its ``bm25()`` runs once per matching row
(instance list, column sizes): on 100k chunks of real text ~30 ms of a query, 10x the match
itself. This module keeps, beside each vector block (``vec_blocks``), the block's postings:

- ``lex_blocks(block_id, ntok)``: per position of the block, the row's token count over both
  FTS5 columns (``context`` and ``text``; 0 for a deleted row), little-endian uint32;
- ``lex_postings(term, block_id, pos, tf)``: for each term of the block, the positions of the
  rows holding it and how often (little-endian uint16 arrays; a reader has SQLite join a
  term's blocks as hex and decodes them with one ``bytes.fromhex``).

They are written in the transaction that writes the block (``write_block``), from the rows'
own ``context`` and ``text`` tokenized by FTS5 itself (a contentless scratch FTS5 table with
the index's tokenizer, read through ``fts5vocab``), so a term here is exactly a term of
``chunks_fts``. A trigger drops them with their block. Which rows are live comes from the
block's ``rowids`` (-1: deleted), as for the vectors.

``Postings.search`` then computes, in numpy, the very formula of FTS5's ``bm25()`` (sqlite
``fts5_aux.c``: k1 1.2, b 0.75, IDF ``log((N - n + 0.5) / (n + 0.5))`` clamped to 1e-6, one
term per query phrase, the row's length over all columns, the same operation order), so the
scores are bit-identical and the order (score, then rowid) the same as
``ORDER BY bm25(chunks_fts), rowid``. Before using the postings a reader checks that their row
and token totals equal FTS5's own (its "averages" record); an index without postings (written
before schema 2) or any disagreement, and a query word FTS5 would split into several tokens,
fall back to the FTS5 query itself. Measured in ``bench/bench_hybrid.py``.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

FTS5_TOKENIZE = "porter unicode61 remove_diacritics 2"  # chunks_fts's tokenizer (migrations)
MAX_FIELD = 0xFFFF  # positions and counts are stored as uint16
K1 = 1.2  # FTS5 bm25() constants (fts5_aux.c)
B = 0.75

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
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING fts5({columns}, "
               f"content='', tokenize='{FTS5_TOKENIZE}')")
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name}_v "
               f"USING fts5vocab(temp, {name}, instance)")
    db.execute(f"INSERT INTO temp.{name}({name}) VALUES ('delete-all')")


def write_block(db: sqlite3.Connection, block_id: int, rowids: Sequence[int]) -> None:
    """Postings of vector block ``block_id`` whose positions hold chunk ids ``rowids``
    (-1: deleted). Runs inside the caller's transaction, after the chunks were written."""
    import numpy as np

    _scratch(db, "lex_tok", "context, text")
    db.execute("INSERT INTO temp.lex_tok(rowid, context, text) SELECT p.key + 1, c.context, "
               "c.text FROM json_each(?) p JOIN chunks c ON c.id = p.value",
               (json.dumps([int(r) for r in rowids]),))
    # every token instance, ordered by term then row (fts5vocab's own order)
    rows = db.execute("SELECT term, doc FROM temp.lex_tok_v").fetchall()
    n = len(rowids)
    if not rows:
        terms: list[str] = []
        docs = np.empty(0, np.int64)
    else:
        terms, doc_list = zip(*rows)
        docs = np.asarray(doc_list, np.int64) - 1
    ntok = np.bincount(docs, minlength=n).astype("<u4")
    # term ids from the term runs, then one (term, row) pair per run of equal keys
    words = np.asarray(terms, dtype=object)
    new_term = np.empty(len(words), bool)
    new_term[:1] = True
    new_term[1:] = words[1:] != words[:-1]
    term_id = np.cumsum(new_term) - 1
    key = term_id * max(n, 1) + docs
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if key.size else key
    tf = np.diff(np.append(first, key.size))
    if n > MAX_FIELD or (tf.size and int(tf.max()) > MAX_FIELD):
        return  # no postings for this block: readers use FTS5's bm25() (blocks hold 1,024
        # rows; a term 65,536 times in one chunk has not been seen)
    pos = docs[first].astype("<u2").tobytes()
    tfs = tf.astype("<u2").tobytes()
    # where each term's pairs start and end (pairs are in term order)
    ends = np.searchsorted(term_id[first], np.arange(int(new_term.sum()) + 1)).tolist()
    heads = np.flatnonzero(new_term).tolist()
    db.execute("INSERT INTO lex_blocks(block_id, ntok) VALUES (?, ?)", (block_id, ntok.tobytes()))
    db.executemany(
        "INSERT INTO lex_postings(term, block_id, pos, tf) VALUES (?, ?, ?, ?)",
        [(terms[h], block_id, pos[2 * a:2 * b], tfs[2 * a:2 * b])
         for h, a, b in zip(heads, ends, ends[1:])])


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


def fts5_totals(db: sqlite3.Connection) -> tuple[int, int] | None:
    """(rows, tokens over all columns) from ``chunks_fts``'s averages record (what FTS5's
    ``xRowCount`` and ``xColumnTotalSize(-1)`` read): a varint row count, then one varint per
    column. None if the record cannot be read."""
    row = db.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0  # nothing was ever inserted (FTS5 starts with an empty record)
    values = _varints(bytes(row[0]))
    if not values:
        return None
    return values[0], sum(values[1:])


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
    """One snapshot of the index's postings: block offsets, live rows, row lengths."""

    def __init__(self, offsets: dict[int, int], rowids: np.ndarray, ntok: np.ndarray) -> None:
        import numpy as np

        self.offsets = offsets  # block id -> first slot of the block
        self.rowids = rowids  # slot -> chunk id (-1: deleted)
        self.live = rowids >= 0
        self.ntok = ntok.astype(np.float64)
        self.rows = int(self.live.sum())
        self.tokens = int(ntok[self.live].sum(dtype=np.int64))
        self._memory: sqlite3.Connection | None = None

    @classmethod
    def load(cls, db: sqlite3.Connection) -> Postings | None:
        """The postings of ``db``'s current snapshot, or None where they cannot stand in for
        FTS5 (schema before 2, a block without postings, totals that disagree)."""
        import numpy as np

        try:
            rows = db.execute(
                "SELECT b.id, b.rowids, l.ntok FROM vec_blocks b "
                "LEFT JOIN lex_blocks l ON l.block_id = b.id ORDER BY b.id").fetchall()
        except sqlite3.OperationalError:  # no lex_blocks: written before schema 2
            return None
        offsets: dict[int, int] = {}
        ids: list[np.ndarray] = []
        lens: list[np.ndarray] = []
        at = 0
        for block_id, rid, ntok in rows:
            if ntok is None:
                return None
            r = np.frombuffer(rid, "<i8")
            t = np.frombuffer(ntok, "<u4")
            if t.shape != r.shape:
                return None
            offsets[block_id] = at
            at += r.shape[0]
            ids.append(r)
            lens.append(t)
        postings = cls(offsets,
                       np.concatenate(ids) if ids else np.empty(0, np.int64),
                       np.concatenate(lens) if lens else np.empty(0, np.uint32))
        if fts5_totals(db) != (postings.rows, postings.tokens):
            return None
        return postings

    def phrases(self, words: Sequence[str]) -> list[str] | None:
        """The FTS5 token of each query word (``"word"`` is one phrase of the OR query), or
        None when some word is not exactly one token (FTS5 would make it a longer phrase).
        Tokenized by FTS5 in a private in-memory database (an index reader is query-only)."""
        if self._memory is None:
            self._memory = sqlite3.connect(":memory:", isolation_level=None,
                                           check_same_thread=False)
        db = self._memory
        _scratch(db, "lex_q", "text")
        db.executemany("INSERT INTO temp.lex_q(rowid, text) VALUES (?, ?)",
                       list(enumerate(words, 1)))
        got: dict[int, list[str]] = {}
        for doc, term in db.execute("SELECT doc, term FROM temp.lex_q_v"):
            got.setdefault(doc, []).append(term)
        if any(len(got.get(i, ())) != 1 for i in range(1, len(words) + 1)):
            return None
        return [got[i][0] for i in range(1, len(words) + 1)]

    def search(self, db: sqlite3.Connection, phrases: Sequence[str], limit: int,
               rowids_filter: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """[(rowid, bm25)] best first, at most ``limit``: what ``SELECT rowid,
        bm25(chunks_fts) AS s ... MATCH '"p1" OR "p2" ...' ORDER BY s, rowid`` returns."""
        import numpy as np

        from ragsift.index.dense import top_order

        merged: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # one row per term, its blocks' lists joined by SQLite: the block ids and how many
        # positions each holds, then all positions and all counts (4 hex digits each)
        for term, blocks, sizes, pos, tf in db.execute(
                "SELECT term, group_concat(block_id), group_concat(length(pos) / 2), "
                "group_concat(hex(pos), ''), group_concat(hex(tf), '') FROM ("
                "  SELECT term, block_id, pos, tf FROM lex_postings "
                "  WHERE term IN (SELECT value FROM json_each(?)) ORDER BY term, block_id) "
                "GROUP BY term", (json.dumps(list(dict.fromkeys(phrases))),)):
            block_ids = blocks.split(",")
            starts = np.fromiter((self.offsets.get(int(b), -1) for b in block_ids), np.int64,
                                 len(block_ids))
            s = np.frombuffer(bytes.fromhex(pos), "<u2").astype(np.int64)
            f = np.frombuffer(bytes.fromhex(tf), "<u2").astype(np.float64)
            shift = np.repeat(starts, np.asarray(sizes.split(","), np.int64))
            keep = shift >= 0  # a block this snapshot does not hold has no live rows here
            s = s + shift
            keep &= self.live[np.where(keep, s, 0)]
            merged[term] = (s[keep], f[keep])
        n_rows = float(self.rows)
        avgdl = float(self.tokens) / n_rows if self.rows else 0.0
        score = np.zeros(self.rowids.shape[0], np.float64)
        matched = np.zeros(self.rowids.shape[0], bool)
        for term in phrases:  # FTS5 adds phrase after phrase, in query order
            if term not in merged:
                continue
            s, f = merged[term]
            n_hit = float(s.shape[0])
            idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            d = self.ntok[s]
            score[s] += idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
            matched[s] = True
        cand = np.flatnonzero(matched)
        if rowids_filter is not None:
            wanted = np.fromiter((int(r) for r in rowids_filter), np.int64)
            cand = cand[np.isin(self.rowids[cand], wanted)]
        if not cand.size or limit <= 0:
            return []
        best = cand[top_order(score[cand], int(limit), self.rowids[cand])]
        return [(int(r), -float(v)) for r, v in zip(self.rowids[best].tolist(),
                                                      score[best].tolist())]
