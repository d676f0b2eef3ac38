"""The one exception type for errors a user can fix, and the documented exit codes.

Raised anywhere below ``cli``; caught once in ``ragsift.cli.main``, which prints
``ragsift: <message>`` on stderr and exits with ``exit_code`` (no traceback unless ``--debug``).
"""

from __future__ import annotations

import os
import sys

# Exit codes are an API: documented in the README, stable across releases.
EXIT_OK = 0  # success
EXIT_NOTHING = 1  # nothing matched / nothing produced
EXIT_USAGE = 2  # usage error (bad flag, bad value, unusable index, ...)
EXIT_SKIPPED = 3  # completed, but some input files were skipped
EXIT_OUTPUT = 4  # stdout or the index could not be written (disk full, I/O error)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


def debug_requested() -> bool:
    """Whether the user asked for ``--debug`` (or set ``RAGSIFT_DEBUG``): then the libraries
    under ragsift (onnxruntime, Lance) may write their own lines to stderr; otherwise
    only ragsift's lines reach it. Read without importing the CLI."""
    cli = sys.modules.get("ragsift.cli._common")
    return bool(os.environ.get("RAGSIFT_DEBUG") or (cli is not None and cli.STATE.get("debug")))


class Action:
    """A command a message suggests, named as the API names it: ``Action("tune", save=True)``,
    ``Action("build", "PATH...", index=path, rebuild=True)`` (``args``: what goes first, as
    written; ``settings``: parameter -> value, ``True`` for a switch). A front end words it
    (``name_of(action)``): the CLI as its command line (``ragsift tune --save``), the API as
    a call (``tune(save=True)``, ``api_words``)."""

    __slots__ = ("args", "name", "settings")

    def __init__(self, name: str, *args: str, **settings: object) -> None:
        self.name = name
        self.args = args
        self.settings = tuple(settings.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Action) and (self.name, self.args, self.settings) == (
            other.name,
            other.args,
            other.settings,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.args, self.settings))

    def __repr__(self) -> str:
        return f"Action({api_words(self)})"

    def __str__(self) -> str:
        return api_words(self)


def api_words(name: str | Action, value: object = None) -> str:
    """The API's words, and a message's when no front end words it: a parameter by its name
    (``k``), set to a value ``k=13``, an ``Action`` as its call (``tune(save=True)``)."""
    if isinstance(name, Action):
        parts = [*name.args, *(f"{n}={v}" for n, v in name.settings)]
        return f"{name.name}({', '.join(parts)})"
    return name if value is None or value == "" else f"{name}={value}"


class Words:
    """Text that names parameters and actions, each front end writing them in its own words.

    ``template`` is a ``str.format`` template; a field is a value from ``values`` (formatted
    as usual: ``{score:.3f}``; a ``Words`` or ``Action`` there is worded too; a value hides a
    name of the same spelling), or else a name:
    ``{k}`` the parameter ``k``, ``{k=more}`` the parameter ``k`` set to ``values["more"]``,
    ``{include=}`` the parameter as it takes one value (``name_of("include", "")``: the CLI
    says ``--include``, where ``{include}``, the list, is ``--include values``).
    ``worded(name_of)`` writes each name as ``name_of(name)`` / ``name_of(name, value)`` /
    ``name_of(action)``: the API's ``api_words`` (``k``, ``k=13``, ``tune(save=True)``, also
    ``str(words)``), the CLI's ``ragsift.cli._common.flag_name`` (``-k``, ``-k 13``,
    ``ragsift tune --save``), the MCP server's tool arguments. Text from outside (a path, a
    query) goes in ``values``, never into the template, where a brace would be a field."""

    __slots__ = ("template", "values")

    def __init__(self, template: str, values: dict[str, object] | None = None) -> None:
        self.template = template
        self.values = dict(values or {})

    def worded(self, name_of=api_words) -> str:
        """The text with each name written as ``name_of`` writes it."""
        return self.template.format_map(_Fields(self.values, name_of))

    def __add__(self, other: Words | str) -> Words:
        return Words("{_0}{_1}", {"_0": self, "_1": other})

    def __radd__(self, other: str) -> Words:
        return Words("{_0}{_1}", {"_0": other, "_1": self})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Words) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"Words({str(self)!r})"

    def __str__(self) -> str:
        return self.worded(api_words)


