"""Finding the files to read: arguments → ``SourceFile``s in a deterministic order.

Rules, in the order they apply to a walked folder:

- Arguments keep their order; folders are walked recursively, entries sorted by name, so two
  runs over the same tree list the same files in the same order.
- Skipped by default while walking (never when named as an argument): hidden entries
  (``.name``), ``node_modules``, ``__pycache__``, ``venv`` and any folder holding a
  ``pyvenv.cfg`` (a virtualenv under any name).
- ``.gitignore`` files are honoured in the walked tree, and in the folders above the root up
  to the enclosing git work tree (if there is one). See ``globs`` for the supported subset.
- ``--exclude`` prunes folders and files; ``--include`` keeps only matching files. Both also
  filter files named as arguments (but not stdin).
- Symlinked folders are followed once: a folder whose real path was already walked is not
  walked again, and a link back into its own ancestry is reported as a symlink loop. A file
  reached twice (by two arguments, or through a link) is listed once, first sighting wins.
- A missing argument becomes ``Skipped(arg, "no such file or directory")``.

``relpath`` is the path as the user would type it: the normalised argument joined with the
path below it (``fixtures/`` → ``fixtures/a.md``; ``.`` → ``a.md``), with ``/`` separators.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ragsift.sources.globs import (
    IgnoreFile,
    is_ignored,
    path_matches,
    read_ignore_file,
    to_posix,
)

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})
STDIN = "-"


@dataclass(frozen=True)
class SourceFile:
    """A file to parse. ``path is None`` and ``relpath == "-"`` means stdin."""

    path: Path | None
    relpath: str
    size: int
    mtime: float

    @property
    def is_stdin(self) -> bool:
        return self.path is None


@dataclass(frozen=True)
class Skipped:
    """An input that produced no document, and why (one line)."""

    path: str
    reason: str


def discover(
    paths: list[str], include: list[str] = [], exclude: list[str] = []  # noqa: B006 - read only
) -> tuple[list[SourceFile], list[Skipped]]:
    """Expand ``paths`` (files, folders, ``-``) into source files; see the module docstring."""
    walker = _Walker(list(include), list(exclude))
    for arg in paths:
        walker.add_argument(arg)
    return walker.files, walker.skipped


class _Walker:
    def __init__(self, include: list[str], exclude: list[str]) -> None:
        self.include = [p for p in include if p.strip()]
        self.exclude = [p for p in exclude if p.strip()]
        self.files: list[SourceFile] = []
        self.skipped: list[Skipped] = []
        self.seen_files: set[str] = set()
        self.seen_dirs: set[str] = set()
        self.stdin_added = False

    # -- arguments ---------------------------------------------------------------------
    def add_argument(self, arg: str) -> None:
        if arg == STDIN:
            if not self.stdin_added:  # stdin can be read only once
                self.stdin_added = True
                self.files.append(SourceFile(None, STDIN, 0, 0.0))
            return
        display = _normalise(arg)
        try:
            st = os.stat(arg)
        except FileNotFoundError:
            reason = "no such file or directory"
            if os.path.islink(arg):
                reason += " (broken symlink)"
            self.skipped.append(Skipped(display, reason))
            return
        except OSError as exc:
            self.skipped.append(Skipped(display, _os_reason(exc)))
            return
        if stat.S_ISDIR(st.st_mode):
            self._walk_root(arg, display)
        else:
            # Named explicitly: hidden and ignored files are taken; so are FIFOs such as
            # `<(command)` process substitution. Only the user's globs filter it.
            parent, _, name = display.rpartition("/")
            if self._wanted(name, parent or ("/" if display.startswith("/") else "")):
                self._add_file(Path(arg), display, st)

    # -- filters -----------------------------------------------------------------------
    def _wanted(self, rel: str, root: str) -> bool:
        if any(path_matches(p, rel, root) for p in self.exclude):
            return False
        return not self.include or any(path_matches(p, rel, root) for p in self.include)

    def _excluded_dir(self, rel: str, root: str) -> bool:
        return any(path_matches(p, rel, root) for p in self.exclude)

    def _add_file(
        self, path: Path, display: str, st: os.stat_result, into: list[SourceFile] | None = None
    ) -> None:
        key = os.path.realpath(path)
        if key in self.seen_files:
            return
        self.seen_files.add(key)
        (self.files if into is None else into).append(
            SourceFile(path, display, st.st_size, st.st_mtime)
        )

    # -- walking -----------------------------------------------------------------------
    def _walk_root(self, root: str, display_root: str) -> None:
        abs_root = to_posix(os.path.abspath(root))
        ignores = _ancestor_ignores(abs_root)
        # Explicit stack instead of recursion: deep trees cannot hit the recursion limit.
        # Entries: (fs path, rel below root, ignore stack, real paths of the ancestors).
        real_root = os.path.realpath(root)
        if real_root in self.seen_dirs:
            return
        self.seen_dirs.add(real_root)
        stack: list[tuple[str, str, list[IgnoreFile], frozenset[str]]] = [
            (root, "", ignores, frozenset({real_root}))
        ]
        found: list[SourceFile] = []
        while stack:
            folder, rel_folder, ignores, ancestry = stack.pop()
            own = read_ignore_file(folder, f"{abs_root}/{rel_folder}" if rel_folder else abs_root)
            if own is not None and own.rules:
                ignores = [*ignores, own]
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                shown = _join(display_root, rel_folder) if rel_folder else display_root
                self.skipped.append(Skipped(shown, _os_reason(exc)))
                continue
            subdirs: list[tuple[str, str, list[IgnoreFile], frozenset[str]]] = []
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name in SKIP_DIRS:
                    continue
                rel = f"{rel_folder}/{name}" if rel_folder else name
                display = _join(display_root, rel)
                abs_entry = f"{abs_root}/{rel}"
                try:
                    is_dir = entry.is_dir()  # follows symlinks
                    st = entry.stat()
                except OSError:
                    if entry.is_symlink():
                        self.skipped.append(Skipped(display, "broken symlink"))
                    continue
                if is_dir:
                    if os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
                        continue
                    if is_ignored(ignores, abs_entry, True):
                        continue
                    if self._excluded_dir(rel, display_root):
                        continue
                    real = os.path.realpath(entry.path)
                    if real in ancestry:
                        self.skipped.append(Skipped(display, "symlink loop (not followed)"))
                        continue
                    if real in self.seen_dirs:
                        continue  # a second link to a folder already walked
                    self.seen_dirs.add(real)
                    subdirs.append((entry.path, rel, ignores, ancestry | {real}))
                elif stat.S_ISREG(st.st_mode):
                    if is_ignored(ignores, abs_entry, False):
                        continue
                    if not self._wanted(rel, display_root):
                        continue
                    self._add_file(Path(entry.path), display, st, found)
            stack.extend(reversed(subdirs))
        # Sorted by path components, so `a/x` comes before `a-b/x` and before `b.md`.
        found.sort(key=lambda f: f.relpath.split("/"))
        self.files.extend(found)


def _ancestor_ignores(abs_root: str) -> list[IgnoreFile]:
    """``.gitignore`` files above ``abs_root`` up to the git work tree's top (outer first)."""
    found: list[IgnoreFile] = []
    current = os.path.dirname(abs_root)
    if os.path.exists(os.path.join(abs_root, ".git")):
        return found  # the root is the top of a work tree: nothing above applies
    while True:
        f = read_ignore_file(current, current)
        if f is not None and f.rules:
            found.append(f)
        if os.path.exists(os.path.join(current, ".git")):
            return list(reversed(found))
        parent = os.path.dirname(current)
        if parent == current:
            return []  # not inside a git work tree: parents' .gitignore files do not apply
        current = parent


def _normalise(arg: str) -> str:
    return to_posix(os.path.normpath(arg))


def _join(display_root: str, rel: str) -> str:
    return rel if display_root == "." else f"{display_root.rstrip('/')}/{rel}"


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    return (exc.strerror or str(exc)).lower()
