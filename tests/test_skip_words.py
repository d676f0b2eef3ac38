"""A skip reason that names a parameter (``errors.Worded``: the size cap's ``max_file_size``)
keeps its words on the way to a front end (task H): through the summaries' ``as_dict`` (the
``--json`` summaries: ``name_of`` words it) and through the Ray parse stage (the reason comes
back pickled, not flattened to the API's words)."""

from __future__ import annotations

import pickle
from pathlib import Path

from ragsift.errors import Worded, Words
from ragsift.ingest.summary import ChunkSummary, EmbedSummary
from ragsift.sources import Skipped

CAP = Worded(Words("too large ({size}; {max_file_size} raises it)", {"size": "5 KiB"}))


def flags(name, value=None):  # a front end's words, as cli._common.flag_name writes them
    return "--" + name.replace("_", "-")


def test_the_summaries_word_a_worded_reason_in_the_callers_words():
    for summary in (ChunkSummary(), EmbedSummary()):
        summary.skipped = [Skipped("big.txt", CAP), Skipped("b.json", "unparsable JSON: {x}")]
        assert summary.as_dict()["skipped"] == [
            {"path": "big.txt", "reason": "too large (5 KiB; max_file_size raises it)"},
            {"path": "b.json", "reason": "unparsable JSON: {x}"},  # plain text: as it is
        ]
        assert summary.as_dict(flags)["skipped"][0]["reason"] == (
            "too large (5 KiB; --max-file-size raises it)"
        )
        assert type(summary.as_dict()["skipped"][0]["reason"]) is str


def test_the_ray_parse_stage_hands_back_the_reason_with_its_words(tmp_path, monkeypatch):
    """``parse_file`` (the Ray task, in-process here): a ``Worded`` reason survives."""
    import ragsift.sources.reading as reading
    from ragsift.chunkers import make_chunker
    from ragsift.ingest.ray_stages import parse_file

    monkeypatch.setattr(reading, "too_large", lambda *args: CAP)
    big: Path = tmp_path / "big.txt"
    big.write_text("word " * 1000)
    row = {
        "file": str(big),
        "relpath": "big.txt",
        "size": big.stat().st_size,
        "mtime": big.stat().st_mtime,
        "key": "big.txt",
        "max_file_size": 4096,
        "named": False,
    }
    out = parse_file(row, make_chunker("recursive", tokenizer="chars", size=300))
    reason = pickle.loads(out["skip"])
    assert isinstance(reason, Worded) and reason.words.worded(flags) == CAP.words.worded(flags)


def test_the_size_cap_names_its_parameter_in_each_front_ends_words(tmp_path):
    """``too_large``: the API's summary says ``max_file_size``, ``ragsift embed`` (its skip line
    and ``--json``) and ``ragsift chunk`` say ``--max-file-size``, as before."""
    import json

    from ragsift.ingest.load import iter_documents
    from tests.conftest import run_cli

    (tmp_path / "small.md").write_text("# S\n\nShort.\n")
    (tmp_path / "big.txt").write_text("word " * 1000)  # 5,000 bytes
    summary = ChunkSummary()
    list(iter_documents([str(tmp_path)], summary=summary, max_file_size=4096))
    [big] = summary.skipped
    assert isinstance(big.reason, Worded)
    api = "too large (4.9 KiB; the cap is 4 KiB; max_file_size raises it)"
    assert big.reason == api and summary.as_dict()["skipped"][0]["reason"] == api
    cli = "too large (4.9 KiB; the cap is 4 KiB; --max-file-size raises it)"
    proc = run_cli(
        "embed", str(tmp_path), "-i", str(tmp_path / "i.db"), "--max-file-size", "4k", "--json"
    )
    assert proc.returncode == 3
    assert f"ragsift: skipped {tmp_path}/big.txt: {cli}" in proc.stderr.splitlines()
    assert json.loads(proc.stdout)["skipped"] == [{"path": f"{tmp_path}/big.txt", "reason": cli}]
    proc = run_cli("chunk", str(tmp_path), "--max-file-size", "4k")
    assert f"ragsift: skipped {tmp_path}/big.txt: {cli}" in proc.stderr.splitlines()


def test_a_gitignore_over_its_fixed_cap_gives_no_advice(tmp_path):
    """``.gitignore`` files are capped at 1 MiB whatever ``max_file_size`` says: the warning
    says so without naming a parameter that would not raise it."""
    from ragsift.sources import walk

    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / ".gitignore").write_text("x\n" * (600 * 1024))  # 1.2 MiB
    w = walk([str(tmp_path)])
    assert w.warnings == [
        (f"{tmp_path}/.gitignore", "not applied: too large (1.2 MiB; the cap is 1 MiB)")
    ]
