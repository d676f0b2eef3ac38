"""Signals and odd states end cleanly (issue 40 item 6; issue 41 item 6): each case is one
``ragsift: ...`` line on stderr and its documented exit code, never a traceback or "internal
error": a second Ctrl-C, a deleted current folder, a project file nested 3,000 levels deep or
holding a NUL, a number of 5,000 digits or a value its option refuses (named by file, line
and key), a ``[tool.ragsift]`` line inside a string of ``pyproject.toml``, an index whose
version setting or settings rows were edited. And ``--watch`` on a terminal says what it
watches and how to stop it.

Real model, real index, real processes. No clock decides an outcome: each test waits on the
child's output lines or the index's state, with a generous deadline only as a hang guard.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from ragsift.errors import RagsiftError
from ragsift.project import find_project, load_project
from tests.conftest import REPO, default_signals, run_cli

DEADLINE = 120.0  # a hang guard, never the outcome


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_DEBUG", "RAGSIFT_INDEX")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _one_line(proc: subprocess.CompletedProcess | tuple[int, str], code: int, *words: str):
    rc, err = (proc.returncode, proc.stderr) if not isinstance(proc, tuple) else proc
    lines = err.splitlines()
    assert rc == code, err
    assert len(lines) == 1 and lines[0].startswith("ragsift: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    for word in words:
        assert word in lines[0], err
    return lines[0]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bees.md").write_text("# Bees\n\nBees swarm in late spring.\n", encoding="utf-8")
    (folder / "honey.md").write_text("# Honey\n\nHoney crystallises in weeks.\n", "utf-8")
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """One index built by the real model, copied by each test that edits it."""
    root = tmp_path_factory.mktemp("built")
    (root / "docs").mkdir()
    (root / "docs" / "bees.md").write_text("# Bees\n\nBees swarm in late spring.\n", "utf-8")
    proc = run_cli("embed", "docs", "-i", "idx.db", "-q", cwd=root, env={"RAGSIFT_NO_PROJECT": "1"})
    assert proc.returncode == 0, proc.stderr
    return root / "idx.db"


# -- Ctrl-C ----------------------------------------------------------------------------------


class Child:
    """A ragsift process started by ``code`` (Python), SIGINT at its default; its stderr
    (or a terminal standing for it) read line by line on a thread."""

    def __init__(self, code: str, cwd: Path, *, tty: bool = False) -> None:
        self.lines: list[str] = []
        self.stdout_lines: list[str] = []
        master = slave = None
        if tty:
            master, slave = os.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=cwd,
            env=_env(RAGSIFT_NO_PROJECT="1"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave if tty else subprocess.PIPE,
            text=not tty,
            preexec_fn=default_signals,
        )
        if tty:
            os.close(slave)
            self.readers = [threading.Thread(target=self._read_tty, args=(master,), daemon=True)]
        else:
            self.readers = [
                threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
            ]
        self.readers.append(
            threading.Thread(
                target=lambda: self.stdout_lines.extend(
                    line if isinstance(line, str) else line.decode() for line in self.proc.stdout
                ),
                daemon=True,
            )
        )
        for r in self.readers:
            r.start()

    def _read_tty(self, fd: int) -> None:
        pending = b""
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], DEADLINE)
                if not ready:
                    return
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # EIO: the child closed its end
                    chunk = b""
                if not chunk:
                    break
                pending += chunk
                *done, pending = pending.split(b"\n")
                self.lines.extend(d.decode(errors="replace").rstrip("\r") + "\n" for d in done)
        finally:
            if pending:
                self.lines.append(pending.decode(errors="replace"))
            os.close(fd)

    def wait_for(self, what: str, test) -> None:
        end = time.monotonic() + DEADLINE
        while not test():
            if self.proc.poll() is not None and all(not r.is_alive() for r in self.readers):
                raise AssertionError(f"exited ({self.proc.returncode}) before {what}: {self.lines}")
            if time.monotonic() > end:
                raise AssertionError(f"gave up waiting for {what}: {self.lines}")
            time.sleep(0.02)

    def line(self, words: str) -> None:
        self.wait_for(repr(words), lambda: any(words in line for line in self.lines))

    def interrupt(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def finish(self) -> tuple[int, str]:
        try:
            self.proc.wait(DEADLINE)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        for r in self.readers:
            r.join(DEADLINE)
        return self.proc.returncode, "".join(self.lines)


def _ragsift(*args: str, before: str = "") -> str:
    """Python code that runs ``ragsift ARGS`` through the console script's entry point."""
    return (
        "import sys\n"
        + textwrap.dedent(before)
        + f"sys.argv = ['ragsift', *{list(args)!r}]\n"
        + "from ragsift.__main__ import main\nmain()\n"
    )


