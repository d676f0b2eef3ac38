"""An idle reader holds nothing back (issue 40): the MCP server and an ``api.Index`` beside
repeated writes.

While a SQLite reader keeps a snapshot open, no checkpoint can reset the write-ahead log past
it, so every write appends to ``INDEX-wal``: a server idle between calls beside
``embed --watch`` grew it without bound. ``Index.release`` ends the snapshot until the next
read, and the MCP server releases after every call. Sizes, not times, decide every test here:
the log's size after several one-line runs against its size after the first, with the
unreleased reader as the control that shows the check can fail."""

from __future__ import annotations

import os
import shutil

import pytest

import ragsift.api as rs

RUNS = 4


def wal_size(index) -> int:
    try:
        return os.path.getsize(f"{index}-wal")
    except FileNotFoundError:
        return 0


def runs(folder, index) -> list[int]:
    """``RUNS`` incremental builds, each adding one line to one page (a word no page held):
    the log's size after each."""
    sizes = []
    for i in range(RUNS):
        with open(folder / "handbook.md", "a", encoding="utf-8") as f:
            f.write(f"\n\nThe apiary log gained entry zyxwv{i} today.\n")
        rs.build(str(index), [str(folder)])
        sizes.append(wal_size(index))
    return sizes


@pytest.fixture()
def site(tmp_path):
    folder = tmp_path / "docs"
    shutil.copytree("fixtures/beekeeping", folder)
    index = tmp_path / "idx.db"
    rs.build(str(index), [str(folder)])
    return folder, index


def test_a_released_reader_does_not_hold_the_log_back_and_sees_the_runs(site):
    folder, index = site
    with rs.open_index(str(index)) as reader:
        reader.query("when do honey bees swarm", threshold=None)  # a snapshot, then idle
        reader.release()
        sizes = runs(folder, index)
        # each run's log starts again at its beginning: the file stays one run's size
        assert sizes[-1] <= 1.5 * sizes[0], sizes
        # the next read takes a new snapshot: it sees what the runs committed
        found = reader.query(f"zyxwv{RUNS - 1}", mode="lexical", threshold=None)
        assert found.candidates and "handbook.md" in found.candidates[0].path


def test_the_control_a_held_snapshot_makes_the_log_grow(site):
    """Without ``release`` the same runs grow the log run after run: what the test above
    would see if release did nothing."""
    folder, index = site
    with rs.open_index(str(index)) as reader:
        reader.query("when do honey bees swarm", threshold=None)
        sizes = runs(folder, index)
        assert sizes[-1] >= 2 * sizes[0], sizes
        # the held snapshot does not see the runs until refreshed
        assert not reader.query(f"zyxwv{RUNS - 1}", mode="lexical", threshold=None).candidates
        assert reader.refresh()
        assert reader.query(f"zyxwv{RUNS - 1}", mode="lexical", threshold=None).candidates


def test_the_mcp_server_releases_after_each_call(site):
    from ragsift.mcp_server.service import Service

    folder, index = site
    service = Service(str(index), threshold=0.0)
    try:
        assert "handbook.md" in str(service.search("when do honey bees swarm"))
        sizes = runs(folder, index)
        assert sizes[-1] <= 1.5 * sizes[0], sizes
        assert f"zyxwv{RUNS - 1}" in str(service.search(f"zyxwv{RUNS - 1}"))
    finally:
        service.close()
