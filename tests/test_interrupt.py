"""Ctrl-C is exit 130 with one line, also when it lands inside an import that turns it into
another exception (numpy re-raises an interrupted first import as ImportError): the
KeyboardInterrupt is found among the exception's causes. A real bug stays "internal error"."""

from __future__ import annotations

import pytest
import typer

from ragsift.cli._common import STATE, handle_errors


def run(func, monkeypatch):
    monkeypatch.setitem(STATE, "debug", False)
    with pytest.raises(typer.Exit) as exc:
        handle_errors(func)()
    return exc.value.exit_code


def test_an_interrupt_wrapped_by_an_import_is_an_interrupt(monkeypatch, capsys):
    def interrupted_import():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("numpy._core.multiarray failed to import") from exc

    assert run(interrupted_import, monkeypatch) == 130
    assert capsys.readouterr().err == "ragsift: interrupted\n"


def test_an_interrupt_as_context_is_an_interrupt(monkeypatch, capsys):
    def during_cleanup():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("cleanup failed")  # noqa: B904 (the context is the point)

    assert run(during_cleanup, monkeypatch) == 130
    assert capsys.readouterr().err == "ragsift: interrupted\n"


def test_a_plain_interrupt_and_a_bug(monkeypatch, capsys):
    def ctrl_c():
        raise KeyboardInterrupt

    def bug():
        raise ImportError("no module named x")

    assert run(ctrl_c, monkeypatch) == 130
    assert capsys.readouterr().err == "ragsift: interrupted\n"
    assert run(bug, monkeypatch) == 2
    assert capsys.readouterr().err.startswith("ragsift: internal error: ImportError")


def test_an_interrupt_while_the_cli_loads_is_exit_130(tmp_path):
    # a Ctrl-C before any command runs lands in the import of the CLI (typer, the
    # subcommands): the entry point catches it. Simulated by an import hook that raises
    # KeyboardInterrupt when typer is imported, in a new process, through the console
    # script's entry (and ``python -m ragsift``, which is the same function).
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Hook:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Hook())\n"
        "sys.argv = ['ragsift', '--help']\n"
        "from ragsift.__main__ import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130
    assert proc.stderr == "ragsift: interrupted\n"
    assert proc.stdout == ""
