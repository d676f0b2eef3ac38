"""How ``--help`` reads: one place that fixes what Typer's defaults print, for every command.

Typer (0.29) shows a ``<bool>`` type beside every flag, writes required arguments as
``{TEXT}`` in the usage line, and keeps the docstring's hard line breaks in the command list
and the epilog prose. The classes below are the group and command classes of the whole app
(``cli/__init__.py`` installs them on every registered command), so a new subcommand gets the
same help without doing anything:

- flags show no type (they take no value);
- the usage line reads ``QUERY`` / ``PATH...`` / ``[CONFIG]...`` (the argument's metavar, else
  its name in capitals), as in man pages;
- prose paragraphs of the help and epilog are joined into one line each (the terminal wraps
  them); indented lines (examples) keep their breaks.
"""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperCommand, TyperGroup

# Typer 0.29 vendors its own click (typer._click): parameters are recognised by duck typing.


def reflow(text: str | None, docstring: bool = True) -> str | None:
    """Join the lines of each prose paragraph; keep paragraphs whose lines are indented
    (examples, tables) or that start with ``\\b`` (click's "keep as is" marker) unchanged.
    A docstring is dedented first; an epilog is taken as written (its indents are examples)."""
    if not text:
        return text
    # An epilog keeps its leading newline: click dedents all but the first line of it, and
    # an empty first line keeps "Examples:" at indent 0 so the examples stay indented.
    lead = "" if docstring else "\n"
    text = inspect.cleandoc(text) if docstring else text.strip("\n")
    paragraphs = text.split("\n\n")
    out = []
    for para in paragraphs:
        lines = para.split("\n")
        if para.startswith("\b") or any(line[:1].isspace() for line in lines if line):
            out.append(para)
        else:
            out.append(" ".join(line.strip() for line in lines if line.strip()))
    return lead + "\n\n".join(out) + ("" if docstring else "\n")


def usage_piece(param: Any) -> str:
    """``QUERY``, ``PATH...``, ``[CONFIG]...``: the man-page way of writing an argument."""
    name = param.metavar or (param.name or "arg").upper()
    many = param.nargs != 1 and not name.endswith("...")
    optional = not param.required and not name.startswith("[")  # "[GLOB]..." is written out
    return (f"[{name}]" if optional else name) + ("..." if many else "")


def _plain_flags(params: list[Any]) -> list[Any]:
    for p in params:
        if getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""  # the type column shows the metavar; a flag takes no value
    return params


class _PlainHelp:
    """Mixin for a Typer command or group (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for key in ("help", "epilog"):
            if kwargs.get(key):
                kwargs[key] = reflow(kwargs[key], docstring=key == "help")
        super().__init__(*args, **kwargs)
        if self.help and not self.short_help:  # type: ignore[attr-defined]
            # The command list shows the first paragraph: as one sentence, not broken lines.
            self.short_help = self.help.split("\n\n")[0]  # type: ignore[attr-defined]

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))  # type: ignore[misc]

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []  # type: ignore[attr-defined]
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(usage_piece(param))
        return pieces


class HelpCommand(_PlainHelp, TyperCommand):
    pass


class HelpGroup(_PlainHelp, TyperGroup):
    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return TyperGroup.collect_usage_pieces(self, ctx)  # [OPTIONS] COMMAND [ARGS]...
