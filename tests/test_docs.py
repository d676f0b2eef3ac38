"""The reference stays complete: every flag each subcommand's ``--help`` lists is documented in
that subcommand's section of docs/cli.md (and the root's flags under "Global options")."""

from __future__ import annotations

import re

import pytest
import typer.main

from ragsift.cli import app
from tests.conftest import REPO

CLI_MD = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
ROOT = typer.main.get_command(app)


def long_flags(command) -> list[str]:
    return [
        o
        for p in command.params
        for o in (*p.opts, *p.secondary_opts)
        if o.startswith("--") and o != "--help"
    ]


def section(heading_start: str) -> str:
    """The text of docs/cli.md from the ``## `` heading that starts with ``heading_start`` up to
    the next ``## `` heading."""
    parts = re.split(r"^## ", CLI_MD, flags=re.M)
    found = [p for p in parts if p.startswith(heading_start)]
    assert found, f"docs/cli.md has no section '## {heading_start}...'"
    return found[0]


def documented(flag: str, text: str) -> bool:
    return re.search(re.escape(flag) + r"(?![\w-])", text) is not None


@pytest.mark.parametrize("name", sorted(ROOT.commands))
def test_every_flag_of_a_subcommand_is_in_its_section_of_docs_cli(name):
    text = section(f"`ragsift {name} ")
    missing = [f for f in long_flags(ROOT.commands[name]) if not documented(f, text)]
    assert not missing, f"ragsift {name}: flags missing from docs/cli.md: {missing}"


def test_the_global_flags_are_documented():
    text = section("Global options")
    missing = [f for f in long_flags(ROOT) if not documented(f, text)]
    assert not missing, missing


def test_the_readme_links_only_to_docs_that_exist():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(((?:docs|bench)/[^)#]+)", readme):
        assert (REPO / target).exists(), target
