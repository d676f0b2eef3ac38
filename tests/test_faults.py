"""Nothing is lost under faults: ``ragsift embed`` killed with SIGKILL at random moments.

The corpus is generated in tmp_path (32 small files, ~3 chunks each, so a run commits in
several batches). Each round starts a fresh index and kills a real ``ragsift embed``
subprocess (real model, real chunker) a few times at random delays while this process reads
the index concurrently (WAL readers must not be blocked). After every kill the index must
open, be internally consistent (vectors ↔ chunks ↔ documents ↔ FTS), hold at least every
document a reader saw committed, and answer a lexical query. A last, uninterrupted run must
finish the rest embedding only chunks that were not committed, and end identical to an
index built without interruption.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np

from ragsift.errors import RagsiftError
from ragsift.index.store import IndexStore

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = 3
KILLS_PER_ROUND = 4
N_FILES = 32

WORDS = [
    "amber", "basalt", "cedar", "delta", "ember", "fjord", "glacier", "harbor", "iris",
    "juniper", "kelp", "lagoon", "meadow", "nectar", "orchard", "pollen", "quartz", "river",
    "saffron", "tundra", "umber", "valley", "willow", "xylem", "yarrow", "zephyr", "beacon",
    "canyon", "dune", "estuary", "forest", "grove", "heath", "inlet", "jetty", "knoll",
    "lichen", "moss", "nettle", "oasis", "prairie", "quarry", "reef", "spruce", "thicket",
    "upland", "vale", "wetland",
]


def _corpus(root, seed: int = 7) -> None:
    rng = random.Random(seed)
    root.mkdir()
    for i in range(N_FILES):
        paras = [" ".join(rng.choice(WORDS) for _ in range(28)) + "." for _ in range(3)]
        (root / f"note-{i:02d}.txt").write_text(f"Note {i}\n\n" + "\n\n".join(paras) + "\n")


def _cmd(corpus, index) -> list[str]:
    return [sys.executable, "-m", "ragsift", "embed", str(corpus), "--index", str(index),
            "--size", "48", "--quiet", "--json"]


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RAGSIFT_DEBUG"}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _committed_documents(index) -> int:
    try:
        with IndexStore.open(index) as r:
            return r.stats()["documents"]
    except RagsiftError:  # not created yet
        return 0


def _check_after_kill(index, seen: int) -> set[str]:
    """The index opens, agrees with itself, and keeps what a reader saw committed."""
    if not index.exists():
        assert seen == 0
        return set()
    with IndexStore.open(index) as r:
        rowids, matrix = r.load_matrix()
        records = r.chunks(rowids.tolist())
        assert len(records) == len(rowids) == matrix.shape[0]
        assert [rec["rowid"] for rec in records] == rowids.tolist()
        if len(rowids):
            assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-3)
            assert isinstance(r.lexical_search("glacier meadow", 5), list)
        docs = r.stats()["documents"]
        hashes = {rec["content_hash"] for rec in records}
    assert docs >= seen, f"a kill lost committed documents ({docs} < {seen})"
    with IndexStore.open(index, "w") as w:  # the kill released the writer lock
        assert w.verify() == []
    return hashes


def _run_to_end(corpus, index) -> dict:
    proc = subprocess.run(_cmd(corpus, index), cwd=REPO, env=_env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _snapshot(index) -> dict[str, tuple[str, np.ndarray]]:
    with IndexStore.open(index) as r:
        rowids, matrix = r.load_matrix()
        return {rec["id"]: (rec["text"], matrix[i])
                for i, rec in enumerate(r.chunks(rowids.tolist()))}


def test_kill_9_at_random_points_loses_nothing(tmp_path):
    corpus = tmp_path / "corpus"
    _corpus(corpus)
    reference = tmp_path / "reference.db"
    t0 = time.perf_counter()
    full = _run_to_end(corpus, reference)
    full_seconds = time.perf_counter() - t0
    assert full["parsed"] == N_FILES and full["embedded"] == full["chunks"] > N_FILES * 2
    want = _snapshot(reference)

    rng = random.Random(20240611)
    kills = 0
    for rnd in range(ROUNDS):
        index = tmp_path / f"killed-{rnd}.db"
        for attempt in range(KILLS_PER_ROUND):
            # Even attempts: a random moment anywhere in a run (start-up, model load,
            # embedding, commit). Odd ones: just after a commit a reader saw, plus jitter,
            # to land in the middle of the next batch or its commit.
            after_commit = attempt % 2 == 1
            proc = subprocess.Popen(_cmd(corpus, index), cwd=REPO, env=_env(),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            start = time.perf_counter()
            deadline = start + rng.uniform(0.05, full_seconds)
            seen = first = _committed_documents(index)
            while proc.poll() is None:
                seen = max(seen, _committed_documents(index))  # a reader during the write
                now = time.perf_counter()
                if after_commit and seen > first:
                    deadline = now + rng.uniform(0.0, 0.4)
                    after_commit = False
                if now >= deadline or now - start > 2 * full_seconds:
                    break
                time.sleep(0.02)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(30)
            _check_after_kill(index, seen)
        before = _check_after_kill(index, 0)
        done = _run_to_end(corpus, index)
        # committed chunks are reused, never embedded again
        assert done["embedded"] == len(set(_hashes(reference)) - before)
        got = _snapshot(index)
        assert set(got) == set(want)
        for cid, (text, vec) in want.items():
            assert got[cid][0] == text
            assert np.allclose(got[cid][1], vec, atol=1e-4)
    assert kills >= ROUNDS * KILLS_PER_ROUND // 2  # most runs really were killed mid-way


def _hashes(index) -> list[str]:
    with IndexStore.open(index) as r:
        rowids, _ = r.load_matrix()
        return [rec["content_hash"] for rec in r.chunks(rowids.tolist())]
