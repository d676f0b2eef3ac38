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
- ``rst`` (issue 30): N MB of reStructuredText (``--rst-mbs``, 1,4,10) beside the same bytes
  as ``.txt``: a Sphinx-like page (sections and subsections every ~1 KB, lists, code blocks,
  notes, roles) and the prose above (no markup).
- ``bounds`` (issue 30): one table of N rows (``--table-rows``, 2k,3.9k,4k,25k,100k) as an
  rst simple table and as a markdown table (after a heading, so markdown-it runs), each
  beside prose of the same size; and deep nesting (rst and markdown lists, HTML elements,
  JSON arrays). Memory columns: the command's peak RSS, and the parse's own peak (a fresh
  process that reads the file with ``load_document`` under ``tracemalloc``: the bytes
  allocated at the peak, imports before), with its ratio to the file's bytes. A third table
  gives, for each of these files, the parse peak of its floor: prose of the same size in the
  same format (a JSON string for ``.json``), read the same way, and the peak's excess over
  it against the file's bytes: what grows with the rows or the levels, not what any file of
  that format costs (docutils' ~70 KB for any ``.rst``: a 1 KB file is ~70x that alone).

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

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "retrieval",
    "index",
    "chunk",
    "token",
    "document",
    "section",
    "paragraph",
    "search",
    "model",
    "vector",
    "embedding",
    "query",
    "result",
    "notes",
    "garden",
    "honey",
]
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
        lines.append(
            f"| {i} | {rng.choice(WORDS)} | {rng.randint(0, 99999)} | "
            f"{rng.choice(WORDS)} {rng.choice(WORDS)} |"
        )
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


def sphinx_rst(n: int, rng: random.Random) -> str:
    """A Sphinx-like page of about ``n`` characters: a section every ~1 KB with one to three
    subsections, lists, code blocks, notes and roles."""

    def paragraph() -> str:
        words = " ".join(prose(rng.randint(200, 500), rng).split())
        lines, line = [], ""
        for w in words.split(" "):
            if line and len(line) + len(w) > 88:
                lines.append(line)
                line = w
            else:
                line = f"{line} {w}".strip()
        return "\n".join([*lines, line])

    parts: list[str] = []
    size = k = 0
    while size < n:
        k += 1
        title = f"Section {k}: {rng.choice(WORDS)}"
        block = [title, "=" * len(title), "", paragraph(), ""]
        for j in range(rng.randint(1, 3)):
            sub = f"Part {k}.{j} {rng.choice(WORDS)}"
            block += [
                sub,
                "-" * len(sub),
                "",
                paragraph(),
                "",
                f"See :func:`{rng.choice(WORDS)}_{k}` and ``{rng.choice(WORDS)}``.",
                "",
            ]
            r = rng.random()
            if r < 0.3:
                block += [f"* {rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(3)] + [""]
            elif r < 0.5:
                block += [
                    ".. code-block:: python",
                    "",
                    f"    def f{k}_{j}(x):",
                    "        return x + 1",
                    "",
                ]
            elif r < 0.6:
                block += [".. note::", "", "   " + paragraph().replace("\n", "\n   "), ""]
            block += [paragraph(), ""]
        text = "\n".join(block) + "\n"
        parts.append(text)
        size += len(text)
    return "".join(parts)[:n]


def rst_table(rows: int, rng: random.Random) -> str:
    lines = [
        "Data",
        "====",
        "",
        "=======  ==========  =======",
        "id       name        value",
        "=======  ==========  =======",
    ]
    lines += [f"{i:<7}  {rng.choice(WORDS):<10}  {rng.randint(0, 99999)}" for i in range(rows)]
    lines.append("=======  ==========  =======")
    return "\n".join(lines) + "\n"


NESTING_DEPTHS = {
    "rst": (10, 20, 30, 60, 120),
    "md": (250_000, 500_000, 1_000_000),
    "html": (100_000, 200_000, 400_000),
    "json": (250_000, 500_000, 1_000_000),
}


def nested(kind: str, depth: int) -> str:
    """``depth`` levels of nesting: rst lists (indented: the bytes grow with the square of
    the depth), markdown block quotes, HTML elements never closed, JSON arrays."""
    if kind == "rst":
        return "".join("  " * i + f"- item {i}\n\n" for i in range(depth))
    if kind == "md":
        return "# Deep\n\n" + "> " * depth + "quoted\n"
    if kind == "html":
        return "<body>" + "<div><p>text " * depth + "\n"
    return "[" * depth + "1" + "]" * depth  # json


def small_md(i: int) -> str:
    return f"# Level {i}\n\nSome text at this level of the tree.\n"


def nested_folders(root: Path, depth: int) -> int:
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


PEAKS: dict[tuple[str, ...], int] = {}  # the last run's peak RSS (bytes) per argument list
WARNINGS: dict[tuple[str, ...], str] = {}  # its warning lines


def run_chunk(args: list[str], out: Path) -> float:
    """Seconds of one ``ragsift chunk ARGS`` in a new process; its peak RSS and warnings are
    kept in ``PEAKS`` and ``WARNINGS``."""
    cmd = [sys.executable, "-m", "ragsift", "chunk", *args]
    with open(out, "wb") as sink, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=sink, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):  # 3: a file was skipped (a bound's outcome for some cases)
        raise SystemExit(f"{' '.join(cmd)}: exit {code}: {stderr.strip()}")
    PEAKS[tuple(args)] = usage.ru_maxrss * 1024  # (KiB on Linux)
    WARNINGS[tuple(args)] = " ".join(
        line for line in stderr.splitlines() if "warning" in line or "skipped " in line
    )
    return elapsed


