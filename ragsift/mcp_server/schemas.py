"""The tools' JSON schemas: what each call takes (``search_input``, ``LIST_INPUT``,
``READ_INPUT``) and what its structured content holds (``SEARCH_OUTPUT``, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsift.mcp_server.service import MAX_QUERY_CHARS, MAX_READ_LINES

if TYPE_CHECKING:
    from ragsift.mcp_server.service import Service


_NUM_OR_NULL = {"type": ["number", "null"]}
_INT_OR_NULL = {"type": ["integer", "null"]}
_STR_OR_NULL = {"type": ["string", "null"]}
HIT_SCHEMA = {
    "type": "object",
    "description": "One candidate (a hit record: the CLI's query JSON prints the same).",
    "properties": {
        "id": {"type": "string"},
        "path": {"type": "string"},
        "score": {"type": "number", "description": "relevance score, 0-1"},
        "rank": {"type": "integer"},
        "admitted": {"type": "boolean"},
        "reason": _STR_OR_NULL,
        "line_start": _INT_OR_NULL,
        "line_end": _INT_OR_NULL,
        "page": _INT_OR_NULL,
        "headings": {"type": "array", "items": {"type": "string"}},
        "start": {"type": "integer"},
        "end": {"type": "integer"},
        "text": {"type": "string"},
        "span_text": {"type": "string"},
        "dense_score": _NUM_OR_NULL,
        "lexical_score": _NUM_OR_NULL,
    },
    "required": ["id", "path", "score", "rank", "admitted", "text"],
}
_FLOOR_PROPS = {
    "threshold": {**_NUM_OR_NULL, "description": "the threshold this search used"},
    "threshold_origin": {"type": "string"},
    "threshold_from": {
        **_STR_OR_NULL,
        "description": "where the threshold came from: flag (given), tuned, calibrated or default",
    },
    "floor": {**_NUM_OR_NULL, "description": "this server's floor (null: none)"},
    "floor_origin": {"type": "string"},
    "hints": {"type": "array", "items": {"type": "string"}},
}
SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "query_hash": {"type": "string"},
        "mode": {"type": "string"},
        "k": {"type": "integer"},
        "searched": {"type": "integer", "description": "chunks searched"},
        "admitted": {"type": "array", "items": HIT_SCHEMA},
        "near_miss": {
            "anyOf": [HIT_SCHEMA, {"type": "null"}],
            "description": "when nothing was admitted: the best candidate",
        },
        "admit_at": {
            **_NUM_OR_NULL,
            "description": "a threshold this server accepts that "
            "would admit the near-miss (null: none)",
        },
        **_FLOOR_PROPS,
    },
    "required": ["query", "threshold", "floor", "admitted", "near_miss", "admit_at", "hints"],
}
EXPLAIN_OUTPUT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "mode": {"type": "string"},
        "k": {"type": "integer"},
        "candidates": {"type": "array", "items": HIT_SCHEMA},
        "admitted": {"type": "integer"},
        "rejected": {"type": "integer"},
        "threshold_source": _STR_OR_NULL,
        "hint": _STR_OR_NULL,
        "attributions": {"type": "array", "items": {"type": "object"}},
        **_FLOOR_PROPS,
    },
    "required": ["query", "candidates", "threshold", "floor", "hints"],
}
DOCUMENTS_OUTPUT = {
    "type": "object",
    "properties": {
        "documents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "uri": {"type": "string"},
                    "chunks": {"type": "integer"},
                    "tokens": {"type": "integer"},
                    "size": _INT_OR_NULL,
                    "format": _STR_OR_NULL,
                    "indexed_at": _STR_OR_NULL,
                    "mtime": _STR_OR_NULL,
                },
                "required": ["path", "uri", "chunks"],
            },
        }
    },
    "required": ["documents"],
}
READ_OUTPUT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "uri": {"type": "string"},
        "line_start": _INT_OR_NULL,
        "line_end": _INT_OR_NULL,
        "lines": {**_INT_OR_NULL, "description": "the document's last indexed line"},
        "next_line": {
            **_INT_OR_NULL,
            "description": "line_start of the next part (null: the range is complete)",
        },
        "text": {"type": "string"},
    },
    "required": ["path", "uri", "line_start", "line_end", "lines", "next_line", "text"],
}


def search_input(service: Service, floor: float | None) -> dict[str, Any]:
    floor_words = (
        f"at least this server's floor {floor:g}"
        if floor is not None
        else "no floor at this server"
    )
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "a question or a few keywords",
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": service.most_k,
                "description": f"at most this many hits (default {service.k}, "
                f"most {service.most_k})",
            },
            "threshold": {
                "type": "number",
                "minimum": floor or 0,
                "maximum": 1,
                "description": f"a stricter floor on the score, 0-1 ({floor_words};"
                " default: the floor)",
            },
            "path": {
                "type": "string",
                "description": "a glob: only documents whose path matches ('*' also matches '/')",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


LIST_INPUT = {
    "type": "object",
    "properties": {
        "glob": {"type": "string", "description": "only paths that match ('*' also matches '/')"}
    },
    "additionalProperties": False,
}
READ_INPUT = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "the document's path, as a hit or list_documents gives it",
        },
        "line_start": {"type": "integer", "minimum": 1, "description": "first line (default 1)"},
        "line_end": {
            "type": "integer",
            "minimum": 1,
            "description": "last line, inclusive "
            f"(default: the end; at most {MAX_READ_LINES} lines per call)",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}
