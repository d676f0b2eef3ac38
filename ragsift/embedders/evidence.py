"""Unit evidence: a chunk's dense evidence at the grain of the answer.

A chunk stays the unit of retrieval, citation and ``k``; inside it, its **units** (sentences,
list items, table rows, grouped code lines) are what the model embeds. The model was trained
on sentence pairs, and one vector per 256-token chunk averages a dozen sentences, so the one
that answers is diluted (issue 28). Here:

- ``unit_bounds(text)``: the units of a chunk's text, ``(start, end)`` offsets into it (so
  ``text[start:end]`` is the unit, and ``chunk.start + start`` is its offset in the document).
  Paragraphs (blank-line separated) are cut into sentences; a line that starts a list item,
  a table row, a heading or a code fence starts a unit of its own; hard-wrapped prose is *not*
  cut at its line ends. A unit shorter than ``MIN_WORDS`` words joins its neighbour (the next
  one, or the previous one at the end), so a heading reads with the sentence under it and
  short code lines are grouped; a unit longer than ``MAX_WORDS`` words is cut at word
  boundaries. Units cover every non-blank part of the text.
- ``embed_evidence(embedder, items)``: embeds every unit of every ``(context, text)`` item in
  one call (the embedder sorts by length, so units pad little) and returns, per item, its
  ``Evidence``: the chunk's vector (the *aggregate*, what the dense scan ranks by: the
  L2-normalised mean of its unit vectors and, when the chunk has a context (a heading trail),
  the context's vector, each weighted by its length in characters, ``weights``) and its units
  (offsets and int8 vectors, ``encode``/``decode``), what the engine reads for the best unit's
  cosine (``ragsift.retrieval.units``).

Why length-weighted: the model pools a text by the mean of its token outputs, so a chunk read
whole weighs each sentence by its length; a plain mean of unit vectors gave a 6-word heading
as much say as a 90-word paragraph. Weighted by characters, dense recall@5 on chroma-dev rose
93.22 → 94.89 and SciFact's dense nDCG@10 67.75 → 68.03; weights by words or model tokens
also beat the plain mean on every fold, and leave-one-corpus-out chose characters on three
of four folds (``bench/RESULTS.md``, "Unit evidence": the aggregate's weights).

Storage: a unit vector is int8 with one float32 scale (``q = round(v / s)``, ``s =
max|v| / 127``): 384 + 12 bytes per unit beside the offsets, about a quarter of float32; the
cosine it gives differs from float32's by < 0.003 (tested). ``EVIDENCE_KIND`` names this
layout: an index records it, and one built before it gets one clear line and ``--rebuild``.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.sources.units import SENTENCE_END

if TYPE_CHECKING:
    import numpy as np

# The evidence layout an index records (setting ``evidence``); a reader refuses another.
EVIDENCE_KIND = "units-3"  # units-1 (ragsift 0.3-0.5): the aggregate an unweighted mean;
# units-2 (0.6): Chinese/Japanese text not cut at its sentence ends (。！？ with no space after)
# A unit has at least this many words (shorter pieces join a neighbour): the issue's
# measurement used 6; see bench/RESULTS.md, "Unit evidence".
MIN_WORDS = 6
# ... and at most this many (a longer sentence or line is cut at word boundaries): well
# inside the model's 256 tokens.
MAX_WORDS = 96

# Words are whitespace-separated, in every script: a run of Han/kana between spaces is one
# word, so a CJK sentence short of MIN_WORDS joins the next (a paragraph of pure Chinese
# stays one unit; one with Latin words or spaces between is cut at its sentence ends once a
# unit holds MIN_WORDS). Counting Han/kana as a word per 1-32 characters (sentences as
# units) was measured and not chosen: leave-one-language-out on the shipped set, the
# threshold rule's objective (answered - 2 x off-topic admitted) chose this count on both
# folds (bench/RESULTS.md, "CJK sentences as units").
_WORD = re.compile(r"\S+")
_WORDCHAR = re.compile(r"\w")
_BLANK_LINE = re.compile(r"\n[ \t]*\n\s*")
# a line that is a unit boundary of its own: list item, table row, heading, quote, fence,
# directive, or an indented (code) line
_OWN_LINE = re.compile(r"[ \t]*(?:[-*+•]\s|\d{1,3}[.)]\s|\||#{1,6}\s|>|```|~~~|\.\. |\t| {4})")
# where a sentence ends: the one rule of ``sources.units`` (. ! ? … and whitespace; 。！？ with
# or without it)
_SENTENCE_END = SENTENCE_END
_HEADER = struct.Struct("<II")


def _words(text: str) -> int:
    return sum(1 for w in _WORD.findall(text) if _WORDCHAR.search(w))


def _pieces(text: str) -> list[tuple[int, int]]:
    """Sentence/line pieces of ``text`` before merging: offsets, trimmed, non-blank."""
    out: list[tuple[int, int]] = []

    def add(lo: int, hi: int) -> None:
        seg = text[lo:hi]
        stripped = seg.strip()
        if stripped:
            lo += len(seg) - len(seg.lstrip())
            out.append((lo, lo + len(stripped)))

    para_start = 0
    paragraphs = []
    for m in _BLANK_LINE.finditer(text):
        paragraphs.append((para_start, m.start()))
        para_start = m.end()
    paragraphs.append((para_start, len(text)))
    for p_lo, p_hi in paragraphs:
        # lines that stand alone (items, rows, code) cut the paragraph; prose runs between
        # them are one block, cut at sentence ends only
        blocks: list[tuple[int, int]] = []
        run_lo = p_lo
        pos = p_lo
        for line in text[p_lo:p_hi].split("\n"):
            lo, hi = pos, pos + len(line)
            if _OWN_LINE.match(line):
                if run_lo < lo:
                    blocks.append((run_lo, lo))
                blocks.append((lo, hi))
                run_lo = hi + 1
            pos = hi + 1
        if run_lo < p_hi:
            blocks.append((run_lo, p_hi))
        for b_lo, b_hi in blocks:
            start = b_lo
            for m in _SENTENCE_END.finditer(text, b_lo, b_hi):
                add(start, m.start() + len(m.group().rstrip()))
                start = m.end()
            add(start, b_hi)
    return out


def _cut_long(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    words = list(_WORD.finditer(text, lo, hi))
    if len(words) <= MAX_WORDS:
        return [(lo, hi)]
    out = []
    for i in range(0, len(words), MAX_WORDS):
        part = words[i : i + MAX_WORDS]
        out.append((part[0].start(), part[-1].end()))
    return out


def unit_bounds(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every unit of ``text``, in order (see the module docstring)."""
    pieces = [b for lo, hi in _pieces(text) for b in _cut_long(text, lo, hi)]
    merged: list[list[int]] = []
    pending: list[int] | None = None  # a short piece waiting for the next one
    for lo, hi in pieces:
        if pending is not None:
            lo = pending[0]
            pending = None
        if _words(text[lo:hi]) < MIN_WORDS:
            pending = [lo, hi]
            continue
        merged.append([lo, hi])
    if pending is not None:
        if merged:
            merged[-1][1] = pending[1]
        else:
            merged.append(pending)
    return [(lo, hi) for lo, hi in merged]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What ``embed`` stores for one chunk: ``vector`` (float32, L2-normalised aggregate),
    ``units`` (``encode``'s bytes) and ``truncated`` (tokens the model never saw)."""

    vector: Any  # np.ndarray
    units: bytes
    truncated: int


def encode(bounds: Sequence[tuple[int, int]], vectors: np.ndarray) -> bytes:
    """Units as bytes: ``n``, ``dim``, then int32 starts, int32 ends, float32 scales and the
    int8 vectors (n × dim), little-endian."""
    import numpy as np

    v = np.asarray(vectors, np.float32)
    n, dim = v.shape if v.ndim == 2 else (0, 0)
    if not n:
        return _HEADER.pack(0, 0)
    scale = np.abs(v).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(v / scale[:, None]), -127, 127).astype(np.int8)
    b = np.asarray(bounds, np.int32).reshape(n, 2)
    return b"".join(
        (
            _HEADER.pack(n, dim),
            np.ascontiguousarray(b[:, 0], "<i4").tobytes(),
            np.ascontiguousarray(b[:, 1], "<i4").tobytes(),
            scale.astype("<f4").tobytes(),
            q.tobytes(),
        )
    )


