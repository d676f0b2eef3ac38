"""A theme template is not a failed file (task H): an mkdocs project with theme overrides
(``overrides/partials/nav.html``, all ``{% %}``/``{{ }}``) exited 3 on every ``embed``, the
template a skip. It is found out only once read (``sources.html.template_reason``), so the
parser raises ``errors.NotADocument`` and the one read → parse loop (``ingest.load.load_each``)
counts a walked one with the ignored files, as discovery counts an image: ``1 ignored: HTML
template``, no skip line, exit 0, the same for the local engine, ``--watch`` and ``--engine
ray``. A template named as an argument stays a skip with its reason (exit 3), as an image named
as one is: the user asked for that file and it gave no document."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from tests.conftest import RAY_GROUP, run_cli

NAV = '{% extends "base.html" %}\n{% block nav %}<nav>{{ nav }}</nav>{% endblock %}\n'
REASON = "a template, not a document (4 template tags, 63 characters of them against 0 of text)"


def mkdocs(root: Path) -> Path:
    """The issue's project: one page, one theme override."""
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Hi\n\nwidgets\n")
    (root / "overrides" / "partials").mkdir(parents=True)
    (root / "overrides" / "partials" / "nav.html").write_text(NAV)
    return root


def skip_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("ragsift: skipped ")]


