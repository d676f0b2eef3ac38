"""cl100k's encode of a long text, in pieces: ``Encode`` runs tiktoken on helper threads over
pieces cut only at universal piece boundaries (a cut there changes no token), and cuts long runs
of letters or punctuation (one regex piece that tiktoken merges super-linearly) where no token
can hold the characters either side, so a 20 MB line encodes in linear time with the same
tokens as one encode (``tests/test_pathological.py``). Used by ``counters.TiktokenIndex``."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

# A position that is a tiktoken piece boundary in every string containing its neighbours.
_SAFE = re.compile(r"(?<=[!-~]) (?=[!-~])|(?<=\n)(?=[!-~])")


PARALLEL_MIN_CHARS = 1 << 19  # shorter texts are encoded in one call
PIECE_MIN_CHARS = 1 << 17  # long texts: pieces of at least this size, ~4 per thread
_LINE_START = re.compile(r"\n[!-~]")  # a newline, then printable ASCII: a universal boundary


def encode_all(
    encoding: Any, text: str, min_chars: int = PARALLEL_MIN_CHARS, threads: int | None = None
) -> Any:
    """``encoding.encode_to_numpy(text)`` (special-token text as ordinary text), split across
    threads for long texts: tiktoken releases the GIL while it encodes, and pieces cut at
    universal piece boundaries (after a newline, before printable ASCII; see ``_SAFE``)
    encode to exactly the tokens of the whole."""
    return Encode(encoding, text, min_chars=min_chars, threads=threads).result()


class Encode:
    """One document's encode, started at construction, collected piece by piece
    (:meth:`piece`) or whole (:meth:`result`).

    A text of ``min_chars`` or more is cut at universal piece boundaries into pieces of at
    least ``PIECE_MIN_CHARS`` (about four per thread, for balance; ``offsets`` are where they
    start, then the text's length); ``threads - 1`` helper threads take pieces in order, and
    the caller's thread takes the next untaken one whenever it asks for a piece that is not
    done (so work it does in between, e.g. importing numpy or packing the first pieces,
    overlaps the encode). A shorter text is one piece, encoded on one helper thread if
    ``background`` (worth it only when the caller has work to overlap), else when asked.
    Each piece goes through the call ``encode_to_numpy`` makes (``encode_to_tiktoken_buffer``,
    no numpy needed to encode); without it (another tiktoken), or if a piece fails,
    :meth:`piece` gives None and the caller takes :meth:`whole`: one ``encode_to_numpy`` of
    the whole text, which raises what it raises.
    """

    def __init__(
        self,
        encoding: Any,
        text: str,
        *,
        min_chars: int = PARALLEL_MIN_CHARS,
        threads: int | None = None,
        background: bool = False,
    ) -> None:
        import itertools
        import os
        import threading

        self._encoding = encoding
        self._text = text
        self._raw = getattr(getattr(encoding, "_core_bpe", None), "encode_to_tiktoken_buffer", None)
        threads = threads or min(os.cpu_count() or 1, 4)
        cuts = [0, len(text)]
        helpers = 1 if background else 0
        if threads >= 2 and len(text) >= min_chars:
            cuts = _cuts(text, max(2, min(4 * threads, len(text) // PIECE_MIN_CHARS)))
            if len(cuts) < 2:  # the empty text: one (empty) piece
                cuts = [0, len(text)]
        if len(text) >= min_chars and self._raw is not None:
            cuts = run_cuts(encoding, text, cuts)
        if threads >= 2 and len(cuts) > 2:
            helpers = threads - 1
        self.offsets = cuts
        self._out: list[Any] = [None] * (len(cuts) - 1)
        self._done = [threading.Event() for _ in self._out]
        self._next = itertools.count()  # next() is atomic: each piece is taken once
        self._threads: list[Any] = []
        if self._raw is None:
            return
        for _ in range(helpers):
            t = threading.Thread(target=self._work, daemon=True)
            t.start()
            self._threads.append(t)

    def _encode_one(self) -> bool:
        """Encode the next untaken piece; False when every piece is taken."""
        j = next(self._next)
        if j >= len(self._out):
            return False
        try:
            self._out[j] = self._raw(self._text[self.offsets[j] : self.offsets[j + 1]], set())
        except Exception:
            self._out[j] = None
        finally:
            self._done[j].set()
        return True

    def _work(self) -> None:
        while self._encode_one():
            pass

    def piece(self, k: int) -> Any:
        """The tokens of piece ``k`` (numpy ``uint32``), or None: use :meth:`whole`."""
        import numpy as np

        if self._raw is None:
            return None
        while not self._done[k].is_set():
            if not self._encode_one():  # all taken: piece k is being encoded elsewhere
                self._done[k].wait()
        part = self._out[k]
        return None if part is None else np.frombuffer(part, dtype=np.uint32)

    def whole(self) -> Any:
        """One ``encode_to_numpy`` of the whole text."""
        self.close()
        return self._encoding.encode_to_numpy(self._text, disallowed_special=())

    def close(self) -> None:
        """Stop handing out pieces and wait for the helpers (each ends its current piece)."""
        import itertools

        self._next = itertools.count(len(self._out))
        for t in self._threads:
            t.join()

    def result(self) -> Any:
        """The tokens as a numpy ``uint32`` array (exactly ``encode_to_numpy``'s)."""
        import numpy as np

        parts = [self.piece(k) for k in range(len(self._out))]
        if any(part is None for part in parts):
            return self.whole()
        self.close()
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _cuts(text: str, parts: int) -> list[int]:
    """Where ``text`` is cut into at most ``parts`` non-empty pieces of about equal length:
    ``[0, ..., len(text)]``, each cut just after a newline that precedes printable ASCII (a
    universal piece boundary)."""
    cuts = [0]
    for k in range(1, parts):
        m = _LINE_START.search(text, max(k * len(text) // parts, cuts[-1]))
        if m is None:
            break
        cuts.append(m.start() + 1)
    cuts.append(len(text))
    return [c for c, nxt in pairwise(cuts) if nxt > c] + [len(text)]


# Long runs of ASCII letters, or of ASCII punctuation, are one regex piece each, and
# tiktoken's byte-pair merge of one piece is super-linear (a 4 MB run of letters: ~6 s, 1.5 us
# per byte and growing; prose is ~0.06). ``run_cuts`` cuts such runs into pieces of about
# RUN_STEP characters where the cut provably changes no token; see ``run_cuts``.
RUN_MIN = 1 << 13  # runs shorter than this are left whole
RUN_STEP = 1 << 12  # about this many characters between cuts in a run
_RUN_CLASSES = (re.compile(r"[A-Za-z]+"), re.compile(r"[!-/:-@\[-`{-~]+"))
_NOT_IN_RUN = (re.compile(r"[^A-Za-z]"), re.compile(r"[^!-/:-@\[-`{-~]"))
_pair_tables: dict[int, tuple[Any, Any, int]] = {}
# the cl100k pattern (tiktoken_ext.openai_public), for which ``run_cuts`` is shown exact
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


def _long_runs(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every run of at least ``RUN_MIN`` ASCII letters, or of ASCII
    punctuation, in linear time: such a run holds one of the probes every ``RUN_MIN // 2``
    characters with at least that many run characters from it, and a probe costs a match of
    the run (or word) it falls in."""
    step = RUN_MIN // 2
    found: list[tuple[int, int]] = []
    for run, other in zip(_RUN_CLASSES, _NOT_IN_RUN):
        covered = 0
        for j in range(0, len(text) - step + 1, step):
            if j < covered:
                continue
            m = run.match(text, j)
            if m is None or m.end() - j < step:
                continue
            start = max(j - step, covered)
            for x in other.finditer(text, start, j):
                start = x.end()
            if m.end() - start >= RUN_MIN:
                found.append((start, m.end()))
            covered = m.end()
    return sorted(found)


def _run_table(encoding: Any) -> tuple[Any, int] | None:
    """Per byte pair ``a * 256 + b``: True when ``a, b`` occur next to each other inside some
    token of ``encoding``; and its longest token in bytes. None if its ranks are unreadable."""
    key = id(encoding)
    if key not in _pair_tables:
        ranks = getattr(encoding, "_mergeable_ranks", None)
        if not ranks:
            return None
        import numpy as np

        keys = [k for k in ranks if len(k) > 1]
        data = np.frombuffer(b"".join(keys), dtype=np.uint8).astype(np.int32)
        lens = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        pair = data[:-1] * 256 + data[1:]
        inside = np.ones(len(pair), dtype=bool)
        inside[(np.cumsum(lens) - 1)[:-1]] = False  # a pair across two tokens' bytes
        table = np.zeros(1 << 16, dtype=bool)
        table[pair[inside]] = True
        _pair_tables[key] = (encoding, table, max(map(len, ranks)))
    _, table, longest = _pair_tables[key]
    return table, longest


def run_cuts(encoding: Any, text: str, cuts: list[int]) -> list[int]:
    """``cuts`` plus cuts inside runs of at least ``RUN_MIN`` ASCII letters (or ASCII
    punctuation), at least ``RUN_STEP`` characters apart, each where encoding the two sides
    apart gives exactly the tokens of encoding them together (cl100k's pattern).

    A cut ``p`` is taken only with ``margin`` (longest token + 4) run characters on each
    side and when no token holds ``text[p-1:p+1]``. The regex piece ``M`` holding ``p`` (a
    ``\\p{L}++`` piece in a letter run, a `` ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+`` piece in a
    punctuation run) then starts at least ``margin - 2`` before ``p`` and ends after it: the
    text before ``p`` splits into the same pieces with ``M`` ending at ``p``, the text from
    ``p`` into ``M``'s rest and the same pieces after (no branch can match differently where
    a run character follows: an apostrophe starts a contraction only before a letter). Both
    halves of ``M`` are longer than any token, so each is byte-pair merged (never looked up
    whole), and no merge of ``M`` can join bytes across ``p`` (the result would be a token
    holding that pair): merging ``M`` is merging its two halves, each in the same order.
    Only cl100k's pattern is shown to allow this; another encoding's gets ``cuts``."""
    if getattr(encoding, "_pat_str", None) != _CL100K_PATTERN:
        return cuts
    runs = _long_runs(text)
    if not runs:
        return cuts
    found = _run_table(encoding)
    if found is None:
        return cuts
    import numpy as np

    table, longest = found
    margin = longest + 4
    step = max(RUN_STEP, margin)  # the next cut's margin lies inside the piece this one starts
    extra: list[int] = []
    for start, stop in runs:
        b = np.frombuffer(text[start:stop].encode("ascii"), dtype=np.uint8).astype(np.int32)
        # k: p = start + k with no token holding text[p-1:p+1], margin clear on both sides
        free = np.flatnonzero(~table[b[:-1] * 256 + b[1:]]) + 1
        free = free[(free >= margin) & (free <= len(b) - margin)] + start
        p = start + step
        while True:
            i = int(np.searchsorted(free, p))
            if i >= len(free):
                break
            q = int(free[i])
            extra.append(q)
            p = q + step
    if not extra:
        return cuts
    return sorted(set(cuts).union(extra))


def _is_safe(text: str, p: int, lo: int, hi: int) -> bool:
    """``p`` (lo < p, p < hi) is a universal piece boundary, see ``_SAFE``."""
    c = text[p]
    if c == " ":
        return p + 1 < hi and "!" <= text[p - 1] <= "~" and "!" <= text[p + 1] <= "~"
    return text[p - 1] == "\n" and "!" <= c <= "~"


def first_safe(text: str, lo: int, hi: int) -> int:
    """The first universal piece boundary ``p`` with ``lo <= p < hi`` (``text[lo-1]`` is
    inside the chunk), or -1."""
    p = text.find(" ", lo, min(hi, lo + 64))
    for _ in range(4):
        if p < 0:
            break
        if _is_safe(text, p, lo, hi):
            return p
        p = text.find(" ", p + 1, min(hi, lo + 64))
    m = _SAFE.search(text, lo, hi)
    return m.start() if m else -1


def last_safe(text: str, lo: int, hi: int) -> int:
    """The last universal piece boundary ``p`` with ``lo <= p < hi`` (``lo`` is one)."""
    p = text.rfind(" ", max(lo, hi - 64), hi)
    for _ in range(4):
        if p <= lo:
            break
        if _is_safe(text, p, lo, hi):
            return p
        p = text.rfind(" ", max(lo, hi - 64), p)
    span = 64
    while True:
        start = max(lo, hi - span)
        last = -1
        for m in _SAFE.finditer(text, start, hi):
            last = m.start()
        if last >= 0 or start == lo:
            return max(last, lo)
        span *= 8
