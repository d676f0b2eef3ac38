"""Issue 13, target 2: a run that will embed everything (a new index: no file or a 0-byte
one, or a rebuilt index) starts loading the model on a thread at once
(``ingest.model.ModelLoad``), so the session is built while the index opens and the first files
are chunked. An index with documents loads
the model only when something needs embedding. No load thread outlives the run."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from ragsift.errors import RagsiftError
from ragsift.ingest import BuildRequest, batch, build_index, local, model, run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def loader_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "ragsift-model"]


@pytest.fixture
def loads(monkeypatch):
    """The ``_ModelLoad`` objects a run creates."""
    made: list = []
    real = model.ModelLoad

    def counting(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(run, "ModelLoad", counting)
    return made


def test_a_new_index_loads_the_model_ahead_and_uses_it(tmp_path, loads):
    shutil.copytree(FIXTURES / "beekeeping", tmp_path / "docs")
    s = build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(tmp_path / "docs")]))
    assert len(loads) == 1 and s.model_loaded and s.embedded == s.chunks > 0
    assert loader_threads() == []
    # an unchanged re-run and a re-run with one changed file: no load ahead
    s = build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(tmp_path / "docs")]))
    assert len(loads) == 1 and not s.model_loaded
    first = sorted((tmp_path / "docs").rglob("*.md"))[0]
    first.write_text(first.read_text() + "\n\nOne more paragraph about smokers.\n")
    s = build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(tmp_path / "docs")]))
    assert len(loads) == 1 and s.model_loaded and s.embedded >= 1


def test_a_rebuild_loads_ahead(tmp_path, loads):
    shutil.copytree(FIXTURES / "beekeeping", tmp_path / "docs")
    build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(tmp_path / "docs")]))
    s = build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(tmp_path / "docs")], rebuild=True))
    assert len(loads) == 2 and s.model_loaded and s.reused == 0 < s.embedded


def test_nothing_to_embed_waits_for_the_unused_load(tmp_path, loads):
    # every file skipped: the model loaded ahead is not used, and its thread is done
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    s = build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(docs)]))
    assert len(loads) == 1 and not s.model_loaded and s.chunks == 0
    assert loader_threads() == []


def test_an_error_before_the_index_opens_leaves_no_load_running(tmp_path, loads):
    shutil.copytree(FIXTURES / "beekeeping", tmp_path / "docs")
    foreign = tmp_path / "foreign.sqlite"
    foreign.write_bytes(b"not an index, not empty")
    with pytest.raises(RagsiftError):
        build_index(BuildRequest.of(foreign, [str(tmp_path / "docs")]))
    assert loads == [] and loader_threads() == []  # a foreign file: nothing loaded ahead
    with pytest.raises(RagsiftError, match="tokenizer|model"):
        build_index(
            BuildRequest.of(tmp_path / "i.sqlite", [str(tmp_path / "docs")], model=str(tmp_path))
        )  # no model files there
    assert loader_threads() == []


def test_a_failed_load_ahead_is_raised_by_the_run(tmp_path, monkeypatch):
    # the load's own error reaches the caller, as a load on first need would
    def broken(*_a, **_k):
        raise RagsiftError("cannot load model: broken on purpose")

    import ragsift.embedders as embedders

    monkeypatch.setattr(embedders, "load_embedder", broken)
    shutil.copytree(FIXTURES / "beekeeping", tmp_path / "docs")
    with pytest.raises(RagsiftError, match="broken on purpose"):
        build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(tmp_path / "docs")]))
    assert loader_threads() == []


@pytest.mark.parametrize("loading", [True, False])
def test_the_first_batch_gathers_while_the_model_loads(tmp_path, monkeypatch, loading):
    # 12 one-chunk files: FLUSH_FILES (8) makes two commits; while the model is still
    # loading (held here, not timed) the batch may grow up to 4x before it commits
    from ragsift.index.store import IndexStore

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"n{i:02d}.txt").write_text(f"Note {i} about hives and queen bees.\n")
    monkeypatch.setattr(model.ModelLoad, "loading", lambda self: loading)
    commits: list[int] = []
    real = IndexStore.write_documents

    def counting(self, batch):
        commits.append(len(batch))
        return real(self, batch)

    monkeypatch.setattr(IndexStore, "write_documents", counting)
    s = build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(docs)]))
    assert s.embedded == s.chunks == 12
    assert commits == ([12] if loading else [8, 4])


def test_a_batch_due_when_the_model_is_ready_commits_without_the_next_file(tmp_path, monkeypatch):
    # the first batch gathers files while the model loads; the model is ready when the 10th
    # file starts parsing, which is slow (held here until a batch is committed): the due
    # batch must commit while the consumer waits for that file, not after it. Broken, the producer waits 60 s and the order of
    # events shows it; no timing decides the outcome.
    from ragsift.index.store import IndexStore

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"n{i:02d}.txt").write_text(f"Note {i} about hives and queen bees.\n")
    state = {"loading": True, "calls": 0}
    events: list = []
    committed = threading.Event()
    monkeypatch.setattr(model.ModelLoad, "loading", lambda self: state["loading"])
    real_records = local.index_records

    nine_added = threading.Event()
    real_add = batch.Run.add

    def counting_add(self, doc, work=0):
        real_add(self, doc, work)
        if len(self.pending) == 9:
            nine_added.set()

    def slow_tenth(chunker, doc):
        state["calls"] += 1
        if state["calls"] == 10:
            nine_added.wait(60)  # the consumer holds 9 files and waits for the 10th
            state["loading"] = False  # the model is ready now
            committed.wait(60)
            events.append("10th file parsed")
        return real_records(chunker, doc)

    real_write = IndexStore.write_documents

    def recording(self, batch):
        out = real_write(self, batch)
        events.append(("commit", len(batch)))
        committed.set()
        return out

    monkeypatch.setattr(local, "index_records", slow_tenth)
    monkeypatch.setattr(batch.Run, "add", counting_add)
    monkeypatch.setattr(IndexStore, "write_documents", recording)
    s = build_index(BuildRequest.of(tmp_path / "i.sqlite", [str(docs)]))
    assert s.embedded == 12
    assert events == [("commit", 9), "10th file parsed", ("commit", 3)]
