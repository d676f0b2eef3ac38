"""Chinese and Japanese sentences as units (issue 37, evidence layout ``units-3``).

One sentence rule (``sources.units.SENTENCE_END``) for the JSON reader's units, spans and the
units a chunk is embedded by: a CJK sentence ends at 。！？ (full-width ．, half-width ｡) and
the closing brackets/quotes after it, with no space needed; Han and kana count as one word per
``CJK_WORD_CHARS`` characters for ``MIN_WORDS``/``MAX_WORDS``. A text without them gets
exactly the units of the rule before (``units-2``): English units are byte-identical.
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
OLD_WORD = re.compile(r"\S+")


def _old_bounds(text: str, monkeypatch) -> list[tuple[int, int]]:
    with monkeypatch.context() as m:
        m.setattr(evidence, "_SENTENCE_END", OLD_END)
        m.setattr(evidence, "_WORD", OLD_WORD)
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
        cjk = re.compile(f"[{evidence._CJK}{units.CJK_SENTENCE_STOPS}]")
        # the docs quote a few CJK examples: their lines are left out, the rest compared
        text = "\n".join(line for line in text.split("\n") if not cjk.search(line))
        assert evidence.unit_bounds(text) == _old_bounds(text, monkeypatch), path
        assert list(units.split_sentences(text)) == _old_sentences(text, monkeypatch), path
        checked += 1
    assert checked >= 40


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="。！？．｡")))
def test_any_text_without_cjk_stops_or_han_kana_keeps_its_units(text):
    text = re.sub(f"[{evidence._CJK}]", "", text)
    with pytest.MonkeyPatch.context() as m:
        new = evidence.unit_bounds(text)
        new_sentences = list(units.split_sentences(text))
        m.setattr(evidence, "_SENTENCE_END", OLD_END)
        m.setattr(evidence, "_WORD", OLD_WORD)
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


def test_a_chinese_paragraph_gives_one_unit_per_sentence():
    text = (
        "# 安装步骤\n\n安装程序会先询问语言和键盘布局。然后它会检测硬件，并加载所需的驱动程序。"
        "如果网络可用，它会尝试通过 DHCP 自动配置网络。最后，安装程序会要求你选择一个镜像。\n"
    )
    got = [text[a:z] for a, z in evidence.unit_bounds(text)]
    assert got == [
        "# 安装步骤\n\n安装程序会先询问语言和键盘布局。",  # the heading reads with the first
        "然后它会检测硬件，并加载所需的驱动程序。",
        "如果网络可用，它会尝试通过 DHCP 自动配置网络。",
        "最后，安装程序会要求你选择一个镜像。",
    ]
    # under the rule before, the whole paragraph was one unit with its heading
    with pytest.MonkeyPatch.context() as m:
        m.setattr(evidence, "_SENTENCE_END", OLD_END)
        m.setattr(evidence, "_WORD", OLD_WORD)
        assert len(evidence.unit_bounds(text)) == 1


def test_short_cjk_sentences_join_and_a_long_run_is_cut():
    k = evidence.CJK_WORD_CHARS
    short = "是的。" * 3 + "这一句足够长，可以自己成为一个单元。"
    got = [short[a:z] for a, z in evidence.unit_bounds(short)]
    assert got == [short]  # three 2-character sentences are under MIN_WORDS: they join
    run = "汉" * (k * evidence.MAX_WORDS * 2 + 5)  # no stop at all: cut by MAX_WORDS words
    bounds = evidence.unit_bounds(run)
    # the 5 left over (3 words, under MIN_WORDS) join the piece before
    assert [z - a for a, z in bounds] == [k * evidence.MAX_WORDS, k * evidence.MAX_WORDS + 5]
    assert "".join(run[a:z] for a, z in bounds) == run


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


def test_embed_stores_one_unit_per_chinese_sentence(tmp_path):
    """The real (default) model: the stored unit offsets of a Chinese document are its
    sentences, and each unit's text is what the rule cut."""
    docs = tmp_path / "docs"
    docs.mkdir()
    body = (
        "浏览器默认禁止网页向不同源的服务器发送请求。要允许前端从另一个域名调用接口，"
        "需要在服务器上启用跨域资源共享。响应头中必须列出允许的来源和方法。"
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
    assert len(got) == 3 and got[1:] == [
        "要允许前端从另一个域名调用接口，需要在服务器上启用跨域资源共享。",
        "响应头中必须列出允许的来源和方法。",
    ]
    assert got[0].endswith("浏览器默认禁止网页向不同源的服务器发送请求。")
