"""A full disk before a run begins (issue 23): exit 4 with one line and nothing left behind
(before: "internal error: OSError: [Errno 28]", exit 2, and an empty lock file). The child
runs under a file-size limit of 0 bytes (RLIMIT_FSIZE, SIGXFSZ ignored), so its first write
to the index's folder fails as a full disk's would, without root or a mount."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys

from tests.conftest import REPO

ENV = {k: v for k, v in __import__("os").environ.items() if k != "RAGSIFT_DEBUG"}


def _no_room() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_no_room_for_the_lock_file_is_exit_4_and_leaves_nothing(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragsift",
            "embed",
            "fixtures/sourdough.rst",
            "--index",
            str(folder / "idx.db"),
        ],
        cwd=REPO,
        preexec_fn=_no_room,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 4, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragsift: cannot write index "), lines
    assert "internal error" not in proc.stderr
    assert list(folder.iterdir()) == []


def test_an_index_deleted_while_embed_runs_is_an_error(tmp_path):
    """The index's folder is removed while `embed -` waits for its input: the run must not end
    with exit 0 and a summary of an index that no longer exists. (Which error it gets
    depends on how far the writer got when the folder went: each is one line naming it.)"""
    import os
    import shutil
    import time

    records = subprocess.run(
        [sys.executable, "-m", "ragsift", "chunk", "fixtures/sourdough.rst"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stdout
    folder = tmp_path / "out"
    folder.mkdir()
    idx = folder / "idx.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragsift", "embed", "-", "--index", str(idx)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    deadline = time.monotonic() + 120  # a bound on the wait for the index, not an outcome
    while not idx.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert idx.exists(), "embed never created its index"
    shutil.rmtree(folder)
    out, err = proc.communicate(records, timeout=300)
    # SQLite may refuse to write the moved file (exit 2 "cannot use index", or exit 4 "disk
    # I/O error"), or every write goes through to the unlinked file and embed's own check
    # says so (exit 4, "was deleted while embed ran"); never exit 0 with a summary of an
    # index that is gone
    assert proc.returncode in (2, 4), err
    lines = err.splitlines()
    assert len(lines) == 1 and str(idx) in lines[0], err
    assert "internal error" not in err and "chunks written" not in err
    assert not os.path.exists(folder)
