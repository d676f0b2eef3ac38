"""Write the golden ``ragsift chunk`` outputs the byte-identity test compares against.

Run with the code whose output is the reference (first run on main before the parser
speed-ups of issue 13; RAGSIFT_SHARED_EVAL names the eval folder when it is not
``../shared/eval``):

    .venv/bin/python -m bench.tools.make_golden_chunks

Writes ``tests/data/golden_chunks/``: ``digests.json`` (sha256 of every case's stdout on the
fixtures and, when present, on the chroma-dev corpora, whose text is not ours to copy) and
the full JSONL of the ``KEEP_JSONL`` cases for readable diffs. Cases: ``tests/golden_cases.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from tests.golden_cases import CASES, CHROMA_DEV, FIXTURE_PATHS, KEEP_JSONL, chunk_jsonl

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    out = REPO / "tests" / "data" / "golden_chunks"
    out.mkdir(parents=True, exist_ok=True)
    digests: dict[str, dict[str, str]] = {"fixtures": {}, "chroma-dev": {}}
    for name, args in CASES.items():
        data = chunk_jsonl(FIXTURE_PATHS, args)
        digests["fixtures"][name] = hashlib.sha256(data).hexdigest()
        if name in KEEP_JSONL:
            (out / f"{name}.jsonl").write_bytes(data)
        if CHROMA_DEV.is_dir():
            data = chunk_jsonl(["."], args, cwd=CHROMA_DEV)
            digests["chroma-dev"][name] = hashlib.sha256(data).hexdigest()
    if not CHROMA_DEV.is_dir():
        print(f"{CHROMA_DEV} is absent: chroma-dev digests not written", file=sys.stderr)
    (out / "digests.json").write_text(json.dumps(digests, indent=1) + "\n")


if __name__ == "__main__":
    main()
