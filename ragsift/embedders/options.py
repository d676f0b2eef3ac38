"""``EmbedderOptions``: how an embedder embeds, as one value (``load_embedder`` takes it; an
index records it, ``embedders.binding``; ``ingest.BuildRequest`` carries it). A module of its
own so that ``embedders/__init__`` and ``binding`` both import it without importing each
other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class EmbedderOptions:
    """The options that change how texts are embedded (None: the model's own); recorded in
    the index (``embedder_options``), so ``query``/``explain``/``tune`` load the same
    embedder, and what ``load_embedder`` takes as one value. Every one but ``query_prefix``
    changes the vectors."""

    pooling: str | None = None
    normalize: bool | None = None
    max_length: int | None = None
    query_prefix: str | None = None
    passage_prefix: str | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any] | None, caller: str = "build") -> EmbedderOptions:
        """The options named in ``options`` (None values: not given); a name that is not an
        embedder option is a ``TypeError`` naming it, as for any unknown keyword of
        ``caller``."""
        given = dict(options or {})
        unknown = sorted(set(given) - set(_names(cls)))
        if unknown:
            raise TypeError(
                f"{caller}() got unknown option(s) {', '.join(map(repr, unknown))}; "
                f"embedder options are {', '.join(_names(cls))}"
            )
        return cls(**given)

    def as_dict(self) -> dict[str, Any]:
        """The options given (None values left out): what the index records; ``{}`` for
        none."""
        return {k: getattr(self, k) for k in _names(self) if getattr(self, k) is not None}


def _names(options: Any) -> tuple[str, ...]:
    return tuple(f.name for f in fields(options))
