"""Option values without pydantic when typer's own answer is already known.

typer (from 0.2x) coerces every parameter value, defaults included, through a pydantic
``TypeAdapter`` built per parameter: importing pydantic and building ~27 adapters costs
~0.1 s of CPU on every ``ragsift chunk`` run (issue 13's whole-command profile), more than
the chunker itself. Our parameters are plain ``str`` / ``int`` / ``float`` / ``bool`` / enum
values (or lists of them), for which typer's adapters return the value unchanged, the
number parsed, or the enum member picked by typer's own ``coerce_cli_choice``.

``install()`` puts a light runtime parameter in front of typer's: for such a value it
returns exactly what typer's adapter returns; for anything else (a value it would reject,
a number out of range, an unfamiliar type or option) it hands the value to typer's own
pydantic path, so every error message and every unusual type is typer's. When typer has no
such internals (another version), ``install()`` does nothing.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, get_args, get_origin

_INT = re.compile(r"(?:0|[1-9][0-9]{0,17})\Z")
_FLOAT = re.compile(r"(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?\Z")
_UNSURE = object()


def _leaf(annotation: Any, info: Any, value: Any, ctx: Any) -> Any:
    """typer's coerced value for one leaf value, or ``_UNSURE``."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        from typer._param_types import coerce_cli_choice

        try:
            return coerce_cli_choice(
                value, choices=tuple(annotation), case_sensitive=info.case_sensitive, ctx=ctx
            )
        except ValueError:
            return _UNSURE
    if annotation is str:
        return value if isinstance(value, str) else _UNSURE
    if annotation is bool:
        return value if isinstance(value, bool) else _UNSURE
    if annotation is int or annotation is float:
        if isinstance(value, bool):
            return _UNSURE
        if isinstance(value, str):
            if not (_INT if annotation is int else _FLOAT).match(value):
                return _UNSURE
            value = annotation(value)
        elif type(value) is not annotation:  # e.g. an int default for a float option
            return _UNSURE
        if info.clamp:
            return _UNSURE
        if info.min is not None and not value >= info.min:
            return _UNSURE
        if info.max is not None and not value <= info.max:
            return _UNSURE
        return value
    return _UNSURE


def _plain(annotation: Any) -> bool:
    return annotation in (str, int, float, bool) or (
        isinstance(annotation, type) and issubclass(annotation, Enum)
    )


@functools.cache
def _light_class() -> type:
    from typer._coercion import RuntimeParam, build_runtime_param

    @dataclass(frozen=True)
    class LightParam(RuntimeParam):  # type: ignore[misc, valid-type]
        descriptor: Any = None
        _slow: list = field(default_factory=list)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            annotation, info = self.annotation, self.parameter_info
            if get_origin(annotation) is list:
                if isinstance(value, (list, tuple)):
                    (item,) = get_args(annotation)
                    out = [_leaf(item, info, v, ctx) for v in value]
                    if not any(v is _UNSURE for v in out):
                        return out
            else:
                out = _leaf(annotation, info, value, ctx)
                if out is not _UNSURE:
                    return out
            if not self._slow:  # typer's own (pydantic) path, built once
                self._slow.append(build_runtime_param(self.descriptor))
            return self._slow[0]._coerce_value(value, param=param, ctx=ctx)

    return LightParam


def light_param(descriptor: Any) -> Any:
    """A light runtime parameter for typer's ``TypeDescriptor``, or None (typer's own)."""
    info, annotation = descriptor.parameter_info, descriptor.annotation
    args = get_args(annotation)
    leaf = args[0] if get_origin(annotation) is list and len(args) == 1 else annotation
    if (
        descriptor.file_annotation is not None
        or info.parser is not None
        or getattr(info, "click_type", None) is not None
        or not _plain(leaf)
    ):
        return None
    return _light_class()(parameter_info=info, annotation=annotation, descriptor=descriptor)


def install() -> bool:
    """Patch typer's parameter class (see the module doc); False when typer lacks it."""
    try:
        from typer.core import _TyperParameter

        _light_class()
    except (ImportError, TypeError):
        return False
    original = getattr(_TyperParameter, "get_runtime_param", None)
    if original is None or getattr(original, "_ragsift_light", False):
        return original is not None

    def get_runtime_param(self: Any) -> Any:
        try:
            if self._runtime_param is None:
                self._runtime_param = light_param(self.type_descriptor)
        except Exception:
            pass
        return original(self)

    get_runtime_param._ragsift_light = True  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param
    return True
