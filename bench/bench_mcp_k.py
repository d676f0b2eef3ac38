"""MCP `search` at k=3 and k=50 (issue 41 item 5): the reply's size (text content and the
JSON record) and the warm time of a call, through ``mcp_server.Service`` (the server's calls
without the wire), threshold none so that every k is filled. Usage:

    python bench/bench_mcp_k.py INDEX [QUERY ...]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from ragsift.mcp_server.service import Service
from ragsift.mcp_server.text import search_text

QUERIES = [
    "how do I choose the threshold",
    "what does the MCP server return",
    "exit codes",
    "incremental embed of changed files",
    "hybrid retrieval lexical and dense",
]


def main() -> None:
    index, queries = sys.argv[1], sys.argv[2:] or QUERIES
    service = Service(index, threshold=None)
    service.call("search", {"query": "warm up"})
    for k in (3, 10, 50):
        chars, json_chars, times = [], [], []
        for q in queries:
            start = time.perf_counter()
            record = service.call("search", {"query": q, "k": k})
            times.append(time.perf_counter() - start)
            chars.append(len(search_text(record)))
            json_chars.append(len(json.dumps(record)))
        print(
            f"k={k:>2}: text {statistics.mean(chars):>8,.0f} chars, record "
            f"{statistics.mean(json_chars):>8,.0f} chars, median call "
            f"{statistics.median(times) * 1000:.0f} ms ({len(queries)} queries)"
        )


if __name__ == "__main__":
    main()
