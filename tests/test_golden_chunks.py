"""Issue 13: speed-ups of the parsers and the output path may not change a single chunk.

``tests/data/golden_chunks/`` was written by ``bench/tools/make_golden_chunks.py`` from main
before the speed-ups: the stdout of ``ragsift chunk`` for every case in ``golden_cases.py``,
on the markdown/text/rst fixtures (two cases in full, all as sha256) and on the chroma-dev
corpora (sha256 only) when ``../shared/eval`` is present.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from golden_cases import CASES, CHROMA_DEV, FIXTURE_PATHS, KEEP_JSONL, REPO, chunk_jsonl

GOLDEN = REPO / "tests" / "data" / "golden_chunks"
DIGESTS = json.loads((GOLDEN / "digests.json").read_text())


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixture_chunks_are_byte_identical_to_main(case):
    data = chunk_jsonl(FIXTURE_PATHS, CASES[case])
    if case in KEEP_JSONL:
        want = (GOLDEN / f"{case}.jsonl").read_text(encoding="utf-8").splitlines()
        assert data.decode("utf-8").splitlines() == want
    assert hashlib.sha256(data).hexdigest() == DIGESTS["fixtures"][case]


@pytest.mark.parametrize("case", sorted(CASES))
def test_chroma_dev_chunks_are_byte_identical_to_main(case):
    if not CHROMA_DEV.is_dir():
        pytest.skip(f"{CHROMA_DEV} is absent: the shared evaluation corpora are not checked out")
    data = chunk_jsonl(["."], CASES[case], cwd=CHROMA_DEV)
    assert hashlib.sha256(data).hexdigest() == DIGESTS["chroma-dev"][case]
