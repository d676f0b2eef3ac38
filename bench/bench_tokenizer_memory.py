"""Peak memory and time of ``ragsift chunk`` on large files, by tokenizer (issue 40, items 1-2).

    .venv/bin/python -m bench.bench_tokenizer_memory [--mbs 10,50] [--repeats 2]
                                                     [--baseline SRC] [--rst-rows 100000]

Every row is a NEW process: ``ragsift chunk FILE [--tokenizer cl100k] > out.jsonl``, started by
a small wrapper process that waits for it and prints its ``RUSAGE_CHILDREN`` (peak RSS, user
and system CPU), so nothing else is counted. Rows alternate round after round. Files:

- ``N MB .txt``: real prose (the chroma-dev corpora, then SciFact abstracts, as
  ``bench_commands``' big.txt) repeated to N MB;
- the rst table: ``bench_pathological.rst_table`` (a simple table of ``--rst-rows`` rows,
  ~2.7 MB at 100,000), beside a one-line ``.rst`` (the process's own floor); the bound is
  "peak above the small file's <= 20x the file".

``--baseline SRC``: also run the tree at SRC (``git archive REV ragsift | tar -x -C SRC``)
through ``PYTHONPATH``; outputs are compared byte for byte with this tree's. Needs
``../shared/eval`` (or RAGSIFT_SHARED_EVAL) for the prose.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.bench_commands import build_corpus
from bench.bench_pathological import rst_table

PY = sys.executable
WRAP = """import resource, subprocess, sys, time
out = open(sys.argv[1], "wb")
t = time.perf_counter()
rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL).returncode
wall = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(rc, wall, r.ru_utime + r.ru_stime, r.ru_maxrss)
"""


def run(args: list[str], out: Path, src: str | None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MB) of ``ragsift ARGS > out``, run in ``out``'s folder (``-m``
    puts the working folder first on ``sys.path``: not this repository's ``ragsift``)."""
    env = {**os.environ, "PYTHONPATH": src} if src else None
    cmd = [PY, "-c", WRAP, str(out), PY, "-m", "ragsift", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd=out.parent)
    rc, wall, cpu, peak = proc.stdout.split()
    if int(rc) not in (0, 3):
        raise SystemExit(f"{args}: exit {rc}")
    return float(wall), float(cpu), int(peak) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mbs", default="10,50", help="sizes of the .txt files in MB [10,50]")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--baseline", help="a tree's folder holding ragsift/ (PYTHONPATH)")
    ap.add_argument("--rst-rows", type=int, default=100_000)
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-tokmem-"))
    note = build_corpus(tmp)
    prose = (tmp / "big.txt").read_text(encoding="utf-8")
    files: list[tuple[str, Path]] = []
    for mb in (float(x) for x in opts.mbs.split(",")):
        n = int(mb * 1e6)
        path = tmp / f"prose-{mb:g}MB.txt"
        path.write_text((prose * (n // len(prose) + 1))[:n], encoding="utf-8")
        files.append((f"{mb:g} MB .txt", path))
    if opts.rst_rows:
        table = tmp / "table.rst"
        table.write_text(rst_table(opts.rst_rows, random.Random(0)), encoding="utf-8")
        small = tmp / "small.rst"
        small.write_text("Title\n=====\n\nBees keep warm in winter.\n", encoding="utf-8")
        files += [(f"rst table {opts.rst_rows:,} rows", table), ("rst, one line", small)]
    trees = [("this tree", None)] + ([("before", opts.baseline)] if opts.baseline else [])
    rows = [
        (label, path, tok, tree, src)
        for label, path in files
        for tok in ("model", "cl100k")
        for tree, src in trees
    ]
    print(f"# {note}; load average {open('/proc/loadavg').read().split()[:3]}", flush=True)
    results: dict[tuple, list[tuple[float, float, float]]] = {}
    for r in range(opts.repeats):
        order = rows[r % len(rows) :] + rows[: r % len(rows)]
        for label, path, tok, tree, src in order:
            args = ["chunk", str(path)] + (["--tokenizer", tok] if tok != "model" else [])
            out = tmp / f"out-{path.stem}-{tok}-{tree.replace(' ', '_')}.jsonl"
            results.setdefault((label, tok, tree), []).append(run(args, out, src))
    same = True
    if opts.baseline:
        for _label, path, tok, _tree, _src in rows:
            a = tmp / f"out-{path.stem}-{tok}-this_tree.jsonl"
            b = tmp / f"out-{path.stem}-{tok}-before.jsonl"
            same = same and a.read_bytes() == b.read_bytes()
    print(f"# after: load average {open('/proc/loadavg').read().split()[:3]}")
    print(f"# {platform.python_version()}, {opts.repeats} alternating rounds")
    print("| file | tokenizer | tree | wall s (median) | CPU s (median) | peak MB (max) |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for (label, tok, tree), runs in results.items():
        wall = statistics.median(x[0] for x in runs)
        cpu = statistics.median(x[1] for x in runs)
        peak = max(x[2] for x in runs)
        print(f"| {label} | {tok} | {tree} | {wall:.2f} | {cpu:.2f} | {peak:.0f} |")
    if opts.baseline:
        print(f"outputs byte-identical to before's: {same}")


if __name__ == "__main__":
    main()
