"""Records: a chunk as ``ragsift chunk`` prints it and as the index stores it, the identity of
its embedding input, the chunker's key, and the chunk JSON lines ``embed -`` accepts on stdin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ragsift.index.backend import ChunkRow

if TYPE_CHECKING:
    from ragsift.chunkers.base import Chunk, Chunker
    from ragsift.sources import Document, Skipped

STDIN_CHUNKER = "stdin"  # chunker key of documents ingested as chunk JSON lines


def chunk_row(doc: Document, index: int, chunk: Chunk, *, hashed: bool = True) -> ChunkRow:
    """Chunk ``index`` of ``doc`` as the index stores it (``index.backend.ChunkRow``, with the
    ``content_hash`` that vector reuse keys on): the one place a chunk becomes a record.
    ``hashed=False``: no ``content_hash`` ("": the ``ragsift chunk`` JSON does not carry it;
    hashing would add ~0.8 µs a chunk to that command)."""
    last = max(chunk.start, chunk.end - 1)
    return ChunkRow(
        path=doc.path,
        index=index,
        text=chunk.text,
        start=chunk.start,
        end=chunk.end,
        context=chunk.context,
        tokens=chunk.tokens,
        chars=len(chunk.text),
        line_start=doc.line_at(chunk.start),
        line_end=doc.line_at(last),
        headings=tuple(doc.headings_at(chunk.start)),
        page=doc.page_at(chunk.start),
        level=chunk.level,
        content_hash=content_hash(chunk.context + chunk.text) if hashed else "",
    )


def chunk_record(doc: Document, index: int, chunk: Chunk) -> dict:
    """The JSON-lines record of ``ragsift chunk`` (field names are an API):
    ``chunk_row(...).to_json()``."""
    return chunk_row(doc, index, chunk, hashed=False).to_json()


def content_hash(embed_text: str) -> str:
    """Identity of a chunk's embedding input (``context + text``): sha256, 32 hex digits."""
    import hashlib

    return hashlib.sha256(embed_text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def chunker_key(chunker: Chunker) -> str:
    """JSON naming the chunker and every option that shapes its output (stored per document)."""
    import json

    return json.dumps(
        {"name": chunker.name, "options": chunker.options()}, sort_keys=True, default=str
    )


def pipeline_key(chunker_key_json: str, fmt: str) -> str:
    """What built a document's rows, stored per document: the chunker and its options
    (``chunker_key``), the reader of its format (``sources.formats.reader_fingerprint``) and
    the unit rule of its evidence (``embedders.evidence.EVIDENCE_KIND``). The embedder is the
    index's (a model change needs --rebuild)."""
    import json

    from ragsift.embedders.evidence import EVIDENCE_KIND
    from ragsift.sources.formats import reader_fingerprint

    return json.dumps(
        {
            "chunker": json.loads(chunker_key_json),
            "reader": reader_fingerprint(fmt),
            "units": EVIDENCE_KIND,
        },
        sort_keys=True,
    )


def pipeline_change(old: str | None, new: str) -> str:
    """Why a document built by ``old`` is re-chunked under ``new`` (both ``pipeline_key``):
    "the rst reader changed", "the chunker options changed", ..."""
    import json

    try:
        was = json.loads(old or "")
    except ValueError:
        was = None
    if not isinstance(was, dict) or "reader" not in was:
        return "built before ragsift recorded its pipeline"
    now = json.loads(new)
    why = []
    if was.get("reader") != now["reader"]:
        why.append(f"the {now['reader'].split()[0]} reader changed")
    if was.get("chunker") != now["chunker"]:
        why.append("the chunker options changed")
    if was.get("units") != now["units"]:
        why.append("the unit rule changed")
    return " and ".join(why) or "its pipeline changed"


def prepared(chunker: Chunker, doc: Document) -> Document:
    """The document a chunker wants to chunk and have recorded (e.g. tables rendered)."""
    prepare = getattr(chunker, "prepare", None)
    return prepare(doc) if prepare is not None else doc


def index_records(chunker: Chunker, doc: Document) -> tuple[Document, list[ChunkRow]]:
    """The document as the chunker records it and its chunks for the index (``chunk_row``);
    every engine builds them here."""
    doc = prepared(chunker, doc)
    return doc, [chunk_row(doc, i, ch) for i, ch in enumerate(chunker.chunk(doc))]


# -- chunk JSON lines on stdin (``ragsift chunk … | ragsift embed -``) -------------------------
# Fields of a ``ragsift chunk`` record accepted on stdin: name → (types, required).
RECORD_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "path": ((str,), True),
    "index": ((int,), True),
    "text": ((str,), True),
    "start": ((int, type(None)), False),
    "end": ((int, type(None)), False),
    "context": ((str,), False),
    "tokens": ((int, type(None)), False),
    "chars": ((int, type(None)), False),
    "line_start": ((int, type(None)), False),
    "line_end": ((int, type(None)), False),
    "headings": ((list,), False),
    "page": ((int, type(None)), False),
    "level": ((int,), False),
}


