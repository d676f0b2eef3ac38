"""``ragsift chunk`` on big.md / big.txt against a bare encode pass and chonkie, many rounds.

The chunk suite of ``bench_commands.py`` with more alternating rounds and low quantiles: on a
shared, busy machine the minimum and the 25th percentile of the wall times are the runs that
met the least interference, the closest to what a quiet machine gives (medians mostly measure
the neighbours). Same files (``bench_commands.build_corpus``), same peer scripts.

    .venv/bin/python -m bench.tools.chunk_ab --rounds 15 [--baseline SRC]

``--baseline SRC``: also the rows of a source tree (``git archive main ragsift | tar -x -C
SRC``), byte-compiled, whose JSONL must be byte-identical.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import bench_commands as bc


def quantile(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[int(p * (len(v) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--baseline", default="")
    args = ap.parse_args()
    compileall.compile_dir(str(bc.REPO / "ragsift"), quiet=1)
    if args.baseline:
        compileall.compile_dir(str(Path(args.baseline) / "ragsift"), quiet=1)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ragsift-ab-") as d:
        tmp = Path(d)
        desc = bc.build_corpus(tmp)
        chunk = [
            *bc.RAGSIFT,
            "chunk",
            "--strategy",
            "recursive",
            "--size",
            "512",
            "--tokenizer",
            "cl100k",
        ]
        rows: dict[str, tuple[list[str], str | None]] = {}
        for ext in ("md", "txt"):
            rows[f"ragsift chunk big.{ext}"] = ([*chunk, f"big.{ext}"], None)
            if args.baseline:
                rows[f"the same, baseline ({ext})"] = ([*chunk, f"big.{ext}"], args.baseline)
        for peer in ("encode", "chonkie"):
            script = tmp / f"peer_{peer}.py"
            script.write_text(bc.PEER_TEMPLATE.format(body=bc.PEER_CHUNK[peer]))
            rows[f"script: {peer}"] = ([bc.PY, str(script), "big.md", f"{peer}.jsonl"], None)
        wall: dict[str, list[float]] = {k: [] for k in rows}
        cpu: dict[str, list[float]] = {k: [] for k in rows}
        names = list(rows)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                cmd, src = rows[name]
                env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())} if src else None
                ru = resource.getrusage(resource.RUSAGE_CHILDREN)
                before = ru.ru_utime + ru.ru_stime
                t = time.perf_counter()
                with open(tmp / f"{name.replace(' ', '_')}.out", "wb") as out:
                    subprocess.run(
                        cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=tmp, env=env, check=True
                    )
                wall[name].append(time.perf_counter() - t)
                ru = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(ru.ru_utime + ru.ru_stime - before)
        same = ""
        if args.baseline:
            same = "; JSONL byte-identical to the baseline's: " + str(
                all(
                    (tmp / f"ragsift_chunk_big.{ext}.out").read_bytes()
                    == (tmp / f"the_same,_baseline_({ext}).out").read_bytes()
                    for ext in ("md", "txt")
                )
            )
    enc, chonkie = wall["script: encode"], wall["script: chonkie"]
    print(
        "| command | min s | p25 s | median s | min × encode | p25 × encode | min × chonkie "
        "| p25 × chonkie | CPU median s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, w in wall.items():
        print(
            f"| {name} | {min(w):.3f} | {quantile(w, 0.25):.3f} | {statistics.median(w):.3f} | "
            f"{min(w) / min(enc):.2f} | {quantile(w, 0.25) / quantile(enc, 0.25):.2f} | "
            f"{min(w) / min(chonkie):.2f} | {quantile(w, 0.25) / quantile(chonkie, 0.25):.2f} | "
            f"{statistics.median(cpu[name]):.2f} |"
        )
    load1 = os.getloadavg()
    print(
        f"\n{desc}; {args.rounds} alternating rounds{same}; load average before "
        f"{load0[0]:.2f} {load0[1]:.2f}, after {load1[0]:.2f} {load1[1]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
