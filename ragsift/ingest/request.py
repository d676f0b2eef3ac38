"""What one ``embed`` run is asked to do, as one value: ``BuildRequest``.

A front end builds it once (the CLI from its flags, the API from its keywords:
``BuildRequest.of``), it is checked when it is made, and ``api.build``, ``ingest.build_index``
and ``ingest.watch`` take it as it is; the runners read their part of it (the walk rules, the
chunker, the model and its options, the engine). A new build option is a field here, a keyword
``of`` maps (when its flat name differs from the field's), and the one place that reads it.

- ``WalkRules``: which files a run reads under its paths (globs, symlinks, the size cap, the
  project root), the rules ``sources.walk`` applies.
- ``EmbedderOptions`` (``ragsift.embedders.options``): the options that change how texts are
  embedded (the index records them and ``query``/``explain``/``tune`` re-apply them).
- ``BuildHooks``: where a run reports (skips, warnings, progress): callbacks, not part of the
  request's value.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from ragsift.embedders.options import EmbedderOptions
from ragsift.errors import RagsiftError

if TYPE_CHECKING:
    from ragsift.ingest.summary import EmbedProgress
    from ragsift.sources import Skipped

ENGINES = ("local", "ray")
STDIN = "-"  # the path that reads ``ragsift chunk`` JSON lines from stdin


@dataclass(frozen=True)
class WalkRules:
    """Which files a run reads under its paths: only those matching an ``include`` glob (none:
    all), none matching an ``exclude`` glob; symlinks that lead out of a walked folder followed
    or not; files over ``max_file_size`` bytes skipped (None: ``sources.DEFAULT_MAX_FILE_SIZE``);
    ``root``: the project root (absolute), documents inside it are keyed and shown by their
    path relative to it (None: absolute keys, paths as typed)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    follow_links: bool = False
    max_file_size: int | None = None
    root: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", tuple(self.include or ()))
        object.__setattr__(self, "exclude", tuple(self.exclude or ()))
        if self.root is not None:
            object.__setattr__(self, "root", os.path.abspath(os.fspath(self.root)))


@dataclass(frozen=True)
class BuildHooks:
    """Where a run reports: ``on_skip(s)`` for each file that cannot be used, ``on_warning(path,
    message)`` for each warning, ``progress`` (an ``EmbedProgress``; None: nothing drawn)."""

    on_skip: Callable[[Skipped], None] | None = None
    on_warning: Callable[[str, str], None] | None = None
    progress: EmbedProgress | None = None

    HOOKS = ("on_skip", "on_warning", "progress")


