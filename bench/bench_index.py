"""Benchmark of the index (``ragsift.index.store``) and of incremental ``embed`` (not a test).

Measures, and prints as a markdown table for bench/RESULTS.md:

1. ``IndexStore.load_matrix()`` on a 100,000 × 384 index (vectors in float32 blocks, as the
   pipeline writes them: small batches, then compaction), each timing in a fresh process
   (page cache warm, process cold: what a ``ragsift query`` pays). For comparison, the
   rejected layout: one BLOB per vector row, joined with ``b"".join`` + ``np.frombuffer``.
2. A re-run of ``ragsift embed`` on an unchanged corpus of 1,000 files: whole-process wall
   time (Python start-up included), and its summary (model calls must be zero).

Usage:  .venv/bin/python -m bench.bench_index [--rows 100000] [--files 1000] [--repeat 5]
Synthetic vectors are fine for (1): load time does not depend on the values.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LOAD_SNIPPET = """
import time
import numpy  # imported before the clock starts: every numpy user pays it once anyway
from ragsift.index import open_index
with open_index({path!r}) as s:
    t = time.perf_counter()
    rowids, m = s.load_matrix()
    dt = time.perf_counter() - t
assert m.shape == ({rows}, {dim}) and m.dtype.name == "float32" and m.flags.c_contiguous
print(dt)
"""

ROWBLOB_SNIPPET = """
import sqlite3, time, numpy as np
con = sqlite3.connect("file:{path}?mode=ro", uri=True)
t = time.perf_counter()
blobs = [r[0] for r in con.execute("SELECT v FROM vec ORDER BY id")]
m = np.frombuffer(b"".join(blobs), np.float32).reshape(-1, {dim})
dt = time.perf_counter() - t
assert m.shape == ({rows}, {dim})
print(dt)
"""


def build_matrix_index(path: Path, rows: int, dim: int, per_doc: int = 50) -> float:
    import numpy as np

    from ragsift.index import open_index
    from ragsift.index.backend import ChunkRow, DocumentWrite

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    with open_index(path, "w") as s:
        s.set_settings(model="synthetic", model_fingerprint="synthetic", dimensions=dim)
        batch: list = []
        for d in range(rows // per_doc):
            vecs = rng.standard_normal((per_doc, dim), dtype=np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            recs = [
                {
                    "index": i,
                    "path": f"doc{d}.txt",
                    "text": f"chunk {d}.{i}",
                    "context": "",
                    "content_hash": f"{d:08d}{i:04d}",
                    "tokens": 3,
                }
                for i in range(per_doc)
            ]
            batch.append(
                DocumentWrite(
                    key=f"/bench/doc{d}",
                    path=f"doc{d}.txt",
                    sha256=str(d),
                    records=tuple(ChunkRow(**r) for r in recs),
                    vectors=vecs,
                )
            )
            if len(batch) == 8:  # the pipeline's commit batch (FLUSH_FILES)
                s.write_documents(batch)
                batch = []
        s.write_documents(batch)
        s.compact()
        blocks = s.stats()["blocks"]
    print(
        f"built {rows} x {dim} in {time.perf_counter() - t0:.1f} s, {blocks} blocks",
        file=sys.stderr,
    )
    return path.stat().st_size


def build_rowblob_db(path: Path, rows: int, dim: int) -> None:
    import numpy as np

    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE vec (id INTEGER PRIMARY KEY, v BLOB)")
    rng = np.random.default_rng(0)
    for lo in range(0, rows, 10000):
        m = rng.standard_normal((min(10000, rows - lo), dim), dtype=np.float32)
        con.executemany("INSERT INTO vec(v) VALUES (?)", ((r.tobytes(),) for r in m))
    con.commit()
    con.close()


def timed_in_fresh_processes(snippet: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-c", snippet], capture_output=True, text=True, check=True, cwd=REPO
        )  # `-c` reads ragsift from the cwd
        out.append(float(proc.stdout.strip()))
    return out


def make_corpus(root: Path, files: int) -> None:
    rng = random.Random(1)
    words = [
        "river",
        "stone",
        "maple",
        "cloud",
        "ember",
        "harbor",
        "lantern",
        "meadow",
        "orchard",
        "quartz",
        "willow",
        "thistle",
        "beacon",
        "canyon",
        "delta",
        "fjord",
        "glacier",
        "heath",
        "inlet",
        "juniper",
    ]
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        sub = root / f"dir{i // 100:02d}"
        sub.mkdir(exist_ok=True)
        f = sub / f"note{i:04d}.txt"
        if not f.exists():
            f.write_text(f"Note {i}. " + " ".join(rng.choice(words) for _ in range(24)) + "\n")


def embed(corpus: Path, index: Path) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragsift",
            "embed",
            str(corpus),
            "--index",
            str(index),
            "--json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"embed failed ({proc.returncode}): {proc.stderr}")
    return dt, json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", default=str(REPO / "bench" / ".cache" / "index"))
    ap.add_argument("--skip-rowblob", action="store_true")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)

    # 1. matrix load
    idx = work / "matrix.db"
    size = build_matrix_index(idx, args.rows, args.dim)
    loads = timed_in_fresh_processes(
        LOAD_SNIPPET.format(repo=str(REPO), path=str(idx), rows=args.rows, dim=args.dim),
        args.repeat,
    )
    rowblob = None
    if not args.skip_rowblob:
        rb = work / "rowblob.db"
        build_rowblob_db(rb, args.rows, args.dim)
        rowblob = timed_in_fresh_processes(
            ROWBLOB_SNIPPET.format(path=str(rb), rows=args.rows, dim=args.dim), args.repeat
        )

    # 2. unchanged re-run
    corpus = work / "corpus"
    make_corpus(corpus, args.files)
    eidx = work / "corpus.db"
    first_s, first = embed(corpus, eidx)
    reruns = [embed(corpus, eidx) for _ in range(args.repeat)]

    ms = [x * 1000 for x in loads]
    print(f"\nload average (1, 5, 15 min) at the end: {os.getloadavg()}, cores: {os.cpu_count()}")
    print(
        f"\n## IndexStore.load_matrix, {args.rows:,} x {args.dim} float32 "
        f"(index file {size / 2**20:.0f} MiB)\n"
    )
    print("| layout | min ms | median ms | max ms |\n|---|---:|---:|---:|")
    print(
        f"| float32 blocks (ragsift) | {min(ms):.1f} | {statistics.median(ms):.1f} | "
        f"{max(ms):.1f} |"
    )
    if rowblob:
        rms = [x * 1000 for x in rowblob]
        print(
            f"| one BLOB per row + b''.join | {min(rms):.1f} | {statistics.median(rms):.1f} "
            f"| {max(rms):.1f} |"
        )
    print(f"\n## embed re-run on an unchanged corpus of {args.files:,} files\n")
    print(f"first build: {first_s:.1f} s wall, {first['embedded']} chunks embedded\n")
    print("| run | wall s (whole process) | in-run s | unchanged | embedded | model loaded |")
    print("|---|---:|---:|---:|---:|---|")
    for i, (dt, s) in enumerate(reruns, 1):
        print(
            f"| {i} | {dt:.2f} | {s['seconds']:.2f} | {s['unchanged']} | {s['embedded']} | "
            f"{s['model_loaded']} |"
        )


if __name__ == "__main__":
    main()
