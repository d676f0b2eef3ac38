"""``--span best`` over CJK text (``ragsift.retrieval.spans``): the span rule reads query words
by the lexical side's one rule (``ragsift.index.terms``: a CJK run as its bigrams), so a span
grows over the units that hold a CJK query word verbatim. No model: cosines are numbers."""

from __future__ import annotations

import math

from ragsift.retrieval.spans import best_spans, query_terms, text_words

CUT = math.inf  # every hit is cut to its window

# one unit per line (a Chinese sentence ends without a space: lines are the units here)
POOL = (
    "应用启动时创建一个连接池。\n"
    "每个请求从池中借用一个连接。\n"
    "用完以后要归还。\n"
    "日志写入文件，按天轮转。\n"
    "上传文件时使用表单。"
)


def test_query_terms_are_the_lexical_sides_words():
    assert query_terms("文件上传") == ["文件", "件上", "上传"]
    assert query_terms("池") == ["池"]  # one character: itself
    assert query_terms("使用FastAPI框架") == ["使用", "fastap", "框架"]
    # English as before: function words dropped, truncation stemming
    assert query_terms("When do the honey bees swarming?") == ["honey", "bees", "swarmi"]


def test_a_units_words_hold_its_cjk_ngrams():
    words = text_words("每个请求从池中借用一个连接。")
    assert "借用" in words and "连接" in words and "池" in words
    assert text_words("Bees swarm.") == ["Bees", "swarm"]  # no CJK: the runs alone


def test_the_span_grows_over_every_cjk_query_word():
    (span,) = best_spans("借用 归还", [POOL], [40], strong=CUT)
    assert span.text == "每个请求从池中借用一个连接。\n用完以后要归还。"
    assert span.start == 40 + POOL.index("每个") and span.score > 0
    (span,) = best_spans("按天轮转的日志", [POOL], strong=CUT)
    assert span.text == "日志写入文件，按天轮转。"


def test_a_strong_chinese_hit_keeps_its_chunk_by_its_cjk_words():
    other = "数据库迁移需要先备份。\n然后再执行脚本。"
    spans = best_spans("借用连接", [POOL, other])  # no cosines: the lexical part alone
    assert spans[0].text == POOL and spans[0].strength == 1.0  # BM25 over its bigrams
    assert spans[1].strength == 0.0
