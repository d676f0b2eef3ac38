"""Main-thread time of each phase of `ragsift embed` (issue 13, target 2).

Wraps the model runs, the tokenizer, the store writes, the vector look-up, the model load and
the producer queue's waits with timers (main thread only), runs the CLI and prints the sums:

    .venv/bin/python bench/tools/embed_phases.py /tmp/fresh.db [CORPUS]

CORPUS defaults to ../shared/eval/chroma-dev/corpora; the index file must not exist yet.
"""
import sys, time, threading
T0 = time.perf_counter()
acc = {}
def wrap(mod, cls, name):
    obj = getattr(mod, cls) if cls else mod
    f = getattr(obj, name)
    def w(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            if threading.current_thread() is threading.main_thread():
                acc[name] = acc.get(name, 0) + time.perf_counter() - t
    setattr(obj, name, w)
import ragsift.pipeline as P
import ragsift.embedders.onnx as O
import ragsift.index.store as S
wrap(O, "OnnxEmbedder", "_run_batch")
wrap(O, "OnnxEmbedder", "_token_ids")
wrap(S, "IndexStore", "write_documents")
wrap(S, "IndexStore", "compact")
wrap(S, "IndexStore", "vectors_for_hashes")
wrap(P._Run, None, "embedder")
import queue
wrap(queue, "Queue", "get")
corpus = sys.argv[2] if len(sys.argv) > 2 else "../shared/eval/chroma-dev/corpora"
sys.argv = ["ragsift", "embed", corpus, "--index", sys.argv[1], "--quiet"]
from ragsift.cli import main
t_main = time.perf_counter()
try:
    main()
except SystemExit:
    pass
end = time.perf_counter()
print(f"start->main {t_main-T0:.3f} main {end-t_main:.3f}", {k: round(v, 3) for k, v in acc.items()}, file=sys.stderr)
