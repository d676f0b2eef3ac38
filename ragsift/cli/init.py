"""``ragsift init``: write a commented ``ragsift.toml`` for the current folder, so that
``ragsift embed`` and ``ragsift query "..."`` need no flags there (``ragsift.project``)."""

from __future__ import annotations

import os

import typer

from ragsift.cli._common import handle_errors, warn
from ragsift.errors import EXIT_OK, RagsiftError

EPILOG = """
Examples:

  cd my-docs && ragsift init && ragsift embed && ragsift query "how do I deploy"

  ragsift init --force   # overwrite an existing ragsift.toml

The file sets the index, the folders `embed` indexes when given no PATH, include/exclude,
mode, k, threshold and the model; every command run in the folder (or below it) reads it, and
its flags override it. Document paths are stored relative to the file's folder.

Exit status: 0 when the file was written, 2 when it exists (without --force) or cannot be
written.
"""


def init_command(
    force: bool = typer.Option(False, "--force", help="Overwrite an existing ragsift.toml."),
) -> None:
    """Write a commented starter ragsift.toml in the current folder: the index file, the
    folders to embed (its docs/ folder if it has one, else the folder itself), and the
    retrieval settings, commented out at their defaults."""
    from ragsift.api import PROJECT_FILE, current_folder, find_project, starter

    folder = current_folder()  # one line when the folder was deleted
    target = os.path.join(folder, PROJECT_FILE)
    if os.path.exists(target) and not force:
        raise RagsiftError(
            f"{PROJECT_FILE} already exists here; edit it, or pass --force to overwrite it"
        )
    text = starter(folder)
    try:
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise RagsiftError(f"cannot write {target}: {exc.strerror or exc}") from None
    project = find_project(folder)  # the file just written parses (a test pins it too)
    paths = ", ".join(os.path.relpath(p, folder) for p in project.settings.get("paths", []))
    warn(
        f"wrote {PROJECT_FILE}: index {os.path.relpath(project.settings['index'], folder)}, "
        f"embeds {paths}; next: ragsift embed"
    )
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    app.command("init", epilog=EPILOG, help=init_command.__doc__)(handle_errors(init_command))
