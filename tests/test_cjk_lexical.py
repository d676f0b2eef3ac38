"""CJK text is searchable by its words (issue 37): a run of Han, kana or Hangul is one token
for FTS5's tokenizer, so the index also holds its bigrams and unigrams (``terms.cjk_terms``)
and a query asks for its CJK by bigrams (``terms.query_words``). The pure rule (English
unchanged, every n-gram counted once, any 1-4 characters held verbatim matched), then both
backends with the same ids and scores, then indexes from before (read with their own rule,
upgraded by a writer), then one CLI run."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragsift.index import lexical, migrations, open_index
from ragsift.index.backend import ChunkRow, DocumentWrite
from ragsift.index.terms import cjk_terms, query_terms, query_words, terms_text

# ---- the rule: a pure function of the text ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("跨域", ["跨", "域"]),  # the token is the bigram already: its unigrams
        ("文件上传", ["文件", "件上", "上传", "文", "件", "上", "传"]),
        ("的", []),  # one character: the token itself
        ("使用FastAPI框架", ["使用", "使", "用", "fastapi", "框架", "框", "架"]),
        ("第3章", ["第", "3", "章"]),
        (
            "インストール",
            ["イン", "ンス", "スト", "トー", "ール", "イ", "ン", "ス", "ト", "ー", "ル"],
        ),
        ("한국어", ["한국", "국어", "한", "국", "어"]),
        ("浏览器，跨域。", ["浏览", "览器", "浏", "览", "器", "跨", "域"]),
        ("plain English, url_for", []),
    ],
)
def test_cjk_terms(text, terms):
    assert list(cjk_terms(text)) == terms


# what ``terms_text``/``query_terms`` gave before CJK terms (ragsift 0.6.0), byte for byte
ENGLISH = [
    (
        "Build the address of a view with url_for and the endpoint name.",
        "urlfor",
        ["build", "address", "view", "url", "endpoint", "name", "urlfor"],
    ),
    (
        "@app.before_request registers getHTTPResponse; see flask.Flask.route and --dry-run.",
        "appbeforerequest beforerequest flaskflaskroute flaskroute dryrun get http response",
        [
            "app",
            "request",
            "registers",
            "gethttpresponse",
            "see",
            "flask",
            "route",
            "dry",
            "run",
            "appbeforerequest",
            "beforerequest",
            "flaskflaskroute",
            "flaskroute",
            "dryrun",
            "get",
            "http",
            "response",
        ],
    ),
    (
        "Set MAX_CONTENT_LENGTH in docs/api.rst (std::vector, 3.14, APIs, Straße, café crème).",
        "maxcontentlength docsapirst apirst stdvector",
        [
            "set",
            "max",
            "content",
            "length",
            "docs",
            "api",
            "rst",
            "std",
            "vector",
            "3",
            "14",
            "apis",
            "straße",
            "café",
            "crème",
            "maxcontentlength",
            "docsapirst",
            "apirst",
            "stdvector",
        ],
    ),
]


@pytest.mark.parametrize(("text", "terms", "query"), ENGLISH)
def test_text_without_cjk_gets_exactly_the_terms_it_got_before(text, terms, query):
    assert terms_text(text) == terms == terms_text(text, cjk=False)
    assert query_terms(text) == query == query_terms(text, cjk=False)


def test_query_words_ask_for_cjk_by_bigrams():
    assert query_words("文件上传") == ["文件", "件上", "上传"]
    assert query_words("跨域") == ["跨域"]
    assert query_words("磁") == ["磁"]
    assert query_words("使用FastAPI框架") == ["使用", "fastapi", "框架"]
    assert query_terms("使用FastAPI框架") == ["使用", "fastapi", "框架", "fast", "api"]
    assert query_terms("如何使用url_for函数") == ["如何", "何使", "使用", "url", "函数", "urlfor"]
    assert query_words("the 文件") == ["文件"]  # stopwords as before
    # an index from before CJK terms: whole runs, as its rows were indexed
    assert query_terms("文件上传", cjk=False) == ["文件上传"]
    assert query_terms("使用url_for函数", cjk=False) == ["使用url", "for函数", "使用urlfor函数"]


def _fts_tokens(*texts: str) -> list[list[str]]:
    """FTS5's own tokens of each text (the index's tokenizer)."""
    return lexical.query_tokens(lexical.memory_db(), list(texts))


SAMPLES = [
    "浏览器默认禁止跨域请求，服务器需要设置允许的来源。本项目使用FastAPI框架构建接口。",
    "パッケージをインストールするには、次のコマンドを実行します。認証トークンの有効期限。",
    "数据库连接池（pool）的大小可以在config.toml中修改：第3章，人々ーテスト。",
    "한국어 문서를 검색할 수 있습니다. 파일을 업로드하세요.",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_every_cjk_substring_of_1_to_4_characters_is_matched_and_counted_once(text):
    """Any 1-4 CJK characters the text holds verbatim give a query term that is a token of
    the text or its terms; every bigram and every character of a CJK run is a token exactly
    as often as it occurs."""
    from ragsift.index.terms import CJK

    text_tokens, term_tokens = _fts_tokens(text, terms_text(text))
    held = text_tokens + term_tokens
    for i in range(len(text)):
        for n in range(1, 5):
            q = text[i : i + n]
            if len(q) == n and all(CJK.match(c) for c in q):
                assert set(query_terms(q)) & set(held), q
    for i in range(len(text)):
        for n in (1, 2):
            g = text[i : i + n]
            if len(g) == n and all(CJK.match(c) for c in g):
                assert held.count(g) == sum(text[j : j + n] == g for j in range(len(text))), g


def test_terms_are_linear_in_a_long_run():
    run = "文" * 20_000 + "a" * 5_000
    assert len(terms_text(run).split()) == 2 * 20_000 - 1 + 1
    assert len(query_words(run)) == 2  # each once: 文文 and the Latin part


# ---- both backends: the same postings, ids and scores -----------------------------------

DOCS = {
    "zh/cors.md": ["## 跨域资源共享", "浏览器默认禁止跨域请求，服务器需要设置允许的来源。"],
    "zh/upload.md": ["接收客户端上传的文件时，请使用表单数据。", "文件上传完成后保存到磁盘。"],
    "zh/framework.md": ["本项目使用FastAPI框架构建接口。"],
    "zh/db.md": ["数据库连接池的大小可以在配置文件中修改。"],
    "ja/install.md": ["パッケージをインストールするには、次のコマンドを実行します。"],
    "ja/auth.md": ["認証トークンの有効期限は設定ファイルで変更できます。"],
    "ja/cache.md": ["キャッシュを無効にすると、毎回データベースに問い合わせます。"],
    "ko/search.md": ["한국어 문서를 검색할 수 있습니다."],
    "en/upload.md": ["Receive uploaded files as form data, then save them to disk."],
}
# a word inside a longer run -> the document holding it (ranked first)
FIRST = {
    "跨域": "zh/cors.md",
    "文件上传": "zh/upload.md",
    "磁盘": "zh/upload.md",
    "框架": "zh/framework.md",
    "fastapi": "zh/framework.md",
    "连接池": "zh/db.md",
    "インストール": "ja/install.md",
    "有効期限": "ja/auth.md",
    "認証": "ja/auth.md",
    "キャッシュ": "ja/cache.md",
    "磁": "zh/upload.md",
    "証": "ja/auth.md",
    "검색": "ko/search.md",
    "使用FastAPI框架": "zh/framework.md",
}


def _writes(rng) -> list[DocumentWrite]:
    out = []
    for path, texts in DOCS.items():
        vecs = rng.standard_normal((len(texts), 8)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        out.append(
            DocumentWrite(
                key=path,
                path=path,
                sha256="0" * 64,
                vectors=vecs,
                records=[
                    ChunkRow(path=path, index=i, text=t, content_hash=f"{path}-{i}", tokens=len(t))
                    for i, t in enumerate(texts)
                ],
            )
        )
    return out


def _location(tmp_path, backend: str) -> str:
    if backend == "lance":
        pytest.importorskip("lance", reason="the Lance backend needs: pip install 'ragsift[lance]'")
        return str(tmp_path / "cjk.lance")
    return str(tmp_path / "cjk.db")


def _build(location: str) -> None:
    with open_index(location, "w") as ix:
        ix.set_settings(model="test", model_fingerprint="test/8/x", dimensions=8)
        ix.write_documents(_writes(np.random.default_rng(5)))
        ix.compact()


def _hits(location: str, query: str) -> list[tuple[str, str, float]]:
    """(path, text, BM25) of the lexical candidates, best first."""
    with open_index(location, "r") as ix:
        hits = ix.lexical_candidates(query, 20)
        recs = {r.rowid: r for r in ix.chunk_records([r for r, _ in hits])}
        return [(recs[r].path, recs[r].text, s) for r, s in hits]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("cjk")
    out = {"sqlite": _location(root, "sqlite")}
    _build(out["sqlite"])
    try:
        out["lance"] = _location(root, "lance")
    except pytest.skip.Exception:
        return out
    _build(out["lance"])
    return out


@pytest.mark.parametrize("backend", ["sqlite", "lance"])
@pytest.mark.parametrize("query", sorted(FIRST))
def test_a_word_inside_a_longer_run_ranks_its_chunk_first(built, backend, query):
    if backend not in built:
        pytest.skip("the Lance backend needs: pip install 'ragsift[lance]'")
    got = _hits(built[backend], query)
    assert got and got[0][0] == FIRST[query], got
    assert query.lower() in got[0][1].lower()


def test_both_backends_give_the_same_ids_scores_and_ceilings(built):
    if "lance" not in built:
        pytest.skip("the Lance backend needs: pip install 'ragsift[lance]'")
    queries = [
        *FIRST,
        "上传",
        "文件",
        "的",
        "ー",
        "浏览器默认禁止跨域请求",
        "save files to disk",
        "キャッシュを無効",
        "数据库 配置",
    ]
    with open_index(built["sqlite"], "r") as a, open_index(built["lance"], "r") as b:
        for q in queries:
            assert _hits(built["sqlite"], q) == _hits(built["lance"], q), q
            assert a.lexical_ceiling(q) == pytest.approx(b.lexical_ceiling(q), abs=1e-12), q


def test_one_character_queries_match_every_chunk_holding_the_character(built):
    for ch in ("文", "上", "ス", "국"):
        got = _hits(built["sqlite"], ch)
        holding = {(p, t) for p, texts in DOCS.items() for t in texts if ch in t}
        assert {(p, t) for p, t, _ in got} == holding, ch


# ---- indexes from before: read with their rule, upgraded by a writer ---------------------


def as_schema_5(path: str) -> None:
    """Turn an index file into what schema 5 (ragsift 0.6.0) wrote: the terms without CJK,
    postings from them."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN")
        rows = db.execute("SELECT id, context, text FROM chunks").fetchall()
        db.executemany(
            "UPDATE chunks SET terms = ? WHERE id = ?",
            [(terms_text(c, t, cjk=False), i) for i, c, t in rows],
        )
        db.execute("DELETE FROM lex_postings")
        db.execute("DELETE FROM lex_blocks")
        lexical.backfill(db)
        db.execute("PRAGMA user_version = 5")
        db.execute("COMMIT")
    finally:
        db.close()


