"""Where ragsift keeps files of its own (the user cache dir), for every layer. Imports nothing
of ragsift."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$RAGSIFT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragsift``, else ``~/.cache/ragsift``."""
    explicit = os.environ.get("RAGSIFT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "ragsift"


# -- paths as the user types them (issue 41) ----------------------------------------------------
# A document is stored under one path: relative to the project root inside a project
# (``ragsift.project``), else as ``embed`` was given it (relative to the folder it ran in, or
# absolute). A user names it as they would name the file from where they stand: ``./x.md``,
# ``x.md`` from its folder, ``../x.md``, an absolute path, or the stored path ``ls`` shows.
# ``typed_forms`` lists the stored spellings such a path may have, in the order they are tried;
# ``ragsift.api.stored_path`` picks the first that names an indexed document. ``openable`` is
# the reverse: a stored path as a path to the file from where the command runs.


def typed_forms(typed: str, root: str | None = None, cwd: str | None = None) -> list[str]:
    """The stored spellings a path or glob typed by a user may name, most likely first:

    1. resolved from where the user stands (``cwd``, default the current folder), relative to
       the project ``root`` when it lies inside it (``./x.md``, ``x.md`` in ``advanced/``:
       ``advanced/x.md``; ``/abs/root/x.md``: ``x.md``);
    2. as typed, normalised (``./x.md``, ``a//b/../x.md``: ``x.md``): the stored path as
       ``ls`` shows it, wherever the user stands (``guide/*`` from a subfolder);
    3. absolute (a document stored by its absolute path);
    4. relative to ``cwd`` when it lies inside it (an index without a project stores paths
       relative to the folder ``embed`` ran in).

    A glob keeps its wildcards (``./drafts/*`` in ``advanced/``: ``advanced/drafts/*``). ``-``
    (stdin's document) and an empty string are themselves only. Pure: no file is read."""
    if not typed or typed == "-":
        return [typed]
    here = os.path.abspath(cwd or os.getcwd())
    text = typed.replace(os.sep, "/") if os.sep != "/" else typed
    absolute = os.path.normpath(os.path.join(here, os.path.expanduser(text)))
    out: list[str] = []
    inside = _inside(absolute, root)
    if inside is not None:
        out.append(inside)
    norm = os.path.normpath(text).replace(os.sep, "/")
    out.append(norm if not os.path.isabs(text) or os.path.isabs(norm) else text)
    out.append(absolute.replace(os.sep, "/") if os.sep != "/" else absolute)
    near = _inside(absolute, here)
    if near is not None:
        out.append(near)
    return list(dict.fromkeys(f for f in out if f not in ("", ".")))


def openable(path: str, root: str | None = None, cwd: str | None = None) -> str:
    """A stored document path as a path to its file from ``cwd`` (default: the current
    folder): inside a project (``root``) the stored path is relative to the root, so from
    ``advanced/`` the document ``advanced/x.md`` is ``x.md`` and ``y.md`` is ``../y.md``.
    Without a root, or for an absolute or non-file path (``-``, ``s3://...``), the path as
    stored."""
    if root is None or not path or path == "-" or os.path.isabs(path) or "://" in path:
        return path
    here = os.path.abspath(cwd or os.getcwd())
    target = os.path.join(os.path.abspath(root), path)
    return os.path.relpath(target, here).replace(os.sep, "/")


def _inside(absolute: str, base: str | None) -> str | None:
    """``absolute`` relative to ``base`` (``/`` separators) when it lies inside it, else None."""
    if base is None:
        return None
    base = os.path.abspath(base)
    if absolute == base:
        return "."
    if not absolute.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return os.path.relpath(absolute, base).replace(os.sep, "/")
