"""Numbered schema migrations for the index file (pattern: simonw/llm ``embeddings_migrations``).

``MIGRATIONS`` is an ordered list of functions; migration *n* (1-based) moves the schema from
version n-1 to n. The version lives in ``PRAGMA user_version`` and is bumped in the same
transaction as the migration's DDL, so a crash mid-migration leaves the previous version.
A new schema change appends a function; released functions are never edited.

Schema 1 (what each table holds):
- ``settings``: key → JSON value (model, model_fingerprint, dimensions, chunker, ...).
- ``documents``: one row per indexed file (or per ``path`` of chunk records read from stdin);
  ``key`` is its identity (absolute file path, or ``-:`` + path for stdin records), ``path``
  the display path chunk ids are built from, ``size``/``mtime``/``sha256`` for change
  detection, ``chunker`` the JSON of the chunker that produced its chunks.
- ``chunks``: every ``ragsift chunk`` field + ``content_hash`` (sha256 of the embedded
  string) + ``truncated`` (model tokens never seen) + where its vector lives
  (``block_id``, ``block_pos``).
- ``vec_blocks``: vectors in contiguous little-endian float32 blocks of many rows
  (``data`` is n × dim, ``rowids`` n int64 chunk ids; a deleted row's id is set to -1 and
  counted in ``dead`` until the block is compacted). Blocks, not one blob per vector, are
  what makes a 100k × 384 matrix load in tens of milliseconds.
- ``chunks_fts``: FTS5 (porter + unicode61) over ``context`` and ``text``, external content
  ``chunks``, kept in step by triggers, i.e. by the very transactions that write chunks.

Schema 2 adds, per vector block, its lexical postings (``lex_blocks``: row lengths in tokens;
``lex_postings``: term → positions and counts), written with the block and dropped with it by
a trigger; see ``ragsift/index/lexical.py``.

Schema 4 (identifiers are terms, issue 28) adds ``chunks.terms``: the identifier terms of the
chunk's ``context`` and ``text`` (``ragsift.index.terms.terms_text``: ``url_for`` whole as
``urlfor``, ``camelCase`` by its parts ``camel case``), a third column of ``chunks_fts`` kept
in step by the same triggers; the postings count them (not in a row's length).

Schema 6 (CJK text searchable by its words, issue 37): ``chunks.terms`` also holds each
chunk's CJK bigrams and unigrams (``ragsift.index.terms.cjk_terms``), and its identifier terms
are read with CJK characters as separators. Nothing else changes; an index of schema 4-5 is
read with the rule it was written with (its queries ask for whole CJK runs).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

APPLICATION_ID = 0x52475346  # "RGSF": marks a SQLite file as a ragsift index
PAGE_SIZE = 16384  # larger pages: fewer overflow pages per vector block (see bench_index.py)


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Execute ``script`` statement by statement inside the caller's transaction.

    (``executescript`` would first COMMIT the open transaction, breaking atomicity.)
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            db.execute(pending)
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement: {pending.strip()[:60]}")


def m001_initial(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            path TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '',
            size INTEGER,
            mtime REAL,
            sha256 TEXT NOT NULL,
            format TEXT,
            chunker TEXT NOT NULL DEFAULT '',
            n_chunks INTEGER NOT NULL DEFAULT 0,
            indexed_at REAL NOT NULL
        );
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            doc_id INTEGER NOT NULL REFERENCES documents(id),
            idx INTEGER NOT NULL,
            text TEXT NOT NULL,
            context TEXT NOT NULL DEFAULT '',
            start INTEGER,
            "end" INTEGER,
            tokens INTEGER,
            chars INTEGER,
            line_start INTEGER,
            line_end INTEGER,
            headings TEXT NOT NULL DEFAULT '[]',
            page INTEGER,
            level INTEGER NOT NULL DEFAULT 0,
            content_hash TEXT NOT NULL,
            truncated INTEGER NOT NULL DEFAULT 0,
            block_id INTEGER,
            block_pos INTEGER
        );
        CREATE INDEX chunks_doc ON chunks(doc_id, idx);
        CREATE INDEX chunks_hash ON chunks(content_hash);
        CREATE INDEX chunks_block ON chunks(block_id);
        CREATE TABLE vec_blocks (
            id INTEGER PRIMARY KEY,
            n INTEGER NOT NULL,
            dead INTEGER NOT NULL DEFAULT 0,
            dim INTEGER NOT NULL,
            rowids BLOB NOT NULL,
            data BLOB NOT NULL
        );
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            context, text,
            content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER chunks_fts_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, context, text) VALUES (new.id, new.context, new.text);
        END;
        CREATE TRIGGER chunks_fts_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, context, text)
            VALUES ('delete', old.id, old.context, old.text);
        END;
        CREATE TRIGGER chunks_fts_au AFTER UPDATE OF context, text ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, context, text)
            VALUES ('delete', old.id, old.context, old.text);
            INSERT INTO chunks_fts(rowid, context, text) VALUES (new.id, new.context, new.text);
        END;
        """,
    )