def _bytes(path: str) -> bytes:
    return b"".join(
        Path(p).read_bytes() for p in sorted([path, path + "-wal"]) if os.path.exists(p)
    )


def test_a_sqlite_index_from_schema_5_is_read_with_its_rule_then_migrated(tmp_path, built):
    path = str(tmp_path / "old.db")
    shutil.copy(built["sqlite"], path)
    as_schema_5(path)
    before = _bytes(path)
    with open_index(path, "r") as ix:
        assert ix.settings()["schema_version"] == 5
        assert ix.verify() == []
    # read with the rule it was written with: a whole run matches, a word inside one does not
    assert [p for p, _, _ in _hits(path, "浏览器默认禁止跨域请求")] == ["zh/cors.md"]
    assert _hits(path, "文件上传") == []
    english = _hits(path, "save files to disk")
    assert _bytes(path) == before  # a reader changes nothing
    with open_index(path, "w") as ix:  # a writer migrates
        ix.compact()  # with its first write (issue 40: opening writes nothing)
        assert migrations.schema_version(ix.db) == migrations.LATEST >= 6
        assert ix.verify() == []
    with open_index(path, "r") as a, open_index(built["sqlite"], "r") as b:
        q = "SELECT id, terms FROM chunks ORDER BY id"
        assert a.db.execute(q).fetchall() == b.db.execute(q).fetchall()
        assert a._lexical_postings() is not None
    for query in [*FIRST, "save files to disk", "的"]:
        assert _hits(path, query) == _hits(built["sqlite"], query), query
    assert _hits(path, "save files to disk") == english


