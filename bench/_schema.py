"""A copy of an index as schema 1 wrote it (no lexical postings), for a ``--baseline`` tree
from before schema 2: such a tree refuses newer schemas. Same rows, same FTS5 index."""

from __future__ import annotations

from pathlib import Path


def schema1_copy(path: Path) -> Path:
    """``INDEX-schema1.ragsift`` beside ``path`` (made once per change of ``path``)."""
    import sqlite3

    out = path.with_name(path.stem + "-schema1.ragsift")
    if out.exists() and out.stat().st_mtime >= path.stat().st_mtime:
        return out
    out.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db = sqlite3.connect(out, isolation_level=None)
    src.backup(db)  # what is committed, WAL included
    src.close()
    for sql in (
        "DROP TRIGGER IF EXISTS vec_blocks_lex_ad",
        "DROP TABLE IF EXISTS lex_postings",
        "DROP TABLE IF EXISTS lex_blocks",
        "PRAGMA user_version = 1",
        "VACUUM",
    ):
        db.execute(sql)
    db.close()
    return out
