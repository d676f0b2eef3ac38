"""reStructuredText on a real Sphinx tree (issue 23): the share of chunks with a heading
trail, chunks that start with a title adornment line, and chunks with directive or role
markup left outside code blocks, for `ragsift chunk` with the defaults (what `embed` indexes).

    cd FLASK_CHECKOUT && python PATH/TO/bench/bench_rst.py docs      (pallets/flask 2ac89889)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

ADORNMENT = re.compile(r"^([=\-~^\"'#*+<>:._])\1{2,}\s*$")  # (not ```: a code fence)
DIRECTIVE = re.compile(r"^\s*\.\. [\w:.+-]+::", re.MULTILINE)
ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)?:`")
FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
FENCE_LINE = re.compile(r"^```", re.MULTILINE)


def main(folder: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ragsift", "chunk", folder],
        check=False,
        capture_output=True,
        text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    rst = [r for r in rows if r["path"].endswith(".rst")]
    trail = sum(bool(r["headings"]) for r in rst)
    underline = sum(bool(ADORNMENT.match(r["text"].splitlines()[0])) for r in rst if r["text"])
    leftover = [
        r
        for r in rst
        if DIRECTIVE.search(FENCE.sub("", r["text"])) or ROLE.search(FENCE.sub("", r["text"]))
    ]
    # a chunk holding an odd number of fence lines holds part of a code block (one was cut)
    cut = sum(len(FENCE_LINE.findall(r["text"])) % 2 for r in rst)
    print(
        f"{len(rst)} chunks of {len({r['path'] for r in rst})} .rst files: heading trail "
        f"{trail} ({100 * trail / max(len(rst), 1):.1f}%), starting with an adornment line "
        f"{underline}, with directive or role markup outside code {len(leftover)}, "
        f"holding part of a cut code block {cut}"
    )
    for r in leftover[:5]:
        print("  ", r["id"], repr(FENCE.sub("", r["text"])[:120]))


if __name__ == "__main__":
    main(sys.argv[1])