_PARSE = """
import sys, tracemalloc
from pathlib import Path
from ragsift.sources import SourceFile, load_document
from ragsift.sources.reading import read_path
import ragsift.sources.rst, ragsift.sources.markdown
path = Path(sys.argv[1])
data = read_path(path)
ragsift.sources.rst.parse_rst("x\\n=\\n", "x")  # imports and set-up outside the measure
ragsift.sources.markdown.parse_markdown("# x\\n", "x")
tracemalloc.start()
try:
    load_document(SourceFile(path=path, relpath=path.name, size=len(data), mtime=0.0), data)
except Exception:  # a skipped file (SkipFile): its peak still counts
    pass
print(tracemalloc.get_traced_memory()[1])
"""


def parse_peak(path: Path) -> int:
    """Peak bytes allocated while ``load_document`` reads ``path`` (decoding and parsing; the
    file's bytes and the imports before), by ``tracemalloc`` in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", _PARSE, str(path)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"parse of {path}: {proc.stderr.strip()}")
    return int(proc.stdout.strip())


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
    ap.add_argument("--rst-mbs", help="comma-separated rst sizes in MB [1,4,10]")
    ap.add_argument("--table-rows", help="comma-separated rows [2000,3900,4000,25000,100000]")
    ap.add_argument(
        "--cases",
        default="nested,line,table,json,rst,bounds",
        help="comma-separated subset of nested,line,table,json,rst,bounds",
    )
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
    rst_mbs = sizes(opts.rst_mbs, [1, 4, 10])
    table_rows = sizes(opts.table_rows, [2_000, 3_900, 4_000, 25_000, 100_000])
    before = loadavg()
    rows: list[tuple[str, str, int, float, float]] = []  # case, size label, bytes, t, t_twin
    # issue 30: case, size label, bytes, t, t_twin, peak RSS, twin's, parse peak, warning
    bounded: list[tuple[str, str, int, float, float, int, int, int, str]] = []
    floors: list[tuple[str, str, int, int, int]] = []  # case, size, bytes, peak, floor's

    def pair(case: str, label: str, path: Path, twin: Path, out: Path) -> None:
        t, tw = best_pair([str(path)], [str(twin)], out, opts.repeats)
        bounded.append(
            (
                case,
                label,
                path.stat().st_size,
                t,
                tw,
                PEAKS[(str(path),)],
                PEAKS[(str(twin),)],
                parse_peak(path),
                WARNINGS[(str(path),)],
            )
        )

    floor_rng = random.Random(30)  # (its own: the cases' files stay those of before)

    def floor(path: Path) -> None:
        """The parse peak of prose of ``path``'s size and format beside ``path``'s own."""
        size = path.stat().st_size
        text = prose(size, floor_rng)
        if path.suffix == ".json":
            import json

            text = json.dumps(prose(max(size - 2, 0), floor_rng))
        flat = path.with_name(f"floor-{path.name}")
        flat.write_text(text, encoding="utf-8")
        case, label = bounded[-1][:2]
        floors.append((case, label, size, bounded[-1][7], parse_peak(flat)))

    with tempfile.TemporaryDirectory(prefix="ragsift-patho-") as tmp:
        d = Path(tmp)
        out = d / "out.jsonl"
        cases = set(opts.cases.split(","))
        for depth in depths if "nested" in cases else []:
            size = nested_folders(d / f"nest{depth}", depth)
            flat(d / f"flat{depth}", depth)
            t, tw = best_pair(
                [str(d / f"nest{depth}")], [str(d / f"flat{depth}")], out, opts.repeats
            )
            rows.append(
                ("nested folders (vs the same files in one folder)", f"{depth} levels", size, t, tw)
            )
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
                    t, tw = best_pair(
                        [*tok, str(d / f"{stem}{mb}.txt")],
                        [*tok, str(d / f"prose{mb}.txt")],
                        out,
                        opts.repeats,
                    )
                    rows.append((f"{name} ({label})", f"{mb} MB", mb * MB, t, tw))
        for mb in mbs if "json" in cases else []:
            (d / f"strings{mb}.json").write_text(json_strings(mb * MB, rng), encoding="utf-8")
            size = (d / f"strings{mb}.json").stat().st_size
            t, tw = best_pair(
                [str(d / f"strings{mb}.json")], [str(d / f"prose{mb}.txt")], out, opts.repeats
            )
            rows.append(("one-line JSON list of strings, ASCII escapes", f"{mb} MB", size, t, tw))
        for n_rows in rows_list if "table" in cases else []:
            text = table(n_rows, rng)
            (d / f"table{n_rows}.md").write_text(text, encoding="utf-8")
            (d / f"tprose{n_rows}.md").write_text(prose(len(text), rng), encoding="utf-8")
        for strategy in ([], ["--strategy", "markdown"]) if "table" in cases else []:
            label = " ".join(strategy) or "default strategy"
            for n_rows in rows_list:
                size = (d / f"table{n_rows}.md").stat().st_size
                t, tw = best_pair(
                    [*strategy, str(d / f"table{n_rows}.md")],
                    [*strategy, str(d / f"tprose{n_rows}.md")],
                    out,
                    opts.repeats,
                )
                rows.append((f"one giant table ({label})", f"{n_rows} rows", size, t, tw))
        for mb in rst_mbs if "rst" in cases else []:
            for name, make in (("Sphinx-like", sphinx_rst), ("prose", prose)):
                text = make(mb * MB, rng)
                stem = f"{name[0]}{mb}"
                (d / f"{stem}.rst").write_text(text, encoding="utf-8")
                (d / f"{stem}.txt").write_text(text, encoding="utf-8")
                pair(
                    f"rst, {name} (vs the same bytes as .txt)",
                    f"{mb} MB",
                    d / f"{stem}.rst",
                    d / f"{stem}.txt",
                    out,
                )

        def against_prose(case: str, label: str, path: Path, text: str) -> None:
            """``text`` as ``path`` beside prose ``.txt`` of the same size: a pair row and
            its floor row."""
            twin = path.with_name(path.name + ".prose.txt")
            path.write_text(text, encoding="utf-8")
            twin.write_text(prose(len(text), rng), encoding="utf-8")
            pair(f"{case} (vs prose .txt)", label, path, twin, out)
            floor(path)

        for n_rows in table_rows if "bounds" in cases else []:
            for ext, make in (("rst", rst_table), ("md", None)):
                text = rst_table(n_rows, rng) if make else "# Data\n\n" + table(n_rows, rng)
                against_prose(
                    f"one table, .{ext}", f"{n_rows:,} rows", d / f"bt{n_rows}.{ext}", text
                )
        for kind, depths in NESTING_DEPTHS.items() if "bounds" in cases else []:
            for depth in depths[:2] if opts.quick else depths:
                against_prose(
                    f"deep nesting, .{kind}",
                    f"{depth:,} levels",
                    d / f"deep{depth}.{kind}",
                    nested(kind, depth),
                )
    after = loadavg()

    lines = [
        (
            f"`{' '.join([os.path.relpath(sys.executable), *sys.argv])}` - best of "
            f"{opts.repeats}, whole `ragsift chunk` processes; load average before: {before}; "
            f"after: {after}"
        ),
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
        lines.append(
            f"| {case} | {label} | {size / MB:.2f} | {t:.2f} | {size / MB / t:.2f} | "
            f"{tw:.2f} | {t / tw:.2f} | {growth} |"
        )
    if bounded:
        lines += [
            "",
            "| case | size | input MB | s | twin s | x twin | growth (size x) | peak RSS MB "
            "| twin peak RSS MB | parse peak MB (tracemalloc) | parse x input | read as |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        prev = {}
        for case, label, size, t, tw, peak, tpeak, ppeak, warning in bounded:
            growth = ""
            if case in prev:
                psize, pt = prev[case]
                growth = f"{t / pt:.2f} ({size / psize:.2f})"
            prev[case] = (size, t)
            read_as = (
                "text (past the bound)"
                if "read as plain text" in warning
                else "skipped"
                if "skipped " in warning
                else "parsed"
            )
            lines.append(
                f"| {case} | {label} | {size / MB:.2f} | {t:.2f} | {tw:.2f} | "
                f"{t / tw:.2f} | {growth} | {peak / MB:.0f} | {tpeak / MB:.0f} | "
                f"{ppeak / MB:.1f} | {ppeak / size:.1f} | {read_as} |"
            )
    if floors:
        lines += [
            "",
            "| case | size | input bytes | parse peak KB | floor: same-size prose, same "
            "format, KB | excess KB | excess x input |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for case, label, size, ppeak, fpeak in floors:
            lines.append(
                f"| {case} | {label} | {size:,} | {ppeak / 1024:,.0f} | "
                f"{fpeak / 1024:,.0f} | {(ppeak - fpeak) / 1024:,.0f} | "
                f"{(ppeak - fpeak) / size:.1f} |"
            )
    report = "\n".join(lines) + "\n"
    sys.stdout.write(report)
    if opts.out:
        opts.out.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
