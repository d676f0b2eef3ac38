"""Theme templates against built pages (issue 41 item 4): for each HTML file, the characters
of its template syntax (``{% %}``, ``{{ }}``, ``{# #}``, ``<% %>``) over those of its visible
text (``ragsift.sources.html.template_weight``), the measure ``template_reason`` skips a file
at (1 or more). Prints the range of the ratio per group of files.

    python -m bench.bench_html_templates templates="SITE/material/templates/**/*.html" \\
        built="/tmp/me/sph/out-*/**/*.html" ...
"""

from __future__ import annotations

import glob
import os
import sys

from ragsift.sources.html import template_weight


def main(args: list[str]) -> None:
    groups: dict[str, list[str]] = {}
    for arg in args:
        name, _, pattern = arg.partition("=")
        found = [f for f in glob.glob(pattern, recursive=True) if not os.path.isdir(f)]
        groups.setdefault(name, []).extend(found)
    for name, files in groups.items():
        ratios = []
        for f in files:
            with open(f, encoding="utf-8", errors="replace") as fh:
                n, syntax, visible = template_weight(fh.read())
            if n:
                ratios.append((syntax / max(visible, 1), f))
        ratios.sort()
        line = f"{name}: {len(files)} files, {len(ratios)} with template syntax"
        if ratios:
            line += f"; syntax/text {ratios[0][0]:.2f} to {ratios[-1][0]:,.2f}"
            line += f"; at 1 or more (skipped): {sum(r >= 1 for r, _ in ratios)}"
        print(line)
        for r, f in ratios[:3]:
            print(f"  lowest: {r:.2f} {f}")


if __name__ == "__main__":
    main(sys.argv[1:])