def test_a_second_ctrl_c_while_the_first_is_handled_is_130_and_one_line(tmp_path, docs):
    """The first Ctrl-C ends the watch and says so; the second lands while the process
    exits (here a cleanup that would hang: an ``atexit`` handler registered by the test).
    Before: a KeyboardInterrupt traceback from wherever it landed (the exit's stdout flush:
    death by SIGINT, -2; a cleanup: "Exception ignored" and a traceback). Now the second
    Ctrl-C ends the process at once: 130, the one line."""
    hang = """\
        import atexit, os, threading
        def slow_cleanup():
            os.write(2, b"cleanup\\n")
            threading.Event().wait(600)  # a cleanup that hangs: only Ctrl-C gets past it
        atexit.register(slow_cleanup)
    """
    child = Child(_ragsift("embed", "docs", "-i", "idx.db", "--watch", before=hang), tmp_path)
    try:
        child.line("discovered")  # the initial run's summary: the watch is on
        child.interrupt()
        child.line("cleanup")  # the first Ctrl-C was handled; the exit is under way
        child.interrupt()
        rc, err = child.finish()
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
    assert rc == 130, err
    assert err.splitlines()[-2:] == ["ragsift: interrupted", "cleanup"], err
    assert err.count("interrupted") == 1 and "Traceback" not in err, err


def test_two_ctrl_cs_during_a_watch_run(tmp_path, docs):
    """The issue's case as it happens: two Ctrl-Cs, the second as soon as the first has been
    answered. 130, the summary and one "interrupted" line, nothing else; the index opens."""
    child = Child(_ragsift("embed", "docs", "-i", "idx.db", "--watch"), tmp_path)
    child.line("discovered")
    child.interrupt()
    child.line("interrupted")
    child.interrupt()
    rc, err = child.finish()
    assert rc == 130, err
    assert err.splitlines()[1:] == ["ragsift: interrupted"], err
    check = run_cli("info", "--check", "-i", "idx.db", cwd=tmp_path)
    assert check.returncode == 0, check.stderr


# -- --watch on a terminal ---------------------------------------------------------------------


def _put(folder: Path, name: str, text: str) -> None:
    staging = folder.parent / f"staging-{name}"
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, folder / name)


def _indexed(index: Path) -> set[str]:
    import ragsift.api as api

    if not index.exists():
        return set()
    with api.open_index(index) as ix:
        return {os.path.basename(d.path) for d in ix.documents()}


@pytest.mark.parametrize("flags", [(), ("--quiet",), ("--json",)])
def test_watch_on_a_terminal_says_what_it_watches_and_how_to_stop(tmp_path, docs, flags):
    """After its first summary a watch waits in silence; on a terminal one line says what it
    watches and how to stop it (before: nothing, it looked hung). Not with --quiet or --json
    (nor on a pipe: test_watch.py's Ctrl-C test reads every line of a piped watch)."""
    pytest.importorskip("watchfiles")
    child = Child(_ragsift("embed", "docs", "-i", "idx.db", "--watch", *flags), tmp_path, tty=True)
    try:
        child.wait_for("the initial run", lambda: _indexed(tmp_path / "idx.db") >= {"bees.md"})
        # a later run proves the first one was reported (the status line comes with it)
        _put(docs, "wax.md", "# Wax\n\nBees make wax.\n")
        child.wait_for("the change", lambda: "wax.md" in _indexed(tmp_path / "idx.db"))
        if "--json" in flags:
            child.wait_for("two JSON lines", lambda: len(child.stdout_lines) >= 2)
        elif not flags:
            child.line("watch: 1 changed")
        child.interrupt()
        rc, err = child.finish()
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
    assert rc == 130, err
    status = [line for line in err.splitlines() if "watching" in line]
    if flags:
        assert status == [], err
        return
    assert status == ["ragsift: watching docs for changes (index idx.db); Ctrl-C stops"], err
    # (the progress bar shares the summary's line on a terminal)
    lines = [line[line.index("ragsift: ") :] for line in err.splitlines() if "ragsift: " in line]
    assert "discovered" in lines[0] and lines[1] == status[0], err  # right after the summary


