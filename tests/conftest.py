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

# What a user's shell may export that changes ragsift's output or the index it opens is not
# the tests' to inherit: the terminal's width and colour, and ragsift's own variables (a test
# that wants one sets it). Cleared here, so every worker and every child starts without them.
for _var in (
    "COLUMNS",
    "LINES",
    "FORCE_COLOR",
    "NO_COLOR",
    "CLICOLOR_FORCE",
    "RAGSIFT_DEBUG",
    "RAGSIFT_INDEX",
    "RAGSIFT_NO_PROJECT",
):
    os.environ.pop(_var, None)

# The suite runs on every core with pytest-xdist (``-n auto --dist loadgroup``, pyproject.toml).
# A test in this group runs on the worker that runs the others: the tests that start a Ray
# cluster run one after another (two clusters on a 2-core machine starve each other).
RAY_GROUP = "ray"


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray cluster (2 CPUs) for one module's tests: an ``--engine ray`` build in this
    process joins it (``ingest.ray`` uses an initialised Ray and leaves it running) instead of
    starting and stopping its own, seconds each. As ``connect`` does for its own local cluster,
    workers run at the test's priority, not Ray's niceness 15, so a busy CI machine cannot
    starve them. Tests that use it belong to ``RAY_GROUP``."""
    ray = pytest.importorskip("ray", reason="--engine ray needs: pip install 'ragsift[ray]'")
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def pytest_collection_modifyitems(config, items):
    """Each test goes to a worker with the rest of its module (its ``xdist_group`` is the
    module's name, unless it names one itself): a module-scoped fixture, often an index built
    by the real model, is then built once, not once per worker that runs one of its tests.
    The tests of the Ray group are also ``slow`` (``-m "not slow"``: the quick subset)."""
    for item in items:
        group = item.get_closest_marker("xdist_group")
        if group is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
        elif group.args[:1] == (RAY_GROUP,):
            item.add_marker(pytest.mark.slow)  # a Ray cluster: seconds to start


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU this process may run on (``taskset`` counts), at most
    4 (each worker loads the model and builds its own session fixtures)."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


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


def start_cli(*args: str, cwd: Path, env: dict) -> subprocess.Popen:
    """Start ``python -m ragsift ARGS`` as a child the test will signal (Ctrl-C): stdout and
    stderr piped as text, SIGINT at its default (``default_signals``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "ragsift", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )


def run_cli(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    env: dict | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
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
