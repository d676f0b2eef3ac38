"""``SearchRequest``: every option of one search as one frozen value.

A front end builds it once (the CLI from its flags, the MCP server from a call's JSON
arguments, the Python API from its keywords: ``SearchRequest(**keywords)``); it is checked
once, when it is made (``__post_init__``), and completed once against the open index
(``api.Index.prepare``: a path typed from the current folder becomes the stored path, and the
threshold argument becomes the floor in force, ``resolved``). From there the same value goes
down unchanged: ``api.Index.search`` -> ``Searcher.retrieve_many`` -> ``engine.retrieve``,
which reads what it needs from it (``strategy``, ``mode``, ``fusion``, ``path``, ``within``,
``span``). No layer restates the options as keyword arguments.

Adding a query option: a field here (with its check in ``__post_init__``), the code that reads
it (the engine, or the API for what happens around the search), and the front end that sets it
(a CLI flag, an MCP argument). ``Index.search``/``query``/``explain`` take it as a keyword by
themselves (their keywords are this class's fields).

Light to import (no numpy): the CLI imports it inside its commands only, and the checks import
their modules when a request is made.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.retrieval.threshold import AUTO  # the threshold argument's default

if TYPE_CHECKING:
    from ragsift.retrieval.hybrid import Fusion
    from ragsift.retrieval.threshold import ThresholdInForce
    from ragsift.retrieval.topk import TopK

# The modes, defined once (CLI choices, eval configs and the engine read them from here).
MODES = ("dense", "lexical", "hybrid")
# The default for query/explain/tune/eval and the Python API, chosen by measurement (see
# Fusion): hybrid beat dense on both labelled sets (chroma-dev recall@5 96.7 vs 89.0; SciFact
# nDCG@10 72.6 vs 67.1; with the relevance score 96.1 and 74.6). In every mode the threshold
# applies to the mode's relevance score.
DEFAULT_MODE = "hybrid"


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise RagsiftError(
            "{mode} must be {choices}, not {got}",
            param="mode",
            values={"choices": f"{', '.join(MODES[:-1])} or {MODES[-1]}", "got": repr(mode)},
        )
    return mode


@dataclass(frozen=True)
class SearchRequest:
    """One search's options, checked when made (errors name the field, e.g. ``k``).

    ``k``: hits admitted at most; ``threshold``: ``"auto"`` (the index's floor in force),
    ``None`` (no floor) or a number in [0, 1]; ``reject_window``: candidates past ``k`` shown
    as rejected; ``max_chars``: a character budget for the admitted hits; ``path``: a glob the
    searched documents match; ``within``: a second glob every searched document must also
    match (a server's bound); ``mode``: dense, lexical or hybrid; ``fusion``: the hybrid
    fusion (``eval`` comparisons; None: the default ``Fusion()``); ``span``: ``"chunk"`` or
    ``"best"`` (each admitted hit's evidence span); ``units``: with a number, the closest
    stored units of each admitted hit (``explain``'s attributions); ``required``: the answer
    needs a floor (none known for the index's model: ``check_floor`` raises the policy's
    error) and chunks (``api.Index.search``: an empty index is exit 1). ``floor``: the
    threshold in force, set by ``resolved`` (None until then)."""

    k: int = 3
    threshold: float | str | None = AUTO
    reject_window: int = 10
    max_chars: int | None = None
    path: str | None = None
    within: str | None = None
    mode: str = DEFAULT_MODE
    fusion: Fusion | None = None
    span: str = "chunk"
    units: int | None = None
    required: bool = True
    floor: ThresholdInForce | None = None

    def __post_init__(self) -> None:
        # the order of the checks is the order the CLI has always reported them in
        from ragsift.retrieval.spans import check_span
        from ragsift.retrieval.threshold import check_threshold
        from ragsift.retrieval.topk import TopK

        check_span(self.span)
        check_mode(self.mode)
        object.__setattr__(self, "threshold", check_threshold(self.threshold))
        TopK(k=self.k, reject_window=self.reject_window, max_chars=self.max_chars)

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The names a caller may set (every field but ``floor``)."""
        return tuple(f.name for f in fields(cls) if f.name != "floor")

    @classmethod
    def of(
        cls, request: SearchRequest | None, keywords: dict[str, Any], caller: str
    ) -> SearchRequest:
        """``request`` with ``keywords`` set on it (none given: ``SearchRequest()``); an
        unknown keyword is the ``TypeError`` Python gives a function (``caller``: its name)."""
        unknown = [name for name in keywords if name not in cls.options()]
        if unknown:
            raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
        if request is None:
            return cls(**keywords)
        if not isinstance(request, SearchRequest):
            raise TypeError(f"request must be a SearchRequest, not {type(request).__name__}")
        # a changed option asks for its floor again (the threshold or the mode may change it)
        return replace(request, floor=None, **keywords) if keywords else request

    def resolved(self, settings: dict[str, Any]) -> SearchRequest:
        """This request with its floor in force for an index's ``settings``
        (``threshold.resolve_threshold``; no error when no floor is known: ``floor.source`` is
        then None, see ``check_floor``). Resolved once: a request that has its floor is
        returned as it is."""
        if self.floor is not None:
            return self
        from ragsift.retrieval.threshold import resolve_threshold

        floor = resolve_threshold(self.threshold, settings, required=False, mode=self.mode)
        return replace(self, floor=floor)

    def check_floor(self, settings: dict[str, Any]) -> None:
        """Raise the policy's error (``threshold.no_threshold``, exit 2) when this resolved
        request is ``required`` and no floor is known for the index (its ``settings``)."""
        if self.required and self.floor is not None and self.floor.source is None:
            from ragsift.retrieval.threshold import no_threshold

            raise no_threshold(settings, self.floor)

    @property
    def strategy(self) -> TopK:
        """The top-K decision of this request (its floor's value as the threshold)."""
        from ragsift.retrieval.topk import TopK

        if self.floor is None:
            raise ValueError("the request has no floor yet: resolve it (SearchRequest.resolved)")
        return TopK(
            k=self.k,
            threshold=self.floor.value,
            reject_window=self.reject_window,
            max_chars=self.max_chars,
        )
