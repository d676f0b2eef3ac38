"""Paths as the user types them (issue 41, item 3): inside a project, ``./x.md``, the absolute
path and, from a subfolder, the file's name all name the document stored as its root-relative
path, for ``rm``, ``ls`` and ``--path`` alike (one rule: ``ragsift.api.stored_path``), and
``--format grep`` prints paths openable from where the command ran. Real model, real index,
real subprocesses; the rule itself is also checked as the pure function it is."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import run_cli

COMPAT = "# Compatibility\n\nragsift runs on Python 3.10 and newer, on Linux, macOS and Windows.\n"
TIMEOUTS = (
    "# Timeouts\n\nA request to the embedding endpoint gives up after 30 seconds; "
    "set --timeout to wait longer.\n"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project (``ragsift init``) with ``compatibility.md`` at its root and
    ``advanced/timeouts.md`` below it, embedded."""
    root = tmp_path_factory.mktemp("site")
    (root / "advanced").mkdir()
    (root / "compatibility.md").write_text(COMPAT, encoding="utf-8")
    (root / "advanced" / "timeouts.md").write_text(TIMEOUTS, encoding="utf-8")
    assert run_cli("init", cwd=root).returncode == 0
    proc = run_cli("embed", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root


def _removed(cwd, *paths: str) -> tuple[int, list[str], str]:
    proc = run_cli("rm", "--dry-run", "--json", *paths, cwd=cwd)
    return proc.returncode, [json.loads(x)["path"] for x in proc.stdout.splitlines()], proc.stderr


@pytest.mark.parametrize(
    ("where", "typed", "stored"),
    [
        ("", "./compatibility.md", "compatibility.md"),
        ("", "{root}/compatibility.md", "compatibility.md"),
        ("", "compatibility.md", "compatibility.md"),  # the stored path itself, as before
        ("advanced", "timeouts.md", "advanced/timeouts.md"),
        ("advanced", "./timeouts.md", "advanced/timeouts.md"),
        ("advanced", "../compatibility.md", "compatibility.md"),
        ("advanced", "advanced/timeouts.md", "advanced/timeouts.md"),  # as `ls` shows it
        ("advanced", "{root}/advanced/timeouts.md", "advanced/timeouts.md"),
    ],
)
def test_rm_names_the_document_however_its_path_is_typed(project, where, typed, stored):
    code, removed, err = _removed(project / where, typed.format(root=project))
    assert code == 0, err
    assert removed == [stored]
    assert "would remove 1 document (1 chunk)" in err  # one document, not "1 documents"


def test_a_path_naming_no_document_is_still_exit_1_with_the_stored_paths(project):
    code, removed, err = _removed(project / "advanced", "timeout.md")
    assert (code, removed) == (1, [])
    assert "no document path matches 'timeout.md'" in err
    assert "advanced/timeouts.md" in err  # what the stored paths look like


def test_ls_and_path_read_globs_from_where_the_user_stands(project):
    here = project / "advanced"
    listed = [
        json.loads(x)["path"] for x in run_cli("ls", "--json", "./*", cwd=here).stdout.splitlines()
    ]
    assert listed == ["advanced/timeouts.md"]
    proc = run_cli("query", "timeout", "-t", "none", "--json", "--path", "timeouts.md", cwd=here)
    assert proc.returncode == 0, proc.stderr
    assert {json.loads(x)["path"] for x in proc.stdout.splitlines()} == {"advanced/timeouts.md"}


def test_grep_paths_open_from_where_the_command_ran(project):
    for where in ("", "advanced"):
        cwd = project / where
        proc = run_cli("query", "timeout", "-t", "none", "-k", "2", "--format", "grep", cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        paths = [line.split(":", 1)[0] for line in proc.stdout.splitlines()]
        assert len(paths) == 2
        assert all((cwd / p).is_file() for p in paths), paths
    assert "timeouts.md" in paths and "../compatibility.md" in paths  # from advanced/


def test_the_rule_as_a_function(tmp_path):
    from ragsift.api import openable_path, stored_path

    root = str(tmp_path)
    sub = os.path.join(root, "advanced")
    stored = ["advanced/timeouts.md", "compatibility.md", "timeouts.md"]
    # from the subfolder, the file beside the user wins over the root's namesake
    assert stored_path("timeouts.md", stored, root=root, cwd=sub) == "advanced/timeouts.md"
    assert stored_path("timeouts.md", stored, root=root, cwd=root) == "timeouts.md"
    assert stored_path(f"{root}/compatibility.md", stored, root=root, cwd=sub) == (
        "compatibility.md"
    )
    assert stored_path("./*", stored, root=root, cwd=sub) == "advanced/*"
    assert stored_path("nothing.md", stored, root=root, cwd=sub) == "nothing.md"
    # without a project: paths stored as embed was given them, relative to where it ran
    assert stored_path("./docs/a.md", ["docs/a.md"], cwd=root) == "docs/a.md"
    assert stored_path(f"{root}/docs/a.md", ["docs/a.md"], cwd=root) == "docs/a.md"
    assert openable_path("advanced/timeouts.md", root, sub) == "timeouts.md"
    assert openable_path("compatibility.md", root, sub) == "../compatibility.md"
    assert openable_path("docs/a.md", None, sub) == "docs/a.md"  # no root: as stored
