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

from tests.conftest import REPO, run_cli

pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")
moto_server = pytest.importorskip("moto.server", reason="needs: pip install 'moto[server]'")

BUCKET = "ragsift-test"


@pytest.fixture(scope="module")
def s3_env():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        assert host == "127.0.0.1"
        env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
               "AWS_ALLOW_HTTP": "true"}
        import boto3

        boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                     aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket=BUCKET)
        yield env
    finally:
        server.stop()


READER = textwrap.dedent("""
    import sys
    import numpy as np
    from ragsift.index.store import IndexStore

    with IndexStore.open(sys.argv[1]) as r:
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
        proc = run_cli("embed", "docs", "--index", index, "--json", *args, cwd=tmp_path,
                       env=s3_env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    s = embed()
    assert s["parsed"] == 2 and s["embedded"] == s["chunks"] > 0
    s = embed()
    assert (s["unchanged"], s["parsed"], s["model_loaded"]) == (2, 0, False)

    # a second process holds a snapshot while this one commits a change
    env = {**os.environ, **s3_env, "PYTHONPATH": str(REPO)}
    reader = subprocess.Popen([sys.executable, "-c", READER, index], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=tmp_path)
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
    assert during == {"count": first["count"], "records": first["count"],
                      "paths": first["paths"]}
    assert after["paths"] == ["docs/bees.md", "docs/tides.txt"]

    info = run_cli("info", "-i", index, "--json", "--check", cwd=tmp_path, env=s3_env)
    assert info.returncode == 0, info.stderr
    got = json.loads(info.stdout)
    assert got["documents"] == 2 and got["problems"] == [] and got["size_bytes"] > 0
    proc = run_cli("query", "crabs in rock pools", "-i", index, "--mode", "hybrid", "--json",
                   cwd=tmp_path, env=s3_env)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in proc.stdout.splitlines()]
    assert rows[0]["path"] == "docs/tides.txt" and rows[0]["admitted"]
    assert run_cli("query", "x", "-i", f"s3://{BUCKET}/nothing.lance", cwd=tmp_path,
                   env=s3_env).returncode == 2
