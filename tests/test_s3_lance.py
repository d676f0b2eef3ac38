"""A Lance index in an S3 bucket: moto's S3 server on 127.0.0.1 stands in for the bucket (no
traffic leaves loopback). Create, incremental update, a second process reading a snapshot
while a writer commits, and a hybrid query, all through the CLI with the usual AWS_*
environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import RAY_GROUP, REPO, run_cli

pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")
moto_server = pytest.importorskip("moto.server", reason="needs: pip install 'moto[server]'")

BUCKET = "ragsift-test"
# one Ray cluster at a time under pytest-xdist (tests/conftest.py, RAY_GROUP)
pytestmark = pytest.mark.xdist_group(RAY_GROUP)


@pytest.fixture(scope="module")
def s3_env():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        assert host == "127.0.0.1"
        env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }
        import boto3

        boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=BUCKET)
        yield env
    finally:
        server.stop()


READER = textwrap.dedent("""
    import sys
    import numpy as np
    from ragsift.index import open_index

    with open_index(sys.argv[1]) as r:
        n = r.count()
        print(json.dumps({"count": n, "paths": r.paths()}), flush=True)
        sys.stdin.readline()  # the writer has committed meanwhile
        probe = np.ones((1, r.dimensions()), np.float32)
        hits = r.dense_candidates(probe / np.linalg.norm(probe), 1000)[0]
        recs = r.chunk_records([h for h, _ in hits])
        print(json.dumps({"count": r.count(), "records": len(recs), "paths": r.paths()}),
              flush=True)
        r.refresh()
        print(json.dumps({"count": r.count(), "paths": r.paths()}), flush=True)
""").replace("import sys", "import json, sys", 1)


def test_create_update_concurrent_reader_and_hybrid_query(s3_env, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bees.md").write_text("# Bees\n\nHoneybees swarm in late spring.\n")
    (docs / "bread.txt").write_text("Sourdough needs a starter fed every day.\n")
    index = f"s3://{BUCKET}/team/docs.lance"

    def embed(*args):
        proc = run_cli("embed", "docs", "--index", index, "--json", *args, cwd=tmp_path, env=s3_env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    s = embed()
    assert s["parsed"] == 2 and s["embedded"] == s["chunks"] > 0
    s = embed()
    assert (s["unchanged"], s["parsed"], s["model_loaded"]) == (2, 0, False)

    # a second process holds a snapshot while this one commits a change
    env = {**os.environ, **s3_env, "PYTHONPATH": str(REPO)}
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, index],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        first = json.loads(reader.stdout.readline())
        assert first["paths"] == ["docs/bees.md", "docs/bread.txt"]
        (docs / "tides.txt").write_text("Tide pools hold anemones, crabs and sea stars.\n")
        (docs / "bread.txt").unlink()
        s = embed()
        assert (s["unchanged"], s["parsed"], s["removed"]) == (1, 1, 1)
        out, err = reader.communicate("go\n", timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, err
    during, after = (json.loads(line) for line in out.splitlines())
    # the reader answers across the commit: from its snapshot, or, when the run's compact
    # removed that version (a Lance index keeps the newest only: docs/scale.md), from the
    # newest; never a mix of the two
    assert during["count"] == during["records"], during  # one version: counts and rows agree
    if during["paths"] == first["paths"]:
        assert during["count"] == first["count"], during
    else:
        assert during["paths"] == ["docs/bees.md", "docs/tides.txt"], during
    assert after["paths"] == ["docs/bees.md", "docs/tides.txt"]

    info = run_cli("info", "-i", index, "--json", "--check", cwd=tmp_path, env=s3_env)
    assert info.returncode == 0, info.stderr
    got = json.loads(info.stdout)
    assert got["documents"] == 2 and got["problems"] == [] and got["size_bytes"] > 0
    # no threshold: two short documents give BM25 no idf to speak of (scored as on SQLite)
    proc = run_cli(
        "query",
        "crabs in rock pools",
        "-i",
        index,
        "--mode",
        "hybrid",
        "--json",
        "--threshold",
        "none",
        cwd=tmp_path,
        env=s3_env,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in proc.stdout.splitlines()]
    assert rows[0]["path"] == "docs/tides.txt" and rows[0]["admitted"]
    assert (
        run_cli(
            "query", "x", "-i", f"s3://{BUCKET}/nothing.lance", cwd=tmp_path, env=s3_env
        ).returncode
        == 2
    )


def test_ray_engine_writes_an_s3_index(s3_env, tmp_path):
    """`embed --engine ray` into an s3:// Lance index: the Ray workers write the fragments to the
    bucket with the same AWS_* settings and the driver commits them; the index then answers like
    one built locally, and a rerun finds everything unchanged."""
    pytest.importorskip("ray", reason="the Ray engine needs: pip install 'ragsift[ray]'")
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(
        [
            "bees swarm in late spring",
            "sourdough starters need flour",
            "varroa mites weaken colonies",
            "bread crust browns in ovens",
        ]
    ):
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\n{topic.capitalize()}.\n" * 3)
    index = f"s3://{BUCKET}/ray/docs.lance"
    env = s3_env
    proc = run_cli(
        "embed", "docs", "--index", index, "--engine", "ray", "--json", cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["parsed"] == 4 and s["embedded"] == s["chunks"] > 0
    local = run_cli("embed", "docs", "--index", str(tmp_path / "local.db"), "--json", cwd=tmp_path)
    assert json.loads(local.stdout)["chunks"] == s["chunks"]
    rerun = run_cli(
        "embed", "docs", "--index", index, "--engine", "ray", "--json", cwd=tmp_path, env=env
    )
    assert rerun.returncode == 0, rerun.stderr
    assert (json.loads(rerun.stdout)["unchanged"], json.loads(rerun.stdout)["embedded"]) == (4, 0)

    def hits(idx, extra_env=None):
        q = run_cli(
            "query",
            "when do bees swarm",
            "--index",
            idx,
            "--json",
            "--mode",
            "dense",
            "--threshold",
            "none",
            "-k",
            "4",
            cwd=tmp_path,
            env=extra_env,
        )
        assert q.returncode == 0, q.stderr
        return [(r["path"], r["score"]) for r in map(json.loads, q.stdout.splitlines())]

    got, want = hits(index, s3_env), hits(str(tmp_path / "local.db"))
    assert [p for p, _ in got] == [p for p, _ in want]  # Ray's vectors: cosine >= 0.9999
    assert all(abs(a - b) < 1e-4 for (_, a), (_, b) in zip(got, want))