def test_a_lance_index_from_schema_3_is_read_with_its_rule_then_upgraded(
    tmp_path, monkeypatch, built
):
    pytest.importorskip("lance")
    from ragsift.index import lance as lance_module
    from ragsift.index import terms

    path = str(tmp_path / "old.lance")
    with monkeypatch.context() as m:  # written as schema 3 was: terms without CJK
        m.setattr(lance_module, "SCHEMA_VERSION", 3)
        m.setattr(
            terms,
            "terms_text",
            lambda *t, cjk=False: " ".join(x for text in t for x in terms.identifier_terms(text)),
        )
        _build(path)
    with open_index(path, "r") as ix:
        assert ix.settings()["schema_version"] == 3
    assert [p for p, _, _ in _hits(path, "浏览器默认禁止跨域请求")] == ["zh/cors.md"]
    assert _hits(path, "文件上传") == []
    with open_index(path, "w") as ix:
        ix.compact()  # a writer upgrades with its first write (issue 40)
        assert ix.settings()["schema_version"] == lance_module.SCHEMA_VERSION == 4
        assert ix.verify() == []
        fts = ix._ds.to_table(columns=["rowid", "fts"], filter="kind = 'chunk'").to_pylist()
        assert any("件上" in r["fts"] for r in fts)
    with open_index(path, "r") as ix:  # the postings rewritten as one batch, none in memory
        postings = ix._lexical_postings()
        assert postings.complete() and not postings.extra and postings.batches == 1
    for query in [*FIRST, "save files to disk", "的"]:
        assert _hits(path, query) == _hits(built["sqlite"], query), query