# -- a deleted current folder --------------------------------------------------------------------

COMMANDS = [
    ("init",),
    ("embed", "."),
    ("embed",),
    ("query", "bees"),
    ("explain", "bees"),
    ("ls",),
    ("rm", "x"),
    ("info",),
    ("tune",),
    ("mcp",),
]


def _in_a_deleted_folder(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    gone = tmp_path / "gone"
    gone.mkdir(exist_ok=True)
    code = _ragsift(
        *args,
        before=f"import os\nos.chdir({str(gone)!r})\nos.rmdir({str(gone)!r})\n",
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_a_deleted_current_folder_is_one_line_for_every_command(tmp_path, args):
    """Before: a FileNotFoundError traceback from the project-file search (exit 1), and
    "internal error" from init."""
    proc = _in_a_deleted_folder(tmp_path, *args)
    _one_line(proc, 2, "the current folder no longer exists")


def test_a_command_that_needs_no_folder_still_works_from_a_deleted_one(tmp_path):
    proc = _in_a_deleted_folder(tmp_path, "chunk", str(REPO / "fixtures" / "sourdough.rst"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") >= 1


# -- the project file ------------------------------------------------------------------------


def _project(tmp_path: Path, text: str, name: str = "ragsift.toml") -> Path:
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True, exist_ok=True)
    (site / name).write_text(text, encoding="utf-8")
    return site


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("x = " + "[" * 3000 + "]" * 3000 + "\n", (":1: x: ", "nested 3000 levels deep")),
        (
            'index = "a.db"\nthreshold = ' + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
            (":2: threshold: ", "nested 3000 levels deep"),
        ),
        ('index = "a\\u0000b.db"\n', (":1: index must not hold a NUL character",)),
        ('paths = ["docs", "d\\u0000"]\n', (":1: paths must not hold a NUL character",)),
        ("k = " + "1" * 5000 + "\n", (":1: cannot read a number", "5000 digits")),
    ],
    ids=["array-3000", "inline-table-3000", "nul-index", "nul-paths", "5000-digits"],
)
def test_a_project_file_that_cannot_be_used_is_one_line_with_its_line(tmp_path, text, words):
    """Before: a RecursionError traceback (deep nesting), "internal error: ValueError:
    embedded null byte" (NUL), "internal error: ValueError: Exceeds the limit" (digits)."""
    site = _project(tmp_path, text)
    for args in (("ls",), ("embed",), ("query", "bees")):
        proc = run_cli(*args, cwd=site)
        line = _one_line(proc, 2, str(site / "ragsift.toml"), *words)
        assert len(line) < 300, line


def test_a_deep_pyproject_table_is_one_line(tmp_path):
    site = _project(
        tmp_path,
        "[tool.ragsift]\nk = 3\ninclude = " + "[" * 3000 + "]" * 3000 + "\n",
        name="pyproject.toml",
    )
    proc = run_cli("ls", cwd=site)
    _one_line(proc, 2, "pyproject.toml:3: include: ", "nested 3000 levels deep")


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ('pooling = "max"', "ragsift.toml:3: pooling must be mean or cls, not 'max'"),
        ('pooling = "CLS"', "ragsift.toml:3: pooling must be mean or cls, not 'CLS'"),
        ("max_length = -3", "ragsift.toml:3: max_length must be from 2 to 512 tokens, not -3"),
        ("max_length = 4096", "ragsift.toml:3: max_length must be from 2 to 512 tokens"),
    ],
)
def test_a_value_its_option_refuses_is_named_by_file_line_and_key(tmp_path, setting, words):
    """Before: typer's usage box about --pooling / --max-length, flags the user never typed,
    without the file or its line."""
    site = _project(tmp_path, f'index = "x.db"\npaths = ["docs"]\n{setting}\n')
    for args in (("embed",), ("query", "bees"), ("mcp",)):
        proc = run_cli(*args, cwd=site)
        line = _one_line(proc, 2, words)
        assert "--" not in line and "Usage" not in proc.stderr, proc.stderr


