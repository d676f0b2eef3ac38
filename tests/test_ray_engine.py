"""``ragsift embed --engine ray`` (ragsift/ingest/ray.py) against a local run: same index
contents, vectors equal (cosine >= 0.9999), an incremental re-run does no model work, a killed
worker is retried without duplicate or lost chunks, and a two-node cluster on loopback.

Real model; Ray local (``num_cpus=2``); every cluster lives on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import RAY_GROUP, REPO, run_cli

HEAVY = ("lance", "lancedb", "pyarrow", "ray")
# one Ray cluster at a time under pytest-xdist (tests/conftest.py, RAY_GROUP)
pytestmark = pytest.mark.xdist_group(RAY_GROUP)


def test_help_and_a_sqlite_run_import_no_scale_module(tmp_path):
    """The extras stay out of start-up: --help and the default SQLite path import none."""
    code = (
        "import sys; from ragsift.cli import app; from typer.testing import CliRunner; "
        "r = CliRunner().invoke(app, ['embed', '--help']); assert r.exit_code == 0; "
        "assert '--engine' in r.output and '--ray-address' in r.output; "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert out.strip() == "[]"
    (tmp_path / "a.txt").write_text("Plain text about honey bees.\n")
    code = (
        "import sys; from ragsift.ingest import BuildRequest, build_index; "
        f"build_index(BuildRequest.of({str(tmp_path / 'i.db')!r}, [{str(tmp_path / 'a.txt')!r}])); "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert out.strip() == "[]"


ray = pytest.importorskip("ray", reason="--engine ray needs: pip install 'ragsift[ray]'")

WORDS = (
    "bees honey swarm bread starter tide crab lantern wick oven loaf flour yeast water "
    "salt sea star anemone queen comb"
).split()


def corpus(root: Path, n: int = 10) -> Path:
    rng = random.Random(5)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        paras = [" ".join(rng.choice(WORDS) for _ in range(45)) + "." for _ in range(5)]
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\n" + "\n\n".join(paras) + "\n")
    (root / "bad.json").write_text("{not json")
    return root


def contents(index: str) -> dict[tuple[str, int], tuple[dict, list[float]]]:
    from ragsift.index import open_index

    with open_index(index) as s:
        assert s.verify() == []
        rowids, matrix = s.load_matrix()
        recs = s.chunk_records(rowids.tolist())
    out = {}
    for rec, vec in zip(recs, matrix):
        d = rec.as_dict()
        for k in ("rowid", "id"):
            d.pop(k)
        key = (Path(rec.path).name, rec.index)
        assert key not in out  # no duplicate chunk
        out[key] = (d, vec)
    return out


def assert_same(a: dict, b: dict) -> None:
    import numpy as np

    assert a.keys() == b.keys() and a
    for key in a:
        ra, va = a[key]
        rb, vb = b[key]
        assert {k: v for k, v in ra.items() if k != "path"} == {
            k: v for k, v in rb.items() if k != "path"
        }
        assert float(np.dot(va, vb)) >= 0.9999, key


def test_same_index_as_a_local_run_and_incremental(local_ray, tmp_path):
    from ragsift.ingest import BuildRequest, build_index

    docs = corpus(tmp_path / "docs")
    local = build_index(BuildRequest.of(str(tmp_path / "local.db"), [str(docs)]))
    for name in ("ray.db", "ray.lance"):
        s = build_index(BuildRequest.of(str(tmp_path / name), [str(docs)], engine="ray"))
        for k in ("discovered", "parsed", "chunks", "embedded", "reused", "tokens"):
            assert getattr(s, k) == getattr(local, k), (name, k)
        assert [x.path for x in s.skipped] == [x.path for x in local.skipped] != []
        assert_same(contents(str(tmp_path / "local.db")), contents(str(tmp_path / name)))
    # incremental: nothing changed -> no model work; one changed file -> only its chunks
    s = build_index(BuildRequest.of(str(tmp_path / "ray.lance"), [str(docs)], engine="ray"))
    assert (s.unchanged, s.parsed, s.embedded, s.model_loaded) == (10, 0, 0, False)
    (docs / "d3.md").write_text("# Doc 3\n\nA completely new paragraph about lanterns.\n")
    (docs / "d4.md").unlink()
    s = build_index(BuildRequest.of(str(tmp_path / "ray.lance"), [str(docs)], engine="ray"))
    assert (s.unchanged, s.parsed, s.removed, s.embedded) == (8, 1, 1, 1)
    assert s.model_loaded


def test_a_killed_worker_is_retried_without_duplicate_or_lost_chunks(tmp_path):
    """A fresh CLI run (its own local Ray) where the first parse task and the first embedding
    actor each kill their worker process once."""
    docs = corpus(tmp_path / "docs")
    ref = run_cli("embed", str(docs), "--index", str(tmp_path / "local.db"), "--json")
    kills = tmp_path / "kills"
    kills.mkdir()
    proc = run_cli(
        "embed",
        str(docs),
        "--index",
        str(tmp_path / "k.lance"),
        "--engine",
        "ray",
        "--json",
        env={"RAGSIFT_RAY_KILL_ONCE": str(kills)},
    )
    assert proc.returncode == ref.returncode == 3, proc.stderr  # bad.json skipped on both
    assert sorted(os.listdir(kills)) == ["killed-embed", "killed-parse"]
    got, want = json.loads(proc.stdout), json.loads(ref.stdout)
    assert (got["chunks"], got["embedded"]) == (want["chunks"], want["embedded"])
    assert_same(contents(str(tmp_path / "local.db")), contents(str(tmp_path / "k.lance")))


def test_the_local_cluster_runs_its_workers_at_the_commands_priority():
    """Ray's default worker niceness is 15: on a busy machine such workers starved (a killed
    worker's retry waited minutes under load 6). The local cluster ragsift starts for `embed
    --engine ray` runs at the command's own niceness; an explicit RAY_worker_niceness wins."""
    code = textwrap.dedent("""
        import os
        from ragsift.ingest.ray import connect
        ray = connect(None)
        @ray.remote
        def nice():
            return os.nice(0)
        print(os.nice(0), ray.get(nice.remote()))
        ray.shutdown()
    """)
    env = {k: v for k, v in os.environ.items() if k != "RAY_worker_niceness"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    driver, worker = out.stdout.split()
    assert worker == driver
    env["RAY_worker_niceness"] = "7"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == "7"


TWO_NODES = textwrap.dedent("""
    import json, sys
    import ray
    from ray.cluster_utils import Cluster
    from ragsift.ingest import BuildRequest, build_index
    from ragsift.ingest import ray_stages

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                      "node_ip_address": "127.0.0.1", "include_dashboard": False})
    cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    import numpy as np

    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    head = ray.get_runtime_context().get_node_id()
    # the embedding actor pinned to the second node: it runs there and answers over loopback
    other = next(n for n in nodes if n != head)
    actor = ray.remote(ray_stages.EmbedActor).options(
        num_cpus=1, scheduling_strategy=NodeAffinitySchedulingStrategy(other, soft=False)
    ).remote(None, {}, 1)
    out = ray.get(actor.__call__.remote({"hash": np.array(["a"]), "context": np.array([""]),
                                         "text": np.array(["honey bees swarm"])}))
    ray.kill(actor)
    s = build_index(BuildRequest.of(sys.argv[2], [sys.argv[1]], engine="ray",
                                    ray_address=cluster.address))
    print(json.dumps({"nodes": len(nodes), "actor_node_is_other": str(out["node"][0]) == other,
                      "vector": out["vector"][0].tolist(), "chunks": s.chunks}))
    ray.shutdown()
    cluster.shutdown()
""")


def test_two_node_cluster_on_loopback(tmp_path):
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2) for a loopback-only namespace")
    probe = subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link set lo up"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(
            "cannot create a network namespace here (needs root or user namespaces): "
            + probe.stderr.strip()
        )
    docs = corpus(tmp_path / "docs", n=4)
    ref = run_cli("embed", str(docs), "--index", str(tmp_path / "local.db"))
    assert ref.returncode == 3, ref.stderr
    script = tmp_path / "two_nodes.py"
    script.write_text(TWO_NODES)
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.run(
        [
            "unshare",
            "-n",
            "sh",
            "-c",
            f'ip link set lo up && exec "{sys.executable}" "{script}" "{docs}" '
            f'"{tmp_path / "two.lance"}"',
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["nodes"] == 2 and got["actor_node_is_other"] and got["chunks"] > 0
    import numpy as np

    from ragsift.embedders import load_embedder

    want = load_embedder().embed(["honey bees swarm"]).vectors[0]
    assert float(want @ np.asarray(got["vector"], np.float32)) >= 0.9999
    assert_same(contents(str(tmp_path / "local.db")), contents(str(tmp_path / "two.lance")))


def test_lance_index_is_written_by_the_workers_not_the_driver(local_ray, tmp_path, monkeypatch):
    """For a Lance index the embedding actors write the chunk rows (vectors included) as Lance
    fragments and return only their metadata; the driver commits them in ONE transaction per
    run. A SQLite index still gets its vectors streamed back. Contents equal a local run's."""
    import lance

    from ragsift.index.lance import LanceIndex
    from ragsift.ingest import BuildRequest, build_index, ray_stages
    from ragsift.ingest import ray as distributed

    docs = corpus(tmp_path / "docs", n=6)
    local = build_index(BuildRequest.of(str(tmp_path / "local.db"), [str(docs)]))
    s = build_index(BuildRequest.of(str(tmp_path / "r.db"), [str(docs)], engine="ray"))
    assert ray_stages.LAST_RUN["vectors_to_driver"] == s.embedded > 0
    assert ray_stages.LAST_RUN["rows_written_by_workers"] == 0
    s = build_index(BuildRequest.of(str(tmp_path / "w.lance"), [str(docs)], engine="ray"))
    assert ray_stages.LAST_RUN["vectors_to_driver"] == 0
    assert ray_stages.LAST_RUN["rows_written_by_workers"] == s.chunks == local.chunks
    assert ray_stages.LAST_RUN["fragments"] >= 1
    assert (s.embedded, s.reused, s.tokens) == (local.embedded, local.reused, local.tokens)
    assert_same(contents(str(tmp_path / "local.db")), contents(str(tmp_path / "w.lance")))
    chunks_uri = str(tmp_path / "w.lance" / "chunks.lance")
    # a changed file: its old rows go, its new chunks are written by the workers, a chunk text
    # the index already holds keeps its vector (written by the driver, no model work for it)
    text = (docs / "d2.md").read_text()
    (docs / "d2.md").write_text(text + "\nA brand new closing line about lanterns.\n")
    s = build_index(BuildRequest.of(str(tmp_path / "w.lance"), [str(docs)], engine="ray"))
    assert (s.parsed, s.unchanged) == (1, 5) and s.embedded >= 1 and s.reused >= 1
    assert ray_stages.LAST_RUN["vectors_to_driver"] == 0
    assert ray_stages.LAST_RUN["rows_written_by_workers"] == s.embedded
    build_index(BuildRequest.of(str(tmp_path / "local.db"), [str(docs)]))
    assert_same(contents(str(tmp_path / "local.db")), contents(str(tmp_path / "w.lance")))
    # a run killed after the workers wrote their fragments, before the commit: the index is
    # as it was (the written files are never referenced), and the next run completes it
    (docs / "d5.md").write_text("# Doc 5\n\nNothing but a short note about crabs.\n")
    version = lance.dataset(chunks_uri).version

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    def data_files() -> set[str]:
        return set(os.listdir(os.path.join(chunks_uri, "data")))

    files = data_files()
    monkeypatch.setattr(LanceIndex, "commit_fragments", killed)
    with pytest.raises(KeyboardInterrupt):
        build_index(BuildRequest.of(str(tmp_path / "w.lance"), [str(docs)], engine="ray"))
    assert ray_stages.LAST_RUN["rows_written_by_workers"] >= 1
    assert lance.dataset(chunks_uri).version == version
    assert data_files() == files  # the workers' files were removed with the interruption
    monkeypatch.undo()
    # refused after the workers wrote (the model the workers loaded is refused): the same
    from ragsift.errors import RagsiftError

    def refused(prints, dims):
        raise RagsiftError("index w.lance holds another model's vectors")

    monkeypatch.setattr(distributed.Pool, "one_model", staticmethod(refused))
    with pytest.raises(RagsiftError, match="another model"):
        build_index(BuildRequest.of(str(tmp_path / "w.lance"), [str(docs)], engine="ray"))
    assert ray_stages.LAST_RUN["rows_written_by_workers"] >= 1
    assert lance.dataset(chunks_uri).version == version and data_files() == files
    monkeypatch.undo()
    with LanceIndex.open(str(tmp_path / "w.lance")) as idx:
        assert idx.verify() == []
    s = build_index(BuildRequest.of(str(tmp_path / "w.lance"), [str(docs)], engine="ray"))
    assert (s.parsed, s.unchanged) == (1, 5)
    build_index(BuildRequest.of(str(tmp_path / "local.db"), [str(docs)]))
    assert_same(contents(str(tmp_path / "local.db")), contents(str(tmp_path / "w.lance")))


def test_a_ray_run_prints_no_restart_notice(tmp_path):
    """Ray's C++ ``core_worker.cc … max_restarts > 0`` line (every Ray Data actor pool logs it,
    ray-project/ray#57733) is not printed by a normal run (issue 41, item 6)."""
    docs = corpus(tmp_path / "docs", n=3)
    proc = run_cli("embed", str(docs), "--index", str(tmp_path / "n.lance"), "--engine", "ray")
    assert proc.returncode == 3, proc.stderr  # bad.json skipped
    assert "core_worker.cc" not in proc.stderr and "max_restarts" not in proc.stderr
    assert "bad.json" in proc.stderr and "3 parsed" in proc.stderr  # the rest is there


def test_the_restart_notice_filter_drops_that_line_only(tmp_path):
    """``restart_notice_dropped``: what C++ writes to fd 2 passes through, in order, except
    the notice; Python's own stderr lines too (no Ray needed: the bytes Ray writes)."""
    code = textwrap.dedent(
        """
        import os, sys
        from ragsift.ingest.ray_stderr import restart_notice_dropped
        with restart_notice_dropped():
            os.write(2, b"[2026-12-05 02:13:08,843 E 1 1] core_worker.cc:2465: Actor with "
                     b"class name: 'MapWorker(MapBatches(EmbedWriteActor))' and ID: 'a5' has "
                     b"constructor arguments in the object store and max_restarts > 0. If ...\\n")
            os.write(2, b"[2026-12-05 02:13:09,001 E 1 1] core_worker.cc:99: a real error\\n")
            print("ragsift: a progress line", file=sys.stderr, flush=True)
            os.write(2, b"no newline at the end")
        print("after", file=sys.stderr)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert proc.stderr == (
        "[2026-12-05 02:13:09,001 E 1 1] core_worker.cc:99: a real error\n"
        "ragsift: a progress line\nno newline at the endafter\n"
    )
