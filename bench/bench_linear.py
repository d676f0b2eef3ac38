"""Time linear in the input (issue 40, item 4): each pathological input at sizes n, 2n and 4n,
each a whole process, so the slope shows (linear: the time doubles with the size; quadratic:
it goes 4x).

    .venv/bin/python -m bench.bench_linear [--repeats 1] [--out FILE]
        [--cases terms,path,word,letters,attr,attr-b64,query,query-word]

Cases (inputs generated in a temporary folder; ``--sizes CASE=a,b,c`` overrides a sweep):

- ``terms``: ``terms_text`` (the identifier and CJK terms an index stores beside a chunk) of
  one word of n random letters, in a fresh process (``python -c``: import and read included);
- ``path``: the same of one qualified name of n/2 segments (``a/b/c/...``, ``x.y.z``);
- ``word``: ``ragsift embed`` of a ``.txt`` holding one word of n random letters (a new
  index each time: walk, read, chunk, embed, index);
- ``letters``: ``ragsift embed`` of a ``.txt`` of n times the letter ``a``;
- ``attr``: ``ragsift embed`` of a markdown file whose one paragraph holds an HTML element
  with an attribute value of n random letters (``<img src="...">``); ``attr-b64`` the same
  with n characters of base64 (an inlined image: letters, digits, ``+`` and ``/``). From
  1 MiB in one line the markdown reader's block bound reads the whole file as plain text
  (one warning); its raw HTML is still reduced (markdown reader 5), so the value is neither
  chunked nor embedded (before: 1,470 chunks, 751,654 cl100k tokens at 1 MiB of base64);
- ``query``: ``ragsift query`` with a query of n characters (prose-like words; and
  ``query-word``: one word of n letters) against a small index built once (the fixtures'
  beekeeping folder): read, cut to ``ragsift.retrieval.search.MAX_QUERY_CHARS`` with one
  warning, embed, search.

Each row: the command's wall and CPU seconds (the child's user + system time, every thread:
what a loaded shared machine disturbs least; the run of ``--repeats`` with the least CPU),
its exit status, and the CPU growth over the previous size (beside the size ratio). Imports only the standard
library; runs ``python -m ragsift`` with this interpreter.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KB = 1024
MB = 1024 * KB
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
    "search",
    "model",
    "vector",
    "honey",
]

SIZES = {  # per case: n, 2n, 4n
    "terms": (16 * KB, 32 * KB, 64 * KB),
    "path": (64 * KB, 128 * KB, 256 * KB),
    "word": (16 * KB, 32 * KB, 64 * KB),
    "letters": (5 * MB // 4, 5 * MB // 2, 5 * MB),
    "attr": (MB, 2 * MB, 4 * MB),
    "attr-b64": (MB + KB, 2 * MB + KB, 4 * MB + KB),
    "query": (25_000, 50_000, 100_000),
    "query-word": (25_000, 50_000, 100_000),
}
TERMS = (
    "import sys; from ragsift.index.terms import terms_text; "
    "terms_text(open(sys.argv[1], encoding='utf-8').read())"
)


def letters(n: int, rng: random.Random) -> str:
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n))


def words(n: int, rng: random.Random) -> str:
    out, size = [], 0
    while size < n:
        out.append(rng.choice(WORDS))
        size += len(out[-1]) + 1
    return " ".join(out)[:n]


def base64(n: int, rng: random.Random) -> str:
    """n characters of base64 (letters, digits, ``+`` and ``/``): an inlined image."""
    import base64 as b64

    return b64.b64encode(rng.randbytes(n * 3 // 4 + 3)).decode()[:n]


def qualified(n: int, rng: random.Random) -> str:
    parts, size = [], 0
    while size < n:
        parts.append(rng.choice("abcdefgh"))
        size += 2
    return "".join(p + rng.choice("/./") for p in parts)[: n - 1] + "z"


def _run(cmd: list[str], cwd: Path) -> tuple[float, float, int, list[str]]:
    """(wall seconds, CPU seconds of the child, exit status, its last stderr line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode, proc.stderr.strip().splitlines()[-1:]


def measure(
    case: str, n: int, work: Path, index: Path, repeats: int
) -> tuple[float, float, int, str]:
    rng = random.Random(40 + n)
    ragsift = [sys.executable, "-m", "ragsift"]
    folder = work / f"{case}-{n}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    if case in ("terms", "path"):
        src = folder / "text.txt"
        src.write_text(letters(n, rng) if case == "terms" else qualified(n, rng))
        cmd = [sys.executable, "-c", TERMS, str(src)]
    elif case in ("word", "letters", "attr", "attr-b64"):
        docs = folder / "docs"
        docs.mkdir()
        if case == "word":
            (docs / "word.txt").write_text(letters(n, rng) + "\n")
        elif case == "letters":
            (docs / "letters.txt").write_text("a" * n + "\n")
        else:
            value = letters(n, rng) if case == "attr" else base64(n, rng)
            (docs / "attr.md").write_text(
                '# A page\n\nSome text before, and <img alt="a picture" src="'
                + value
                + '"> after it.\n\nA last paragraph.\n'
            )
        cmd = [*ragsift, "embed", str(docs), "--index", str(folder / "i.db")]
    else:
        query = words(n, rng) if case == "query" else letters(n, rng)
        cmd = [*ragsift, "query", query, "--index", str(index), "--threshold", "none"]
    best = None
    for _ in range(repeats):
        for leftover in folder.glob("i.db*"):
            leftover.unlink()
        got = _run(cmd, folder)
        best = got if best is None or got[1] < best[1] else best
    return best[0], best[1], best[2], (best[3] or [""])[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cases", default=",".join(SIZES))
    ap.add_argument(
        "--sizes",
        action="append",
        default=[],
        help="CASE=a,b,c: another sweep for one case (characters)",
    )
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    sizes = dict(SIZES)
    for spec in args.sizes:
        case, _, values = spec.partition("=")
        sizes[case] = tuple(int(v) for v in values.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-linear-") as tmp:
        work = Path(tmp)
        index = work / "small.db"
        cases = args.cases.split(",")
        if any(c.startswith("query") for c in cases):
            docs = REPO / "fixtures" / "beekeeping"
            proc = subprocess.run(
                [sys.executable, "-m", "ragsift", "embed", str(docs), "--index", str(index)],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                sys.exit(f"building the small index failed: {proc.stderr}")
        lines = [
            f"load before: {os.getloadavg()}",
            "",
            (
                "| case | size (chars) | wall s | CPU s | exit | CPU growth (size x) | "
                "last stderr line |"
            ),
            "|---|---:|---:|---:|---:|---|---|",
        ]
        print("\n".join(lines), flush=True)
        for case in cases:
            prev = None
            for n in sizes[case]:
                wall, cpu, rc, err = measure(case, n, work, index, args.repeats)
                growth = f"{cpu / prev[1]:.2f} ({n / prev[0]:.2f})" if prev else ""
                row = f"| {case} | {n:,} | {wall:.2f} | {cpu:.2f} | {rc} | {growth} | {err[:90]} |"
                print(row, flush=True)
                lines.append(row)
                prev = (n, cpu)
        lines += ["", f"load after: {os.getloadavg()}"]
        print(lines[-1])
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
