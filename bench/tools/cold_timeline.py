"""Timeline of one cold `ragsift query` (issue 13, target 3): start and end of the model
load (tokenizer, onnxruntime session), the matrix load, the lexical side and the ranking, with
the thread each ran on, in seconds from interpreter start:

    .venv/bin/python -m bench.tools.cold_timeline "QUERY" INDEX
"""

import atexit  # noqa: I001  (bench.tools._timed first: its T0 is the start)
import sys
import time

from bench.tools._timed import T0, timed

import ragsift.embedders as EM
import ragsift.embedders.onnx as O
import ragsift.index.store as ST
import ragsift.retrieval.engine as E
import ragsift.retrieval.search as S

events: list[tuple[float, float, str, str]] = []


def add(start, end, name, thread):
    events.append((start, end, name, thread.name[:12]))


for obj, name in (
    (S, "embedder_for"),
    (EM, "load_embedder"),
    (O, "load_tokenizer"),
    (O.OnnxEmbedder, "_make_session"),
    (ST.IndexStore, "load"),
    (S, "lexical_ahead"),
    (E, "rank"),
    (S.Searcher, "embed_queries"),
):
    timed(obj, name, add)
timed(S.Searcher, "__init__", add, "Searcher()")
sys.argv = ["ragsift", "query", sys.argv[1], "--index", sys.argv[2], "--json"]
from ragsift.cli import main

t_main = time.perf_counter() - T0


def report():
    print(f"imports-before-main {t_main:.3f}", file=sys.stderr)
    for s, e, n, th in sorted(events):
        print(f"{s:7.3f} {e:7.3f} {e - s:6.3f} {th:12s} {n}", file=sys.stderr)
    print(f"end {time.perf_counter() - T0:.3f}", file=sys.stderr)


atexit.register(report)
main()
