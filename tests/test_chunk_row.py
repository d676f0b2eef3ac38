"""``ChunkRow``, what ingestion hands the index (issue 39, item 3): made once in ingest, frozen
on its way, the same ``ragsift chunk`` JSON as before, and the same identity for a document
read from chunk JSON lines (``records_sha256``), so an index built before it finds such a
document unchanged."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle

import pytest

from ragsift.chunkers.base import Chunk
from ragsift.index.backend import ChunkRow, DocumentWrite
from ragsift.ingest.records import (
    chunk_record,
    chunk_row,
    content_hash,
    records_by_path,
    records_sha256,
)
from ragsift.sources import Document

# The ``ragsift chunk`` record's fields, in their order (an API).
CHUNK_FIELDS = [
    "id",
    "path",
    "index",
    "text",
    "start",
    "end",
    "context",
    "tokens",
    "chars",
    "line_start",
    "line_end",
    "headings",
    "page",
    "level",
]


def _doc_and_chunk() -> tuple[Document, Chunk]:
    text = "# Title\n\nFirst line of the body.\nSecond line.\n"
    start = text.index("First")
    end = text.index("Second") + len("Second line.")
    chunk = Chunk(text=text[start:end], start=start, end=end, tokens=7, level=1, context="T: ")
    return Document.from_text(text, path="a.md", fmt="markdown"), chunk


def test_a_chunk_record_is_the_rows_json_field_for_field():
    doc, chunk = _doc_and_chunk()
    row = chunk_row(doc, 3, chunk)
    rec = chunk_record(doc, 3, chunk)
    assert list(rec) == CHUNK_FIELDS
    assert rec == row.to_json()
    assert json.dumps(rec) == json.dumps(row.to_json())  # same bytes, same key order
    assert rec["id"] == "a.md#3" and rec["line_start"] == 3 and rec["line_end"] == 4
    assert rec["chars"] == len(chunk.text) and isinstance(rec["headings"], list)
    assert row.content_hash == content_hash("T: " + chunk.text)
    assert (row.truncated, row.units) == (0, None)  # filled in once embedded
    assert row.to_json(content_hash=True) == {**rec, "content_hash": row.content_hash}


def test_rows_and_document_writes_are_frozen():
    doc, chunk = _doc_and_chunk()
    row = chunk_row(doc, 0, chunk)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.truncated = 3  # type: ignore[misc]
    write = DocumentWrite(key="k", path="a.md", sha256="0", records=[row], vectors=None)
    assert write.records == (row,)  # a list given is kept as a tuple
    with pytest.raises(dataclasses.FrozenInstanceError):
        write.vectors = []  # type: ignore[misc]
    # what Run.flush writes: a new value with the embedding's outcome
    done = dataclasses.replace(row, truncated=2, units=b"u")
    assert (done.truncated, done.units, row.truncated) == (2, b"u", 0)


def test_a_row_crosses_a_process_boundary_whole():
    """Ray's parse stage hands its rows to the driver pickled."""
    doc, chunk = _doc_and_chunk()
    rows = [chunk_row(doc, i, chunk) for i in range(3)]
    assert pickle.loads(pickle.dumps(rows)) == rows


def test_chars_left_out_is_the_texts_length():
    assert ChunkRow(path="p", index=0, text="four").chars == 4
    assert ChunkRow(path="p", index=0, text="four", chars=9).chars == 9


def test_a_stdin_documents_identity_is_the_one_it_had():
    """``records_sha256`` hashes what it hashed when stdin records were dicts: each record's
    chunk fields (null where left out, context "", level 0, chars the text's length, headings
    as strings), ``id`` and ``content_hash``, keys sorted."""
    lines = [
        json.dumps({"path": "x.md", "index": 1, "text": "second", "headings": ["H", "I"]}),
        json.dumps({"path": "x.md", "index": 0, "text": "first", "context": "C ", "chars": 40}),
    ]
    (rows,) = records_by_path(lines, skip=lambda s: pytest.fail(str(s))).values()
    assert [r.index for r in rows] == [0, 1]
    before = [
        {
            "path": "x.md",
            "index": 0,
            "text": "first",
            "start": None,
            "end": None,
            "context": "C ",
            "tokens": None,
            "chars": 40,
            "line_start": None,
            "line_end": None,
            "headings": [],
            "page": None,
            "level": 0,
            "id": "x.md#0",
            "content_hash": content_hash("C first"),
        },
        {
            "path": "x.md",
            "index": 1,
            "text": "second",
            "start": None,
            "end": None,
            "context": "",
            "tokens": None,
            "chars": 6,
            "line_start": None,
            "line_end": None,
            "headings": ["H", "I"],
            "page": None,
            "level": 0,
            "id": "x.md#1",
            "content_hash": content_hash("second"),
        },
    ]
    want = hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    assert records_sha256(rows) == want
    assert want == "37e3eb1ae3ff9d91eaa7c3f1b4fa7d9c9056b33e19d24f31343e7fc566c39f51"  # before
