"""Issue 13: ``ragsift NAME ...`` lets typer build only the command NAME (``cli.main``); what
a user sees (help, usage errors, exit codes) is what the full command group gives."""

from __future__ import annotations

import sys

import pytest

from ragsift import cli

NAMES = [info.name for info in cli.app.registered_commands]


def run_main(monkeypatch, capsys, args: list[str], *, every: bool) -> tuple[int, str, str]:
    from ragsift.cli._common import STATE

    monkeypatch.setitem(STATE, "debug", False)  # --debug sets it for the process: undone below
    monkeypatch.setattr(sys, "argv", ["ragsift", *args])
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setenv("NO_COLOR", "1")
    if every:
        monkeypatch.setattr(cli, "invoked_commands", lambda argv: cli.app.registered_commands)
    with pytest.raises(SystemExit) as exc:
        cli.main(fast_exit=False)
    monkeypatch.undo()
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_a_named_subcommand_is_built_alone():
    assert len(NAMES) >= 9
    for name in NAMES:
        assert [i.name for i in cli.invoked_commands([name, "x"])] == [name]
    assert [i.name for i in cli.invoked_commands(["--debug", "chunk", "-"])] == ["chunk"]
    for args in ([], ["--help"], ["--version"], ["nosuch", "chunk"]):
        assert cli.invoked_commands(args) == cli.app.registered_commands


@pytest.mark.parametrize(
    "args",
    [
        *([name, "--help"] for name in NAMES),
        ["chunk", "--bogus"],
        ["chunk"],
        ["chunk", "--strategy", "nosuch", "x"],
        ["--debug", "chunk", "--size", "0", "x"],
        ["query"],
        ["nosuch"],
        ["--help"],
    ],
)
def test_help_errors_and_exit_codes_are_the_full_groups(monkeypatch, capsys, args):
    want = run_main(monkeypatch, capsys, args, every=True)
    got = run_main(monkeypatch, capsys, args, every=False)
    assert got == want
    assert want[1] or want[2]  # something was shown
    assert [i.name for i in cli.app.registered_commands] == NAMES  # the app is left whole
