"""Issue 10 §3 / 13: progress of ``ragsift embed`` is right from the first line, and the bar
and ETA follow work (bytes, advanced chunk by chunk), not files; the producer thread keeps the
run's results and its order of events."""

from __future__ import annotations

import shutil

import pytest

from ragsift.cli.embed import progress_line
from ragsift.ingest import BuildHooks, BuildRequest, CountedProgress, EmbedProgress, build_index


class Recorder(EmbedProgress):
    def __init__(self) -> None:
        self.started = None
        self.events: list[dict] = []

    def start(self, files, work=0):
        self.started = (files, work)

    def advance(self, files=0, chunks=0, tokens=0, *, work=0, unneeded=0, seconds=0.0):
        self.events.append(
            dict(
                files=files,
                chunks=chunks,
                tokens=tokens,
                work=work,
                unneeded=unneeded,
                seconds=seconds,
                queued_work=0,
                queued_tokens=0,
            )
        )

    def queued(self, work=0, tokens=0):
        self.events.append(
            dict(
                files=0,
                chunks=0,
                tokens=0,
                work=0,
                unneeded=0,
                seconds=0.0,
                queued_work=work,
                queued_tokens=tokens,
            )
        )

    def total(self, key):
        return sum(e[key] for e in self.events)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, fixtures_dir):
    folder = tmp_path_factory.mktemp("corpus")
    for name in ("beekeeping/handbook.md", "lantern/guide.md", "field-notes.txt"):
        shutil.copy(fixtures_dir / name, folder / name.replace("/", "-"))
    (folder / "empty.txt").write_text("")
    return folder


def test_work_adds_up_and_every_embedded_token_has_model_time(corpus, tmp_path):
    from ragsift.chunkers import make_chunker

    rec = Recorder()
    small = make_chunker("recursive", tokenizer="cl100k", size=24, min_chars=0)
    summary = build_index(
        BuildRequest.of(tmp_path / "i.db", [str(corpus)], chunker=small), BuildHooks(progress=rec)
    )
    files, work = rec.started
    assert files == 4
    assert work == sum(p.stat().st_size for p in corpus.iterdir())
    assert rec.total("files") == 4
    assert rec.total("chunks") == summary.chunks > 0
    assert rec.total("tokens") == summary.tokens > 0
    assert rec.total("work") + rec.total("unneeded") == work
    assert rec.total("unneeded") == 0  # the empty file is skipped, with no bytes
    embedding = [e for e in rec.events if e["tokens"]]
    # the handbook alone gives more than one model call: the bar moves inside a file
    assert len(embedding) > 1 and all(e["seconds"] > 0 and e["work"] >= 0 for e in embedding)
    assert sum(1 for e in embedding if e["work"] > 0) > 1


def test_an_unchanged_rerun_drops_all_work_from_the_total(corpus, tmp_path):
    build_index(BuildRequest.of(tmp_path / "i.db", [str(corpus)]))
    rec = Recorder()
    summary = build_index(
        BuildRequest.of(tmp_path / "i.db", [str(corpus)]), BuildHooks(progress=rec)
    )
    assert summary.unchanged == 3 and summary.embedded == 0
    assert rec.total("work") == 0
    assert rec.total("unneeded") == rec.started[1]


def test_the_first_rate_is_tokens_over_model_time():
    c = CountedProgress()
    c.start(files=86, work=1000)
    assert c.rate() is None and c.eta() is None
    assert "- tokens/s" in progress_line(c) and "ETA -" in progress_line(c)
    c.advance(files=0, chunks=0, tokens=5000, work=100, unneeded=0, seconds=2.0)
    assert c.rate() == 2500.0
    assert progress_line(c).startswith("10%, 0/86 files, 0 chunks, 2,500 tokens/s, ETA ")
    c.advance(files=85, chunks=0, tokens=0, work=0, unneeded=800, seconds=0.0)
    assert c.work_total == 200 and progress_line(c).startswith("50%, 85/86 files")


def test_a_producer_error_reaches_the_caller(corpus, tmp_path):
    from ragsift.ingest.prefetch import prefetched as _prefetched

    def items():
        yield 1
        raise ValueError("boom")

    got = []
    with pytest.raises(ValueError, match="boom"):
        for x in _prefetched(items(), 2):
            got.append(x)
    assert got == [1]


def test_the_tokens_left_to_embed_are_what_queued_reports(corpus, tmp_path):
    """Issue 23: the percentage and ETA follow the tokens left to embed. Every chunked file
    reports its bytes and its chunks' tokens; tokens whose vector is found are taken back; so
    at the end the tokens queued are exactly the tokens embedded, and the bytes queued are
    the bytes of the files parsed."""
    from ragsift.chunkers import make_chunker

    small = make_chunker("recursive", tokenizer="cl100k", size=24, min_chars=0)
    rec = Recorder()
    summary = build_index(
        BuildRequest.of(tmp_path / "i.db", [str(corpus)], chunker=small), BuildHooks(progress=rec)
    )
    assert rec.total("queued_tokens") == summary.tokens > 0
    assert rec.total("queued_work") == sum(p.stat().st_size for p in corpus.iterdir())
    # a re-run after one edit re-chunks that file and finds most of its vectors
    first = corpus / "field-notes.txt"
    original = first.read_text()
    try:
        first.write_text(original + "\nOne more line about the orchard.\n")
        rec = Recorder()
        summary = build_index(
            BuildRequest.of(tmp_path / "i.db", [str(corpus)], chunker=small),
            BuildHooks(progress=rec),
        )
        assert summary.reused > 0
        assert rec.total("queued_tokens") == summary.tokens
        assert any(e["queued_tokens"] < 0 for e in rec.events)  # reused chunks taken back
    finally:
        first.write_text(original)


def test_percent_and_eta_follow_tokens_not_files():
    """The case of the issue: most files done, one big file not chunked yet. By bytes the
    bar said 100% with work left; by tokens it says how much is left."""
    c = CountedProgress()
    c.start(files=76, work=10_000)
    # 67 small files (2,000 bytes) chunked into 4,000 tokens, all embedded
    c.queued(2_000, 4_000)
    c.advance(files=67, chunks=67, tokens=4_000, work=2_000, unneeded=0, seconds=1.0)
    # the rest (8,000 bytes) is not chunked yet: estimated at 2 tokens per byte
    assert c.fraction() == 4_000 / (4_000 + 8_000 * 2)
    assert progress_line(c).startswith("20%, 67/76 files")
    assert c.eta() is not None and c.eta() > 0
    # half of the remaining chunks turn out to be reused: fewer tokens to embed
    c.queued(8_000, 16_000)
    c.queued(0, -8_000)
    assert c.fraction() == 4_000 / 12_000
    c.advance(files=9, chunks=9, tokens=8_000, work=8_000, unneeded=0, seconds=1.0)
    assert c.fraction() == 1.0 and c.eta() == 0


def test_without_tokens_the_bar_follows_bytes():
    c = CountedProgress()
    c.start(files=3, work=300)
    c.queued(100, 0)  # a file whose chunks have no token counts (e.g. stdin records)
    c.advance(files=1, chunks=0, tokens=0, work=100, unneeded=0, seconds=0.0)
    assert c.fraction() == 100 / 300
