"""The Lance backend's lexical side: the SQLite backend's BM25 from postings kept in the chunks
dataset, so both backends give the same lexical scores (issue 29).

The postings are rows of the chunks dataset (``kind = "lex"``, ``lance_rows.lexical_rows``),
written in the same commit as the chunks they describe (a write, or a Ray worker's fragment):
per batch of chunks, one row per term (the chunk ids holding it and how often) and one row
(``lex_term = LENGTHS``) with each chunk's length. They come from ``lexical.tokenize_rows``,
the SQLite backend's own tokenization (FTS5's ``unicode61`` + ``porter`` over context, text and
the identifier terms, the terms not counted in a row's length), and are scored by
``lexical.score_postings``, the function the SQLite backend scores with: the same tokenizer, the
same constants (``lexical.K1``/``lexical.B``), the same collection statistics (the live chunks
and their lengths), hence the same scores, order and ceiling (``tests/test_backend_contract.py``,
``test_every_backend_gives_the_same_answers``).

A snapshot (``LancePostings.load``, once per dataset version) reads the live chunk ids and the
length rows; a query then reads only its terms' rows (a scalar index on ``lex_term`` from
``SCALAR_INDEX_MIN_ROWS`` chunks). Postings of chunks deleted since (a replaced or removed
document) are ignored: the live ids decide, as the SQLite backend's block ``rowids`` do. Chunks
without postings (an index written before schema 3, read without being upgraded) are tokenized
in memory when the snapshot is loaded. ``compact`` rewrites every batch into one, without the
deleted chunks (``merged_rows``).

Not the same: a query word that FTS5 splits into several tokens (no word of ``terms.TERM``
does in practice) is a phrase on SQLite and scores nothing here (it still counts in the
ceiling, as a term no chunk holds).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.index.ann import sql_str as _sql_str
from ragsift.index.lance_rows import LENGTHS

if TYPE_CHECKING:
    import numpy as np

LEX = "kind = 'lex'"
_NO_TOKEN = "\x00"  # a phrase for a query word without exactly one token: no chunk holds it


def _concat(parts: list, dtype: str) -> np.ndarray:
    import numpy as np

    return np.concatenate([np.frombuffer(p, dtype) for p in parts]) if parts else np.empty(0, dtype)


class LancePostings:
    """One snapshot's postings: live chunk ids (ascending; a chunk's slot is its position),
    their lengths, the collection's totals, and the postings built in memory for chunks that
    have none in the dataset (``extra``)."""

    def __init__(
        self,
        ds: Any,
        rowids: np.ndarray,
        ntok: np.ndarray,
        extra: dict[str, tuple[np.ndarray, np.ndarray]],
        batches: int,
        dead: int,
    ) -> None:
        import numpy as np

        self.ds = ds
        self.rowids = rowids
        self.ntok = ntok.astype(np.float64)
        self.rows = int(rowids.shape[0])
        self.tokens = int(ntok.sum(dtype=np.int64))
        self.extra = extra
        self.batches = batches  # length rows (batches of postings) in the dataset
        self.dead = dead  # how many chunks the stored postings name are deleted (0: none)
        self.has_lex = "lex_term" in ds.schema.names
        self._memory: sqlite3.Connection | None = None
        self.ceilings: dict[str, float] = {}  # query text -> BM25 ceiling (this snapshot)

    @classmethod
    def load(cls, ds: Any, cjk: bool = True) -> LancePostings:
        """The postings of dataset version ``ds``; chunks without stored postings get them in
        memory, with the CJK terms where ``cjk`` (the index's rule: ``terms.text_terms``)."""
        import numpy as np

        t = ds.to_table(columns=["rowid"], filter="kind = 'chunk'")
        rowids = np.sort(t.column("rowid").to_numpy().astype(np.int64, copy=False))
        ntok = np.zeros(rowids.shape[0], np.int64)
        covered = np.zeros(rowids.shape[0], bool)
        batches, dead = 0, 0
        if "lex_term" in ds.schema.names:
            lens = ds.to_table(
                columns=["lex_rows", "lex_counts"], filter=f"{LEX} AND lex_term = '{LENGTHS}'"
            )
            batches = lens.num_rows
            ids = _concat(lens.column("lex_rows").to_pylist(), "<i8")
            counts = _concat(lens.column("lex_counts").to_pylist(), "<u4")
            slots, keep = _slots(rowids, ids)
            dead = int((~keep).sum())
            ntok[slots[keep]] = counts[keep]
            covered[slots[keep]] = True
        extra: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if not covered.all():
            extra = _memory_postings(ds, rowids, ntok, np.flatnonzero(~covered), cjk)
        return cls(ds, rowids, ntok, extra, batches, dead)

    def dead_share(self) -> float:
        """The share of the chunks the stored postings name that are deleted: what a rewrite
        would drop (``LanceWriter.compact``'s schedule)."""
        return self.dead / (self.dead + self.rows) if self.dead else 0.0

    def complete(self) -> bool:
        """Whether the dataset holds this snapshot's postings as one batch, nothing deleted."""
        return self.batches <= 1 and not self.dead and not self.extra

    def phrases(self, words: Sequence[str]) -> list[str]:
        """The FTS5 token of each query word (as ``lexical.Postings.phrases``); a word that is
        not exactly one token becomes a phrase no chunk holds."""
        from ragsift.index.lexical import memory_db, query_tokens

        if self._memory is None:
            self._memory = memory_db()
        return [
            t[0] if len(t) == 1 else _NO_TOKEN + w
            for w, t in zip(words, query_tokens(self._memory, words))
        ]

    def postings(self, terms: Iterable[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """term -> (slots, counts as float64) of the live chunks holding it."""
        import numpy as np

        wanted = [t for t in dict.fromkeys(terms) if not t.startswith(_NO_TOKEN)]
        parts: dict[str, tuple[list, list]] = {}
        if wanted and self.has_lex:
            t = self.ds.to_table(
                columns=["lex_term", "lex_rows", "lex_counts"],
                filter=f"lex_term IN ({_sql_str(wanted)})",
            )
            for term, r, c in zip(
                t.column("lex_term").to_pylist(),
                t.column("lex_rows").to_pylist(),
                t.column("lex_counts").to_pylist(),
            ):
                got = parts.setdefault(term, ([], []))
                got[0].append(r)
                got[1].append(c)
        merged: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term in wanted:
            slots = np.empty(0, np.int64)
            counts = np.empty(0, np.float64)
            if term in parts:
                ids = _concat(parts[term][0], "<i8")
                s, keep = _slots(self.rowids, ids)
                slots = s[keep]
                counts = _concat(parts[term][1], "<u4")[keep].astype(np.float64)
            more = self.extra.get(term)
            if more is not None:
                slots = np.concatenate((slots, more[0]))
                counts = np.concatenate((counts, more[1]))
            if slots.size:
                merged[term] = (slots, counts)
        return merged

    def search(
        self,
        words: Sequence[str],
        limit: int,
        rowids_filter: Iterable[int] | None = None,
        out: dict | None = None,
    ) -> list[tuple[int, float]]:
        """[(rowid, -bm25)] best first, at most ``limit``: ``lexical.score_postings``, as the
        SQLite backend's ``lexical_search``."""
        from ragsift.index.lexical import SlotCollection, score_postings

        phrases = self.phrases(words)
        return score_postings(
            phrases,
            self.postings(phrases),
            SlotCollection(self.rowids, self.ntok, self.rows, self.tokens),
            max(limit, 0),
            rowids_filter,
            out,
        )

    def merged_rows(self) -> list[dict]:
        """Every live chunk's postings as one batch (``lance_rows.lexical_rows``'s shape, uid
        ``x:0:<term>``): what ``compact`` writes in place of every stored batch."""
        import numpy as np

        terms: list[str] = []
        if self.has_lex:
            t = self.ds.to_table(columns=["lex_term"], filter=f"{LEX} AND lex_term != ''")
            terms = sorted(set(t.column("lex_term").to_pylist()))
        terms = sorted(set(terms) | set(self.extra))
        out = [
            {
                "uid": "x:0:",
                "kind": "lex",
                "lex_term": LENGTHS,
                "lex_rows": self.rowids.astype("<i8").tobytes(),
                "lex_counts": self.ntok.astype("<u4").tobytes(),
            }
        ]
        for lo in range(0, len(terms), 5000):
            merged = self.postings(terms[lo : lo + 5000])
            for term in terms[lo : lo + 5000]:
                if term not in merged:
                    continue
                slots, counts = merged[term]
                order = np.argsort(slots, kind="stable")
                out.append(
                    {
                        "uid": f"x:0:{term}",
                        "kind": "lex",
                        "lex_term": term,
                        "lex_rows": self.rowids[slots[order]].astype("<i8").tobytes(),
                        "lex_counts": counts[order].astype("<u4").tobytes(),
                    }
                )
        return out


def _slots(rowids: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The slot of each of ``ids`` in ``rowids`` (ascending) and whether it is there (live)."""
    import numpy as np

    slots = np.searchsorted(rowids, ids)
    keep = slots < rowids.shape[0]
    keep[keep] = rowids[slots[keep]] == ids[keep]
    return slots, keep


def _memory_postings(
    ds: Any, rowids: np.ndarray, ntok: np.ndarray, slots: np.ndarray, cjk: bool = True
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Postings, in memory, of the chunks at ``slots`` (none stored: an index from before
    schema 3); sets their lengths in ``ntok``. Tokenized as every posting is, with the CJK
    terms where ``cjk``."""
    import numpy as np

    from ragsift.index.lexical import tokenize_rows
    from ragsift.index.terms import terms_text

    wanted = rowids[slots]
    where = "kind = 'chunk'"
    if slots.shape[0] < 10_000:
        where += f" AND rowid IN ({', '.join(map(str, wanted.tolist()))})"
    t = ds.to_table(columns=["rowid", "context", "text"], filter=where)
    found = {
        int(r): (c or "", x or "")
        for r, c, x in zip(
            t.column("rowid").to_pylist(),
            t.column("context").to_pylist(),
            t.column("text").to_pylist(),
        )
    }
    texts = [found.get(int(r), ("", "")) for r in wanted.tolist()]
    counts, postings = tokenize_rows([(c, x, terms_text(c, x, cjk=cjk)) for c, x in texts])
    ntok[slots] = counts
    return {term: (slots[at], tf.astype(np.float64)) for term, (at, tf) in postings.items()}