# ---- the CLI, once ---------------------------------------------------------------------------


def test_query_mode_lexical_finds_cjk_words_from_the_cli(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for path, texts in DOCS.items():
        (docs / path.replace("/", "_")).write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    index = str(tmp_path / "i.db")

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "RAGSIFT_DEBUG"}
        return subprocess.run(
            [sys.executable, "-m", "ragsift", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )

    assert run("embed", str(docs), "--index", index).returncode == 0
    proc = run("query", "跨域", "--index", index, "--mode", "lexical", "--threshold", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    first = json.loads(proc.stdout.splitlines()[0])
    assert first["path"].endswith("zh_cors.md") and "跨域" in first["text"], first


def test_a_random_substring_always_reaches_a_chunk_holding_it(built):
    """The issue's target on the small corpus: 1-4 CJK characters drawn from the documents
    reach a chunk holding them in the top 10."""
    from ragsift.index.terms import CJK

    rng = random.Random(37)
    texts = [t for ts in DOCS.values() for t in ts]
    for _ in range(60):
        t = rng.choice(texts)
        n = rng.randint(1, 4)
        i = rng.randrange(len(t))
        q = t[i : i + n]
        if len(q) < n or not all(CJK.match(c) for c in q):
            continue
        assert any(q in text for _, text, _ in _hits(built["sqlite"], q)[:10]), q
