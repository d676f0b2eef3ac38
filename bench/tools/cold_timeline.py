"""Timeline of one cold `ragsift query` (issue 13, target 3): start and end of the model
load (tokenizer, onnxruntime session), the matrix load, the lexical side and the ranking, with
the thread each ran on, in seconds from interpreter start:

    .venv/bin/python bench/tools/cold_timeline.py "QUERY" INDEX
"""
import sys, time, threading
T0 = time.perf_counter()
ev = []
def wrap(obj, name, label=None):
    f = getattr(obj, name)
    def w(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            ev.append((t - T0, time.perf_counter() - T0, label or name, threading.current_thread().name[:12]))
    setattr(obj, name, w)
import ragsift.retrieval.search as S
import ragsift.retrieval.engine as E
import ragsift.embedders as EM
import ragsift.embedders.onnx as O
import ragsift.index.store as ST
wrap(S, "embedder_for"); wrap(EM, "load_embedder")
wrap(O, "load_tokenizer"); wrap(O.OnnxEmbedder, "_make_session")
wrap(ST.IndexStore, "load"); wrap(S, "lexical_ahead"); wrap(E, "rank")
wrap(S.Searcher, "embed_queries"); wrap(S.Searcher, "__init__", "Searcher()")
sys.argv = ["ragsift", "query", sys.argv[1], "--index", sys.argv[2], "--json"]
from ragsift.cli import main
t_main = time.perf_counter() - T0
import atexit
def report():
    print(f"imports-before-main {t_main:.3f}", file=sys.stderr)
    for s, e, n, th in sorted(ev):
        print(f"{s:7.3f} {e:7.3f} {e-s:6.3f} {th:12s} {n}", file=sys.stderr)
    print(f"end {time.perf_counter()-T0:.3f}", file=sys.stderr)
atexit.register(report)
main()
