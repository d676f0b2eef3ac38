"""Ingestion: file → parse → chunk → embed → index, as stages around one change plan.

- ``request.py``: ``BuildRequest``, one run as a value (paths, ``WalkRules``, chunker, model
  and ``EmbedderOptions``, engine), checked once; ``build_index`` and ``watch`` take it as it is.
- ``plan.py``: the change plan (unchanged / changed / new / gone; the size/mtime → sha256 rule
  and the prune rule, written once).
- ``load.py``: stage 1, find, read and parse (the one walk and read → parse loop of ``chunk``
  and ``embed``); ``iter_documents``, ``iter_chunks``.
- ``records.py``: stage 2's output, the chunk records (``chunk_row`` → ``index.backend.ChunkRow``,
  ``chunk_record``, ``content_hash``, ``chunker_key``) and the chunk JSON lines accepted on stdin.
- ``batch.py``: stages 3–4, batch, embed what the index lacks and commit (``Run``).
- ``model.py``: the model, loaded ahead or on first need and bound to the index.
- ``sizing.py``: the default chunker of ``embed``, sized in the model's tokens (one
  definition, ``sized_for_embed``, which ``eval`` uses too).
- ``local.py``, ``ray.py``: the runners, wiring the same stages and plan on this machine or
  on a Ray cluster; ``prefetch.py``: the local runner's producer thread.
- ``run.py``: ``build_index``, the whole ``embed`` run; ``summary.py``: what runs report
  (and ``CountedProgress``, the progress arithmetic front ends draw).

Nothing here imports ``sqlite3`` or Lance: the index is reached through
``ragsift.index.open_index`` and the ``IndexWriter`` contract.
"""

from ragsift.ingest.load import iter_chunks, iter_documents
from ragsift.ingest.records import chunk_record, content_hash
from ragsift.ingest.request import (
    BuildHooks,
    BuildRequest,
    WalkRules,
    index_model,
)
from ragsift.ingest.run import build_index
from ragsift.ingest.sizing import default_embed_chunker, embed_size, sized_for_embed
from ragsift.ingest.summary import ChunkSummary, CountedProgress, EmbedProgress, EmbedSummary

__all__ = [
    "BuildHooks",
    "BuildRequest",
    "ChunkSummary",
    "CountedProgress",
    "EmbedProgress",
    "EmbedSummary",
    "build_index",
    "chunk_record",
    "content_hash",
    "default_embed_chunker",
    "embed_size",
    "index_model",
    "iter_chunks",
    "iter_documents",
    "sized_for_embed",
    "WalkRules",
]
