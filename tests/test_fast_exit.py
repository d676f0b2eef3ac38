"""Issue 13: read-only commands end with ``os._exit`` once their output is flushed
(``run_app(fast_exit=)``), skipping the interpreter's teardown. What must still happen does:
all output arrives, the exit code is the command's, ``atexit`` handlers run. A command that
writes an index ends the usual way."""

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
    proc = subprocess.run([sys.executable, "-c", PROBE, str(mark), *args],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "80", "NO_COLOR": "1"})
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


def test_a_write_command_ends_the_usual_way(tmp_path):
    proc, mark = run_probe(tmp_path, "embed", str(FIXTURES / "beekeeping"), "--index",
                           str(tmp_path / "i.sqlite"))
    assert proc.returncode == 0, proc.stderr
    assert (mark.parent / "mark.atexit").read_text() == "ran"
    assert (mark.parent / "mark.teardown").exists()


def test_a_usage_error_keeps_its_exit_code(tmp_path):
    proc, mark = run_probe(tmp_path, "query", "x", "--index", str(tmp_path / "missing.sqlite"))
    assert proc.returncode != 0
    assert proc.stderr.startswith("ragsift: ") and "Traceback" not in proc.stderr
    assert (mark.parent / "mark.atexit").read_text() == "ran"
