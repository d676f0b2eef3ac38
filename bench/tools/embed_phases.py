"""Main-thread time of each phase of `ragsift embed` (issue 13, target 2).

Wraps the model runs, the tokenizer, the store writes, the vector look-up, the model load and
the producer queue's waits with timers (main thread only), runs the CLI and prints the sums:

    .venv/bin/python -m bench.tools.embed_phases /tmp/fresh.db [CORPUS]

CORPUS defaults to ../shared/eval/chroma-dev/corpora; the index file must not exist yet.
"""

import queue  # noqa: I001  (bench.tools._timed first: its T0 is the start)
import sys
import threading
import time

from bench.tools._timed import T0, timed

import ragsift.embedders.onnx as O
import ragsift.index.store as S
import ragsift.ingest.model as M

acc: dict[str, float] = {}


def add(start, end, name, thread):
    if thread is threading.main_thread():
        acc[name] = acc.get(name, 0) + end - start


for obj, name in (
    (O.OnnxEmbedder, "_run_batch"),
    (O.OnnxEmbedder, "_token_ids"),
    (S.IndexStore, "write_documents"),
    (S.IndexStore, "compact"),
    (S.IndexStore, "vectors_for_hashes"),
    (M.ModelSlot, "embedder"),
    (queue.Queue, "get"),
):
    timed(obj, name, add)
corpus = sys.argv[2] if len(sys.argv) > 2 else "../shared/eval/chroma-dev/corpora"
sys.argv = ["ragsift", "embed", corpus, "--index", sys.argv[1], "--quiet"]
from ragsift.cli import main

t_main = time.perf_counter()
try:
    main()
except SystemExit:
    pass
end = time.perf_counter()
print(
    f"start->main {t_main - T0:.3f} main {end - t_main:.3f}",
    {k: round(v, 3) for k, v in acc.items()},
    file=sys.stderr,
)
