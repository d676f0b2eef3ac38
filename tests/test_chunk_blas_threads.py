"""``ragsift chunk`` runs with one OpenBLAS thread unless the user chose (issue 40, item 7):
numpy's import would start a BLAS thread per core that no chunking step uses."""

import os

import pytest
from typer.testing import CliRunner

from ragsift.cli import app
from ragsift.cli import chunk as chunk_cli

KEY = "OPENBLAS_NUM_THREADS"


def _seen(monkeypatch, preset):
    if preset is None:
        monkeypatch.delenv(KEY, raising=False)
    else:
        monkeypatch.setenv(KEY, preset)
    seen = []
    chunk_cli.without_blas_threads(lambda: seen.append(os.environ.get(KEY)))()
    return seen[0], os.environ.get(KEY)


def test_one_thread_during_the_run_and_the_environment_restored(monkeypatch):
    assert _seen(monkeypatch, None) == ("1", None)


@pytest.mark.parametrize("preset", ["4", ""])
def test_a_value_the_user_set_is_kept(monkeypatch, preset):
    assert _seen(monkeypatch, preset) == (preset, preset)


def test_restored_when_the_command_fails(monkeypatch):
    monkeypatch.delenv(KEY, raising=False)

    def fail():
        assert os.environ[KEY] == "1"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        chunk_cli.without_blas_threads(fail)()
    assert KEY not in os.environ


def test_the_chunk_command_runs_with_it(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY, raising=False)
    seen = []
    real = chunk_cli.write_jsonl

    def spy(rows):
        seen.append(os.environ.get(KEY))
        return real(rows)

    monkeypatch.setattr(chunk_cli, "write_jsonl", spy)
    (tmp_path / "a.md").write_text("# Title\n\nSome words here.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["chunk", "--tokenizer", "chars", str(tmp_path / "a.md")])
    assert result.exit_code == 0, result.output
    assert seen == ["1"]
    assert KEY not in os.environ
