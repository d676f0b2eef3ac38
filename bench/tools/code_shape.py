"""Issue 39's size targets, counted from the source: the functions outside the CLI's
``*_command`` functions that take more than 8 parameters (``self``/``cls`` not counted; ``*args``
and ``**kwargs`` count one each), and those of 80 lines or more.

    .venv/bin/python bench/tools/code_shape.py [TREE]   (TREE: a checkout's root; default this one)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "ragsift"


def shape(root: Path = ROOT) -> tuple[list[tuple[int, str, str]], list[tuple[int, str, str]]]:
    many, long = [], []
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if rel.startswith("ragsift/cli/") and node.name.endswith("_command"):
                continue
            a = node.args
            n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
            n += (a.vararg is not None) + (a.kwarg is not None)
            if a.args and a.args[0].arg in ("self", "cls"):
                n -= 1
            if n > 8:
                many.append((n, rel, node.name))
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines >= 80:
                long.append((lines, rel, node.name))
    return sorted(many, reverse=True), sorted(long, reverse=True)


if __name__ == "__main__":
    many, long = shape(Path(sys.argv[1]) / "ragsift" if len(sys.argv) > 1 else ROOT)
    print(f"functions with more than 8 parameters: {len(many)}")
    for n, rel, name in many:
        print(f"  {n:3d}  {rel}  {name}")
    print(f"functions of 80 lines or more: {len(long)}")
    for n, rel, name in long:
        print(f"  {n:3d}  {rel}  {name}")
