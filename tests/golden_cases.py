"""The ``ragsift chunk`` runs whose JSONL output must stay byte-identical (issue 13: no parser
shortcut may change a chunk). Shared by ``test_golden_chunks.py`` and
``bench/tools/make_golden_chunks.py``, which wrote the golden files from main."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# ../shared/eval beside the repository (CI); RAGSIFT_SHARED_EVAL points elsewhere (worktrees)
SHARED_EVAL = Path(os.environ.get("RAGSIFT_SHARED_EVAL", REPO.parent / "shared" / "eval"))
CHROMA_DEV = SHARED_EVAL / "chroma-dev" / "corpora"
# the markdown, text and reStructuredText fixtures (the formats whose parse this guards)
FIXTURE_PATHS = [
    "fixtures/" + p
    for p in (
        "beekeeping/handbook.md",
        "lantern/guide.md",
        "field-notes.txt",
        "legacy/market-notes.txt",
        "sourdough.rst",
    )
]

CASES: dict[str, list[str]] = {
    "recursive-512": ["--strategy", "recursive", "--size", "512", "--tokenizer", "cl100k"],
    "recursive-64-headers": [
        "--strategy",
        "recursive",
        "--size",
        "64",
        "--tokenizer",
        "cl100k",
        "--retain-headers",
        "--overlap",
        "8",
    ],
    "recursive-md-rules-chars": [
        "--strategy",
        "recursive",
        "--rules",
        "markdown",
        "--size",
        "300",
        "--unit",
        "chars",
    ],
    "sentence-64": ["--strategy", "sentence", "--size", "64", "--tokenizer", "cl100k"],
    "markdown-128-pages": [
        "--strategy",
        "markdown",
        "--size",
        "128",
        "--tokenizer",
        "cl100k",
        "--page-break-tags",
    ],
    "heading": ["--strategy", "heading", "--max-chars", "600", "--tokenizer", "cl100k"],
    "paragraph": ["--strategy", "paragraph", "--max-chars", "400", "--tokenizer", "cl100k"],
    # main's default tokenizer was cl100k; `chunk` now defaults to embed's (model tokens), so
    # every case names its tokenizer
    "tokens-100": [
        "--strategy",
        "tokens",
        "--size",
        "100",
        "--overlap",
        "10",
        "--tokenizer",
        "cl100k",
    ],
    "chars-500": ["--strategy", "chars", "--max-chars", "500", "--tokenizer", "cl100k"],
    "whole": ["--strategy", "whole", "--tokenizer", "cl100k"],
}


# cases whose fixture output is kept in full (readable diffs); the others as sha256 digests
KEEP_JSONL = ("recursive-64-headers", "markdown-128-pages")


def chunk_jsonl(paths: list[str], args: list[str], cwd: Path = REPO) -> bytes:
    """stdout of ``ragsift chunk PATHS ARGS`` run in ``cwd`` (in-process, the real command)."""
    from typer.testing import CliRunner

    from ragsift.cli import app

    here = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, ["chunk", *paths, *args])
    finally:
        os.chdir(here)
    if result.exit_code != 0:
        raise AssertionError(f"chunk {args} exited {result.exit_code}: {result.output[-500:]}")
    return result.stdout_bytes
