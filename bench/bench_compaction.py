"""An index that does not grow with the runs (issue 40, item 3). Not a test: numbers, with
the load average, for bench/RESULTS.md ("Lance stays compact").

    .venv/bin/python -m bench.bench_compaction [--runs 15] [--site DIR] [--pages 24]

A copy of a docs site (``--site``; default: the first ``--pages`` pages of the Debian
handbook in ``bench/.cache/handbook/en/pages`` when present, else this repository's
``docs/``) is indexed fresh, then ``--runs`` times one line is appended to one page (the
same page each time) and ``ragsift embed SITE --index INDEX`` runs again, each run a whole
``ragsift`` process, the SQLite and the Lance index side by side in the same round. Reported
per backend: the size on disk after the fresh build, after every run, and of a fresh build
of the edited folder at the end (the target: the last run's size <= 1.5x that), with
``info``'s fragments and versions for Lance; and the seconds ``compact`` took inside each
run (measured in that same process: ``LanceIndex.compact``/``IndexStore.compact`` wrapped
with a timer, printed on stderr by a small launcher, so nothing in ragsift changes for it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HANDBOOK = os.path.join(REPO, "bench", ".cache", "handbook", "en", "pages")

# ``ragsift embed`` in this process with the backend's ``compact`` timed; the time goes to
# stderr as one ``COMPACT <seconds>`` line (summed over the run's calls).
LAUNCHER = """
import sys, time
from ragsift.index.lance import LanceIndex
from ragsift.index.store import IndexStore
spent = [0.0]
def timed(f):
    def run(self, *a, **k):
        t = time.perf_counter()
        try:
            return f(self, *a, **k)
        finally:
            spent[0] += time.perf_counter() - t
    return run
LanceIndex.compact = timed(LanceIndex.compact)
IndexStore.compact = timed(IndexStore.compact)
arm = sys.argv.pop(1)
if arm in ("every-run", "old"):  # the data rewritten by every run, as before issue 40
    import ragsift.index.lance_compact as lw
    lw.COMPACT_FRAGMENTS = 0
    if arm == "old":  # and the one-hour window of old versions
        import datetime
        lw.KEEP_VERSIONS = datetime.timedelta(hours=1)
from ragsift.cli import main
sys.argv = ["ragsift", *sys.argv[1:]]
try:
    main(fast_exit=False)
finally:
    print(f"COMPACT {spent[0]:.4f}", file=sys.stderr)
"""


def size_on_disk(path: str) -> int:
    if os.path.isdir(path):
        return sum(
            os.path.getsize(os.path.join(root, f))
            for root, _, files in os.walk(path)
            for f in files
        )
    return sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm") if os.path.exists(path + s))


def embed(site: str, index: str, arm: str = "default") -> tuple[float, float]:
    """One whole ``ragsift embed`` process: (wall seconds, seconds in ``compact``)."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", LAUNCHER, arm, "embed", site, "--index", index],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"embed failed ({out.returncode}): {out.stderr[-2000:]}")
    compact = [ln for ln in out.stderr.splitlines() if ln.startswith("COMPACT ")]
    return wall, float(compact[-1].split()[1]) if compact else float("nan")


def info(index: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "ragsift", "info", "--index", index, "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    return json.loads(out.stdout)


def make_site(dest: str, source: str | None, pages: int) -> str:
    if source is None:
        source = HANDBOOK if os.path.isdir(HANDBOOK) else os.path.join(REPO, "docs")
    files = sorted(f for f in os.listdir(source) if os.path.isfile(os.path.join(source, f)))
    os.makedirs(dest)
    for f in files[:pages]:
        shutil.copy(os.path.join(source, f), dest)
    return source


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--site", default=None, help="a folder of pages (default: see above)")
    ap.add_argument("--pages", type=int, default=24)
    ap.add_argument(
        "--arms",
        default="sqlite,lance,every-run,old",
        help="which of sqlite, lance, every-run (the data rewritten by every run), old (and "
        "the one-hour window of versions: before issue 40) to run",
    )
    args = ap.parse_args()
    load0 = open("/proc/loadavg").read().split()[:3]
    root = tempfile.mkdtemp(prefix="ragsift-compaction-")
    try:
        site = os.path.join(root, "site")
        source = make_site(site, args.site, args.pages)
        page = os.path.join(site, sorted(os.listdir(site))[0])
        every = {  # name: (index, the schedule its runs use, its --arms name)
            "sqlite": (os.path.join(root, "i.db"), "default", "sqlite"),
            "lance": (os.path.join(root, "i.lance"), "default", "lance"),
            "lance, data rewritten every run": (
                os.path.join(root, "every.lance"),
                "every-run",
                "every-run",
            ),
            "lance, before (1-hour window)": (os.path.join(root, "old.lance"), "old", "old"),
        }
        wanted = set(args.arms.split(","))
        if wanted & {"every-run", "old"}:
            wanted.add("lance")  # their fresh build is the lance arm's, copied
        arms = {k: (i, a) for k, (i, a, n) in every.items() if n in wanted}
        print(f"site: {len(os.listdir(site))} pages of {source}; edited page: {page}")
        rows: dict[str, dict] = {}
        for name, (index, arm) in arms.items():
            lance_fresh = os.path.join(root, "i.lance")
            if index.endswith(".lance") and index != lance_fresh:
                shutil.copytree(lance_fresh, index)  # the same fresh build
                wall = float("nan")
            else:
                wall, _ = embed(site, index, arm)
            rows[name] = {"fresh": size_on_disk(index), "sizes": [], "walls": [], "compact": []}
            print(f"{name}: fresh build {rows[name]['fresh']:,} bytes ({wall:.1f} s)")
        for i in range(args.runs):
            with open(page, "a", encoding="utf-8") as fh:
                fh.write(f"\n<p>One more line, run {i + 1}.</p>\n")
            for name, (index, arm) in arms.items():  # side by side, same edit
                wall, compact = embed(site, index, arm)
                r = rows[name]
                r["sizes"].append(size_on_disk(index))
                r["walls"].append(wall)
                r["compact"].append(compact)
        fresh_end = {}
        for kind in sorted({os.path.splitext(i)[1] for i, _ in arms.values()}):
            again = os.path.join(root, "fresh-end" + kind)
            embed(site, again)
            fresh_end[kind] = size_on_disk(again)
        for name, (index, _) in arms.items():
            r = rows[name]
            r["fresh_end"] = fresh_end[os.path.splitext(index)[1]]
            last = r["sizes"][-1]
            extra = ""
            if index.endswith(".lance"):
                got = info(index)
                extra = f"; info: fragments {got['fragments']}, versions {got['versions']}"
            print(
                f"{name}: sizes after each run {[round(s / 1e6, 2) for s in r['sizes']]} MB; "
                f"last {last:,} bytes = {last / r['fresh']:.2f}x the first fresh build, "
                f"{last / r['fresh_end']:.2f}x a fresh build of the edited folder "
                f"({r['fresh_end']:,} bytes), largest {max(r['sizes']) / r['fresh_end']:.2f}x"
                f"{extra}"
            )
            print(
                f"{name}: run wall median {statistics.median(r['walls']):.2f} s, compact "
                f"median {statistics.median(r['compact']):.3f} s "
                f"(max {max(r['compact']):.3f} s; "
                f"{statistics.median(r['compact']) / statistics.median(r['walls']):.1%} of a run)"
            )
        print(
            f"load average before {' '.join(load0)}, after "
            f"{' '.join(open('/proc/loadavg').read().split()[:3])}"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
