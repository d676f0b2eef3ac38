"""Nothing is lost under faults: ``ragsift embed`` killed with SIGKILL at chosen points of progress.

The corpus is generated in tmp_path (48 small files, ~3 chunks each, so a run commits in
several batches). Each round starts a fresh index and kills a real ``ragsift embed``
subprocess (real model, real chunker) a few times while this process reads the index
concurrently (WAL readers must not be blocked). After every kill the index must open, be
internally consistent (vectors ↔ chunks ↔ documents ↔ FTS), hold at least every document a
reader saw committed, and answer a lexical query. A last, uninterrupted run must finish the
rest embedding only chunks that were not committed, and end identical to an index built
without interruption.

Independent of machine load: when to kill is decided by observed progress, never by a clock.
The writer runs in short slices (SIGCONT, a brief pause, SIGSTOP, then ``waitpid`` until it
has really stopped); the committed documents are counted only while it is stopped, and the
kill is sent while it is still stopped. So the kill lands exactly in the state just observed
(a busy machine only makes each slice do less work), and a run that still had a batch to
commit is always killed mid-way.
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
import pytest

from ragsift.errors import RagsiftError
from ragsift.index import open_index
from ragsift.ingest.batch import FLUSH_FILES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = 3
KILLS_PER_ROUND = 4
N_FILES = 48
SLICE = 0.02  # seconds the writer runs between two looks (only how often we look)

WORDS = [
    "amber",
    "basalt",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "glacier",
    "harbor",
    "iris",
    "juniper",
    "kelp",
    "lagoon",
    "meadow",
    "nectar",
    "orchard",
    "pollen",
    "quartz",
    "river",
    "saffron",
    "tundra",
    "umber",
    "valley",
    "willow",
    "xylem",
    "yarrow",
    "zephyr",
    "beacon",
    "canyon",
    "dune",
    "estuary",
    "forest",
    "grove",
    "heath",
    "inlet",
    "jetty",
    "knoll",
    "lichen",
    "moss",
    "nettle",
    "oasis",
    "prairie",
    "quarry",
    "reef",
    "spruce",
    "thicket",
    "upland",
    "vale",
    "wetland",
]


def _corpus(root, seed: int = 7) -> None:
    rng = random.Random(seed)
    root.mkdir()
    for i in range(N_FILES):
        paras = [" ".join(rng.choice(WORDS) for _ in range(28)) + "." for _ in range(3)]
        (root / f"note-{i:02d}.txt").write_text(f"Note {i}\n\n" + "\n\n".join(paras) + "\n")


def _cmd(corpus, index) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ragsift",
        "embed",
        str(corpus),
        "--index",
        str(index),
        "--size",
        "48",
        "--quiet",
        "--json",
    ]


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RAGSIFT_DEBUG"}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _committed_documents(index) -> int | None:
    """Documents committed now (a reader's view); None when the index cannot be read at this
    instant (e.g. the stopped writer holds a lock a new reader would wait for)."""
    try:
        with open_index(index) as r:
            return r.stats()["documents"]
    except RagsiftError as exc:
        return 0 if "no index at" in exc.message else None


class _Sliced:
    """A subprocess run in slices: ``step()`` lets it run briefly and stops it again."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.exited = False
        self._stop()

    def _stop(self) -> None:
        """SIGSTOP, then wait until the kernel reports it stopped (or gone)."""
        if self.exited:
            return
        try:
            os.kill(self.proc.pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(self.proc.pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            self.exited = True
            self.proc.returncode = os.waitstatus_to_exitcode(status)

    def step(self) -> None:
        if not self.exited:
            os.kill(self.proc.pid, signal.SIGCONT)
            time.sleep(SLICE)
            self._stop()

    def kill(self) -> bool:
        """SIGKILL while stopped; True if it was still running (a real kill mid-run)."""
        if self.exited:
            return False
        os.kill(self.proc.pid, signal.SIGKILL)
        os.kill(self.proc.pid, signal.SIGCONT)
        _, status = os.waitpid(self.proc.pid, 0)
        self.exited = True
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        return True


def _check_after_kill(index, seen: int) -> set[str]:
    """The index opens, agrees with itself, and keeps what a reader saw committed."""
    if not index.exists():
        assert seen == 0
        return set()
    with open_index(index) as r:
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
    with open_index(index, "w") as w:  # the kill released the writer lock
        assert w.verify() == []
    return hashes


def _run_to_end(corpus, index) -> dict:
    proc = subprocess.run(
        _cmd(corpus, index),
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _snapshot(index) -> dict[str, tuple[str, np.ndarray]]:
    with open_index(index) as r:
        rowids, matrix = r.load_matrix()
        return {
            rec["id"]: (rec["text"], matrix[i]) for i, rec in enumerate(r.chunks(rowids.tolist()))
        }


@pytest.mark.slow
def test_kill_9_at_random_points_loses_nothing(tmp_path):
    corpus = tmp_path / "corpus"
    _corpus(corpus)
    reference = tmp_path / "reference.db"
    full = _run_to_end(corpus, reference)
    assert full["parsed"] == N_FILES and full["embedded"] == full["chunks"] > N_FILES * 2
    want = _snapshot(reference)

    rng = random.Random(20240611)
    kills = killable = 0
    for rnd in range(ROUNDS):
        index = tmp_path / f"killed-{rnd}.db"
        for attempt in range(KILLS_PER_ROUND):
            first = _committed_documents(index) or 0
            # Even attempts: anywhere in a run (start-up, model load, parsing, embedding, a
            # commit): after 0-60 slices. Odd ones: just after the first commit a reader
            # sees, plus 0-3 slices, to land in the next batch or its commit. Never more
            # than ``cap`` documents: each attempt leaves work to the next.
            after_commit = attempt % 2 == 1
            target = first + 1 if after_commit else first
            extra = rng.randint(0, 3) if after_commit else rng.randint(0, 60)
            cap = first + (2 if after_commit else 1) * FLUSH_FILES
            work_left = cap < N_FILES  # then the kill must land before the run's end
            run = _Sliced(_cmd(corpus, index))
            seen, steps_after = first, 0
            while not run.exited:
                now = _committed_documents(index)  # a reader during the write (it is stopped)
                if now is not None:
                    seen = max(seen, now)
                if seen >= target:
                    if steps_after >= extra or seen >= cap:
                        break
                    steps_after += 1
                run.step()
            killed = run.kill()
            kills += killed
            if work_left:
                killable += 1
                assert killed, (
                    "a run with a batch left finished before its kill: exit "
                    f"{run.proc.returncode}, round {rnd} attempt {attempt}, first {first}, "
                    f"seen {seen}, target {target}, cap {cap}"
                )
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
    assert kills >= killable >= ROUNDS * KILLS_PER_ROUND // 2  # most runs were killed mid-way


def _hashes(index) -> list[str]:
    with open_index(index) as r:
        rowids, _ = r.load_matrix()
        return [rec["content_hash"] for rec in r.chunks(rowids.tolist())]
