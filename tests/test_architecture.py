"""The import graph of ``ragsift/`` (docs/ARCHITECTURE.md): data flows one way, so no module
imports a module of a higher layer, and no files import each other in a circle (inside
functions and under ``TYPE_CHECKING`` too: both tie the files together for a reader)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ragsift"

# Layers, lowest first (docs/ARCHITECTURE.md): a module may import its own layer and below.
LAYERS = {
    "errors": 0,
    "counting": 0,
    "paths": 0,
    "version": 0,
    "project": 0,
    "sources": 1,
    "chunkers": 2,
    "embedders": 3,
    "index": 4,
    "retrieval": 5,
    "metrics": 6,
    "ingest": 7,
    "tuning": 7,
    "calibration": 7,
    "api": 8,
    "exports": 8,  # the door's lazy table of names from the layers (ragsift/exports.py)
    "evaluation": 9,
    "mcp_server": 10,
    "cli": 10,
    "__main__": 11,
}
ROOT = 11  # ragsift/__init__.py: the package root wires the layers


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        mod = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[mod.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, mod: str, modules: dict[str, Path]) -> set[str]:
    """The package modules ``path`` imports (anywhere in the file)."""
    base = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            src = node.module or ""
            if node.level:
                parts = base.split(".")
                src = ".".join(parts[: len(parts) - node.level + 1] + ([src] if src else []))
            names = [f"{src}.{a.name}" for a in node.names] or [src]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != mod and name.startswith("ragsift"):
                found.add(name)
    return found


def _layer(mod: str) -> int:
    parts = mod.split(".")
    return ROOT if len(parts) == 1 else LAYERS[parts[1]]


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {mod: _imports(path, mod, modules) for mod, path in modules.items()}


def test_every_module_has_a_layer():
    assert all(len(m.split(".")) == 1 or m.split(".")[1] in LAYERS for m in _modules())


def test_no_module_imports_a_higher_layer():
    up = [
        f"{a} -> {b}" for a, targets in _graph().items() for b in targets if _layer(b) > _layer(a)
    ]
    assert up == []


def test_no_import_circles():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_ingest_never_touches_a_backend():
    """``ingest/`` reaches the index through ``open_index`` and the writer contract only: it
    imports no storage library and no backend module."""
    modules = _modules()
    for path in (PACKAGE / "ingest").glob("*.py"):
        mod = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        assert not {
            m
            for m in _imports(path, mod, modules)
            if m in ("ragsift.index.store", "ragsift.index.lance")
        }, path.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                assert not [
                    n
                    for n in names
                    if n.split(".")[0] in ("sqlite3", "lance", "lancedb", "pyarrow")
                ], (path.name, names)


# -- one door (issue 29): the front ends reach the package through ``ragsift.api`` ------------
FRONT_ENDS = ("ragsift.cli", "ragsift.mcp_server")
DOOR = ("ragsift.api", "ragsift.errors", "ragsift.version")
INNER = (
    "retrieval",
    "index",
    "ingest",
    "sources",
    "chunkers",
    "embedders",
    "metrics",
    "tuning",
    "calibration",
)


def _front_end_imports() -> list[str]:
    """Every package module a front end imports (anywhere, TYPE_CHECKING included) other
    than the door, the front ends' own modules (``cli mcp`` starts the server) and
    ``evaluation`` (``ragsift eval``)."""
    modules = _modules()
    bad = []
    for mod, path in sorted(modules.items()):
        if not mod.startswith(FRONT_ENDS):
            continue
        for target in sorted(_imports(path, mod, modules)):
            if (
                target.startswith(DOOR + FRONT_ENDS + ("ragsift.evaluation",))
                or target == "ragsift"
            ):
                continue
            bad.append(f"{mod} -> {target}")
    return bad


def test_front_ends_use_only_the_api():
    assert _front_end_imports() == []


def test_front_ends_import_no_inner_layer_and_rewrite_no_error_text():
    """The issue's figure: 0 imports of the inner layers from cli/ and mcp_server.py (42
    before); errors carry their parameter, so no regular expression rewrites messages."""
    assert [b for b in _front_end_imports() if b.split(" -> ")[1].split(".")[1] in INNER] == []
    common = (PACKAGE / "cli" / "_common.py").read_text(encoding="utf-8")
    assert "flag_words" not in common and "LIBRARY_NAMES" not in common


def test_evaluation_builds_and_searches_through_the_api():
    modules = _modules()
    for path in (PACKAGE / "evaluation").glob("*.py"):
        mod = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        )
        reached = _imports(path, mod, modules)
        assert not reached & {
            "ragsift.ingest",
            "ragsift.retrieval.search",
            "ragsift.retrieval.engine",
            "ragsift.index",
        }, mod


def _private_imports() -> list[str]:
    """``from ragsift.x import _name`` in another module of the package: a private name (not a
    module) used outside the module that defines it (issue 39: none)."""
    modules = _modules()
    out = []
    for mod, path in sorted(modules.items()):
        base = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            src = node.module or ""
            if node.level:
                parts = base.split(".")
                src = ".".join(parts[: len(parts) - node.level + 1] + ([src] if src else []))
            if not src.startswith("ragsift") or src == mod:
                continue
            for alias in node.names:
                name = alias.name
                private = name.startswith("_") and not name.startswith("__")
                if private and f"{src}.{name}" not in modules:
                    out.append(f"{mod}:{node.lineno} imports {src}.{name}")
    return out


def test_no_private_name_is_imported_across_modules():
    assert _private_imports() == []


def test_tests_and_bench_import_no_private_name():
    """The callers outside the package too (issue 39: "update the callers, tests and bench
    included"): a test of a helper imports it by its public name."""
    modules = _modules()
    out = []
    for folder in ("tests", "bench"):
        for path in sorted((PACKAGE.parent / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ragsift"):
                    for alias in node.names:
                        name = alias.name
                        private = name.startswith("_") and not name.startswith("__")
                        if private and f"{node.module}.{name}" not in modules:
                            out.append(f"{path.name}:{node.lineno} imports {node.module}.{name}")
    assert out == []


def test_the_private_import_check_sees_one():
    """The check itself: a private name imported from another module is found."""
    import tempfile

    global PACKAGE
    saved = PACKAGE
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "ragsift"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "a.py").write_text("_hidden = 1\n")
        (pkg / "b.py").write_text("from ragsift.a import _hidden\n")
        PACKAGE = pkg
        try:
            assert _private_imports() == ["ragsift.b:1 imports ragsift.a._hidden"]
        finally:
            PACKAGE = saved


# -- no flag spelling below cli/ (issue 39, item 2) -----------------------------------------------
# Errors and hints name parameters and actions (``ragsift.errors.Words``) and each front end
# words them: the CLI as flags (``cli._common.flag_name``), the API and MCP as arguments. So
# no string below ``cli/`` spells one of the CLI's options. Checked: every string literal
# (f-string parts too) except docstrings and comments, which tell a reader of the code how
# the CLI reaches it and are never shown to a user of the API or the MCP server.
# What is left, by file, and why (each entry: the start of the literal allowed):
FLAG_SPELLINGS_KEPT = {
    # a JSON value (``threshold_source`` of a threshold given with the call), kept from
    # earlier releases: output, not wording
    "retrieval/threshold.py": ("--threshold",),
    # the text of the starter project file ``ragsift init`` writes (api.starter): a
    # document for the CLI's users, about its flags
    "project.py": ("# ragsift project file:",),
}
# Files not converted yet (issue 39): none left.
FLAG_SPELLINGS_NOT_YET: frozenset[str] = frozenset()


def _cli_flags() -> set[str]:
    """Every option spelling of the ``ragsift`` commands (``-k``, ``--threshold``, ...)."""
    import typer

    from ragsift.cli import app

    group = typer.main.get_command(app)
    commands = [group, *group.commands.values()]
    return {
        opt
        for command in commands
        for param in command.params
        if param.param_type_name == "option"  # (typer vendors its own click)
        for opt in [*param.opts, *param.secondary_opts]
    }


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _flag_spellings(flags: set[str]) -> list[str]:
    """``file:line: literal`` for each string literal below ``cli/`` spelling a CLI flag."""
    import re

    spelled = re.compile(
        r"(?<![\w-])("
        + "|".join(sorted(map(re.escape, flags), key=len, reverse=True))
        + r")(?![\w-])"
    )
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("cli/") or rel in FLAG_SPELLINGS_NOT_YET:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if id(node) in docs or not spelled.search(node.value):
                continue
            if node.value.startswith(FLAG_SPELLINGS_KEPT.get(rel, ())):
                continue
            out.append(f"{rel}:{node.lineno}: {node.value[:80]!r}")
    return out


def test_no_flag_is_spelled_below_cli():
    assert _flag_spellings(_cli_flags()) == []


def test_the_flag_spelling_check_sees_one():
    """The check itself: a message with a flag in it is found, a docstring is not."""
    import tempfile

    global PACKAGE
    saved = PACKAGE
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "ragsift"
        (pkg / "cli").mkdir(parents=True)
        (pkg / "a.py").write_text(
            'def f(x):\n    """Run with ``--rebuild``."""\n'
            '    raise ValueError(f"bad {x}; pass --rebuild or -k 3")\n'
        )
        (pkg / "cli" / "b.py").write_text('HELP = "--rebuild"\n')
        PACKAGE = pkg
        try:
            flags = {"--rebuild", "-k", "--threshold"}
            assert _flag_spellings(flags) == ["a.py:3: '; pass --rebuild or -k 3'"]
        finally:
            PACKAGE = saved
    assert {"-k", "--threshold", "--rebuild", "--include", "--wait"} <= _cli_flags()