def m002_lexical_postings(db: sqlite3.Connection) -> None:
    """Schema 2: ``lex_blocks`` and ``lex_postings``, each vector block's postings for the
    lexical side (``ragsift.index.lexical``), written for the blocks already there."""
    from ragsift.index import lexical

    run_script(db, lexical.SCHEMA)
    lexical.backfill(db)


def m003_unit_evidence(db: sqlite3.Connection) -> None:
    """Schema 3: ``chunks.units``, each chunk's unit evidence (``ragsift.embedders.evidence``:
    the offsets and int8 vectors of its units). Rows written before it have none: such an
    index has no ``evidence`` setting, and readers ask for ``--rebuild`` (no silent mix)."""
    db.execute("ALTER TABLE chunks ADD COLUMN units BLOB")


_FTS_V4 = """
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    context, text, terms,
    content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
CREATE TRIGGER chunks_fts_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, context, text, terms)
    VALUES (new.id, new.context, new.text, new.terms);
END;
CREATE TRIGGER chunks_fts_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, context, text, terms)
    VALUES ('delete', old.id, old.context, old.text, old.terms);
END;
CREATE TRIGGER chunks_fts_au AFTER UPDATE OF context, text, terms ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, context, text, terms)
    VALUES ('delete', old.id, old.context, old.text, old.terms);
    INSERT INTO chunks_fts(rowid, context, text, terms)
    VALUES (new.id, new.context, new.text, new.terms);
END;
"""


def m004_identifier_terms(db: sqlite3.Connection) -> None:
    """Schema 4: ``chunks.terms`` (each chunk's identifier terms, ``ragsift.index.terms``),
    computed here from every row's ``context`` and ``text`` (no model needed); ``chunks_fts``
    recreated over ``context, text, terms`` with its triggers and rebuilt; every block's
    lexical postings written again (they include the terms). One transaction: an index is
    either wholly migrated or not at all, never a mix."""
    from ragsift.index import lexical
    from ragsift.index.terms import terms_text

    run_script(
        db,
        """
        DROP TRIGGER IF EXISTS chunks_fts_ai;
        DROP TRIGGER IF EXISTS chunks_fts_ad;
        DROP TRIGGER IF EXISTS chunks_fts_au;
        DROP TABLE IF EXISTS chunks_fts;
        ALTER TABLE chunks ADD COLUMN terms TEXT NOT NULL DEFAULT '';
        """,
    )
    rows = db.execute("SELECT id, context, text FROM chunks").fetchall()
    found = [
        (terms, rowid)
        for rowid, terms in ((rowid, terms_text(context, text)) for rowid, context, text in rows)
        if terms
    ]
    db.executemany("UPDATE chunks SET terms = ? WHERE id = ?", found)
    run_script(db, _FTS_V4)
    db.execute("DELETE FROM lex_postings")
    db.execute("DELETE FROM lex_blocks")
    lexical.backfill(db)


