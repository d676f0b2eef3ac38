"""Whole commands before and after a change to the front ends (issue 29, one door): cold
``ragsift query`` and ``ragsift explain`` as a shell user runs them, each a new process,
alternating old and new round after round (the order rotates) so machine load hits both alike.

    git archive 29fadd7 ragsift | tar -x -C /tmp/prev
    .venv/bin/python -m bench.bench_door --baseline /tmp/prev [--rounds 9]

Each tree builds its own index of the chroma-dev corpora first (not timed; an older tree may
not read the newer schema). Prints medians, min–max, the new/old ratios and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RAGSIFT_SHARED_EVAL", REPO.parent / "shared" / "eval"))
QUESTION = "What did the president say about inflation?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--baseline", required=True, metavar="SRC", help="a folder holding the old ragsift/ package"
    )
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    trees = {
        "new": {"PYTHONPATH": str(REPO)},
        "old": {"PYTHONPATH": str(Path(args.baseline).resolve())},
    }
    with tempfile.TemporaryDirectory(prefix="ragsift-door-") as tmp:
        cmds = {}
        for name, env in trees.items():
            index = f"{tmp}/{name}.db"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ragsift",
                    "embed",
                    str(SHARED / "chroma-dev" / "corpora"),
                    "-i",
                    index,
                    "-q",
                ],
                env={**os.environ, **env},
                check=True,
            )
            for cmd in ("query", "explain"):
                cmds[f"{cmd} {name}"] = (
                    [sys.executable, "-m", "ragsift", cmd, QUESTION, "-i", index],
                    env,
                )
        times: dict[str, list[float]] = {k: [] for k in cmds}
        load0 = open("/proc/loadavg").read().split()[:3]
        keys = list(cmds)
        for r in range(args.rounds):
            for k in keys[r % len(keys) :] + keys[: r % len(keys)]:
                argv, env = cmds[k]
                t = time.perf_counter()
                proc = subprocess.run(argv, env={**os.environ, **env}, capture_output=True)
                times[k].append(time.perf_counter() - t)
                if proc.returncode not in (0, 1):
                    raise SystemExit(f"{k}: {proc.stderr.decode()}")
        load1 = open("/proc/loadavg").read().split()[:3]
    print("| command | median s | min–max s |\n| --- | --- | --- |")
    for k, v in times.items():
        print(f"| `ragsift {k}` | {statistics.median(v):.3f} | {min(v):.3f}–{max(v):.3f} |")
    for cmd in ("query", "explain"):
        ratio = statistics.median(times[f"{cmd} new"]) / statistics.median(times[f"{cmd} old"])
        print(f"\n{cmd} new/old: {ratio:.3f}", end="")
    print(
        f"\n\n{args.rounds} rounds; load average before {' '.join(load0)}, after {' '.join(load1)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
