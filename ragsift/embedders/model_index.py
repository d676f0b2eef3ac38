"""``ModelIndex``: the chunkers' per-document index in the model's own tokens, one encode.

Imported only by ``tokens.ModelTokenCounter`` (it needs the chunkers' ``GenericIndex``, which
``query`` never loads)."""

from __future__ import annotations

import re
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


def starts_of(firsts: list[int], first: bool) -> list[int]:
    """``starts``' rule on token starts (special tokens left out): each start past the last
    kept, the very first forced to 0 when ``first`` (no boundary before this window)."""
    out: list[int] = []
    for start in firsts:
        if not out:
            out.append(0 if first else start)
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


# -- in windows, word by word (a sliceable tokenizer) ---------------------------------------

_PIECE = re.compile(r"[^ \t\n\r]+")  # what lies between the whitespace every BERT tokenizer cuts at
_SPACE_RE = re.compile(r"[ \t\n\r]")
# Characters per window of ``WindowedModelIndex`` (a window ends at the first whitespace at or
# after this many characters): ~15k tokens of prose, so the few windows kept are a few MB
# whatever the document's size. Past a window, time is the same; below ~8k characters the
# per-window numpy calls start to show (bench/RESULTS.md, "Bounded tokenization").
WINDOW = 1 << 16
SMALL = 4096  # a shorter window is encoded whole by the tokenizer (``PieceCache.window``)
KEEP = 4  # windows kept encoded (a chunk never spans more than two; the rest are re-encoded)


