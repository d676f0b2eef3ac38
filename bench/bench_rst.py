"""reStructuredText: quality on a real Sphinx tree (issue 23), and CPU against the same bytes
as ``.txt`` (issue 40).

Quality: the share of chunks with a heading trail, chunks that start with a title adornment
line, and chunks with directive or role markup left outside code blocks, for `ragsift chunk`
with the defaults (what `embed` indexes).

    cd FLASK_CHECKOUT && python PATH/TO/bench/bench_rst.py docs      (pallets/flask 2ac89889)

CPU (issue 40, "Sphinx-like rst ≤ 2× the CPU time of the same bytes as .txt"):

    .venv/bin/python bench/bench_rst.py --cpu [--mbs 1,4] [--repeats 5]

A Sphinx-like page (``bench_pathological.sphinx_rst``: a section every ~1 KB with
subsections, lists, code blocks, notes and roles) written as ``page.rst`` and as
``page.txt`` (the same bytes); whole ``ragsift chunk FILE > out`` processes (the defaults),
rows alternating, order rotating; CPU is user+sys of the process and its helper (children's
rusage); each size also with the process pinned to one CPU (no ``rst_parallel`` helper).
Then, in this process, where a ``parse_rst`` of the page spends its CPU: docutils' own
parse (``Reader.parse``: the state machine and inline parser), its transforms and the
rest of ``publish_doctree``, ragsift's renderer, ``rst_pieces``' scan, and the rest of
``parse_rst`` (joining lines, heading trails, the line map), one process, no helper.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ADORNMENT = re.compile(r"^([=\-~^\"'#*+<>:._])\1{2,}\s*$")  # (not ```: a code fence)
DIRECTIVE = re.compile(r"^\s*\.\. [\w:.+-]+::", re.MULTILINE)
ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)?:`")
FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
FENCE_LINE = re.compile(r"^```", re.MULTILINE)


def main(folder: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ragsift", "chunk", folder],
        check=False,
        capture_output=True,
        text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    rst = [r for r in rows if r["path"].endswith(".rst")]
    trail = sum(bool(r["headings"]) for r in rst)
    underline = sum(bool(ADORNMENT.match(r["text"].splitlines()[0])) for r in rst if r["text"])
    leftover = [
        r
        for r in rst
        if DIRECTIVE.search(FENCE.sub("", r["text"])) or ROLE.search(FENCE.sub("", r["text"]))
    ]
    # a chunk holding an odd number of fence lines holds part of a code block (one was cut)
    cut = sum(len(FENCE_LINE.findall(r["text"])) % 2 for r in rst)
    print(
        f"{len(rst)} chunks of {len({r['path'] for r in rst})} .rst files: heading trail "
        f"{trail} ({100 * trail / max(len(rst), 1):.1f}%), starting with an adornment line "
        f"{underline}, with directive or role markup outside code {len(leftover)}, "
        f"holding part of a cut code block {cut}"
    )
    for r in leftover[:5]:
        print("  ", r["id"], repr(FENCE.sub("", r["text"])[:120]))


# -- CPU against the same bytes as .txt (issue 40) ----------------------------------------


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(path: Path, one_cpu: bool) -> tuple[float, float]:
    """CPU (user+sys, with any helper process) and wall seconds of one ``ragsift chunk``."""
    pin = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if one_cpu else None
    cpu, t = _children_cpu(), time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ragsift", "chunk", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        preexec_fn=pin,
    )
    return _children_cpu() - cpu, time.perf_counter() - t


def _phases(text: str) -> dict[str, float]:
    """CPU seconds of one ``parse_rst`` of ``text`` by phase (this process, no helper)."""
    import docutils.core
    import docutils.readers

    import ragsift.sources.rst as rst
    import ragsift.sources.rst_parallel as parallel
    import ragsift.sources.rst_pieces as rst_pieces

    spent: dict[str, float] = {}

    def timed(owner, name: str, key: str) -> None:
        real = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                spent[key] = spent.get(key, 0.0) + time.process_time() - start

        setattr(owner, name, wrapper)

    rst.parse_rst("x\n=\n\ny\n", "x.rst")  # imports, settings, Sphinx's roles: once
    parallel.PARALLEL_CHARS = 1 << 62
    timed(docutils.readers.Reader, "parse", "docutils' parse (Reader.parse)")
    timed(docutils.core.Publisher, "apply_transforms", "docutils' transforms")
    timed(rst, "_doctree", "publish_doctree")
    timed(rst, "render_piece", "render_piece")
    timed(rst_pieces, "pieces", "rst_pieces.pieces (the scan)")
    start = time.process_time()
    rst.parse_rst(text, "page.rst")
    total = time.process_time() - start
    parse = spent["docutils' parse (Reader.parse)"]
    transforms = spent["docutils' transforms"]
    doctree = spent.pop("publish_doctree")
    render = spent.pop("render_piece") - doctree
    return {
        **{k: v for k, v in spent.items()},
        "rest of publish_doctree (settings, document, parser set-up)": doctree - parse - transforms,
        "ragsift's renderer (doctree to lines, _release)": render,
        "rest of parse_rst (join, line map, heading trails)": total
        - doctree
        - render
        - spent["rst_pieces.pieces (the scan)"],
        "parse_rst in all": total,
    }


def cpu_main(mbs: list[float], repeats: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.bench_pathological import sphinx_rst

    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    print(f"{len(os.sched_getaffinity(0))} CPUs; {repeats} alternating rounds; CPU = user+sys")
    print()
    print(
        "| size | CPUs | .txt CPU s median (min–max) | .rst CPU s median (min–max) | × .txt (CPU) | .rst wall s median | × .txt (wall) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in mbs:
            text = sphinx_rst(int(mb * 1_000_000), random.Random(7))
            paths = {ext: Path(tmp) / f"page.{ext}" for ext in ("txt", "rst")}
            for path in paths.values():
                path.write_text(text, encoding="utf-8")
            for one_cpu in (False, True):
                got = {ext: ([], []) for ext in paths}
                order = list(paths)
                for r in range(repeats):
                    for ext in order[r % 2 :] + order[: r % 2]:
                        cpu, wall = _run(paths[ext], one_cpu)
                        got[ext][0].append(cpu)
                        got[ext][1].append(wall)
                (tc, tw), (rc, rw) = got["txt"], got["rst"]
                med = statistics.median
                print(
                    f"| {mb:g} MB | {1 if one_cpu else len(os.sched_getaffinity(0))} "
                    f"| {med(tc):.2f} ({min(tc):.2f}–{max(tc):.2f}) "
                    f"| {med(rc):.2f} ({min(rc):.2f}–{max(rc):.2f}) | {med(rc) / med(tc):.2f} "
                    f"| {med(rw):.2f} | {med(rw) / med(tw):.2f} |"
                )
    print()
    for mb in mbs:
        text = sphinx_rst(int(mb * 1_000_000), random.Random(7))
        phases = _phases(text)
        total = phases["parse_rst in all"]
        print(f"parse_rst of the {mb:g} MB page, CPU by phase (one process):")
        print()
        print("| phase | CPU s | share |")
        print("|---|---:|---:|")
        for k, v in phases.items():
            print(f"| {k} | {v:.3f} | {100 * v / total:.0f}% |")
        print()
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", help="a Sphinx docs folder (quality)")
    ap.add_argument("--cpu", action="store_true", help="CPU against the same bytes as .txt")
    ap.add_argument("--mbs", default="1,4", help="page sizes in MB for --cpu [1,4]")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.cpu:
        cpu_main([float(x) for x in args.mbs.split(",")], args.repeats)
    elif args.folder:
        main(args.folder)
    else:
        ap.error("give a Sphinx docs folder, or --cpu")
