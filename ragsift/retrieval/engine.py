"""The ranking engine: the one place that orders candidates for a mode.

``query``, ``explain``, ``tune``, ``eval`` and the Python API all come through ``rank`` (the
order) and ``retrieve`` (the order plus the top-K decision, as ``Retrieval`` records). There is
no second path: what ``eval`` measured is what ``query`` returns (a test checks it).

Pattern: the backend (``ragsift.index.backend.IndexReader``) answers the two candidate
questions: the best ``n`` chunks by cosine for a query vector, and the best ``n`` by BM25 for
the query text, plus the query's BM25 ceiling. The engine scores every candidate with the
relevance score of the mode (``ragsift.retrieval.relevance``) and orders by it (ties: the
cosine, then the rowid); the threshold applies to that same score:

- ``dense``: the backend's best ``n`` by cosine (the score keeps the cosine's order).
- ``lexical``: the backend's ``Fusion.depth`` best by BM25 (the score keeps BM25's order);
  every candidate also carries its cosine (looked up with ``backend.cosines``), for display.
- ``hybrid``: ``Fusion.depth`` (at least ``n``) candidates from each side, scored from both
  sides' evidence. ``Fusion(fusion="convex"|"rrf")`` orders by that fusion instead
  (``ragsift eval`` comparisons only).

Every mode also reads the page title (``IndexReader.page_titles``) of the candidates whose
units it reads (``units.wanted``: the first ``UNIT_DEPTH`` of each side's list; in lexical mode
of the lexical list, whose units are not read): the share of the query's words in it, from
half of them, is the score's title evidence (``relevance.title_share``, ``TITLE_MIN_SHARE``,
``TITLE_WEIGHT``); a deeper candidate counts none (``title_share`` None).

A ``--path`` glob is turned into the set of matching document paths here, once, and both sides
are restricted to it (``*`` also matches ``/``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.retrieval import relevance
from ragsift.retrieval.hybrid import Fusion, fuse
from ragsift.retrieval.relevance import Ranked
from ragsift.retrieval.request import check_mode
from ragsift.retrieval.units import UNIT_DEPTH, BestUnit, best_units, wanted
from ragsift.sources.globs import glob_regex

if TYPE_CHECKING:
    import numpy as np

    from ragsift.index.backend import IndexReader
    from ragsift.retrieval.request import SearchRequest
    from ragsift.retrieval.topk import Retrieval


def path_matches(path: str, globs: Sequence[str] | None) -> bool:
    """Whether a stored document path matches one of ``globs`` (no globs: every path). The
    one rule of ``--path``, ``ls`` and ``rm``: the whole path against the glob, in the dialect
    of ``--include``/``--exclude`` (``sources.globs.glob_regex``: ``*`` also matches ``/``,
    ``**/`` also zero folders, ``[...]`` classes); a plain path matches itself.
    (``--include`` also matches a file's name or a folder on its way: ``globs.path_matches``.)"""
    return not globs or any(
        path == g or glob_regex(g, slash_stars=True).fullmatch(path) is not None for g in globs
    )


def check_globs(globs: Sequence[str] | None) -> None:
    """Raise ``RagsiftError`` (a usage error, exit 2) for a glob no matcher can express (a
    reversed range ``[z-a]``), before anything is searched, listed or removed."""
    from ragsift.sources.globs import GlobError, check_glob

    for g in globs or ():
        try:
            check_glob(g)
        except GlobError as exc:
            raise RagsiftError(f"invalid glob {g!r}: {str(exc).rpartition(': ')[2]}") from None


def matching_paths(
    backend: IndexReader, glob: str | None, within: str | None = None
) -> list[str] | None:
    """Document paths matching ``glob`` and ``within`` (a second glob every path must also
    match: what a server may return at most); None: no filter."""
    if not glob and not within:
        return None
    check_globs([g for g in (glob, within) if g])
    return [
        p
        for p in backend.paths()
        if (not glob or path_matches(p, [glob])) and (not within or path_matches(p, [within]))
    ]


def rank(
    backend: IndexReader,
    queries: Sequence[str],
    qvecs: np.ndarray | None,
    *,
    mode: str,
    n: int,
    fusion: Fusion = Fusion(),
    paths: Sequence[str] | None = None,
    models: Mapping[str, relevance.Model] | None = None,
) -> list[list[Ranked]]:
    """The best ``n`` candidates of each query in ``mode``, best first. ``qvecs``: one query
    vector per query (every mode needs them: every candidate carries its cosine).
    Lexical lists fetched ahead (``lexical_ahead``) come in as the backend: an
    ``AheadReader`` answers them from its lists. ``models``: the relevance
    model of each mode for this index (``relevance.models_for(settings)``; None: the shipped
    ``relevance.MODELS``)."""
    check_mode(mode)
    model = (models or relevance.MODELS)[mode]
    if not queries:
        return []
    if mode == "dense":
        # the aggregate's best max(n, UNIT_DEPTH), re-scored with their best units, then cut
        depth = max(n, UNIT_DEPTH)
        out = []
        for query, qvec, hits in zip(queries, qvecs, backend.dense_candidates(qvecs, depth, paths)):
            read = wanted(hits, [])
            units = best_units(backend, qvec, read)
            found = Evidence(hits, [], {}, 0.0, units, page_titles(backend, read))
            out.append(order_candidates(mode, query, found, n, fusion, model))
        return out
    depth = max(fusion.depth, n)

    def lexical_lists() -> list[list[tuple[int, float]]]:
        return [backend.lexical_candidates(q, depth, paths) if q.strip() else [] for q in queries]

    if mode == "hybrid":
        # The two sides overlap: FTS5 (SQLite) and the matrix scan (numpy) both release the
        # GIL, so a warm hybrid query costs about the slower side, not their sum. Same calls,
        # same lists as one after the other; an error on either side is raised here.
        dense_lists, lexical_all = both_sides(
            lambda: backend.dense_candidates(qvecs, depth, paths), lexical_lists
        )
    else:
        dense_lists, lexical_all = [[] for _ in queries], lexical_lists()
    out = []
    for query, qvec, dense, lexical in zip(queries, qvecs, dense_lists, lexical_all):
        have = {r for r, _ in dense}
        todo = [r for r, _ in lexical if r not in have]
        cos_of = dict(zip(todo, backend.cosines(qvec, todo))) if todo else {}
        # a chunk without a vector cannot be searched (and has no cosine to show)
        lexical = [(r, s) for r, s in lexical if r in have or cos_of.get(r) is not None]
        ceiling = backend.lexical_ceiling(query) if lexical else 0.0
        read = wanted(dense, lexical)
        units = best_units(backend, qvec, read) if mode == "hybrid" else {}
        found = Evidence(dense, lexical, cos_of, ceiling, units, page_titles(backend, read))
        out.append(order_candidates(mode, query, found, n, fusion, model))
    return out


def page_titles(backend: IndexReader, rowids: Sequence[int]) -> dict[int, str]:
    """The page titles of ``rowids`` (``IndexReader.page_titles``): those the title evidence
    reads, the candidates whose units are read (``units.wanted``: the first ``UNIT_DEPTH`` of
    each side's list, in lexical mode of the lexical list; the units themselves are read in
    hybrid and dense mode only); "" for a chunk read without a title."""
    found = backend.page_titles(list(rowids)) if rowids else {}
    return {r: found.get(r, "") for r in rowids}


@dataclass(frozen=True)
class Evidence:
    """One query's candidates as the backend gave them: the ``dense`` list (rowid, cosine)
    and the ``lexical`` one (rowid, BM25), both best first; ``cos_of``: the cosine of each
    lexical candidate the dense list lacks; ``ceiling``: the query's BM25 ceiling (0: no
    lexical side); ``units``: the best unit of the candidates whose units were read (the
    others count their aggregate cosine); ``titles``: the page title of each candidate whose
    title was read (``page_titles``: "" where it has none); one not read counts no title
    evidence (its ``title_share`` is None)."""

    dense: list[tuple[int, float]]
    lexical: list[tuple[int, float]]
    cos_of: Mapping[int, float]
    ceiling: float
    units: Mapping[int, BestUnit]
    titles: Mapping[int, str] | None = None


def order_candidates(
    mode: str,
    query: str,
    found: Evidence,
    n: int,
    fusion: Fusion,
    model: relevance.Model | None = None,
) -> list[Ranked]:
    """One query's candidates scored and ordered: by the relevance score (ties: the cosine,
    then the rowid), or, for an ``eval`` comparison with ``fusion="convex"``/``"rrf"``, by
    that fusion (the score is still the relevance score)."""
    import numpy as np

    from ragsift.index.terms import query_words

    dense, lexical, cos_of, ceiling = found.dense, found.lexical, found.cos_of, found.ceiling
    units = found.units
    words = query_words(query)

    dense_pos = {r: i for i, (r, _) in enumerate(dense, start=1)}
    lex_pos = {r: i for i, (r, _) in enumerate(lexical, start=1)}
    bm25 = dict(lexical)
    ids = list(dense_pos)
    ids += [r for r, _ in lexical if r not in dense_pos]
    cos_map = dict(dense)
    cos = np.fromiter(
        (cos_map[r] if r in cos_map else cos_of[r] for r in ids), np.float64, len(ids)
    )
    bm = np.fromiter((bm25.get(r, 0.0) for r in ids), np.float64, len(ids))
    share = bm / ceiling if ceiling > 0 else np.zeros_like(bm)
    unit = np.fromiter(
        (units[r].cosine if r in units else c for r, c in zip(ids, cos.tolist())),
        np.float64,
        len(ids),
    )
    shares = _title_shares(words, ids, found.titles or {})
    title = np.fromiter((shares.get(r, 0.0) for r in ids), np.float64, len(ids))
    score = relevance.score_array(mode, cos, share, len(words), model, unit=unit, title=title)
    rowid = np.asarray(ids, np.int64)
    if fusion.fusion == "relevance" or mode != "hybrid":
        best = np.lexsort((rowid, -cos, -score))[:n]
    else:
        fused = fuse(dense, lexical, fusion, dense_score_of=cos_of.get, limit=n)
        at = {r: i for i, r in enumerate(ids)}
        best = np.fromiter((at[c.rowid] for c in fused), np.int64, len(fused))
    out = []
    for pos, i in enumerate(best.tolist(), start=1):
        r = ids[i]
        in_dense, in_lex = r in dense_pos, r in lex_pos
        bu = units.get(r)
        out.append(
            Ranked(
                rowid=int(r),
                score=float(score[i]),
                dense_score=float(cos[i]),
                lexical_score=float(bm[i]) if in_lex else None,
                lexical_rank=lex_pos.get(r),
                fused_rank=pos if mode == "hybrid" else None,
                source=(
                    None
                    if mode == "dense"
                    else "both"
                    if in_dense and in_lex
                    else "dense"
                    if in_dense
                    else "lexical"
                ),
                lexical_share=float(share[i]) if in_lex else None,
                dense_rank=dense_pos.get(r),
                unit_score=bu.cosine if bu else None,
                unit_start=bu.start if bu else None,
                unit_end=bu.end if bu else None,
                title_share=shares.get(r),
            )
        )
    return out


def _title_shares(
    words: Sequence[str], ids: Sequence[int], titles: Mapping[int, str]
) -> dict[int, float]:
    """The title share (``relevance.title_share``) of each of ``ids`` whose title was read;
    a page's chunks share its title, so each title is scored once."""
    of_title: dict[str, float] = {}
    shares: dict[int, float] = {}
    for r in ids:
        if r in titles:
            if titles[r] not in of_title:
                of_title[titles[r]] = relevance.title_share(words, titles[r])
            shares[r] = of_title[titles[r]]
    return shares


def lexical_ahead(
    backend: IndexReader, queries: Sequence[str], mode: str, fusion: Fusion | None = None
) -> dict[tuple[str, int], list[tuple[int, float]]]:
    """The lexical lists ``rank`` will ask for (no path filter, ``Fusion.depth`` deep), fetched
    before the query vectors exist: a cold ``query`` runs them while the model loads (the
    lexical side needs no vector). Same calls on the same snapshot, so the same lists; pass
    the result to ``retrieve`` as ``ahead`` (or to ``rank`` in an ``AheadReader``). Dense
    mode needs none."""
    if mode == "dense":
        return {}
    depth = (fusion or Fusion()).depth
    return {
        (q, depth): backend.lexical_candidates(q, depth, None)
        for q in dict.fromkeys(queries)
        if q.strip()
    }


class AheadReader:
    """``backend`` with the lexical lists ``lexical_ahead`` fetched: a lexical question with
    no path filter that one of them answers is answered from it (same calls on the same
    snapshot, so the same list); every other question goes to ``backend``."""

    def __init__(
        self, backend: IndexReader, lists: Mapping[tuple[str, int], list[tuple[int, float]]]
    ) -> None:
        self._backend = backend
        self._lists = lists

    def lexical_candidates(
        self, query: str, n: int, paths: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        if paths is None and (query, n) in self._lists:
            return self._lists[(query, n)]
        return self._backend.lexical_candidates(query, n, paths)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def both_sides(first, second):  # -> (first(), second()), second in a thread
    import threading

    box: list = []

    def run() -> None:
        try:
            box.append((True, second()))
        except BaseException as exc:
            box.append((False, exc))

    thread = threading.Thread(target=run, name="ragsift-lexical", daemon=True)
    thread.start()
    try:
        a = first()
    finally:
        thread.join()
    ok, b = box[0]
    if not ok:
        raise b
    return a, b


def retrieve(
    backend: IndexReader,
    queries: Sequence[str],
    qvecs: np.ndarray | None,
    request: SearchRequest,
    *,
    model: str = "",
    dimensions: int = 0,
    ahead: Mapping[tuple[str, int], list[tuple[int, float]]] | None = None,
    models: Mapping[str, relevance.Model] | None = None,
) -> list[Retrieval]:
    """Rank every query (``request.strategy.fetch`` candidates, in ``request.mode``) and apply
    the top-K strategy: one ``Retrieval`` record per query. ``request``: a resolved
    ``SearchRequest`` (its floor in force is the threshold); its ``path`` and ``within`` globs
    restrict the searched documents (``within``: one every document must match too), and
    with ``span="best"`` each admitted hit also carries its evidence span
    (``ragsift.retrieval.spans``). ``models``: as for ``rank``."""
    from ragsift.retrieval.topk import Scope, build_retrieval
    from ragsift.sources.reading import encodable

    strategy, mode, span = request.strategy, request.mode, request.span
    path_glob, within = request.path, request.within
    queries = [encodable(q) for q in queries]  # a lone surrogate becomes U+FFFD
    paths = matching_paths(backend, path_glob, within)
    total = backend.count()
    searched = total if paths is None else backend.count(paths)
    ranked = (
        rank(
            AheadReader(backend, ahead) if ahead else backend,
            queries,
            qvecs,
            mode=mode,
            n=strategy.fetch,
            fusion=request.fusion or Fusion(),
            paths=paths,
            models=models,
        )
        if searched
        else [[] for _ in queries]
    )
    scope = Scope(dimensions, model, searched, mode, path_glob or within, total == 0)
    wanted = sorted({c.rowid for cands in ranked for c in cands})
    records = {r.rowid: r for r in backend.chunk_records(wanted)}
    out = []
    for query, cands in zip(queries, ranked):
        missing = [c.rowid for c in cands if c.rowid not in records]
        if missing:
            raise RagsiftError(
                f"index is inconsistent: chunks {missing[:3]} have no record; rebuild it"
            )
        out.append(
            build_retrieval(
                strategy,
                scope,
                query=query,
                ranked=cands,
                records=[records[c.rowid] for c in cands],
            )
        )
    if span != "chunk":
        from ragsift.retrieval.spans import check_span, with_spans

        check_span(span)
        out = [with_spans(r) for r in out]
    return out
