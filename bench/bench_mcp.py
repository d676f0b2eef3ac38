"""Warm `search` through `ragsift mcp` against the engine's warm query (issue 24).

Both sides answer the same SciFact claims on the same index, in turns, after one warm-up
call each:

- ``engine``: ``ragsift.api.Index.query(claim)`` in this process (query embedding, both
  sides' candidates, the relevance score, the record): what a warm ``query`` costs;
- ``mcp search``: ``client.call_tool("search", {"query": claim})`` through the MCP SDK's
  client to a ``ragsift mcp`` subprocess over stdio: the whole round trip an agent pays
  (JSON-RPC both ways, the server's refresh check, the record and its text rendering).

Index: ``bench/bench_hybrid.py``'s 100,000 chunks of SciFact text with synthetic vectors
(built into ``--work`` if missing), ``--fixtures`` (the repository's ``fixtures/``, embedded
with the real model into ``--work``: the target "a warm ``search`` ≤ 30 ms on the fixtures",
issue 29), or ``--index FILE``.

    .venv/bin/python -m bench.bench_mcp [--queries 30] [--fixtures | --index FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--work", default="/tmp/ragsift-bench-hybrid")
    ap.add_argument("--index", default=None)
    ap.add_argument(
        "--fixtures", action="store_true", help="search an index of the repository's fixtures/"
    )
    args = ap.parse_args()
    from bench.bench_hybrid import build, claims

    if args.index:
        index = Path(args.index)
    elif args.fixtures:
        import ragsift.api as rs

        Path(args.work).mkdir(parents=True, exist_ok=True)
        index = Path(args.work) / "fixtures.db"
        rs.build(index, [REPO / "fixtures"])  # incremental: a no-op once built
    else:
        Path(args.work).mkdir(parents=True, exist_ok=True)
        index = Path(args.work) / f"scifact-windows-{args.chunks}.ragsift"
        build(index, args.chunks)
    queries = claims(args.queries)
    load = os.getloadavg()[0]
    engine, server = asyncio.run(measure(str(index), queries))
    print(
        f"**warm search, {len(queries)} SciFact claims, index {index.name} (load average "
        f"{load:.2f} before, {os.getloadavg()[0]:.2f} after)**\n"
    )
    print("| row | median ms (min–max) |\n| --- | ---: |")
    for name, xs in (("engine: api.Index.query", engine), ("mcp search round trip", server)):
        print(f"| {name} | {statistics.median(xs):.1f} ({min(xs):.1f}–{max(xs):.1f}) |")
    ratio = statistics.median(server) / statistics.median(engine)
    print(
        f"\nmcp / engine (medians): {ratio:.2f}× (target ≤ 1.5×); mcp search median "
        f"{statistics.median(server):.1f} ms (target ≤ 30 ms on the fixtures)"
    )


async def measure(index: str, queries: list[str]) -> tuple[list[float], list[float]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    import ragsift.api as rs

    engine: list[float] = []
    server: list[float] = []
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ragsift", "mcp", "--index", index], cwd=str(REPO)
    )
    with rs.open_index(index) as ix:
        async with Client(params) as client:
            ix.query(queries[0])  # warm: model, matrix, pages
            await client.call_tool("search", {"query": queries[0]})
            for i, q in enumerate(queries):
                for side in (0, 1) if i % 2 else (1, 0):  # alternate who goes first
                    t = time.perf_counter()
                    if side == 0:
                        ix.query(q)
                        engine.append((time.perf_counter() - t) * 1000)
                    else:
                        await client.call_tool("search", {"query": q})
                        server.append((time.perf_counter() - t) * 1000)
    return engine, server


if __name__ == "__main__":
    main()
