"""The model's own tokens as the chunkers count them (``--tokenizer model``):
``ModelTokenCounter`` over the model's ``tokenizers`` tokenizer, and ``TokenMemo``, the ids it
hands to an embedder on the same tokenizer so a chunk is encoded once."""

from __future__ import annotations

from typing import Any


class ModelTokenCounter:
    """``TokenCounter`` in the model's own tokens (``--tokenizer model``).

    ``count(text)`` is what the model sees *including* the special tokens ([CLS], [SEP]), so a
    chunk whose count is ≤ ``max_length`` is never truncated. ``offsets(text)`` gives the
    character start of each non-special token (the first forced to 0 so leading whitespace
    belongs to the first token); hence ``len(offsets) == count - 2`` for BERT tokenizers,
    less where several tokens start at the same character (those collapse to one offset).
    """

    name = "model"

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self._tok = tokenizer
        self.max_length = max_length
        self.memo: TokenMemo | None = None  # see ``keep_token_ids``
        self._sliceable: tuple[int, int] | bool | None = None  # unknown yet (``sliceable``)
        self._piece_cache: Any = None  # ``piece_cache``

    def count(self, text: str) -> int:
        ids = self._tok.encode(text).ids
        memo = self.memo
        if memo is not None:
            memo.put(text, ids)
        return len(ids)

    def keep_token_ids(self, on: bool) -> TokenMemo | None:
        """Keep the ids of the texts ``count`` sees (``on``) in a ``TokenMemo`` that an
        embedder on the same tokenizer takes them from (``OnnxEmbedder.take_token_ids_from``),
        or stop (and drop them). ``embed`` turns it on for its run: the chunker's last count
        of a chunk is a fresh encode of exactly ``context + text``, the text embedded."""
        self.memo = TokenMemo() if on else None
        return self.memo

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(texts)]

    def offsets(self, text: str) -> list[int]:
        from ragsift.embedders.model_index import starts

        return starts(self._tok.encode(text))

    def index(self, text: str) -> Any:
        """The per-document index of the chunkers (``counters.index_for``): for a BERT
        WordPiece tokenizer (``sliceable``) a ``WindowedModelIndex`` (the document in windows,
        word by word: bounded memory, cl100k's speed), else a ``ModelIndex`` (one encode)."""
        if self.sliceable() is not None:
            from ragsift.embedders.model_index import WindowedModelIndex

            return WindowedModelIndex(self, text)
        from ragsift.embedders.model_index import ModelIndex

        return ModelIndex(self, text)

    def piece_cache(self) -> Any:
        """The tokens of the text between whitespace, kept for this process
        (``model_index.PieceCache``; a sliceable tokenizer only)."""
        cache = self._piece_cache
        if cache is None:
            from ragsift.embedders.model_index import PieceCache

            cache = self._piece_cache = PieceCache(self._tok)
        return cache

    def sliceable(self) -> tuple[int, int] | None:
        """(first, last) special ids if a text's ids are ``[first] + the ids of its words +
        [last]`` and each whitespace-separated word is encoded on its own, so the ids of a range
        of a document that starts and ends at whitespace are a slice of the document's ids: a
        BERT WordPiece tokenizer (``BertNormalizer``, ``BertPreTokenizer``, ``WordPiece``), one
        special token each side, no added token that strips or holds whitespace. Else None."""
        if self._sliceable is False:
            return None
        if self._sliceable is None:
            from ragsift.embedders.model_index import bert_wordpiece_ends

            self._sliceable = bert_wordpiece_ends(self._tok) or False
        return self._sliceable or None


class TokenMemo:
    """Token ids by text, handed from a ``ModelTokenCounter`` (the chunker, in ``embed``'s
    producer thread) to an ``OnnxEmbedder`` on the same tokenizer (the main thread), so a chunk
    is encoded once. Keyed by the exact string encoded, so a hit is the encode the embedder
    would do itself (same tokenizer object, same text: same ids, hence the same vectors); a
    text that is not here (a passage prefix, evicted) is simply encoded. Bounded: the oldest
    entries go first beyond ``capacity`` (ids of counted texts never embedded, e.g. a chunk
    candidate over budget, or a duplicate). Thread-safe."""

    def __init__(self, capacity: int = 1024) -> None:
        import threading

        self.capacity = capacity
        self._ids: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def put(self, text: str, ids: list[int]) -> None:
        with self._lock:
            d = self._ids
            d[text] = ids
            if len(d) > self.capacity:
                del d[next(iter(d))]

    def take(self, texts: list[str]) -> list[list[int] | None]:
        """The kept ids of each text (removed from the memo), None where there are none."""
        with self._lock:
            pop = self._ids.pop
            return [pop(t, None) for t in texts]

    def __len__(self) -> int:
        return len(self._ids)