@dataclass(frozen=True)
class BuildRequest:
    """One ``embed`` run: bring the index at ``index`` up to date with ``paths``.

    ``paths == ("-",)`` reads ``ragsift chunk`` JSON lines from ``stdin_lines``. ``walk``: which
    files are read. ``chunker``: the chunker (None: embed's default for the model,
    ``sizing.default_embed_chunker``). ``model``: an ONNX model folder, ``multilingual`` or an
    endpoint URL (None: the index's own, else the bundled MiniLM; ``index_model``);
    ``embedder_options``: how it embeds; ``embedder``: a ready embedder object to use instead
    of loading ``model`` (``ragsift eval`` passes its caching one); ``batch_size``: texts per
    model call (None: the model's default). ``engine``: ``local`` or ``ray`` (``ray_address``:
    the cluster to join; None: a local one). ``rebuild``: start the index afresh; ``prune``:
    remove documents whose files are certainly gone; ``wait``: wait for another writer (a
    callable is told once that the run waits). Checked when made: the engine."""

    index: str
    paths: tuple[str, ...]
    walk: WalkRules = field(default_factory=WalkRules)
    chunker: Any = None
    model: str | None = None
    embedder_options: EmbedderOptions = field(default_factory=EmbedderOptions)
    embedder: Any = None
    batch_size: int | None = None
    engine: str = "local"
    ray_address: str | None = None
    rebuild: bool = False
    prune: bool = True
    wait: Any = False
    stdin_lines: Iterable[str] | Iterable[bytes] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", os.fspath(self.index))
        paths = [self.paths] if isinstance(self.paths, (str, os.PathLike)) else self.paths
        object.__setattr__(self, "paths", tuple(os.fspath(p) for p in paths))
        if self.engine not in ENGINES:
            raise RagsiftError(f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}")

    @classmethod
    def of(
        cls,
        index: str | os.PathLike,
        paths: Iterable[str | os.PathLike] | str | os.PathLike,
        *,
        caller: str = "build",
        **keywords: Any,
    ) -> BuildRequest:
        """The request from the API's flat keywords (``api.build``'s): the fields above, the
        walk rules (``include``, ``exclude``, ``follow_links``, ``max_file_size``, ``root``)
        and the embedder options (``pooling``, ``normalize``, ``max_length``, ``query_prefix``,
        ``passage_prefix``) by their own names; ``chunking``: the options of embed's chunker
        (``strategy``, ``size``, ``overlap``, ``tokenizer``, ...), made now for the run's
        model and embedder options (``max_length``, ``passage_prefix``), which are given once.
        At least one path (a plain string is one path); an unknown keyword is a
        ``TypeError``."""
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]  # one path, not its characters
        paths = tuple(os.fspath(p) for p in paths)
        walk = {k: keywords.pop(k) for k in WALK_FIELDS if k in keywords}
        chunking = keywords.pop("chunking", None)
        plain = {k: keywords.pop(k) for k in REQUEST_FIELDS if k in keywords}
        options = EmbedderOptions.of(keywords, caller)  # what is left: embedder options
        if not paths:
            raise RagsiftError(f"{caller} needs at least one path to index")
        if chunking is not None and plain.get("chunker") is None and paths != (STDIN,):
            from ragsift.ingest.sizing import default_embed_chunker

            # the model is read before the chunker is made: the chunker is sized for it
            plain["model"] = index_model(index, plain.get("model"))
            plain["chunker"] = default_embed_chunker(
                plain["model"],
                max_length=options.max_length,
                passage_prefix=options.passage_prefix,
                **chunking,
            )
        return cls(
            index=os.fspath(index),
            paths=paths,
            walk=WalkRules(**{k: v for k, v in walk.items() if v is not None}),
            embedder_options=options,
            **{k: v for k, v in plain.items() if v is not None},
        )

    @property
    def reads_stdin(self) -> bool:
        return STDIN in self.paths

    def later(self) -> BuildRequest:
        """The request of a watch's later runs: never a rebuild, and a busy writer waited for."""
        return replace(self, rebuild=False, wait=self.wait or True)


WALK_FIELDS = tuple(f.name for f in fields(WalkRules))
# the request's own fields that ``of`` takes by name (the nested values are built by ``of``)
REQUEST_FIELDS = tuple(
    f.name
    for f in fields(BuildRequest)
    if f.name not in ("index", "paths", "walk", "embedder_options")
)


def index_model(index: str | os.PathLike, model_dir: str | None) -> str | None:
    """The model a run on ``index`` uses: ``model_dir`` when one is given; else the model the
    index names for itself, ``multilingual`` for an index built with ``--model multilingual``
    (so ``embed`` without ``--model`` continues it, as ``query`` does, with that model's
    chunker) or the endpoint URL it was built through, else None (the bundled MiniLM). An
    index built with ``--model DIR`` is not followed: a folder can move, so ``--model DIR``
    stays needed (the mismatch refusal says so); a server that moved is one line naming the
    URL, and ``--model NEW-URL`` reaches it. Read before the chunker is chosen; a missing, empty or unreadable index: None
    (``open_index`` then says what is wrong with it)."""
    from ragsift.embedders import MULTILINGUAL, is_endpoint
    from ragsift.errors import RagsiftError
    from ragsift.index import inspect_index, open_index

    if model_dir is not None:
        return model_dir
    try:
        if inspect_index(os.fspath(index)) != "ours":
            return None
        with open_index(os.fspath(index), "r") as store:
            source = (store.settings() or {}).get("model_source")
    except RagsiftError:
        return None
    return source if source == MULTILINGUAL or is_endpoint(source) else None
