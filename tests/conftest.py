"""Shared test helpers: paths to the fixture corpus and a subprocess runner for the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SHARED_EVAL = REPO.parent / "shared" / "eval"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None,
            env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m ragsift ARGS`` as a real subprocess (what a shell user gets)."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("RAGSIFT_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "ragsift", *args],
        cwd=cwd or REPO,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def cli():
    return run_cli
