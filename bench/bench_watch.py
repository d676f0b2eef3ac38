"""``embed --watch`` (issue 31): how bursts of file events settle into runs, and what a run
costs. Not a test: numbers, with the load average, for bench/RESULTS.md.

    .venv/bin/python -m bench.bench_watch [--files 1000]

A folder with one document is watched (``ragsift.api.watch`` in a thread, the real model);
then ``--files`` new markdown files are written as fast as Python can, and the script waits
until the index holds them all. Reported: how many runs the burst became, the events each saw,
the seconds from the first write to the index holding every file, and for one saved edit the
seconds from the save to the committed change.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time


def main() -> int:
    import ragsift.api as api

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    args = ap.parse_args()
    load0 = open("/proc/loadavg").read().split()[:3]
    root = tempfile.mkdtemp(prefix="ragsift-watch-")
    docs = os.path.join(root, "docs")
    os.makedirs(docs)
    with open(os.path.join(docs, "seed.md"), "w") as fh:
        fh.write("# Seed\n\nThe first document.\n")
    idx = os.path.join(root, "idx.db")
    runs: list = []
    stop = threading.Event()
    th = threading.Thread(
        target=lambda: api.watch(idx, [docs], stop=stop, on_run=runs.append), daemon=True
    )
    th.start()
    try:
        while not runs:
            time.sleep(0.01)
        time.sleep(1.0)  # the watcher is up
        t0 = time.perf_counter()
        for i in range(args.files):
            with open(os.path.join(docs, f"n{i:04}.md"), "w") as fh:
                fh.write(f"# Note {i}\n\nNote {i} of the burst.\n")
        wrote = time.perf_counter() - t0
        while not runs or runs[-1].summary.index.get("documents") != args.files + 1:
            time.sleep(0.02)
        burst = time.perf_counter() - t0
        later = runs[1:]
        print(
            f"burst of {args.files} new files: written in {wrote:.2f} s, indexed after "
            f"{burst:.1f} s in {len(later)} run(s); events per run "
            f"{[r.events for r in later]}; run seconds "
            f"{[round(r.summary.seconds, 2) for r in later]}"
        )
        n = len(runs)
        time.sleep(1.0)
        t1 = time.perf_counter()
        with open(os.path.join(docs, "seed.md"), "w") as fh:
            fh.write("# Seed\n\nThe first document, edited.\n")
        while len(runs) == n:
            time.sleep(0.01)
        print(
            f"one saved edit: committed {time.perf_counter() - t1:.2f} s after the save "
            f"(the run itself {runs[-1].summary.seconds:.2f} s, "
            f"{runs[-1].summary.parsed} parsed)"
        )
    finally:
        stop.set()
        th.join()
        shutil.rmtree(root)
    load1 = open("/proc/loadavg").read().split()[:3]
    print(f"load average before {' '.join(load0)}, after {' '.join(load1)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
