"""Finding the files to read: arguments → ``SourceFile``s in a deterministic order.

Rules, in the order they apply to a walked folder:

- Arguments keep their order; folders are walked recursively, entries sorted by name, so two
  runs over the same tree list the same files in the same order. A path argument that does
  not exist is a usage error (``RagsiftError``, exit 2), as is an invalid ``--include`` /
  ``--exclude`` glob: nothing is read and no index is touched.
- Skipped by default while walking (never when named as an argument): hidden entries
  (``.name``), ``node_modules``, ``__pycache__``, ``venv`` and any folder holding a
  ``pyvenv.cfg`` (a virtualenv under any name).
- ``.gitignore`` files are honoured in the walked tree, and in the folders above the root up
  to the enclosing git work tree (if there is one). See ``globs`` for the supported subset; an
  invalid pattern is ignored with one warning.
- ``--exclude`` prunes folders and files; ``--include`` keeps only matching files. Both also
  filter files named as arguments (but not stdin).
- Document types (``formats``): without ``--include``, a walked file whose suffix is not a
  document format is *ignored* (``Walk.ignored``: counted, not a skip). With ``--include`` the
  globs decide, except that known binary suffixes stay ignored. A file named as an argument
  is always read.
- Only regular files are listed; a FIFO, socket or device found while walking is skipped
  ("not a regular file"). A FIFO named as an argument (``<(command)``) is read as a stream.
- Symlinks: followed while they stay inside the walked folder (its real path); one that
  leads out of it is ignored unless ``follow_links`` (``--follow-links``). A symlinked folder
  is walked once (first sighting wins); a link back into its own ancestry is skipped as a
  symlink loop. A file reached twice is listed once.
- File names that are not valid UTF-8 are shown with their undecodable bytes escaped as
  ``\\xNN`` (``printable``), in ``relpath`` and in every message; the file itself is read
  through its real name.

Pruning needs certainty (``Walk.may_prune``): a document may be removed only when its folder
was listed successfully in this run and nothing on the way down was unreadable.

``relpath`` is the path as the user would type it: the normalised argument joined with the
path below it (``fixtures/`` → ``fixtures/a.md``; ``.`` → ``a.md``), with ``/`` separators.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ragsift.errors import RagsiftError, Worded, Words
from ragsift.sources.formats import BINARY_SUFFIXES, NOT_A_DOCUMENT, not_a_document, suffix_of
from ragsift.sources.globs import (
    GlobError,
    IgnoreFile,
    check_glob,
    is_ignored,
    path_matches,
    read_ignore_file,
    to_posix,
)
from ragsift.sources.reading import file_kind
from ragsift.sources.sourcefile import Skipped, SourceFile

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})
STDIN = "-"
# why a symlink out of the folder is ignored: names the parameter that follows it (a key of
# the ignored counts, in the API's words; each front end words it: the CLI --follow-links)
LINK_OUT = Worded(Words("symlink out of the folder (see {follow_links})"))


@dataclass
class Walk:
    """Everything a discovery run found out."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # could not be read: a skip line each
    ignored: list[Skipped] = field(default_factory=list)  # not documents: counted only
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    listed: set[str] = field(default_factory=set)  # path_key of folders listed successfully
    unsure: set[str] = field(default_factory=set)  # path_key of entries that failed
    # skips and warnings in the order they happened: (Skipped, None) or (None, (path, msg))
    notes: list[tuple[Skipped | None, tuple[str, str] | None]] = field(default_factory=list)

    def ignored_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.ignored:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        return counts

    def may_prune(self, key: str) -> bool:
        """True when the document stored under ``key`` (a ``path_key``) and not found in this
        run is certainly gone or deliberately left out: a folder above it was listed
        successfully, and neither it nor any folder between failed to read."""
        listed = False
        current = key
        while True:
            if current in self.unsure:
                return False
            parent = os.path.dirname(current) or "."  # a relative key's top: the root "."
            if parent == current:
                return listed
            if parent in self.listed:
                listed = True
            current = parent