def test_embed_of_a_project_with_theme_overrides_exits_0_the_template_ignored(tmp_path):
    root = mkdocs(tmp_path / "mk")
    index = str(tmp_path / "mk.db")
    proc = run_cli("embed", ".", "-i", index, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert skip_lines(proc.stderr) == []
    assert "1 discovered, 0 unchanged, 1 parsed, 0 skipped, 1 ignored: HTML template," in (
        proc.stderr
    )
    # again, as --json: the template is read and ignored each run, still exit 0
    proc = run_cli("embed", ".", "-i", index, "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert (s["discovered"], s["unchanged"], s["skipped"], s["ignored"]) == (1, 1, [], 1)
    assert s["index"]["documents"] == 1


def test_a_template_named_as_an_argument_is_a_skip_with_its_reason(tmp_path):
    """As ``ragsift embed logo.png`` is: named, read, no document: one skip line, exit 3."""
    root = mkdocs(tmp_path / "mk")
    proc = run_cli(
        "embed", "overrides/partials/nav.html", "docs", "-i", str(tmp_path / "mk.db"), "--json",
        cwd=root,
    )  # fmt: skip
    assert proc.returncode == 3
    assert skip_lines(proc.stderr) == [f"ragsift: skipped overrides/partials/nav.html: {REASON}"]
    s = json.loads(proc.stdout)
    assert s["skipped"] == [{"path": "overrides/partials/nav.html", "reason": REASON}]
    assert (s["discovered"], s["parsed"], s["ignored"]) == (2, 1, 0)
    # named through another spelling of its path (a symlink to it): still named
    (root / "nav-link.html").symlink_to(root / "overrides" / "partials" / "nav.html")
    proc = run_cli("chunk", "nav-link.html", "docs", cwd=root)
    assert proc.returncode == 3 and skip_lines(proc.stderr) == [
        f"ragsift: skipped nav-link.html: {REASON}"
    ]


def test_chunk_counts_a_walked_template_as_ignored(tmp_path):
    root = mkdocs(tmp_path / "mk")
    proc = run_cli("chunk", ".", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert skip_lines(proc.stderr) == []
    assert "ragsift: 1 file, 1 parsed, 0 skipped, 1 ignored: HTML template;" in proc.stderr
    assert [json.loads(line)["path"] for line in proc.stdout.splitlines()] == ["docs/index.md"]


def test_iter_documents_summary(tmp_path):
    from ragsift.ingest import ChunkSummary
    from ragsift.ingest.load import iter_documents

    root = mkdocs(tmp_path / "mk")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    summary, skipped = ChunkSummary(), []
    docs = list(iter_documents([str(root)], summary=summary, on_skip=skipped.append))
    assert [Path(d.path).name for d in docs] == ["index.md"]
    assert skipped == summary.skipped == []
    assert summary.ignored == {"HTML template": 1, "not a document type": 1}
    assert (summary.files, summary.parsed) == (1, 1)
    d = summary.as_dict()
    assert (d["files"], d["ignored"], d["skipped"]) == (1, 2, [])
    # named: a skip, with its reason
    nav = str(root / "overrides" / "partials" / "nav.html")
    summary = ChunkSummary()
    assert list(iter_documents([nav], summary=summary)) == []
    assert [(s.path, s.reason) for s in summary.skipped] == [(nav, REASON)]
    assert (summary.files, summary.ignored) == (1, {})


def test_the_api_build_summary_counts_the_template_as_ignored(tmp_path):
    import ragsift.api as rs

    root = mkdocs(tmp_path / "mk")
    skipped: list = []
    s = rs.build(str(tmp_path / "mk.db"), [str(root)], on_skip=skipped.append)
    assert skipped == s.skipped == []
    assert s.ignored == {"HTML template": 1}
    assert (s.discovered, s.parsed, s.as_dict()["ignored"]) == (1, 1, 1)
    assert s.index["documents"] == 1  # the template is not stored


@pytest.mark.parametrize(
    "engine", ["local", pytest.param("ray", marks=pytest.mark.xdist_group(RAY_GROUP))]
)
def test_a_page_that_became_a_template_leaves_the_index_as_an_ignored_file_does(
    tmp_path, engine, request
):
    """Pruning: a document "not found (or now ignored or excluded)" is removed; a stored page
    now read as a template is now ignored. Named as an argument it is a skip: kept."""
    if engine == "ray":
        request.getfixturevalue("local_ray")  # one cluster for the module's Ray runs
    from ragsift.ingest import BuildRequest, build_index

    root = mkdocs(tmp_path / "mk")
    nav = root / "overrides" / "partials" / "nav.html"
    nav.write_text("<html><body><main><p>Navigation notes about widgets.</p></main></body></html>")
    index = str(tmp_path / "mk.db")
    s = build_index(BuildRequest.of(index, [str(root)], engine=engine))
    assert (s.parsed, s.index["documents"]) == (2, 2)
    nav.write_text(NAV)
    s = build_index(BuildRequest.of(index, [str(nav), str(root / "docs")], engine=engine))
    assert (len(s.skipped), s.removed, s.index["documents"]) == (1, 0, 2)  # named: kept
    s = build_index(BuildRequest.of(index, [str(root)], engine=engine))
    assert (s.skipped, s.ignored, s.unchanged) == ([], {"HTML template": 1}, 1)
    assert (s.removed, s.index["documents"]) == (1, 1)


def test_the_initial_run_of_a_watch_counts_it_the_same(tmp_path):
    pytest.importorskip("watchfiles")
    import ragsift.api as rs

    root = mkdocs(tmp_path / "mk")
    runs: list = []
    rs.watch(str(tmp_path / "mk.db"), [str(root)], stop=lambda: True, on_run=runs.append)
    s = runs[0].summary
    assert (s.skipped, s.ignored, s.discovered, s.parsed) == ([], {"HTML template": 1}, 1, 1)


def test_the_ray_parse_stage_says_ignore_for_a_walked_template_skip_for_a_named_one(tmp_path):
    """``parse_file`` (the Ray task, run here in-process): the same loop, the same outcome."""
    from ragsift.chunkers import make_chunker
    from ragsift.ingest.ray_stages import parse_file

    root = mkdocs(tmp_path / "mk")
    nav = root / "overrides" / "partials" / "nav.html"
    row = {
        "file": str(nav),
        "relpath": "overrides/partials/nav.html",
        "size": nav.stat().st_size,
        "mtime": nav.stat().st_mtime,
        "key": "overrides/partials/nav.html",
        "max_file_size": None,
        "named": False,
    }
    chunker = make_chunker("recursive", tokenizer="chars", size=300)
    out = parse_file(row, chunker)
    assert (out["ignore"], out["skip"], out["records"]) == ("HTML template", b"", b"")
    out = parse_file({**row, "named": True}, chunker)
    assert (out["ignore"], pickle.loads(out["skip"])) == ("", REASON)
    page = root / "docs" / "index.md"
    out = parse_file({**row, "file": str(page), "relpath": "docs/index.md"}, chunker)
    assert (out["ignore"], out["skip"]) == ("", b"") and out["records"]


@pytest.mark.xdist_group(RAY_GROUP)
def test_an_engine_ray_run_counts_it_as_a_local_run_does(tmp_path, local_ray):
    from ragsift.ingest import BuildRequest, build_index

    root = mkdocs(tmp_path / "mk")
    s = build_index(BuildRequest.of(str(tmp_path / "ray.db"), [str(root)], engine="ray"))
    assert (s.skipped, s.ignored, s.discovered, s.parsed) == ([], {"HTML template": 1}, 1, 1)
    nav = str(root / "overrides" / "partials" / "nav.html")
    s = build_index(
        BuildRequest.of(str(tmp_path / "ray.db"), [nav, str(root / "docs")], engine="ray")
    )
    assert [(x.path, x.reason) for x in s.skipped] == [(nav, REASON)] and s.ignored == {}
