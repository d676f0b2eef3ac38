"""Pathological inputs against ordinary prose of the same size (issue 23, "super-linear time").

    .venv/bin/python bench/bench_pathological.py [--repeats 2] [--quick] [--out FILE]
        [--depths 150,300,600,1500] [--mbs 1,2,4] [--rows 5000,10000,20000]
    (or .venv/bin/python -m bench.bench_pathological)

Every timing is a whole ``ragsift chunk`` command in a NEW process (what a shell user pays:
imports, tokenizer load, walk, parse, chunk, JSON lines written to a file), best of
``--repeats``; the case and its prose twin run alternately, so load on a shared machine hits
both alike. Inputs are generated in a temporary folder:

- ``nested``: a chain of N nested folders, each holding one small ``.md``; its prose twin
  is the same N files side by side in one folder (same files, same bytes).
- ``one line``: N MB of prose-like words with no newline; ``no spaces``: N MB of letters
  (no space, no newline); their twin is N MB of prose with sentences and paragraphs. Run
  with the default tokenizer (``model``) and with ``--tokenizer cl100k``.
- ``table``: a markdown file that is one table of N rows; its twin is prose ``.md`` of the
  same size; with the default strategy and with ``--strategy markdown``.
- ``json``: N MB of a one-line JSON list of strings written with ASCII escapes
  (``json.dumps``' default) beside N MB of prose.

The table gives seconds, MB/s (input bytes), the ratio to the prose twin's seconds, and the
growth (seconds over the previous size's, next to the size ratio: linear is about equal).
Imports only the standard library; runs ``python -m ragsift`` with this interpreter.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "retrieval", "index", "chunk", "token", "document", "section", "paragraph", "search", "model", "vector", "embedding", "query", "result", "notes", "garden", "honey"]
MB = 1024 * 1024


def prose(n: int, rng: random.Random) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + ". "
        out.append(s)
        size += len(s)
        if rng.random() < 0.2:
            out.append("\n\n")
            size += 2
    return "".join(out)[:n]


def one_line(n: int, rng: random.Random) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def letters(n: int, rng: random.Random) -> str:
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n))


def table(rows: int, rng: random.Random) -> str:
    lines = ["| id | name | value | note |", "|---|---|---:|---|"]
    for i in range(rows):
        lines.append(f"| {i} | {rng.choice(WORDS)} | {rng.randint(0, 99999)} | "
                     f"{rng.choice(WORDS)} {rng.choice(WORDS)} |")
    return "\n".join(lines) + "\n"


def json_strings(n: int, rng: random.Random) -> str:
    import json

    words = [*WORDS, "café", "naïve", "über", "straße"]
    out: list[str] = []
    size = 2
    while size < n:
        s = " ".join(rng.choice(words) for _ in range(12)) + "."
        out.append(s)
        size += len(json.dumps(s)) + 2
    return json.dumps(out)


def small_md(i: int) -> str:
    return f"# Level {i}\n\nSome text at this level of the tree.\n"


def nested(root: Path, depth: int) -> int:
    p = root
    size = 0
    for i in range(depth):
        p = p / "d"
        p.mkdir(parents=True)
        text = small_md(i)
        (p / "a.md").write_text(text, encoding="utf-8")
        size += len(text)
    return size


def remove_nested(root: Path) -> None:
    """Delete a tree made by ``nested`` bottom-up (shutil.rmtree recurses once per level and
    passes Python's recursion limit at about 1,000)."""
    folders = [root]
    while (folders[-1] / "d").is_dir():
        folders.append(folders[-1] / "d")
    for folder in reversed(folders):
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        folder.rmdir()


def flat(root: Path, count: int) -> int:
    root.mkdir(parents=True)
    size = 0
    for i in range(count):
        text = small_md(i)
        (root / f"a{i:05d}.md").write_text(text, encoding="utf-8")
        size += len(text)
    return size


def run_chunk(args: list[str], out: Path) -> float:
    cmd = [sys.executable, "-m", "ragsift", "chunk", *args]
    with open(out, "wb") as sink:
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, stdout=sink, stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}: "
                         f"{proc.stderr.decode(errors='replace').strip()}")
    return elapsed