def records_by_path(
    lines: Iterable[str] | Iterable[bytes], skip: Callable[[Skipped], None]
) -> dict[str, list[ChunkRow]]:
    """Chunk JSON lines (as ``ragsift chunk`` prints them) → chunks (``record_row``) grouped by ``path``,
    each group in ``index`` order. A bad line is one ``skip`` (``stdin line N: why``); ``lines``
    may be bytes (``sys.stdin.buffer``): a line that is not UTF-8 is one skip."""
    import json

    from ragsift.sources import Skipped

    groups: dict[str, list[ChunkRow]] = {}
    indexes: dict[str, set[int]] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"stdin line {lineno}"
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                skip(
                    Skipped(
                        where,
                        f"not UTF-8 (byte {exc.start}); expected records as "
                        "printed by `ragsift chunk`",
                    )
                )
                continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            skip(
                Skipped(
                    where, f"not JSON ({exc.msg}); expected records as printed by `ragsift chunk`"
                )
            )
            continue
        problem = record_problem(rec)
        if problem is None and rec["index"] in indexes.get(rec["path"], ()):
            problem = f"duplicate index {rec['index']} for path {rec['path']!r}"
        if problem:
            skip(Skipped(where, problem))
            continue
        row = record_row(rec)
        groups.setdefault(row.path, []).append(row)
        indexes.setdefault(row.path, set()).add(row.index)
    for rows in groups.values():
        rows.sort(key=lambda r: r.index)
    return groups


def record_row(rec: dict) -> ChunkRow:
    """A stdin record ``record_problem`` accepts as a chunk for the index: the fields it left
    out or null take their defaults (context "", no headings, level 0, chars the text's
    length), ``content_hash`` is computed."""
    context = rec.get("context") or ""
    return ChunkRow(
        path=rec["path"],
        index=rec["index"],
        text=rec["text"],
        start=rec.get("start"),
        end=rec.get("end"),
        context=context,
        tokens=rec.get("tokens"),
        chars=rec.get("chars"),
        line_start=rec.get("line_start"),
        line_end=rec.get("line_end"),
        headings=tuple(str(h) for h in rec.get("headings") or ()),
        page=rec.get("page"),
        level=rec.get("level") or 0,
        content_hash=content_hash(context + rec["text"]),
    )


def records_sha256(records: list[ChunkRow]) -> str:
    """The identity of a stdin document: sha256 of its records (change detection), each as
    its ``ragsift chunk`` fields plus ``content_hash``, keys sorted."""
    import hashlib
    import json

    return hashlib.sha256(
        json.dumps([r.to_json(content_hash=True) for r in records], sort_keys=True).encode()
    ).hexdigest()


def record_problem(rec: object) -> str | None:
    """Why ``rec`` is not a ``ragsift chunk`` record (None: it is one)."""
    if not isinstance(rec, dict):
        return "not a JSON object; expected records as printed by `ragsift chunk`"
    for name, (types, required) in RECORD_FIELDS.items():
        if name not in rec:
            if required:
                return f"missing field {name!r}"
            continue
        value = rec[name]
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            return f"field {name!r} must be {want}, not {type(value).__name__}"
    for name, value in rec.items():
        if name not in RECORD_FIELDS:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            return f"field {name!r} is out of range ({len(str(abs(value)))} digits)"
        texts = value if name == "headings" else [value]
        for t in texts:
            if isinstance(t, str) and not _is_text(t):
                return f"field {name!r} holds a lone surrogate (\\ud800-\\udfff is not text)"
    if rec["index"] < 0:
        return "field 'index' must be >= 0"
    if not rec["text"].strip():
        return "field 'text' is empty"
    return None


def _is_text(value: str) -> bool:
    """False for a string holding a lone surrogate (``"\\ud800"`` in JSON): not encodable."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
