"""``ModelIndex``: the chunkers' per-document index in the model's own tokens, one encode.

Imported only by ``tokens.ModelTokenCounter`` (it needs the chunkers' ``GenericIndex``, which
``query`` never loads)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from typing import Any

from ragsift.chunkers.counters import GenericIndex


def starts(enc: Any, offsets: list[tuple[int, int]] | None = None) -> list[int]:
    """``ModelTokenCounter.offsets`` of an encoding (``offsets``: its ``enc.offsets``)."""
    out: list[int] = []
    for (start, _end), special in zip(offsets or enc.offsets, enc.special_tokens_mask):
        if special:
            continue
        if not out:
            out.append(0)
        elif start > out[-1]:
            out.append(start)
    return out


def bert_wordpiece_ends(tok: Any) -> tuple[int, int] | None:
    """See ``ModelTokenCounter.sliceable``: the tokenizer's parts by type, its added tokens,
    and what it does with ``""``, ``"a"``, ``"b"`` and ``"a b"``."""
    try:
        if (
            type(tok.normalizer).__name__,
            type(tok.pre_tokenizer).__name__,
            type(tok.model).__name__,
        ) != ("BertNormalizer", "BertPreTokenizer", "WordPiece"):
            return None
        for t in tok.get_added_tokens_decoder().values():
            if (
                t.lstrip
                or t.rstrip
                or t.single_word
                or not t.content
                or any(c.isspace() for c in t.content)
            ):
                return None
        ends = tok.encode("").ids
        a, b = tok.encode("a").ids, tok.encode("b").ids
        if (
            len(ends) != 2
            or a[0 :: len(a) - 1] != ends
            or b[0 :: len(b) - 1] != ends
            or tok.encode("a b").ids != [ends[0], *a[1:-1], *b[1:-1], ends[1]]
        ):
            return None
        return ends[0], ends[1]
    except Exception:
        return None


_SPACE = frozenset(" \t\n\r")  # whitespace to every BERT normalizer and pre-tokenizer


class ModelIndex(GenericIndex):
    """``GenericIndex`` for the model's tokens, built from ONE encode of the document (offsets
    and ids): ``exact(context, s, e)`` of a range that starts and ends at whitespace (or the
    document's ends), its context joined at whitespace, is the document's ids in that range
    with the context's own ids and the special tokens around them. For a BERT WordPiece
    tokenizer (``ModelTokenCounter.sliceable``: every whitespace-separated word is encoded on
    its own) that is exactly what a fresh encode of ``context + text[s:e]`` gives; any other
    range (or tokenizer) is encoded afresh as before. The ids go to the counter's
    ``TokenMemo`` when it keeps them (``embed``). ``tests/test_token_handover.py`` compares
    every answer with a fresh encode on adversarial text."""

    def __init__(self, counter: Any, text: str) -> None:
        self.text = text
        self.n = len(text)
        self._counter = counter
        self.overhead = counter.count("")
        self._ends = counter.sliceable()
        self._ctx: dict[str, list[int] | None] = {}
        # the document's ids and token starts, 4 bytes each (a 64 MB file has ~16M tokens)
        self._ids: array | None = None
        self._firsts: array = array("i")
        if not text:
            self.starts, self.ntok = [], 0
            return
        # encode_batch releases the GIL (encode holds it): the model loading and the main
        # thread go on meanwhile (the same encoding)
        enc = counter._tok.encode_batch([text])[0]
        offsets = enc.offsets
        inner = [a for a, _b in offsets[1:-1]]  # token starts between the two special tokens
        in_order = inner == sorted(inner)
        ids = enc.ids
        ends = ids[0 :: len(ids) - 1] if len(ids) >= 2 else []
        if self._ends is not None and tuple(ends) == self._ends and in_order:
            self._ids, self._firsts = array("i", ids[1:-1]), array("i", inner)
        mask = enc.special_tokens_mask
        if in_order and len(ends) == 2 and mask[0] and mask[-1] and sum(mask) == 2:
            # ``_starts`` in one pass: the first start is 0, then each start past the last
            prev = inner[:-1]
            if prev:
                prev[0] = 0
            self.starts = [0, *[x for x, p in zip(inner[1:], prev) if x > p]] if inner else []
        else:
            self.starts = starts(enc, offsets)  # what ``GenericIndex`` has from ``offsets()``
        self.ntok = len(self.starts)

    def exact(self, context: str, s: int, e: int) -> int:
        ids = self.ids(context, s, e)
        if ids is None:
            return self._counter.count(context + self.text[s:e])
        memo = self._counter.memo
        if memo is not None:
            memo.put(context + self.text[s:e], ids)
        return len(ids)

    def ids(self, context: str, s: int, e: int) -> list[int] | None:
        """The ids of ``context + text[s:e]`` taken from the document's, or None where that
        is not certain (the caller encodes it)."""
        text = self.text
        if (
            self._ids is None
            or not 0 <= s < e <= self.n
            or not (
                (s == 0 or text[s - 1] in _SPACE or text[s] in _SPACE)
                and (e == self.n or text[e - 1] in _SPACE or text[e] in _SPACE)
                and (not context or context[-1] in _SPACE or text[s] in _SPACE)
            )
        ):
            return None
        ctx: list[int] | None = []
        if context:
            if context in self._ctx:
                ctx = self._ctx[context]
            else:
                c = self._counter._tok.encode(context).ids
                ctx = c[1:-1] if len(c) >= 2 and (c[0], c[-1]) == self._ends else None
                self._ctx[context] = ctx
            if ctx is None:
                return None
        first, last = self._ends
        return [
            first,
            *ctx,
            *self._ids[bisect_left(self._firsts, s) : bisect_left(self._firsts, e)],
            last,
        ]