def best_pair(case: list[str], twin: list[str], out: Path, repeats: int) -> tuple[float, float]:
    a: list[float] = []
    b: list[float] = []
    for r in range(repeats):  # alternate, order rotating, so load hits both alike
        pair = [(case, a), (twin, b)] if r % 2 == 0 else [(twin, b), (case, a)]
        for args, times in pair:
            times.append(run_chunk(args, out))
    return min(a), min(b)


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="two smaller sizes per case")
    ap.add_argument("--out", type=Path, help="also write the table here")
    ap.add_argument("--depths", help="comma-separated folder depths [150,300,600,1500]")
    ap.add_argument("--mbs", help="comma-separated one-line sizes in MB [1,2,4]")
    ap.add_argument("--rows", help="comma-separated table rows [5000,10000,20000]")
    ap.add_argument("--cases", default="nested,line,table,json",
                    help="comma-separated subset of nested,line,table,json")
    opts = ap.parse_args()
    rng = random.Random(23)
    # shutil.rmtree recurses once per folder level: the temporary folder holds 1,500 of them
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))

    def sizes(given: str | None, full: list[int]) -> list[int]:
        if given:
            return [int(x) for x in given.split(",")]
        return full[:2] if opts.quick else full

    depths = sizes(opts.depths, [150, 300, 600, 1500])
    mbs = sizes(opts.mbs, [1, 2, 4])
    rows_list = sizes(opts.rows, [5000, 10000, 20000])
    before = loadavg()
    rows: list[tuple[str, str, int, float, float]] = []  # case, size label, bytes, t, t_twin

    with tempfile.TemporaryDirectory(prefix="ragsift-patho-") as tmp:
        d = Path(tmp)
        out = d / "out.jsonl"
        cases = set(opts.cases.split(","))
        for depth in depths if "nested" in cases else []:
            size = nested(d / f"nest{depth}", depth)
            flat(d / f"flat{depth}", depth)
            t, tw = best_pair([str(d / f"nest{depth}")], [str(d / f"flat{depth}")], out,
                              opts.repeats)
            rows.append(("nested folders (vs the same files in one folder)", f"{depth} levels",
                         size, t, tw))
            remove_nested(d / f"nest{depth}")
        for mb in mbs if cases & {"line", "json"} else []:
            n = mb * MB
            (d / f"prose{mb}.txt").write_text(prose(n, rng), encoding="utf-8")
            (d / f"line{mb}.txt").write_text(one_line(n, rng), encoding="utf-8")
            (d / f"letters{mb}.txt").write_text(letters(n, rng), encoding="utf-8")
        for tok in ([], ["--tokenizer", "cl100k"]) if "line" in cases else []:
            label = " ".join(tok) or "default tokenizer"
            for name, stem in (("one line, words", "line"), ("one line, no spaces", "letters")):
                for mb in mbs:
                    t, tw = best_pair([*tok, str(d / f"{stem}{mb}.txt")],
                                      [*tok, str(d / f"prose{mb}.txt")], out, opts.repeats)
                    rows.append((f"{name} ({label})", f"{mb} MB", mb * MB, t, tw))
        for mb in mbs if "json" in cases else []:
            (d / f"strings{mb}.json").write_text(json_strings(mb * MB, rng), encoding="utf-8")
            size = (d / f"strings{mb}.json").stat().st_size
            t, tw = best_pair([str(d / f"strings{mb}.json")], [str(d / f"prose{mb}.txt")], out,
                              opts.repeats)
            rows.append(("one-line JSON list of strings, ASCII escapes", f"{mb} MB", size, t, tw))
        for n_rows in rows_list if "table" in cases else []:
            text = table(n_rows, rng)
            (d / f"table{n_rows}.md").write_text(text, encoding="utf-8")
            (d / f"tprose{n_rows}.md").write_text(prose(len(text), rng), encoding="utf-8")
        for strategy in ([], ["--strategy", "markdown"]) if "table" in cases else []:
            label = " ".join(strategy) or "default strategy"
            for n_rows in rows_list:
                size = (d / f"table{n_rows}.md").stat().st_size
                t, tw = best_pair([*strategy, str(d / f"table{n_rows}.md")],
                                  [*strategy, str(d / f"tprose{n_rows}.md")], out, opts.repeats)
                rows.append((f"one giant table ({label})", f"{n_rows} rows", size, t, tw))
    after = loadavg()

    lines = [
        (f"`{' '.join([os.path.relpath(sys.executable), *sys.argv])}` - best of "
         f"{opts.repeats}, whole `ragsift chunk` processes; load average before: {before}; "
         f"after: {after}"),
        "",
        "| case | size | input MB | s | MB/s | prose twin s | x prose | growth (size x) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    prev: dict[str, tuple[int, float]] = {}
    for case, label, size, t, tw in rows:
        growth = ""
        if case in prev:
            psize, pt = prev[case]
            growth = f"{t / pt:.2f} ({size / psize:.2f})"
        prev[case] = (size, t)
        lines.append(f"| {case} | {label} | {size / MB:.2f} | {t:.2f} | {size / MB / t:.2f} | "
                     f"{tw:.2f} | {t / tw:.2f} | {growth} |")
    report = "\n".join(lines) + "\n"
    sys.stdout.write(report)
    if opts.out:
        opts.out.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