class Worded(str):
    """``Words`` as a string in the API's words that keeps them (``.words``) for a front end to
    word again: what goes where plain strings are expected (``RagsiftError.message``, an
    index's list of problems)."""

    words: Words

    def __new__(cls, words: Words) -> Worded:
        text = super().__new__(cls, words.worded(api_words))
        text.words = words
        return text

    def __reduce__(self) -> tuple:
        return (Worded, (self.words,))


def worded(text: Words | str | None, name_of=api_words) -> str | None:
    """``text`` in ``name_of``'s words when it is ``Words`` (or ``Worded``); a plain string or
    None as is."""
    if isinstance(text, Worded):
        return text.words.worded(name_of)
    return text.worded(name_of) if isinstance(text, Words) else text


class _Fields:
    """A template's fields: a value given with the text, else a name (``k``, ``k=value``)."""

    def __init__(self, values: dict[str, object], name_of) -> None:
        self.values = values
        self.name_of = name_of

    def __getitem__(self, field: str) -> object:
        if field in self.values:
            value = self.values[field]
            if isinstance(value, Words):
                return value.worded(self.name_of)
            if isinstance(value, Action):
                return str(self.name_of(value))
            return value
        name, eq, value_field = field.partition("=")
        if eq:
            return self.name_of(name, self.values[value_field] if value_field else "")
        return self.name_of(name)


class RagsiftError(Exception):
    """An error the user can fix. The message is shown as-is, on one line.

    ``message``: plain text, or ``Words`` that name parameters and actions. ``param``: the
    argument the error is about (its Python API name, ``"k"``), for an error about an
    argument; its message is then a ``Words`` template (``"{k} must be at least 1 (got
    {got})"``, ``values={"got": 0}`` fills the rest). ``message`` writes the names as the API
    does (``k must be at least 1 (got 0)``, ``api_words``), and a front end writes them in its
    own words with ``worded`` (the CLI: ``-k must be ...``). A plain string without ``param``
    or ``values`` is not a template: its braces are kept."""

    def __init__(
        self,
        message: str | Words,
        exit_code: int = EXIT_USAGE,
        *,
        param: str | None = None,
        values: dict[str, object] | None = None,
    ) -> None:
        if isinstance(message, Worded):  # (an error made again from its message: a pickle)
            message = message.words
        if not isinstance(message, Words) and (param is not None or values is not None):
            message = Words(message, values)
        self.words = message if isinstance(message, Words) else None
        self.template = message.template if isinstance(message, Words) else message
        self.param = param
        self.values = dict(message.values) if isinstance(message, Words) else {}
        self.exit_code = exit_code
        # in the API's words; a ``Worded`` (its ``.words`` kept) when it names anything
        self.message = self.template if self.words is None else Worded(self.words)
        super().__init__(self.message)

    def worded(self, name_of=api_words) -> str:
        """The message with each name written as ``name_of`` writes it (``Words.worded``)."""
        return self.template if self.words is None else self.words.worded(name_of)


class SkipFile(Exception):
    """Raised by a reader/parser: this file cannot be used; ``reason`` says why (one line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotADocument(SkipFile):
    """Raised by a reader/parser: this file reads, but it is not a document (a theme
    template), found out only once read. While walking a folder such a file is *ignored*, as
    discovery ignores an image: counted under ``kind`` (the key of the ignored counts, e.g.
    ``"HTML template"``), no skip line, never a change of exit code. A file named as an
    argument is skipped with ``reason``, as an image named as one is. A ``SkipFile``, so a
    caller that knows nothing of it skips the file."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.kind = kind
