"""Issue 13: the commands in ``cli.FAST_EXIT`` (read-only ones, and ``embed``/``rm``, which
commit and close their index before they return) end with ``os._exit`` once their output is
flushed (``run_app(fast_exit=)``), skipping the interpreter's teardown. What must still happen
does: all output arrives, the exit code is the command's, ``atexit`` handlers run, the index
is whole. Any other command ends the usual way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# A module-level object whose destructor marks the interpreter's teardown, and an atexit
# handler: the first must not run on the fast path, the second always.
PROBE = """
import atexit, os, sys
MARK = sys.argv.pop(1)

class Teardown:
    def __del__(self, _os=os, _path=MARK + ".teardown"):  # module globals may be gone by then
        _os.close(_os.open(_path, _os.O_CREAT | _os.O_WRONLY))

KEEP = Teardown()
atexit.register(lambda: open(MARK + ".atexit", "w").write("ran"))
sys.argv[0] = "ragsift"
from ragsift.cli import main
main()
"""


def run_probe(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    mark = tmp_path / "mark"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(mark), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "80", "NO_COLOR": "1"},
    )
    return proc, mark


def test_chunk_output_is_whole_and_the_exit_code_kept_without_teardown(tmp_path):
    proc, mark = run_probe(tmp_path, "chunk", str(FIXTURES))
    assert proc.returncode == 3, proc.stderr  # fixtures/bad: files skipped
    lines = proc.stdout.splitlines()
    assert len(lines) > 10
    assert all(json.loads(line)["id"] for line in lines)  # every line complete JSON
    assert "skipped" in proc.stderr and "chunks" in proc.stderr.splitlines()[-1]
    assert (mark.parent / "mark.atexit").read_text() == "ran"
    assert not (mark.parent / "mark.teardown").exists()


def test_a_large_output_through_a_pipe_is_not_cut(tmp_path):
    # more than a pipe buffer of output, read by a slow-enough reader: os._exit must not run
    # before Python's buffer reached the pipe
    big = tmp_path / "big.txt"
    big.write_text("".join(f"Paragraph {i}. " + "word " * 60 + "\n\n" for i in range(400)))
    proc, _ = run_probe(tmp_path, "chunk", str(big), "--tokenizer", "chars", "--size", "200")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(proc.stdout) > 200_000
    assert "".join(r["text"] for r in rows).count("Paragraph") == 400


def test_embed_leaves_a_whole_index_without_teardown(tmp_path):
    # embed commits and closes its index before it returns: nothing is left for a teardown
    index = tmp_path / "i.sqlite"
    proc, mark = run_probe(
        tmp_path, "embed", str(FIXTURES / "beekeeping"), "--index", str(index), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert (mark.parent / "mark.atexit").read_text() == "ran"
    assert not (mark.parent / "mark.teardown").exists()
    assert not Path(str(index) + "-wal").exists()  # checkpointed and closed
    check = subprocess.run(
        [sys.executable, "-m", "ragsift", "info", "--check", "--json", "--index", str(index)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr
    info = json.loads(check.stdout)
    assert info["chunks"] == summary["chunks"] > 0


def test_a_command_outside_the_list_ends_the_usual_way(tmp_path):
    proc, mark = run_probe(tmp_path, "--help")
    assert proc.returncode == 0, proc.stderr
    assert (mark.parent / "mark.atexit").read_text() == "ran"
    assert (mark.parent / "mark.teardown").exists()


def test_a_usage_error_keeps_its_exit_code(tmp_path):
    proc, mark = run_probe(tmp_path, "query", "x", "--index", str(tmp_path / "missing.sqlite"))
    assert proc.returncode != 0
    assert proc.stderr.startswith("ragsift: ") and "Traceback" not in proc.stderr
    assert (mark.parent / "mark.atexit").read_text() == "ran"
