"""The chunker ``embed`` uses by default (and ``chunk``, so that it previews ``embed``): sized
in the model's own tokens so that no chunk is ever truncated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragsift.chunkers.base import Chunker


def embed_size(counter, passage_prefix: str | None = None) -> int:
    """The default chunk size of ``embed`` (and of ``eval``'s model-token configurations),
    defined once: the model's max length in its own tokens, special tokens included, less the
    tokens ``passage_prefix`` adds, so no chunk is ever truncated. Measured: 256 for MiniLM
    beat 192 and 128 by 5.6 and 9.4 recall points on chroma-dev (bench/RESULTS.md)."""
    prefix = counter.count(passage_prefix) - counter.count("") if passage_prefix else 0
    return max(counter.max_length - prefix, 8)


def sized_for_embed(
    options: dict,
    *,
    takes_size: bool,
    model_dir: str | None = None,
    max_length: int | None = None,
    passage_prefix: str | None = None,
) -> tuple[Any, dict]:
    """The one definition of a chunker sized for embed, in the model's own tokens: the
    model's token counter (``max_length`` caps its max length) and ``options`` with ``size``
    set to ``embed_size`` when the chunker ``takes_size`` and none is given. ``embed`` and
    ``chunk`` (``default_embed_chunker``) and ``eval``'s ``tokenizer = "model"``
    configurations size their chunkers through it."""
    from ragsift.embedders import model_counter

    counter = model_counter(model_dir)
    if max_length is not None:
        counter.max_length = min(counter.max_length, max_length)
    if takes_size and "size" not in options:
        options = {**options, "size": embed_size(counter, passage_prefix)}
    return counter, options


def default_embed_chunker(
    model_dir: str | None = None,
    *,
    strategy: str = "recursive",
    size: int | None = None,
    overlap: int | None = None,
    tokenizer: str | None = None,
    max_length: int | None = None,
    passage_prefix: str | None = None,
    **extra,
) -> Chunker:
    """The chunker ``embed`` uses: by default recursive, sized in the model's own tokens at
    the model's max length (special tokens included; ``max_length`` overrides it) less the
    tokens of ``passage_prefix``, so no chunk is ever truncated (``sized_for_embed``).
    ``extra``: further strategy options (``None`` values dropped)."""
    from ragsift.chunkers import OPTIONS, make_chunker

    given = dict(extra, size=size, overlap=overlap)
    options: dict = {k: v for k, v in given.items() if v is not None}
    tok: object = tokenizer
    if tokenizer in (None, "model"):
        tok, options = sized_for_embed(
            options,
            takes_size="size" in OPTIONS.get(strategy, ()),
            model_dir=model_dir,
            max_length=max_length,
            passage_prefix=passage_prefix,
        )
    return make_chunker(strategy, tokenizer=tok, **options)