def test_a_table_line_inside_a_pyproject_string_is_not_a_project(tmp_path):
    """Before: the line ``[tool.ragsift]`` of a multi-line string made the file a project file
    (its ``index`` too). Now TOML decides: a real table (or dotted keys) is one, a string is
    not; a file that does not parse but has the table's header line still says why."""
    text = '[project]\nname = "x"\ndescription = """\n[tool.ragsift]\nindex = "zzz.db"\n"""\n'
    site = _project(tmp_path, text, name="pyproject.toml")
    (site / "sub").mkdir()
    assert find_project(site / "sub") is None
    proc = run_cli("info", cwd=site / "sub")
    assert "zzz.db" not in proc.stderr, proc.stderr

    (site / "pyproject.toml").write_text(text + '[tool.ragsift]\nindex = "real.db"\n', "utf-8")
    found = find_project(site / "sub")
    assert found is not None and found.settings["index"] == str(site / "real.db")
    assert found.lines["index"] == 8

    (site / "pyproject.toml").write_text('tool.ragsift.k = 4\n[project]\nname = "x"\n', "utf-8")
    found = find_project(site)
    assert found is not None and found.settings == {"k": 4}

    (site / "pyproject.toml").write_text("[tool]\nragsift = { k = 5 }\n", "utf-8")
    assert find_project(site).settings == {"k": 5}
    (site / "pyproject.toml").write_text('[project]\ndependencies = ["ragsift>=0.6"]\n', "utf-8")
    assert find_project(site) is None

    (site / "pyproject.toml").write_text("[tool.ragsift]\nk = = 4\n", "utf-8")
    with pytest.raises(RagsiftError, match=r"pyproject\.toml:2: "):
        find_project(site)


def test_a_deep_value_within_the_reader_is_shown_short(tmp_path):
    site = _project(tmp_path, "index = " + "[" * 50 + "]" * 50 + "\n")
    with pytest.raises(RagsiftError) as exc:
        load_project(site / "ragsift.toml")
    assert ":1: index must be a path (text), not [[[[" in exc.value.message
    assert len(exc.value.message) < 200


# -- an index edited by hand -------------------------------------------------------------------


def _edited(built: Path, tmp_path: Path, sql: str, *params) -> Path:
    idx = tmp_path / "idx.db"
    shutil.copy2(built, idx)
    db = sqlite3.connect(idx)
    with db:
        db.execute(sql, params)
    db.close()
    return idx


def test_a_version_setting_of_5000_digits_is_a_damaged_index(tmp_path, built):
    """Before: "internal error: ValueError: Exceeds the limit (4300 digits)" from every
    command that opened it."""
    _edited(
        built,
        tmp_path,
        "INSERT OR REPLACE INTO settings VALUES ('min_reader_version', ?)",
        json.dumps("1" * 5000),
    )
    for args in (("info",), ("info", "--check"), ("query", "bees"), ("ls",)):
        proc = run_cli(*args, "-i", "idx.db", cwd=tmp_path)
        line = _one_line(proc, 2, "index damaged: ", "min_reader_version", "--rebuild")
        assert "5,000 characters" in line and len(line) < 300, line


def test_info_check_on_an_index_whose_settings_were_deleted(tmp_path, built):
    """Before: "internal error: KeyError: 'strategy'" from ``info`` and ``info --check``, and
    a query asking for a calibration. Now the index is called damaged, with the way out; and
    ``embed --rebuild`` makes it sound again."""
    idx = _edited(built, tmp_path, "DELETE FROM settings")
    for args in (("info", "--check"), ("info",), ("query", "bees"), ("ls",)):
        proc = run_cli(*args, "-i", str(idx), cwd=tmp_path)
        _one_line(proc, 2, "index damaged: ", "settings are missing", "--rebuild")
    docs = built.parent / "docs"
    proc = run_cli("embed", str(docs), "-i", str(idx), "--rebuild", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert run_cli("info", "--check", "-i", str(idx), cwd=tmp_path).returncode == 0
