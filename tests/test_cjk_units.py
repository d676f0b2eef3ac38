"""Chinese and Japanese sentences as units (issue 37, evidence layout ``units-3``).

One sentence rule (``sources.units.SENTENCE_END``) for the JSON reader's units, spans and the
units a chunk is embedded by: a CJK sentence ends at 。！？ (full-width ．, half-width ｡) and
the closing brackets/quotes after it, with no space needed. Words stay whitespace-separated
(``MIN_WORDS``): a CJK sentence joins the next until a unit holds six. A text without those
stops gets exactly the units of the rule before (``units-2``): English units are
byte-identical.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.embedders import evidence
from ragsift.sources import units

REPO = Path(__file__).resolve().parent.parent
# the rule of units-2 (ragsift 0.6), written out: what English text must still get
OLD_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")
HAN_KANA = "\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"


def _old_bounds(text: str, monkeypatch) -> list[tuple[int, int]]:
    with monkeypatch.context() as m:
        m.setattr(evidence, "_SENTENCE_END", OLD_END)
        return evidence.unit_bounds(text)


def _old_sentences(text: str, monkeypatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(units, "_SENTENCE_END", OLD_END)
        return list(units.split_sentences(text))


def _english_texts() -> list[Path]:
    """Every text file of the repository's fixtures, docs, benchmarks and code (English prose,
    code, tables)."""
    paths = [
        p
        for root in (FIXTURES, REPO / "docs", REPO / "bench", REPO / "ragsift")
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in {".md", ".txt", ".rst", ".html", ".json", ".py"}
    ]
    return paths + [REPO / "README.md"]


def test_english_units_are_byte_identical_to_the_rule_before(monkeypatch):
    checked = 0
    for path in _english_texts():
        text = path.read_text(encoding="utf-8", errors="replace")
        cjk = re.compile(f"[{HAN_KANA}{units.CJK_SENTENCE_STOPS}]")
        # the docs quote a few CJK examples: their lines are left out, the rest compared
        text = "\n".join(line for line in text.split("\n") if not cjk.search(line))
        assert evidence.unit_bounds(text) == _old_bounds(text, monkeypatch), path
        assert list(units.split_sentences(text)) == _old_sentences(text, monkeypatch), path
        checked += 1
    assert checked >= 40


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="。！？．｡")))
def test_any_text_without_cjk_stops_or_han_kana_keeps_its_units(text):
    text = re.sub(f"[{HAN_KANA}]", "", text)
    with pytest.MonkeyPatch.context() as m:
        new = evidence.unit_bounds(text)
        new_sentences = list(units.split_sentences(text))
        m.setattr(evidence, "_SENTENCE_END", OLD_END)
        m.setattr(units, "_SENTENCE_END", OLD_END)
        assert new == evidence.unit_bounds(text)
        assert new_sentences == list(units.split_sentences(text))


def test_chinese_and_japanese_sentences_split_without_spaces():
    assert list(units.split_sentences("安装程序先询问语言。然后检测硬件！要继续吗？好")) == [
        "安装程序先询问语言。",
        "然后检测硬件！",
        "要继续吗？",
        "好",
    ]
    # closing brackets and quotes stay with their sentence; a run of stops is one end
    assert list(
        units.split_sentences("「設定を保存しますか？」と聞かれます。本当に？！はい．")
    ) == [
        "「設定を保存しますか？」",
        "と聞かれます。",
        "本当に？！",
        "はい．",
    ]
    # mixed with English: the English rule where it applies, the CJK one where it does
    assert list(units.split_sentences("Run apt update. 然后运行 apt upgrade。Done")) == [
        "Run apt update.",
        "然后运行 apt upgrade。",
        "Done",
    ]


def test_cjk_sentences_are_units_once_they_hold_six_words():
    # mixed with Latin words (as documentation is): cut at a 。 once a unit holds six words
    text = (
        "# 安装步骤\n\n运行 apt update 和 apt upgrade 可以更新系统。然后用 apt install "
        "nginx 安装 Web 服务器。最后检查 systemctl status nginx 的输出。\n"
    )
    got = [text[a:z] for a, z in evidence.unit_bounds(text)]
    assert got == [
        "# 安装步骤\n\n运行 apt update 和 apt upgrade 可以更新系统。",  # the heading joins
        # the last sentence holds five words: it joins the one before
        "然后用 apt install nginx 安装 Web 服务器。最后检查 systemctl status nginx 的输出。",
    ]
    with pytest.MonkeyPatch.context() as m:  # the rule before: one unit
        m.setattr(evidence, "_SENTENCE_END", OLD_END)
        assert len(evidence.unit_bounds(text)) == 1
    # pure Chinese has no spaces: each sentence is one word, they join (one unit, as before)
    pure = "安装程序会先询问语言和键盘布局。然后它会检测硬件。最后要求你选择一个镜像。"
    assert evidence.unit_bounds(pure) == [(0, len(pure))]
    # sentences of Japanese with spaced words are cut the same way
    ja = "まず端末で sudo apt update と sudo apt upgrade を実行します。次に sudo apt install nginx で Web サーバーを入れます。"
    assert [ja[a:z] for a, z in evidence.unit_bounds(ja)] == [
        "まず端末で sudo apt update と sudo apt upgrade を実行します。",
        "次に sudo apt install nginx で Web サーバーを入れます。",
    ]


def test_an_index_of_units_2_gets_one_line_and_rebuild(tmp_path):
    """units-2 (ragsift 0.6): CJK chunks embedded as whole paragraphs; mixing them with
    sentence units would score two kinds of unit as one."""
    path = tmp_path / "units2.db"
    proc = run_cli("embed", str(FIXTURES / "lantern"), "--index", str(path))
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE settings SET value = ? WHERE key = 'evidence'", (json.dumps("units-2"),))
    db.close()
    for args in (("query", "password"), ("embed", str(FIXTURES / "lantern"))):
        proc = run_cli(*args, "--index", str(path))
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "'units-2'" in lines[0] and "--rebuild" in lines[0]
    proc = run_cli("embed", str(FIXTURES / "lantern"), "--index", str(path), "--rebuild")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("query", "password", "--index", str(path)).returncode == 0


def test_embed_stores_the_units_of_the_rule(tmp_path):
    """The real (default) model: the stored unit offsets of a Chinese document are the
    rule's units, cut at its 。"""
    docs = tmp_path / "docs"
    docs.mkdir()
    body = (
        "浏览器默认禁止网页向不同源的服务器发送请求，除非服务器在 HTTP 响应里返回 "
        "Access-Control-Allow-Origin 这个 header。要允许前端从另一个域名调用接口，可以在 nginx "
        "的 server 块里加上 add_header 指令，或者在应用里启用 CORS 中间件。响应头中必须列出允许的 "
        "Origin、Methods 和 Headers，例如 GET、POST 和 Content-Type。"
    )
    (docs / "cors.md").write_text(f"# 跨域资源共享\n\n{body}\n", encoding="utf-8")
    index = tmp_path / "cjk.db"
    proc = run_cli("embed", str(docs), "--index", str(index))
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(index)
    (text, blob), *rest = db.execute("SELECT text, units FROM chunks").fetchall()
    db.close()
    assert not rest
    starts, ends, _, _ = evidence.decode(blob)
    got = [text[a:z] for a, z in zip(starts.tolist(), ends.tolist())]
    assert got == [text[a:z] for a, z in evidence.unit_bounds(text)]
    assert len(got) == 3 and got[1:] == [
        "要允许前端从另一个域名调用接口，可以在 nginx 的 server 块里加上 add_header 指令，"
        "或者在应用里启用 CORS 中间件。",
        "响应头中必须列出允许的 Origin、Methods 和 Headers，例如 GET、POST 和 Content-Type。",
    ]
    assert got[0].endswith("Access-Control-Allow-Origin 这个 header。")


def test_the_json_reader_cuts_cjk_strings_at_their_sentence_ends():
    """The JSON reader's units (one per line of the document) follow the same rule."""
    assert units.json_units({"说明": "先安装。然后配置！最后运行？"}) == [
        "说明: 先安装。然后配置！最后运行？"  # an object's string fields stay whole
    ]
    assert units.json_units(["先安装。然后配置！最后运行？", "English. Unchanged"]) == [
        "先安装。",
        "然后配置！",
        "最后运行？",
        "English.",
        "Unchanged",
    ]
