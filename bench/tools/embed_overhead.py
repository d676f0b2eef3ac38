"""CPU that `ragsift embed` spends besides the model, against the model-only script (issue 13,
target 2).

    .venv/bin/python -m bench.tools.embed_overhead [--rounds 9] [--baseline SRC] [CORPUS]

Each row is a new process whose ONNX runs are replaced by zeros (``OnnxEmbedder._run_batch``;
everything else is real: imports, model and session load, parsing, chunking, tokenizing,
hashing, SQLite writes), so its CPU time (user+sys) is the work the model does not do; this
is far less sensitive to other people's load than wall time. Rows: ``embed`` of CORPUS
(default ../shared/eval/chroma-dev/corpora) into a fresh index, the same with the ragsift
tree at SRC (``--baseline``, e.g. ``git archive main ragsift | tar -x -C SRC``), and the
bench's model script (``bench_commands.MODEL_SCRIPT``: load the embedder, embed the chunk
texts ``embed`` would embed). Rounds alternate; medians and minima are printed with the load
average. The padding of the model batches (tokens the model runs, real + padding) is counted
in the same processes: a model batch's cost follows its padded size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("RAGSIFT_SHARED_EVAL", REPO.parent / "shared" / "eval"))


def child(kind: str, corpus: str, work: Path) -> None:
    from ragsift.embedders import onnx

    padded = [0]

    def zeros(self, batch, session, np):  # the model's work left out: only its cost is wanted
        padded[0] += max(len(x) for x in batch) * len(batch)
        return np.zeros((len(batch), self.dimensions), np.float32)

    onnx.OnnxEmbedder._run_batch = zeros
    if kind == "embed":
        sys.argv = [
            "ragsift",
            "embed",
            corpus,
            "--index",
            str(work / f"i{os.getpid()}.db"),
            "--quiet",
        ]
        from ragsift.cli import main

        try:
            main()
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
    else:
        from ragsift.embedders import load_embedder

        with open(work / "texts.jsonl", encoding="utf-8") as fh:
            texts = [json.loads(line)["text"] for line in fh]
        load_embedder().embed(texts, kind="passage")
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu": ru.ru_utime + ru.ru_stime, "padded": padded[0]}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(SHARED / "chroma-dev" / "corpora"))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--baseline", default="")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--work", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.corpus, Path(args.work))
        return 0
    # byte-compiled first (as bench_commands.py does): with PYTHONDONTWRITEBYTECODE set, an
    # uncompiled tree is compiled again by every process (~0.06 CPU s here)
    import compileall

    import ragsift

    for src in [Path(ragsift.__file__).parent] + (
        [Path(args.baseline) / "ragsift"] if args.baseline else []
    ):
        compileall.compile_dir(str(src), quiet=1)
    with tempfile.TemporaryDirectory(prefix="ragsift-overhead-") as d:
        work = Path(d)
        code = (
            "import json, sys\nfrom ragsift.ingest import default_embed_chunker, iter_chunks\n"
            "with open(sys.argv[2], 'w') as f:\n"
            "    for r in iter_chunks([sys.argv[1]], default_embed_chunker()):\n"
            "        f.write(json.dumps({'text': r['context'] + r['text']}) + '\\n')\n"
        )
        subprocess.run(
            [sys.executable, "-c", code, args.corpus, str(work / "texts.jsonl")], check=True
        )
        rows = {"embed": ("embed", None), "model": ("model", None)}
        if args.baseline:
            rows["embed-base"] = ("embed", str(Path(args.baseline).resolve()))
        load0 = Path("/proc/loadavg").read_text().split()[:3]
        got: dict[str, list[dict]] = {k: [] for k in rows}
        for r in range(args.rounds):
            names = list(rows)
            for name in names[r % len(names) :] + names[: r % len(names)]:
                kind, src = rows[name]
                env = {**os.environ, **({"PYTHONPATH": src} if src else {})}
                out = subprocess.run(
                    [sys.executable, __file__, "--child", kind, "--work", str(work), args.corpus],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                got[name].append(json.loads(out.strip().splitlines()[-1]))
        load1 = Path("/proc/loadavg").read_text().split()[:3]
    print("| row | CPU s median | min | padded model tokens |\n| --- | ---: | ---: | ---: |")
    for name, runs in got.items():
        cpu = [x["cpu"] for x in runs]
        print(f"| {name} | {statistics.median(cpu):.3f} | {min(cpu):.3f} | {runs[0]['padded']} |")
    print(
        f"\n{args.rounds} alternating rounds, model runs replaced by zeros; load average before "
        f"{' '.join(load0)}, after {' '.join(load1)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
