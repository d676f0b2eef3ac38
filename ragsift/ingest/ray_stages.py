"""What runs on the Ray workers for ``ingest.ray`` (Ray pickles these by reference, so
the workers import this module), and what their results stand in for on the driver: stage 1,
``parse_file`` (a Ray task per file); stage 2, the embedding actors (``EmbedActor``; for an
index with ``FragmentCommits`` ``EmbedWriteActor``, which also writes the chunk rows);
``Precomputed``, the embedder as ``Run.flush`` sees stage 2's vectors; ``LAST_RUN``, what the
last run moved; and the fault injection the tests use (``FAULT_ENV``, ``kill_once``)."""

from __future__ import annotations

import os
from typing import Any

from ragsift.errors import RagsiftError
from ragsift.ingest.load import load_each
from ragsift.ingest.records import content_hash, index_records

# What the last ``ingest_files`` moved: vectors streamed back to the driver, chunk rows the
# workers wrote to a Lance index themselves, and the fragments they wrote (read by tests).
LAST_RUN: dict[str, int] = {}

# Set by tests to kill a worker process once (fault injection); see tests/test_ray_engine.py.
FAULT_ENV = "RAGSIFT_RAY_KILL_ONCE"


def kill_once(stage: str) -> None:
    """Fault injection for tests: the first worker reaching ``stage`` dies (once per run)."""
    where = os.environ.get(FAULT_ENV)
    if not where:
        return
    marker = os.path.join(where, f"killed-{stage}")
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


def parse_file(row: dict, chunker: Any) -> dict:
    """Stage 1 (a Ray task): one changed file -> its chunks (``ChunkRow``s, pickled: Ray
    carries them as bytes to the driver), a skip reason (pickled too), or the kind of non-document it is
    (``ignore``: counted with the ignored files, as a local run counts it)."""
    import hashlib
    import json
    import pathlib
    import pickle

    from ragsift.sources import SourceFile
    from ragsift.sources.scripts import count_scripts

    kill_once("parse")
    sf = SourceFile(
        path=pathlib.Path(row["file"]), relpath=row["relpath"], size=row["size"], mtime=row["mtime"]
    )
    out = {
        "key": row["key"],
        "skip": b"",  # the reason, pickled: a ``Worded`` one keeps its words
        "ignore": "",
        "records": b"",
        "warnings": "",
        "format": "",
        "path": row["relpath"],
        "sha256": "",
        "scripts": "{}",
    }
    skipped: list = []  # the local run's one read -> parse loop: same caps, same skip reasons
    ignored: list = []  # ... and the same files not documents (named: ``row["named"]``)
    loaded = list(
        load_each(
            [sf],
            skip=skipped.append,
            on_warning=None,
            max_file_size=row.get("max_file_size"),
            ignore=ignored.append,
            named=lambda _sf: bool(row.get("named")),
        )
    )
    if ignored:
        out["ignore"] = ignored[0].reason
        return out
    if skipped or not loaded:
        out["skip"] = pickle.dumps(skipped[0].reason if skipped else "unreadable")
        return out
    _, data, doc = loaded[0]
    out["sha256"] = hashlib.sha256(data).hexdigest()
    out["warnings"] = json.dumps(list(doc.warnings))
    out["scripts"] = json.dumps(count_scripts(doc.text))  # for the one script warning (CLI)
    doc, records = index_records(chunker, doc)
    out.update(records=pickle.dumps(records), format=doc.format or "", path=doc.path)
    return out


class EmbedActor:
    """Stage 2: one onnxruntime session per actor, reused for every batch it is given."""

    def __init__(self, model_dir: str | None, options: dict, threads: int | None) -> None:
        import ray

        from ragsift.embedders import load_embedder

        self.embedder = load_embedder(model_dir, threads=threads, **options)
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        from ragsift.embedders.evidence import embed_evidence

        kill_once("embed")
        items = [(str(c), str(t)) for c, t in zip(batch["context"], batch["text"])]
        found = embed_evidence(self.embedder, items)
        return {
            "hash": batch["hash"],
            "vector": np.stack([e.vector for e in found]).astype(np.float32),
            "truncated": np.asarray([e.truncated for e in found], dtype=np.int64),
            "units": np.asarray([e.units for e in found], dtype=object),
            "fingerprint": np.asarray([self.embedder.fingerprint] * len(items)),
            "node": np.asarray([self.node] * len(items)),
        }


class EmbedWriteActor(EmbedActor):
    """Stage 2 for an index with ``FragmentCommits``: embed, then write the batch's chunk rows
    (each hash's rows, made by the driver, get its vector) through the index's picklable
    ``fragment_writer`` as uncommitted fragments; returns per hash only its truncation count,
    and the fragments' metadata (JSON) on the batch's first row."""

    def __init__(
        self, model_dir: str | None, options: dict, threads: int | None, writer: Any
    ) -> None:
        super().__init__(model_dir, options, threads)
        self.writer = writer

    def __call__(self, batch: dict) -> dict:
        import json

        import numpy as np

        out = super().__call__(batch)
        rows, vectors = [], []
        for group, vec, cut, units in zip(
            batch["rows"], out["vector"], out["truncated"], out["units"]
        ):
            for row in json.loads(str(group)):
                row["truncated"] = int(cut)
                row["units"] = bytes(units)
                rows.append(row)
                vectors.append(vec)
        dim = int(out["vector"].shape[1])
        frags = self.writer(rows, vectors, dim)
        n = len(out["hash"])
        return {
            "hash": out["hash"],
            "truncated": out["truncated"],
            "fingerprint": out["fingerprint"],
            "node": out["node"],
            "dimensions": np.asarray([dim] * n, dtype=np.int64),
            "rows": np.asarray([len(rows)] + [0] * (n - 1), dtype=np.int64),
            "fragments": np.asarray([json.dumps(frags)] + [""] * (n - 1), dtype=object),
        }


class Precomputed:
    """The embedder as ``Run.flush`` sees it: each chunk's evidence comes from the Ray stage,
    looked up by content hash (``evidence``, which ``embed_evidence`` asks first);
    name/fingerprint/dimensions are the real model's."""

    def __init__(self, info: dict, vectors: dict[str, tuple[Any, int, bytes]]) -> None:
        self.name = info["name"]
        self.fingerprint = info["fingerprint"]
        self.dimensions = info["dimensions"]
        self._vectors = vectors

    def evidence(self, items: list[tuple[str, str]]) -> list:
        from ragsift.embedders.evidence import Evidence

        try:
            rows = [self._vectors[content_hash(c + t)] for c, t in items]
        except KeyError:
            raise RagsiftError("internal: a chunk was not embedded by the Ray stage") from None
        return [Evidence(v, u, int(c)) for v, c, u in rows]