def m005_writer_versions(db: sqlite3.Connection) -> None:
    """Schema 5 (ragsift 0.4.0): nothing in the tables changes; the number does, so that a
    ragsift before 0.4.0 (which knows no ``min_writer_version`` setting) refuses the index
    instead of writing documents under absolute keys beside its project-relative ones and
    dropping their pipeline fingerprints. From 0.4.0 on the settings ``written_by`` and
    ``min_writer_version`` bound the writers (``index.opening.check_versions``)."""
    from ragsift.version import MIN_WRITER_VERSION

    db.execute(
        "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
        ("min_writer_version", json.dumps(MIN_WRITER_VERSION)),
    )


def m006_cjk_terms(db: sqlite3.Connection) -> None:
    """Schema 6 (issue 37): ``chunks.terms`` recomputed from every row's ``context`` and
    ``text`` with the CJK terms (``ragsift.index.terms.terms_text``; no model needed). Only
    rows whose terms change are updated (rows without CJK keep theirs: the triggers keep
    ``chunks_fts`` in step) and only their blocks' postings are written again. One
    transaction: an index is either wholly migrated or not at all."""
    from ragsift.index import lexical
    from ragsift.index.terms import terms_text

    changed = [
        (new, rowid)
        for rowid, new, old in (
            (rowid, terms_text(context, text), old)
            for rowid, context, text, old in db.execute(
                "SELECT id, context, text, terms FROM chunks"
            )
        )
        if new != old
    ]
    if not changed:
        return
    db.executemany("UPDATE chunks SET terms = ? WHERE id = ?", changed)
    ids = json.dumps([rowid for _, rowid in changed])
    blocks = (
        "(SELECT DISTINCT block_id FROM chunks WHERE id IN "
        "(SELECT value FROM json_each(?)) AND block_id IS NOT NULL)"
    )
    db.execute(f"DELETE FROM lex_postings WHERE block_id IN {blocks}", (ids,))
    db.execute(f"DELETE FROM lex_blocks WHERE block_id IN {blocks}", (ids,))
    lexical.backfill(db)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_initial,
    m002_lexical_postings,
    m003_unit_evidence,
    m004_identifier_terms,
    m005_writer_versions,
    m006_cjk_terms,
]
LATEST = len(MIGRATIONS)
# Readers accept every schema from this one on: an index written before schema 2 is searched
# with FTS5's own bm25() until a writer (``embed``, ``rm``) upgrades it; one from before
# schema 4 without identifier terms (its queries ask for none: ``terms.query_terms``); one
# from before schema 6 without CJK terms (its queries ask for whole CJK runs).
OLDEST_READABLE = 1


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def upgrade(db: sqlite3.Connection) -> int:
    """Apply the missing migrations inside the caller's transaction; returns the new version.

    What an existing index's first write does (``StoreWriter.transaction``), so that the
    migrations commit with the work that needs them, or not at all: opening an index to
    write changes nothing, and a command that then refuses it leaves it as it was (issue 40).
    """
    for number in range(schema_version(db) + 1, LATEST + 1):
        MIGRATIONS[number - 1](db)
        db.execute(f"PRAGMA user_version = {number}")
    return schema_version(db)


def migrate(db: sqlite3.Connection) -> int:
    """Apply the missing migrations, each in its own transaction; returns the new version.
    (A new index file, before it is renamed into place: ``sqlite_file.create_file``.)

    ``db`` must be in autocommit mode (``isolation_level=None``) and hold the writer lock.
    """
    version = schema_version(db)
    for number in range(version + 1, LATEST + 1):
        db.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[number - 1](db)
            db.execute(f"PRAGMA user_version = {number}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite already rolled back after e.g. a full disk
                db.execute("ROLLBACK")
            raise
    return schema_version(db)