def printable(path: str) -> str:
    """``path`` as valid text: bytes that were not UTF-8 (surrogate-escaped by the OS layer)
    become ``\\xNN``, e.g. ``latin\\xe9.md``."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def path_key(path: str | os.PathLike, root: str | None = None) -> str:
    """The identity of a file in the index, ``printable``: its absolute path, or with a
    project ``root`` (``ragsift.project``) its path relative to the root (``/`` separators;
    the root itself is ``.``) when it lies inside it, so the same files give the same keys
    wherever the folder lives."""
    absolute = os.path.abspath(os.fspath(path))
    if root is not None:
        root = os.path.abspath(root)
        if absolute == root:
            return "."
        if absolute.startswith(root.rstrip(os.sep) + os.sep):
            return printable(os.path.relpath(absolute, root).replace(os.sep, "/"))
    return printable(absolute)


def path_keys(path: str | os.PathLike, root: str | None = None) -> tuple[str, ...]:
    """Every key ``path`` may be stored under: relative to ``root`` and (from before the
    project file) absolute."""
    keys = (path_key(path, root), path_key(path))
    return keys[:1] if keys[0] == keys[1] else keys


def check_arguments(
    paths: list[str],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> None:
    """Raise ``RagsiftError`` (usage, exit 2) for a path that does not exist or a bad glob."""
    for name, patterns in (("include", include), ("exclude", exclude)):
        for p in patterns:
            try:
                check_glob(p)
            except GlobError as exc:
                raise RagsiftError(
                    "{" + name + "=}: {why}", param=name, values={"why": str(exc)}
                ) from None
    for arg in paths:
        if arg != STDIN and not os.path.lexists(arg):
            raise RagsiftError(f"{printable(arg)}: no such file or directory")
        if arg != STDIN and not os.path.exists(arg):
            raise RagsiftError(f"{printable(arg)}: broken symlink")


def discover(
    paths: list[str],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> tuple[list[SourceFile], list[Skipped]]:
    """Expand ``paths`` (files, folders, ``-``) into source files; see the module docstring."""
    w = walk(paths, include, exclude)
    return w.files, w.skipped


def walk(
    paths: list[str],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    *,
    follow_links: bool = False,
    root: str | None = None,
) -> Walk:
    """``discover`` with everything it found out: ignored files, warnings, listed folders.
    ``root``: a project root; files inside it are shown (``relpath``) relative to it."""
    check_arguments(paths, include, exclude)
    walker = _Walker(list(include), list(exclude), follow_links, root)
    for arg in paths:
        walker.add_argument(arg)
    return walker.result


class _Walker:
    def __init__(
        self, include: list[str], exclude: list[str], follow_links: bool, root: str | None = None
    ) -> None:
        self.root = root
        self.include = [p for p in include if p.strip()]
        self.exclude = [p for p in exclude if p.strip()]
        self.follow_links = follow_links
        self.result = Walk()
        self.files = self.result.files
        self.seen_files: set[str] = set()
        self.seen_dirs: set[str] = set()
        self.stdin_added = False

    def skip(self, display: str, reason: str, fs_path: str | None = None) -> None:
        s = Skipped(display, reason)
        self.result.skipped.append(s)
        self.result.notes.append((s, None))
        if fs_path is not None:
            self.result.unsure.update(path_keys(fs_path, self.root))

    def warn(self, path: str, message: str) -> None:
        self.result.warnings.append((path, message))
        self.result.notes.append((None, (path, message)))

    # -- arguments ---------------------------------------------------------------------
    def add_argument(self, arg: str) -> None:
        if arg == STDIN:
            if not self.stdin_added:  # stdin can be read only once
                self.stdin_added = True
                self.files.append(SourceFile(None, STDIN, 0, 0.0))
            return
        display = printable(_normalise(arg))
        try:
            st = os.stat(arg)
        except OSError as exc:
            reason = "broken symlink" if isinstance(exc, FileNotFoundError) else _os_reason(exc)
            self.skip(display, reason, arg)
            return
        if stat.S_ISDIR(st.st_mode):
            self._walk_root(arg, display)
            return
        # Named explicitly: hidden, ignored and non-document files are taken; so are FIFOs
        # such as `<(command)` process substitution. Only the user's globs filter it.
        parent, _, name = display.rpartition("/")
        if not self._wanted(name, parent or ("/" if display.startswith("/") else "")):
            return
        if stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            self._add_file(Path(arg), display, st, stream=stat.S_ISFIFO(st.st_mode))
        else:
            self.skip(display, f"not a regular file ({_kind(st.st_mode)})", arg)

    # -- filters -----------------------------------------------------------------------
    def _wanted(self, rel: str, root: str) -> bool:
        if any(path_matches(p, rel, root) for p in self.exclude):
            return False
        return not self.include or any(path_matches(p, rel, root) for p in self.include)

    def _excluded_dir(self, rel: str, root: str) -> bool:
        return any(path_matches(p, rel, root) for p in self.exclude)

    def _type_ignored(self, name: str) -> str | None:
        """Why a walked file is not a document (``None``: read it)."""
        if self.include:  # the user's globs decide; containers are still not documents
            return NOT_A_DOCUMENT if suffix_of(name) in BINARY_SUFFIXES else None
        return not_a_document(name)

    def _add_file(
        self,
        path: Path,
        display: str,
        st: os.stat_result,
        into: list[SourceFile] | None = None,
        stream: bool = False,
        real: str | None = None,
    ) -> None:
        key = os.path.realpath(path) if real is None else real
        if key in self.seen_files:
            return
        self.seen_files.add(key)
        if self.root is not None and not stream:
            rel = path_key(path, self.root)
            display = display if rel.startswith("/") else rel  # outside the root: as typed
        (self.files if into is None else into).append(
            SourceFile(path, display, st.st_size, st.st_mtime, stream)
        )

    # -- walking -----------------------------------------------------------------------
    def _walk_root(self, root: str, display_root: str) -> None:
        abs_root = to_posix(os.path.abspath(root))
        ignores = self._ancestor_ignores(abs_root)
        # Explicit stack instead of recursion: deep trees cannot hit the recursion limit.
        # Work per folder is constant in its depth (beyond building its own path strings):
        # a real path is its parent's real path joined with the name unless the entry is a
        # symlink (os.path.realpath costs one lstat per component: quadratic in depth), and
        # the real paths of the ancestors are one set kept along the depth-first path.
        real_root = os.path.realpath(root)
        if real_root in self.seen_dirs:
            return
        self.seen_dirs.add(real_root)
        stack = [_Folder(root, "", ignores, real_root, 0)]
        # Real paths of the folder being listed and of its ancestors: the stack is popped
        # depth first, so the folders listed before one at depth k, and not yet left, are
        # exactly its k ancestors (``path[:k]``).
        path: list[str] = []
        top = _Root(abs_root, display_root, real_root, set())
        found: list[SourceFile] = []
        while stack:
            folder = stack.pop()
            while len(path) > folder.depth:
                top.ancestry.discard(path.pop())
            path.append(folder.real)
            top.ancestry.add(folder.real)
            rel_folder = folder.rel
            shown = _join(display_root, printable(rel_folder)) if rel_folder else display_root
            try:
                with os.scandir(folder.path) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.skip(shown, _os_reason(exc), folder.path)
                continue
            self.result.listed.update(path_keys(folder.path, self.root))
            own = self._read_ignores(
                folder.path, f"{abs_root}/{rel_folder}" if rel_folder else abs_root, shown
            )
            if own is not None:
                folder = folder._replace(ignores=[*folder.ignores, own])
            subdirs: list[_Folder] = []
            for entry in entries:
                subdir = self._walk_entry(entry, folder, top, found)
                if subdir is not None:
                    subdirs.append(subdir)
            stack.extend(reversed(subdirs))
        # Sorted by path components, so `a/x` comes before `a-b/x` and before `b.md`.
        found.sort(key=lambda f: f.relpath.split("/"))
        self.files.extend(found)

    def _walk_entry(
        self, entry: os.DirEntry, folder: _Folder, top: _Root, found: list[SourceFile]
    ) -> _Folder | None:
        """One entry of a listed folder: a file to read is added to ``found``; a folder to
        walk is returned; anything else is skipped, ignored or left out."""
        name = entry.name
        if name.startswith(".") or name in SKIP_DIRS:
            return None
        rel = f"{folder.rel}/{name}" if folder.rel else name
        display = _join(top.display, printable(rel))
        try:
            is_link = entry.is_symlink()
            st = entry.stat()  # follows symlinks
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and entry.is_symlink():
                if not self.include and not_a_document(name):
                    self.result.ignored.append(Skipped(display, NOT_A_DOCUMENT))
                else:
                    self.skip(display, "broken symlink", entry.path)
            else:
                self.skip(display, _os_reason(exc), entry.path)
            return None
        if stat.S_ISDIR(st.st_mode):
            return self._subdir(entry, folder, top, rel, display, is_link)
        if is_ignored(folder.ignores, f"{top.abs}/{rel}", False):
            return None
        if not self._wanted(rel, top.display):
            return None
        why = self._type_ignored(name)
        if why is not None:
            self.result.ignored.append(Skipped(display, why))
            return None
        real = _real_below(folder.real, entry, is_link)
        if is_link and not self._link_allowed(real, top.real):
            self.result.ignored.append(Skipped(display, LINK_OUT))
            return None
        if not stat.S_ISREG(st.st_mode):
            self.skip(display, f"not a regular file ({_kind(st.st_mode)})", entry.path)
            return None
        self._add_file(Path(entry.path), display, st, found, real=real)
        return None

    def _subdir(
        self,
        entry: os.DirEntry,
        folder: _Folder,
        top: _Root,
        rel: str,
        display: str,
        is_link: bool,
    ) -> _Folder | None:
        """A folder found in ``folder``, to walk unless it is a virtualenv, ignored,
        excluded, a symlink loop, a link out of the root (not followed) or already walked."""
        if os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
            return None
        if is_ignored(folder.ignores, f"{top.abs}/{rel}", True):
            return None
        if self._excluded_dir(rel, top.display):
            return None
        real = _real_below(folder.real, entry, is_link)
        if real in top.ancestry:
            self.skip(display, "symlink loop (not followed)")
            return None
        if is_link and not self._link_allowed(real, top.real):
            self.result.ignored.append(Skipped(display, LINK_OUT))
            return None
        if real in self.seen_dirs:
            return None  # a second link to a folder already walked
        self.seen_dirs.add(real)
        return _Folder(entry.path, rel, folder.ignores, real, folder.depth + 1)

    def _link_allowed(self, real: str, real_root: str) -> bool:
        return (
            self.follow_links
            or real == real_root
            or real.startswith(real_root.rstrip(os.sep) + os.sep)
        )

    def _read_ignores(self, folder: str, base: str, shown: str) -> IgnoreFile | None:
        f = read_ignore_file(folder, base)
        if f is None:
            return None
        where = _join(shown, ".gitignore") if shown != "." else ".gitignore"
        for message in f.errors:
            self.warn(where, message)
        return f if f.rules else None

    def _ancestor_ignores(self, abs_root: str) -> list[IgnoreFile]:
        """``.gitignore`` files above ``abs_root`` up to the git work tree's top (outer first)."""
        found: list[IgnoreFile] = []
        current = os.path.dirname(abs_root)
        if os.path.exists(os.path.join(abs_root, ".git")):
            return found  # the root is the top of a work tree: nothing above applies
        warnings: list[tuple[str, str]] = []
        while True:
            f = read_ignore_file(current, current)
            if f is not None:
                warnings.extend((printable(f"{current}/.gitignore"), m) for m in f.errors)
                if f.rules:
                    found.append(f)
            if os.path.exists(os.path.join(current, ".git")):
                for where, message in warnings:
                    self.warn(where, message)
                return list(reversed(found))
            parent = os.path.dirname(current)
            if parent == current:
                return []  # not inside a git work tree: parents' .gitignore files do not apply
            current = parent


class _Folder(NamedTuple):
    """A folder on the walk's stack: its path, its path below the root, the ignore files in
    force in it, its real path and its depth below the root."""

    path: str
    rel: str
    ignores: list[IgnoreFile]
    real: str
    depth: int


@dataclass
class _Root:
    """The root being walked: its absolute path (``/`` separators), how it is shown, its real
    path, and the real paths of the folder being listed and of its ancestors."""

    abs: str
    display: str
    real: str
    ancestry: set[str]


def _normalise(arg: str) -> str:
    return to_posix(os.path.normpath(arg))


def _real_below(real_folder: str, entry: os.DirEntry, is_link: bool) -> str:
    """``os.path.realpath(entry.path)`` for an entry of the folder whose real path is
    ``real_folder``: only a symlink needs resolving; any other entry's real path is its
    folder's joined with its name."""
    if is_link:
        return os.path.realpath(entry.path)
    return os.path.join(real_folder, entry.name)


def _join(display_root: str, rel: str) -> str:
    return rel if display_root == "." else f"{display_root.rstrip('/')}/{rel}"


def _kind(mode: int) -> str:
    return file_kind(mode)


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory (removed while running?)"
    return (exc.strerror or str(exc)).lower()