class PieceCache:
    """The tokens of each whitespace-free piece of text, encoded once per process.

    For a sliceable tokenizer (``ModelTokenCounter.sliceable``) a text's tokens are the
    concatenation of its pieces' tokens (the text between ASCII whitespace), each piece
    encoded on its own; their character starts are the piece's start plus the piece's own
    offsets. Prose repeats its words, so after the first few windows nearly every piece is a
    dictionary hit and a window costs a ``findall``, a list of look-ups and a few numpy
    gathers: this is what makes ``--tokenizer model`` as fast as cl100k (one
    ``encode_batch`` of a whole 10 MB document took 13 s and 1.3 GB). Misses are encoded in
    one ``encode_batch`` per window (the real tokenizer: the same ids and offsets). Bounded:
    the cache starts over past ``PIECES`` pieces or ``LIMIT`` stored tokens. Thread-safe."""

    # before starting over: ~5 MB at most (a 100,000-row table holds ~100k distinct pieces;
    # 10 MB of prose ~33k: its hit rate stays ~97%)
    PIECES = 1 << 15
    LIMIT = 1 << 19  # stored tokens
    LONG = 256  # characters: a longer piece is encoded for its window, not kept

    def __init__(self, tok: Any) -> None:
        import threading

        self._tok = tok
        self._lock = threading.Lock()
        self._reset()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (a chunker sent to Ray's workers) as an empty cache on the same tokenizer:
        a lock does not pickle, and the pieces are only a cache."""
        return (PieceCache, (self._tok,))

    def _reset(self) -> None:
        self._slot: dict[str, int] = {}
        self._first = array("q")  # per slot: where its tokens start in the flat arrays
        self._len = array("q")  # per slot: how many tokens
        self._ids = array("i")
        self._rel = array("q")  # each token's start inside its piece
        self._special = array("b")

    def window(self, text: str) -> tuple[Any, Any, Any]:
        """``(ids, starts, special)`` of ``text``'s tokens without the special tokens the
        tokenizer adds around a text: ``encode(text, add_special_tokens=False)``'s ids,
        offsets' starts and special-tokens mask, as numpy arrays (lists under ``SMALL``
        characters)."""
        if len(text) < SMALL:  # one encode, no numpy (a small document starts fast)
            enc = self._tok.encode(text, add_special_tokens=False)
            return enc.ids, [a for a, _b in enc.offsets], enc.special_tokens_mask
        import numpy as np

        pieces = _PIECE.findall(text)
        if not pieces:
            return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, bool)
        codes = (
            np.frombuffer(text.encode("ascii"), np.uint8)
            if text.isascii()
            else np.frombuffer(text.encode("utf-32-le"), "<u4")
        )
        ws = (codes == 32) | (codes == 9) | (codes == 10) | (codes == 13)
        begins = ~ws
        begins[1:] &= ws[:-1]
        piece_starts = np.flatnonzero(begins)
        with self._lock:
            if len(self._ids) > self.LIMIT or len(self._len) > self.PIECES:
                self._reset()
            get = self._slot.get
            slots = [get(p, -1) for p in pieces]
            if -1 in slots:
                missing = list(dict.fromkeys(p for p, s in zip(pieces, slots) if s < 0))
                for p, enc in zip(
                    missing, self._tok.encode_batch(missing, add_special_tokens=False)
                ):
                    self._slot[p] = len(self._len)
                    self._first.append(len(self._ids))
                    self._len.append(len(enc.ids))
                    self._ids.extend(enc.ids)
                    self._rel.extend([a for a, _b in enc.offsets])
                    self._special.extend(enc.special_tokens_mask)
                get = self._slot.__getitem__
                slots = [get(p) for p in pieces]
                for p in missing:  # a long piece is not kept as a key (a 5 MB word would be)
                    if len(p) > self.LONG:
                        del self._slot[p]
            sl = np.array(slots, dtype=np.int64)
            # views of the stores, dropped before the lock is released (an array with a view
            # cannot grow)
            first = np.frombuffer(self._first, dtype=np.int64)[sl]
            count = np.frombuffer(self._len, dtype=np.int64)[sl]
            ends = np.cumsum(count)
            flat = np.repeat(first - (ends - count), count) + np.arange(int(ends[-1]))
            ids = np.frombuffer(self._ids, dtype=np.int32)[flat]
            rel = np.frombuffer(self._rel, dtype=np.int64)[flat]
            special = np.frombuffer(self._special, dtype=np.int8)[flat].astype(bool)
            del first
        return ids, rel + np.repeat(piece_starts, count), special


class WindowedModelIndex:
    """``ModelIndex``'s answers for a sliceable tokenizer, from the document in windows.

    Window ``k`` is ``text[cuts[k]:cuts[k+1]]``, each cut the first ASCII whitespace at or
    after ``WINDOW`` characters past the last: whitespace splits every BERT word, so the
    windows' tokens (``PieceCache``), shifted by their cut, are the document's tokens and
    offsets, and a token never spans two windows. Only the cuts and the token counts before
    each window are kept for the whole document (one number per window); a window's tokens
    are encoded when a question reaches it and at most ``KEEP`` windows stay encoded (an
    evicted window asked about again is encoded again: the same tokens). Peak memory then
    depends on the window, not the file. ``starts`` and ``ntok`` (the whole list: the
    ``tokens`` strategy and tests) are built on demand. ``tests/test_bounded_memory.py``
    compares every answer with the one-encode ``ModelIndex`` on text cut in small windows."""

    def __init__(self, counter: Any, text: str, window: int | None = None) -> None:
        self.text = text
        self.n = len(text)
        self._counter = counter
        self.overhead = counter.count("")
        self._ends = counter.sliceable()
        self._pieces = counter.piece_cache()
        self._window = max(WINDOW if window is None else window, 1)
        self._cuts = [0]  # window k is text[cuts[k]:cuts[k+1]]
        self._tok0 = [0]  # boundaries (``starts`` entries) before window k
        self._done = self.n == 0
        self._kept: dict[int, tuple[Any, Any, Any]] = {}
        self._ctx: dict[str, list[int] | None] = {}

    # -- windows ---------------------------------------------------------------------------

    def _encode(self, k: int) -> tuple[list[int], list[int], Any]:
        """Window ``k`` (already cut): its boundaries, token starts and ids."""
        hit = self._kept.get(k)
        if hit is not None:
            return hit
        a, b = self._cuts[k], self._cuts[k + 1]
        ids, firsts, special = self._pieces.window(self.text[a:b])
        if isinstance(firsts, list):
            firsts = [f + a for f in firsts]
            bounds = starts_of(
                [f for f, sp in zip(firsts, special) if not sp], first=self._tok0[k] == 0
            )
            ordered = all(x <= y for x, y in zip(firsts, firsts[1:]))
            hit = (bounds, firsts, ids) if ordered else (bounds, [], None)
            return self._keep(k, hit)
        import numpy as np

        firsts += a
        bounds = firsts[~special]
        if len(firsts) > 1 and bool((firsts[1:] < firsts[:-1]).any()):
            # offsets out of order (no BERT tokenizer seen does this): ``starts``' own rule,
            # and no slicing in this window (a range of it is encoded afresh)
            hit = (starts_of(bounds.tolist(), first=self._tok0[k] == 0), [], None)
        else:
            if self._tok0[k] == 0 and len(bounds):
                bounds[0] = 0  # leading whitespace belongs to the first token
            if len(bounds) > 1:
                bounds = bounds[np.r_[True, bounds[1:] > bounds[:-1]]]
            hit = (_int64s(bounds), _int64s(firsts), ids)
        return self._keep(k, hit)

    def _keep(
        self, k: int, hit: tuple[list[int], list[int], Any]
    ) -> tuple[list[int], list[int], Any]:
        if len(self._kept) >= KEEP:
            del self._kept[next(iter(self._kept))]
        self._kept[k] = hit
        return hit

    def _next(self) -> None:
        """Cut and encode the next window. The first window reaches the document's first
        token: that boundary is forced to 0 (``starts``), so it must lie in window 0."""
        k = len(self._cuts) - 1
        a = self._cuts[k]
        cut = self._cut_after(a + self._window)
        while k == 0 and cut < self.n and all(self._pieces.window(self.text[a:cut])[2]):
            cut = self._cut_after(cut + self._window)  # no token that is not special yet
        self._cuts.append(cut)
        self._tok0.append(self._tok0[k] + len(self._encode(k)[0]))
        if self._cuts[-1] >= self.n:
            self._done = True

    def _cut_after(self, p: int) -> int:
        """The first ASCII whitespace at or after ``p`` (the text's end if none)."""
        m = _SPACE_RE.search(self.text, p) if p < self.n else None
        return m.start() if m else self.n

    def _window_of(self, p: int) -> int:
        """The window holding offset ``p`` (the last one for ``p >= n``), cut."""
        while not self._done and self._cuts[-1] <= p:
            self._next()
        return max(min(bisect_left(self._cuts, p + 1) - 1, len(self._cuts) - 2), 0)

    def _has(self, t: int) -> bool:
        """Whether boundary ``t`` exists (windows are cut until it is reached)."""
        while not self._done and self._tok0[-1] <= t:
            self._next()
        return 0 <= t < self._tok0[-1]

    def _at(self, t: int) -> int:
        """Boundary ``t`` (``_has(t)``)."""
        k = bisect_left(self._tok0, t + 1) - 1
        while self._tok0[k + 1] <= t:  # windows without boundaries
            k += 1
        return self._encode(k)[0][t - self._tok0[k]]

    def _before(self, x: int) -> int:
        """How many boundaries lie before offset ``x`` (``bisect_left(starts, x)``)."""
        if x >= self.n:
            self._has(1 << 62)
            return self._tok0[-1]
        k = self._window_of(x)
        return self._tok0[k] + bisect_left(self._encode(k)[0], x)

    # -- ``GenericIndex``'s questions ------------------------------------------------------

    @property
    def starts(self) -> list[int]:
        self._has(1 << 62)
        out: list[int] = []
        for k in range(len(self._cuts) - 1):
            out += self._encode(k)[0]
        return out

    @property
    def ntok(self) -> int:
        self._has(1 << 62)
        return self._tok0[-1]

    def approx(self, s: int, e: int) -> int:
        i = self._before(s)
        partial = 0 if (self._has(i) and self._at(i) == s) or s >= self.n else 1
        return self._before(e) - i + partial + self.overhead

    def limit(self, s: int, units: int) -> int:
        i = self._before(s)
        partial = 0 if (self._has(i) and self._at(i) == s) else 1
        t = units - self.overhead + i - partial
        if not self._has(t) and t >= 0:
            return self.n
        return max(self._at(t), s) if t >= 0 else s

    def overlap_start(self, e: int, units: int) -> int:
        j = self._before(e) - units + self.overhead
        return self._at(j) if j >= 0 and self._has(j) else 0

    def count(self, text: str) -> int:
        return self._counter.count(text)

    exact = ModelIndex.exact

    def ids(self, context: str, s: int, e: int) -> list[int] | None:
        """As ``ModelIndex.ids``: the document's ids of ``text[s:e]``, from its windows."""
        text = self.text
        if not (
            0 <= s < e <= self.n
            and (s == 0 or text[s - 1] in _SPACE or text[s] in _SPACE)
            and (e == self.n or text[e - 1] in _SPACE or text[e] in _SPACE)
            and (not context or context[-1] in _SPACE or text[s] in _SPACE)
        ):
            return None
        ctx = self._context_ids(context)
        if ctx is None:
            return None
        first, last = self._ends
        out = [first, *ctx]
        for k in range(self._window_of(s), self._window_of(e - 1) + 1):
            _b, firsts, ids = self._encode(k)
            if ids is None:
                return None
            part = ids[bisect_left(firsts, s) : bisect_left(firsts, e)]
            out += part if isinstance(part, list) else part.tolist()
        out.append(last)
        return out

    def _context_ids(self, context: str) -> list[int] | None:
        if not context:
            return []
        if context not in self._ctx:
            c = self._counter._tok.encode(context).ids
            self._ctx[context] = c[1:-1] if len(c) >= 2 and (c[0], c[-1]) == self._ends else None
        return self._ctx[context]


def _int64s(values: Any) -> array:
    """A numpy int64 array as an ``array("q")``: 8 bytes an entry (a list takes ~36), and
    ``bisect`` reads it as it reads a list."""
    out = array("q")
    out.frombytes(values.tobytes())
    return out
