"""Shared test helpers: paths to the fixture corpus and a subprocess runner for the CLI."""

from __future__ import annotations

import os
import signal
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


def default_signals() -> None:
    """``preexec_fn`` for a child a test will signal: SIGINT back to its default. A runner
    started in the background (``cmd &``, ``nohup``, cron, some CI runners) ignores SIGINT, and
    an ignored signal is inherited across ``exec``: the child would never see the test's Ctrl-C
    (Python installs its KeyboardInterrupt handler only where SIGINT is not ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
