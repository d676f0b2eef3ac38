"""Module-level helpers of the Lance backend (``lance.py``, ``lance_write.py``): the chunks
dataset's Arrow schema (``arrow_schema``) and row shapes (``chunk_row``, ``rows_table``), the
postings rows written with every batch of chunks (``lexical_rows``: the SQLite backend's
tokenization, scored by ``lance_lexical``; a Ray worker's fragment carries its own), writing
uncommitted data files from any process (``write_fragments``, for ``embed --engine ray``),
object-storage options from the environment (``storage_options``), and the guarded
``import lance`` (``lance_module``). pyarrow and lance load inside the functions.

The public names are importable from ``ragsift.index.lance`` as before.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError, debug_requested
from ragsift.index.locations import is_remote

if TYPE_CHECKING:
    from ragsift.index.backend import ChunkRow


def join_uri(root: str, name: str) -> str:
    return root.rstrip("/") + "/" + name if is_remote(root) else os.path.join(root, name)


def storage_options() -> dict[str, str]:
    """Options for object storage from the environment (what boto/aws-cli users already set)."""
    env = os.environ
    out: dict[str, str] = {}
    for key, opt in (
        ("AWS_ENDPOINT_URL_S3", "aws_endpoint"),
        ("AWS_ENDPOINT_URL", "aws_endpoint"),
        ("AWS_ENDPOINT", "aws_endpoint"),
        ("AWS_REGION", "aws_region"),
        ("AWS_DEFAULT_REGION", "aws_region"),
        ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
        ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
        ("AWS_SESSION_TOKEN", "aws_session_token"),
        ("AWS_ALLOW_HTTP", "allow_http"),
    ):
        if env.get(key) and opt not in out:
            out[opt] = env[key]
    if out.get("aws_endpoint", "").startswith("http://"):
        out.setdefault("allow_http", "true")
    return out


def lance_module():
    import warnings

    # Ray forks its raylet after the driver opened the index; the index is never used in the
    # forked process, so lance's fork warning does not apply.
    warnings.filterwarnings("ignore", message="lance is not fork-safe")
    # Only ragsift's own lines reach stderr: Lance's Rust log (``WARN lance::…``) is kept to
    # errors unless the user asked for more (``LANCE_LOG`` set) or runs with --debug.
    if "LANCE_LOG" not in os.environ and not debug_requested():
        os.environ["LANCE_LOG"] = "error"
    try:
        import lance
    except ImportError:
        raise RagsiftError(
            "a .lance or object-storage index needs the Lance backend: pip install 'ragsift[lance]'"
        ) from None
    return lance


def arrow_schema(dim: int):
    import pyarrow as pa

    LEX_FIELDS = lex_fields()
    return pa.schema(
        [
            ("uid", pa.string()),
            ("kind", pa.string()),
            ("doc_key", pa.string()),
            ("rowid", pa.int64()),
            # document rows
            ("path", pa.string()),
            ("source", pa.string()),
            ("size", pa.int64()),
            ("mtime", pa.float64()),
            ("sha256", pa.string()),
            ("format", pa.string()),
            ("chunker", pa.string()),
            ("n_chunks", pa.int64()),
            ("doc_tokens", pa.int64()),
            ("indexed_at", pa.float64()),
            # chunk rows
            ("idx", pa.int64()),
            ("text", pa.string()),
            ("context", pa.string()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("tokens", pa.int64()),
            ("chars", pa.int64()),
            ("line_start", pa.int64()),
            ("line_end", pa.int64()),
            ("headings", pa.list_(pa.string())),
            ("page", pa.int64()),
            ("level", pa.int64()),
            ("content_hash", pa.string()),
            ("truncated", pa.int64()),
            ("fts", pa.string()),
            ("units", pa.binary()),
            ("vector", pa.list_(pa.float32(), dim)),
            # postings rows (``kind = "lex"``, schema 3: ``lexical_rows``)
            *LEX_FIELDS,
        ]
    )


def lex_fields():
    import pyarrow as pa

    return [
        pa.field("lex_term", pa.string()),
        pa.field("lex_rows", pa.binary()),
        pa.field("lex_counts", pa.binary()),
    ]


DOC_FIELDS = (
    "path",
    "source",
    "size",
    "mtime",
    "sha256",
    "format",
    "chunker",
    "n_chunks",
    "doc_tokens",
    "indexed_at",
)
CHUNK_FIELDS = (
    "rowid",
    "doc_key",
    "idx",
    "text",
    "context",
    "start",
    "end",
    "tokens",
    "chars",
    "line_start",
    "line_end",
    "headings",
    "page",
    "level",
    "content_hash",
    "truncated",
)


def chunk_row(doc_key: str, rowid: int, rec: ChunkRow) -> dict:
    """The chunks-dataset row (all but ``vector``) of chunk ``rec``; ``terms`` (not a
    column) carries its identifier terms to ``lexical_rows``, so they are computed once."""
    from ragsift.index.terms import terms_text

    terms = terms_text(rec.context, rec.text)
    return {
        "uid": f"c:{rowid}",
        "kind": "chunk",
        "doc_key": doc_key,
        "rowid": rowid,
        "idx": rec.index,
        "text": rec.text,
        "context": rec.context,
        "start": rec.start,
        "end": rec.end,
        "tokens": rec.tokens,
        "chars": rec.chars,
        "line_start": rec.line_start,
        "line_end": rec.line_end,
        "headings": list(rec.headings),
        "page": rec.page,
        "level": rec.level,
        "content_hash": rec.content_hash,
        "truncated": rec.truncated,
        "units": rec.units,
        "fts": _fts(rec.context, rec.text, terms),
        "terms": terms,
    }


def _fts(context: str, text: str, terms: str) -> str:
    return "\n".join(p for p in (context, text, terms) if p)


def fts_text(context: str, text: str) -> str:
    """The ``fts`` column of a chunk (for LanceDB users' own full-text index; ragsift scores
    its postings instead, ``lexical_rows``): its context, its text, and their identifier terms
    (``ragsift.index.terms``: ``url_for`` whole, ``camelCase`` by parts)."""
    from ragsift.index.terms import terms_text

    return _fts(context, text, terms_text(context, text))


LENGTHS = ""  # the ``lex_term`` of a batch's row lengths (FTS5 never makes an empty token)


def lexical_rows(chunks: list[dict]) -> list[dict]:
    """The postings rows of a batch of chunk rows (``chunk_row``; other rows are skipped),
    written in the same commit as the chunks: one row per term (``kind = "lex"``,
    ``lex_term``), the chunk ids holding it (``lex_rows``, little-endian int64, ascending) and
    how often (``lex_counts``, little-endian uint32), plus one row, ``lex_term = LENGTHS``,
    with every chunk's length. The terms and lengths are the SQLite backend's own
    (``ragsift.index.lexical.tokenize_rows``: FTS5's tokenizer over context, text and the
    identifier terms, the terms not counted in the length), so both backends score one BM25
    (``lexical.score_postings``) from the same postings. A chunk id is a row's ``rowid``;
    the uid ``x:<first chunk id>:<term>`` is unique per batch."""
    import numpy as np

    from ragsift.index.lexical import tokenize_rows
    from ragsift.index.terms import terms_text

    chunks = [r for r in chunks if r.get("kind") == "chunk"]
    if not chunks:
        return []
    ids = np.asarray([int(r["rowid"]) for r in chunks], np.int64)
    order = np.argsort(ids, kind="stable")
    texts = []
    for i in order.tolist():
        context, text = chunks[i].get("context") or "", chunks[i].get("text") or ""
        terms = chunks[i].get("terms")
        texts.append((context, text, terms_text(context, text) if terms is None else terms))
    ids = ids[order]
    lengths, found = tokenize_rows(texts)
    base = int(ids[0])
    out = [
        {
            "uid": f"x:{base}:",
            "kind": "lex",
            "lex_term": LENGTHS,
            "lex_rows": ids.astype("<i8").tobytes(),
            "lex_counts": lengths.astype("<u4").tobytes(),
        }
    ]
    out += [
        {
            "uid": f"x:{base}:{term}",
            "kind": "lex",
            "lex_term": term,
            "lex_rows": ids[at].astype("<i8").tobytes(),
            "lex_counts": tf.astype("<u4").tobytes(),
        }
        for term, (at, tf) in found.items()
    ]
    return out


def rows_table(rows: list[dict], vectors: list, dim: int):
    """An Arrow table of the chunks schema: ``rows`` (``chunk_row`` or document fields) and one
    vector per row (None for a document row), then the postings rows of its chunk rows
    (``lexical_rows``)."""
    import numpy as np
    import pyarrow as pa

    lex = lexical_rows(rows)
    rows, vectors = list(rows) + lex, list(vectors) + [None] * len(lex)
    schema = arrow_schema(dim)
    matrix = (
        np.stack(
            [np.zeros(dim, np.float32) if v is None else np.asarray(v, np.float32) for v in vectors]
        )
        if rows
        else np.zeros((0, dim), np.float32)
    )
    vector = pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.reshape(-1), pa.float32()),
        dim,
        mask=pa.array([v is None for v in vectors], pa.bool_()),
    )
    cols = {
        f: pa.array([r.get(f) for r in rows], schema.field(f).type)
        for f in schema.names
        if f != "vector"
    }
    cols["vector"] = vector
    return pa.table(cols, schema=schema)


def write_fragments(
    uri: str, table: Any, storage_options: dict | None, create: bool = False
) -> list[str]:
    """Write ``table`` as new data files of the dataset at ``uri`` WITHOUT committing them
    (any process: a Ray worker); returns the fragments' metadata as JSON for
    ``LanceIndex.commit_fragments``. Files of a write never committed are never read.
    ``create``: the dataset does not exist yet (its first commit will create it)."""
    from lance.fragment import write_fragments as write

    lance_module()
    return [
        json.dumps(f.to_json())
        for f in write(
            table,
            uri,
            schema=table.schema,
            mode="create" if create else "append",
            storage_options=storage_options or None,
        )
    ]


@dataclass(frozen=True)
class FragmentWriter:
    """``FragmentCommits.fragment_writer()`` of a Lance index: picklable (a Ray worker gets
    it); ``writer(rows, vectors, dim)`` writes chunk rows as uncommitted fragments of the
    dataset and returns their metadata (JSON) for ``commit_fragments``."""

    uri: str
    storage_options: dict
    create: bool = False

    def __call__(self, rows: list[dict], vectors: list, dim: int) -> list[str]:
        return write_fragments(
            self.uri, rows_table(rows, vectors, dim), self.storage_options, create=self.create
        )
