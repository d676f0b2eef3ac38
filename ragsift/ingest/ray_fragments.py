"""Stage 2 of ``ingest.ray`` for an index with ``FragmentCommits`` (Lance): the actor pool
(``ingest.ray.Pool``) embeds the texts the index lacks and writes their chunk rows as
uncommitted fragments (``EmbedWriteActor``); the driver writes the document rows and the chunks
whose vector the index already holds, then commits the whole change set as ONE transaction
(``commit_fragments``), or discards the workers' files on a refusal or an interruption."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ragsift.errors import RagsiftError
from ragsift.ingest.ray_stages import LAST_RUN, EmbedWriteActor, Precomputed

if TYPE_CHECKING:
    from ragsift.ingest.batch import Run


def no_bytes(value: Any) -> None:
    """JSON for the rows handed to the workers: a unit blob is filled in by the worker."""
    if isinstance(value, bytes):
        return None
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_fragments(pool: Any, run: Run, writes: list) -> None:
    """Stage 2 on Ray for an index with ``FragmentCommits`` (Lance): the actor pool embeds the
    texts the index lacks and writes their chunk rows as fragments; the driver writes the
    document rows and the chunks whose vector the index already holds, then commits everything
    as ONE transaction. Same summary counts as ``Run.flush``."""
    store = run.store
    if not writes:
        return
    hashes = [r.content_hash for w in writes for r in w.records]
    known = store.vectors_for_hashes(hashes) if hashes else {}
    rowid = store.alloc_rowids(len(hashes))
    groups: dict[str, dict] = {}  # content hash -> its text, tokens and chunk rows
    here_rows: list[dict] = []
    here_vecs: list = []
    truncated: dict[str, int] = {h: cut for h, (_, cut, _) in known.items()}
    for w in writes:
        for r in w.records:
            h = r.content_hash
            chunk = store.chunk_row(w.key, rowid, r)
            rowid += 1
            if h in known:
                chunk["truncated"] = known[h][1]
                chunk["units"] = known[h][2]
                here_rows.append(chunk)
                here_vecs.append(known[h][0])
            else:
                g = groups.setdefault(
                    h,
                    {
                        "context": r.context,
                        "text": r.text,
                        "rows": [],
                        "tokens": r.tokens or 0,
                    },
                )
                g["rows"].append(chunk)
    fragments: list[str] = []
    try:
        embed_and_commit(pool, run, writes, groups, here_rows, here_vecs, truncated, fragments)
    except BaseException:  # a refusal or an interruption: the workers' files go too
        with contextlib.suppress(Exception):
            store.discard_fragments(fragments)
        raise


def embed_and_commit(
    pool: Any,
    run: Run,
    writes: list,
    groups: dict[str, dict],
    here_rows: list[dict],
    here_vecs: list,
    truncated: dict[str, int],
    fragments: list[str],
) -> None:
    """``write_fragments``' second half: the actors write the rows of ``groups`` (their
    fragments' metadata collected in ``fragments`` as they come back), the model is checked
    (``one_model``, ``ModelSlot.use``: the refusal), and the run is committed."""
    import json

    s, store = run.summary, run.store
    hashes = [r.content_hash for w in writes for r in w.records]
    dim = store.dimensions()
    if groups:
        items = [
            {
                "hash": h,
                "context": g["context"],
                "text": g["text"],
                "rows": json.dumps(g["rows"], default=no_bytes),
            }
            for h, g in groups.items()
        ]
        prints, dims, done = set(), set(), set()
        for batch in pool.batches(EmbedWriteActor, items, writer=store.fragment_writer()):
            for h, cut, fp, d in zip(
                batch["hash"], batch["truncated"], batch["fingerprint"], batch["dimensions"]
            ):
                truncated[str(h)] = int(cut)
                done.add(str(h))
                prints.add(str(fp))
                dims.add(int(d))
            for f in batch["fragments"]:
                if f:
                    fragments.extend(json.loads(str(f)))
            LAST_RUN["rows_written_by_workers"] += int(batch["rows"].sum())
        if set(groups) - done:
            raise RagsiftError(f"the Ray stage wrote {len(done)} of {len(groups)} texts")
        model = pool.one_model(prints, dims)
        dim = model["dimensions"]
        run.model.use(Precomputed(model, {}))  # the refusal and the settings, as locally
        s.embedded += len(groups)
        s.tokens += sum(g["tokens"] for g in groups.values())
        LAST_RUN["fragments"] = len(fragments)
    n_chunks = len(hashes)
    for w in writes:  # the stored rows got their counts above (workers' rows: in the actor)
        for r in w.records:
            cut = truncated[r.content_hash]
            if cut:
                s.truncated += 1
                s.truncated_tokens += cut
    s.chunks += n_chunks
    s.reused += n_chunks - len(groups)
    store.commit_fragments(writes, fragments, here_rows, here_vecs, int(dim or 1))
    run.progress.advance(files=len(writes), chunks=n_chunks)