def decode(blob: bytes | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ends, scales, q)`` of ``encode``'s bytes (n = 0 for None or empty)."""
    import numpy as np

    if not blob:
        z = np.zeros(0, np.int32)
        return z, z, np.zeros(0, np.float32), np.zeros((0, 0), np.int8)
    n, dim = _HEADER.unpack_from(blob)
    o = _HEADER.size
    starts = np.frombuffer(blob, "<i4", n, o)
    ends = np.frombuffer(blob, "<i4", n, o + 4 * n)
    scales = np.frombuffer(blob, "<f4", n, o + 8 * n)
    q = np.frombuffer(blob, np.int8, n * dim, o + 12 * n).reshape(n, dim)
    return starts, ends, scales, q


def unit_cosines(
    blob: bytes | None, query: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ends, cosines)`` of the stored units against ``query`` (float32, the
    model's dimensions); empty for no units or units of other dimensions. The one place a
    stored unit's cosine is computed (the engine's best unit, ``explain``'s closest units)."""
    import numpy as np

    starts, ends, scales, q8 = decode(blob)
    if not len(starts) or q8.shape[1] != query.shape[0]:
        z = np.zeros(0, np.int32)
        return z, z, np.zeros(0, np.float32)
    return starts, ends, (q8 @ query) * scales  # int8 @ float32 -> float32, one per unit


def unit_vectors(blob: bytes | None) -> np.ndarray:
    """The stored unit vectors as float32 (n × dim)."""
    _, _, scales, q = decode(blob)
    return q.astype("float32") * scales[:, None]


def weights(bounds: Sequence[tuple[int, int]], context: str = "") -> list[int]:
    """Each embedded piece's weight in the chunk's vector: its length in characters, the
    units' (``bounds``) and then, when ``context`` is not blank, the context's (stripped, as
    it is embedded)."""
    out = [max(hi - lo, 1) for lo, hi in bounds]
    if context.strip():
        out.append(len(context.strip()))
    return out


def aggregate(vectors: np.ndarray, weights: Sequence[float] | None = None) -> np.ndarray:
    """The L2-normalised mean of ``vectors``, each row weighted by ``weights`` (None: equal
    weights): the chunk's vector, with ``weights(bounds, context)``."""
    import numpy as np

    v = np.asarray(vectors, np.float32)
    if weights is None:
        m = v.mean(axis=0)
    else:
        w = np.asarray(weights, np.float32)
        m = (v * w[:, None]).sum(axis=0) / float(w.sum())
    norm = float(np.linalg.norm(m))
    return (m / norm if norm > 0 else m).astype(np.float32)


def embed_evidence(embedder: Any, items: Sequence[tuple[str, str]]) -> list[Evidence]:
    """Each ``(context, text)`` item's evidence; every unit (and heading trail) of every item
    embedded in one ``embedder.embed`` call, each distinct string once."""
    import numpy as np

    precomputed = getattr(embedder, "evidence", None)
    if precomputed is not None:  # evidence made elsewhere (the Ray stage), by content hash
        return precomputed(list(items))
    bounds = [unit_bounds(text) or [(0, len(text))] for _, text in items]
    strings: dict[str, int] = {}
    wanted: list[tuple[list[int], int]] = []  # per item: unit string ids, context id or -1

    def sid(s: str) -> int:
        return strings.setdefault(s, len(strings))

    for (context, text), bs in zip(items, bounds):
        ids = [sid(text[lo:hi] or " ") for lo, hi in bs]
        wanted.append((ids, sid(context.strip()) if context.strip() else -1))
    if not strings:
        return []
    res = embedder.embed(list(strings), kind="passage")
    vecs = np.asarray(res.vectors, np.float32)
    cut = list(res.truncated) or [0] * len(strings)
    out = []
    for (ids, ctx), bs, (context, _) in zip(wanted, bounds, items):
        units = vecs[ids]
        agg = aggregate(
            np.vstack([units, vecs[[ctx]]]) if ctx >= 0 else units, weights(bs, context)
        )
        out.append(
            Evidence(
                agg,
                encode(bs, units),
                sum(int(cut[i]) for i in ids) + (int(cut[ctx]) if ctx >= 0 else 0),
            )
        )
    return out
