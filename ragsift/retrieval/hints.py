"""The hint sentences of a retrieval: what to do when nothing was admitted, what a larger
``-k`` would admit, the shape of the stored paths when ``--path`` matched nothing.

Plain text from a ``Retrieval`` record (and, for ``--path``, the stored paths); nothing is
ranked or decided again except "what would another ``-k`` admit", which reruns the pure
``admission`` arithmetic of ``retrieval/topk.py`` over the candidates already in the record.
``explain`` prints them, ``query`` prints the first on stderr, and the MCP server returns them
in its records (``ragsift.api.explain_record``).

A hint names the arguments and commands it suggests (``ragsift.errors.Words``): each front
end words them (the CLI: ``-k 13``, ``--threshold 0.35``, ``ragsift tune --save``; the MCP
server: ``k=13``, ``threshold=0.35``; the API: ``k=13``, ``tune(save=True)``). ``hint_words``
and ``nothing_words`` give them so; ``hints`` and ``nothing_hint`` give text in the words of
``setting(name, value)`` (``Words.worded``'s ``name_of``; ``api_words``, the default).
Whether a hint names a command to run (the lasting fix, ``TUNE_NOTE``) is the caller's say
(``commands``: whether its reader can run ragsift's commands or calls), not its wording's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragsift.errors import Action, Words, api_words, worded

if TYPE_CHECKING:
    from ragsift.retrieval.topk import Retrieval, Setting


def k_hint(r: Retrieval) -> Words | None:
    """What a larger ``k`` would admit among the candidates shown, when some of them clear
    the floor and were turned away only by their rank."""
    from ragsift.retrieval.topk import OVER_K, admission

    over = [c for c in r.candidates if c.reason == OVER_K]
    if not over:
        return None
    k = max(c.rank for c in over)
    reasons = admission(
        [c.score for c in r.candidates],
        [c.chars for c in r.candidates],
        k=k,
        threshold=r.threshold,
        max_chars=r.max_chars,
    )
    more = sum(reason is None for reason in reasons) - len(r.admitted)
    if more <= 0:
        return None
    facts = {
        "n": len(over),
        "s": "s" if len(over) != 1 else "",
        "rank": r.k,
        "more": more,
        "wider": k,
        "floor": "above the threshold" if r.threshold is not None else "with no floor",
    }
    text = Words(
        "{n} candidate{s} past rank {rank} clear the floor; `{k=wider}` would admit {more} "
        "more {floor}",
        facts,
    )
    top = max(over, key=lambda c: c.score)
    admitted = [c.score for c in r.admitted]
    if admitted and top.score > min(admitted):
        text += f" (rank {top.rank} scores {top.score:.3f}, more than admitted hits)"
    return text


def under_floor(r: Retrieval) -> bool:
    """Nothing admitted because even the best candidate scores under the threshold."""
    from ragsift.retrieval.topk import BELOW_THRESHOLD

    best = r.best
    return (
        not r.admitted
        and best is not None
        and best.reason == BELOW_THRESHOLD
        and r.threshold is not None
        and best.score < r.threshold
    )


TUNE_NOTE = Words(
    "; or tune a threshold on your own questions and keep it: `{tune}`",
    {"tune": Action("tune", save=True)},
)
# when the threshold in force is already a tuned one, "run tune --save" is no fix (issue 41)
TUNED_NOTE = Words(
    "; the threshold in force was tuned on your labelled questions: if this one should be "
    "answered, add it to them and run `{tune}` again",
    {"tune": Action("tune", save=True)},
)


def path_hint(pattern: str, paths: list[str], show: int = 3, param: str | None = "path") -> Words:
    """The filter ``pattern`` (the parameter ``param``; ``ls``'s GLOB: None) matched nothing:
    show the shape of the stored paths (a few, spread over the sorted list) and a wider glob
    that would match, if there is one."""
    from ragsift.retrieval.engine import path_matches

    named = "" if param is None else "{" + param + "} "
    if not paths:
        return Words(
            "no document path matches " + named + "{pattern} (the index holds no documents)",
            {"pattern": repr(pattern)},
        )
    ordered = sorted(paths)
    step = max(1, len(ordered) // show)
    sample = ordered[::step][:show]
    text = Words(
        "no document path matches " + named + "{pattern}; stored paths look like {sample}",
        {
            "pattern": repr(pattern),
            "sample": ", ".join(sample)
            + (f", … ({len(ordered)} documents)" if len(ordered) > show else ""),
        },
    )
    wider = pattern if pattern.startswith("*") else "*" + pattern
    wider = wider if wider.endswith("*") else wider + "*"
    hits = [p for p in ordered if path_matches(p, [wider])]
    if wider != pattern and hits:
        text += Words("; " + named + "{wider} matches {n}", {"wider": repr(wider), "n": len(hits)})
    return text


def hint_words(
    r: Retrieval,
    base: Words | str | None,
    paths: list[str] | None = None,
    source: str | None = None,
    *,
    commands: bool = True,
) -> list[Words | str]:
    """Every hint for one retrieval, most important first. ``base`` is the retrieval layer's
    own ``outcome_words`` (or its text, ``outcome_hint``); ``paths`` the stored document paths
    (for an empty ``path``); ``source``: where the threshold came from
    (``ThresholdInForce.source``); ``commands``: whether the reader can run ragsift's commands
    (then a lasting fix is named: ``TUNE_NOTE``)."""
    out: list[Words | str] = []
    first = nothing_words(r, base, paths, source, commands=commands)
    if first:
        out.append(first)
    extra = k_hint(r)
    if extra:
        out.append(extra)
    return out


def hints(
    r: Retrieval,
    base: Words | str | None,
    paths: list[str] | None = None,
    setting: Setting = api_words,
    source: str | None = None,
    *,
    commands: bool = True,
) -> list[str]:
    """``hint_words`` in the words of ``setting`` (``api_words``, the default: ``k=13``,
    ``tune(save=True)``; the CLI: ``ragsift.cli._common.flag_name``)."""
    found = hint_words(r, base, paths, source, commands=commands)
    return [worded(h, setting) for h in found]


def nothing_hint(
    r: Retrieval,
    base: Words | str | None,
    paths: list[str] | None,
    setting: Setting = api_words,
    source: str | None = None,
    *,
    commands: bool = True,
) -> str | None:
    """``nothing_words`` in the words of ``setting`` (``api_words``, the default; the CLI:
    ``ragsift.cli._common.flag_name``)."""
    return worded(nothing_words(r, base, paths, source, commands=commands), setting)


def nothing_words(
    r: Retrieval,
    base: Words | str | None,
    paths: list[str] | None,
    source: str | None = None,
    *,
    commands: bool = True,
) -> Words | str | None:
    """The retrieval layer's ``outcome_words`` (``base``) with what a front end can add: the
    shape of the stored paths for an empty ``path``, and for a best candidate under the
    floor (``base`` names it and its score) the lasting fix, ``tune`` with ``save``
    (``TUNED_NOTE`` when the threshold in force, ``source``, is already a tuned one) for a
    reader that can run commands (``commands``)."""
    from ragsift.retrieval.threshold import TUNED
    from ragsift.retrieval.topk import proposes_threshold

    if r.searched == 0 and r.path_filter and not r.corpus_empty and paths is not None:
        return path_hint(r.path_filter, paths)
    # (a command's lasting fix; none for a query whose best candidate scores off-topic)
    if base and under_floor(r) and proposes_threshold(r) and commands:
        return base + (TUNED_NOTE if source == TUNED else TUNE_NOTE)
    return base
