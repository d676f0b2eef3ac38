"""A docs folder as a project (issue 31): ``ragsift.toml`` / ``[tool.ragsift]``, ``ragsift
init``, flags over the file over the defaults, paths stored relative to the project root, and
``tune`` exiting 1 without a recommendation. Real model, real index, real subprocesses."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import REPO, run_cli

QUESTION = "When do honey bees swarm?"


def _site(tmp_path):
    """A project folder holding a docs/ folder with two documents."""
    site = tmp_path / "site"
    docs = site / "docs" / "guide"
    docs.mkdir(parents=True)
    shutil.copy2(REPO / "fixtures" / "beekeeping" / "handbook.md", docs / "handbook.md")
    shutil.copy2(REPO / "fixtures" / "sourdough.rst", site / "docs" / "sourdough.rst")
    return site


def _ls(cwd, *args):
    proc = run_cli("ls", "--json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_init_embed_query_with_no_flags(tmp_path):
    site = _site(tmp_path)
    proc = run_cli("init", cwd=site)
    assert proc.returncode == 0, proc.stderr
    text = (site / "ragsift.toml").read_text()
    assert 'paths = ["docs"]' in text and 'index = "ragsift.db"' in text and "# " in text
    assert run_cli("init", cwd=site).returncode == 2  # never overwritten without --force
    proc = run_cli("embed", cwd=site)
    assert proc.returncode == 0, proc.stderr
    assert (site / "ragsift.db").exists()
    proc = run_cli("query", QUESTION, "--json", cwd=site)
    assert proc.returncode == 0, proc.stderr
    hit = json.loads(proc.stdout.splitlines()[0])
    assert hit["path"] == "docs/guide/handbook.md"  # relative to the project root
    # from a folder below the root, the same file governs
    proc = run_cli("query", QUESTION, "--json", cwd=site / "docs" / "guide")
    assert (
        proc.returncode == 0
        and json.loads(proc.stdout.splitlines()[0])["path"] == "docs/guide/handbook.md"
    )
    assert [d["path"] for d in _ls(site, "docs/guide/*")] == ["docs/guide/handbook.md"]


def test_every_spelling_of_the_folder_gives_one_set_of_keys(tmp_path):
    site = _site(tmp_path)
    (site / "ragsift.toml").write_text('index = "idx.db"\n')
    seen = []
    for spelling in ("docs/", "./docs", str(site / "docs")):
        proc = run_cli("embed", spelling, cwd=site)
        assert proc.returncode == 0, proc.stderr
        docs = _ls(site)
        seen.append(sorted((d["key"], d["path"]) for d in docs))
    assert seen[0] == seen[1] == seen[2]
    assert sorted(k for k, _ in seen[0]) == ["docs/guide/handbook.md", "docs/sourdough.rst"]
    assert "0 parsed" in proc.stderr  # the third spelling found everything unchanged


def test_the_index_travels_with_its_folder(tmp_path):
    site = _site(tmp_path)
    (site / "ragsift.toml").write_text('index = "idx.db"\npaths = ["docs"]\n')
    assert run_cli("embed", cwd=site).returncode == 0
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(site, moved)  # copy2: mtimes kept, as rsync -a or cp -a would
    proc = run_cli("embed", "--json", cwd=moved)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["unchanged"] == 2 and summary["parsed"] == 0 and summary["removed"] == 0
    assert len(_ls(moved)) == 2


def test_an_index_with_absolute_keys_keeps_working_and_never_doubles(tmp_path):
    site = _site(tmp_path)
    assert run_cli("embed", str(site / "docs"), "-i", "idx.db", cwd=site).returncode == 0
    before = _ls(site, "-i", "idx.db")
    assert all(d["path"].startswith("/") for d in before)  # no project file: as typed
    proc = run_cli("ls", "guide/*", "-i", "idx.db", cwd=site)  # says what stored paths look like
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "stored paths look like /" in proc.stderr and "'*guide/*' matches 1" in proc.stderr
    (site / "ragsift.toml").write_text('index = "idx.db"\npaths = ["docs"]\n')
    proc = run_cli("embed", cwd=site)
    assert proc.returncode == 0, proc.stderr
    assert "now listed under the path spelling of this run" in proc.stderr
    after = _ls(site)
    assert len(after) == len(before) == 2  # the same documents, not a second copy
    assert sorted(d["path"] for d in after) == ["docs/guide/handbook.md", "docs/sourdough.rst"]
    (site / "docs" / "sourdough.rst").unlink()  # pruning still finds the old keys
    assert run_cli("embed", cwd=site).returncode == 0
    assert [d["path"] for d in _ls(site)] == ["docs/guide/handbook.md"]


def test_flags_override_the_file_and_the_file_overrides_defaults(tmp_path):
    site = _site(tmp_path)
    (site / "ragsift.toml").write_text(
        'index = "idx.db"\npaths = ["docs"]\nk = 1\nthreshold = "none"\n'
    )
    assert run_cli("embed", cwd=site).returncode == 0
    one = run_cli("query", QUESTION, "--json", cwd=site)
    assert len(one.stdout.splitlines()) == 1  # k from the file
    three = run_cli("query", QUESTION, "--json", "-k", "3", cwd=site)
    assert len(three.stdout.splitlines()) == 3  # the flag wins (threshold none: 3 admitted)
    info = json.loads(run_cli("info", "--json", cwd=site).stdout)
    assert info["index_from"] == "ragsift.toml" and info["project"]["settings"]["k"] == 1
    other = tmp_path / "other.db"
    assert run_cli("embed", "docs", "-i", str(other), cwd=site).returncode == 0
    env = {"RAGSIFT_INDEX": str(other)}
    info = json.loads(run_cli("info", "--json", cwd=site, env=env).stdout)
    assert info["path"] == str(other) and info["index_from"] == "RAGSIFT_INDEX"
    info = json.loads(run_cli("info", "--json", "-i", str(other), cwd=site).stdout)
    assert info["index_from"] == "--index"


@pytest.mark.parametrize(
    "text, words",
    [
        ('index = "x.db"\nk = [\n', ["ragsift.toml:2", "at the end of the file"]),
        ('index = "x.db"\nk = 3 3\n', ["ragsift.toml:2", "column"]),
        ('index = "x.db"\n\ncolour = "blue"\n', ["ragsift.toml:3", "unknown key 'colour'"]),
        ('k = "three"\n', ["ragsift.toml:1", "k must be a whole number"]),
        ('mode = "sparse"\n', ["ragsift.toml:1", "mode must be dense, lexical or hybrid"]),
        ("threshold = 1.5\n", ["ragsift.toml:1", "threshold must be between 0 and 1"]),
        ('normalize = "yes"\n', ["ragsift.toml:1", "normalize must be true or false"]),
    ],
)
def test_a_bad_project_file_is_one_line_naming_file_key_and_line(tmp_path, text, words):
    (tmp_path / "ragsift.toml").write_text(text)
    for args in (("query", "bees"), ("embed",), ("ls",), ("info",)):
        proc = run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("ragsift: ")
        assert all(w in proc.stderr for w in words), proc.stderr
    assert run_cli("--help", cwd=tmp_path).returncode == 0  # help never reads it
    assert run_cli("chunk", str(REPO / "fixtures" / "sourdough.rst"), cwd=tmp_path).returncode == 0


def test_pyproject_tool_table_is_a_project_file(tmp_path):
    site = _site(tmp_path)
    (site / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.ragsift]\nindex = "py.db"\npaths = ["docs"]\n'
    )
    assert run_cli("embed", cwd=site / "docs").returncode == 0  # found from below
    assert (site / "py.db").exists()
    (site / "pyproject.toml").write_text('[tool.ragsift]\nindex = "py.db"\nwhat = 1\n')
    proc = run_cli("ls", cwd=site)
    assert proc.returncode == 2 and "pyproject.toml [tool.ragsift]:3" in proc.stderr


def test_no_project_file_keeps_todays_rule(tmp_path):
    site = _site(tmp_path)
    proc = run_cli("embed", "docs", "-i", "idx.db", cwd=site)
    assert proc.returncode == 0
    assert sorted(d["path"] for d in _ls(site, "-i", "idx.db")) == [
        "docs/guide/handbook.md",
        "docs/sourdough.rst",
    ]
    assert all(os.path.isabs(d["key"]) for d in _ls(site, "-i", "idx.db"))
    proc = run_cli("embed", cwd=site)  # no PATH and no project file: a usage error
    assert proc.returncode == 2


def test_tune_without_a_matching_label_recommends_nothing_and_exits_1(tmp_path):
    site = _site(tmp_path)
    (site / "ragsift.toml").write_text('index = "idx.db"\npaths = ["docs"]\n')
    assert run_cli("embed", cwd=site).returncode == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"query": QUESTION, "relevant": ["nowhere/else.md"]}) + "\n")
    proc = run_cli("tune", "--queries", str(labels), cwd=site)
    assert proc.returncode == 1, proc.stderr
    assert "recommended threshold" not in proc.stdout and "Use: --threshold" not in proc.stdout
    assert "no threshold recommended" in proc.stdout
    proc = run_cli("tune", "--queries", str(labels), "--json", cwd=site)
    assert proc.returncode == 1 and json.loads(proc.stdout)["recommended"] is None
    # labels relative to the project root match
    labels.write_text(
        json.dumps({"query": QUESTION, "relevant": ["docs/guide/handbook.md"]}) + "\n"
    )
    proc = run_cli("tune", "--queries", str(labels), "--json", cwd=site)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["recommended"] is not None


def _makefile(docs: str) -> str:
    """The rule of docs/files.md ("Make and CI"), read from the doc itself."""
    text = (REPO / "docs" / "files.md").read_text(encoding="utf-8")
    block = text.split("```make\n", 1)[1].split("```", 1)[0]
    import sys

    ragsift = f"{sys.executable} -m ragsift"
    return (
        block.replace("ragsift embed", ragsift + " embed")
        .replace("docs", docs)
        .replace(f"{docs}.db", "docs.db")
        .replace(f"{docs}.list", "docs.list")
    )


def test_the_documented_make_rule_notices_a_deleted_document(tmp_path):
    site = _site(tmp_path)
    (site / "Makefile").write_text(_makefile("docs"))
    env = {"PYTHONPATH": str(REPO)}

    def make():
        import subprocess

        return subprocess.run(
            ["make", "-s", "docs.db"],
            cwd=site,
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=300,
        )

    assert make().returncode == 0
    listed = lambda: sorted(d["path"] for d in _ls(site, "-i", "docs.db"))  # noqa: E731
    assert listed() == ["docs/guide/handbook.md", "docs/sourdough.rst"]
    again = make()
    assert again.returncode == 0 and "ragsift" not in again.stdout + again.stderr  # up to date
    (site / "docs" / "sourdough.rst").unlink()
    assert make().returncode == 0
    assert listed() == ["docs/guide/handbook.md"]  # the deleted page is no longer served
