"""The light option coercion (cli/_coerce.py) answers exactly as typer's own pydantic path.

For every value it accepts it must return what typer's adapter returns (same value, same
type); every value typer rejects must still be rejected with typer's own message, because
the light path hands it over. And `ragsift chunk` must no longer import pydantic.
"""

from __future__ import annotations

import subprocess
import sys
from enum import Enum

import pytest
import typer
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param, resolve_type_descriptor
from typer.models import OptionInfo

import ragsift.cli  # noqa: F401  (installs the light path)
from ragsift.cli._coerce import light_param


class Color(str, Enum):
    red = "red"
    green = "green"


CASES = [
    (str, {}, ["abc", "", " x ", "0", "é", b"bytes"]),
    (
        int,
        {},
        ["512", "0", "007", "-3", "+4", " 5", "1_000", "1.0", "abc", "", 7, True, 2.0, "9" * 30],
    ),
    (int, {"min": 1}, ["1", "0", "512", 0, 5]),
    (int, {"min": 2, "max": 512}, ["2", "1", "512", "513"]),
    (int, {"min": 1, "clamp": True}, ["0", "5"]),
    (float, {}, ["0.5", "1", "1e-3", ".5", "nan", "-0.1", "0.40", 0.25, 1, True, "x"]),
    (float, {"min": 0.0, "max": 1.0}, ["0.5", "1.5", "1", 0.0, 2.0]),
    (bool, {}, [True, False, "true", "no", ""]),
    (Color, {}, ["red", "RED", "blue", Color.green, "", "green "]),
    (Color, {"case_sensitive": False}, ["RED", "Green", "blue"]),
    (list[str], {}, [("a", "b"), [], ("x",), "ab"]),
    (list[Color], {}, [("red", "green"), ("red", "nope"), ()]),
]


def _outcome(runtime, value):
    try:
        out = runtime._coerce_value(value, param=None, ctx=None)
    except BadParameter as exc:
        return ("error", exc.message)
    return ("ok", type(out), repr(out))  # repr: nan == nan


@pytest.mark.parametrize(
    ("annotation", "kw", "values"), CASES, ids=[f"{a}-{k}" for a, k, _ in CASES]
)
def test_light_coercion_answers_as_typer_does(annotation, kw, values):
    descriptor = resolve_type_descriptor(annotation, OptionInfo(**kw))
    light = light_param(descriptor)
    assert light is not None
    typers = build_runtime_param(descriptor)
    assert type(typers) is not type(light)
    for value in values:
        assert _outcome(light, value) == _outcome(typers, value), (annotation, kw, value)


def test_unfamiliar_types_keep_typers_own_path():
    from pathlib import Path

    assert light_param(resolve_type_descriptor(Path, OptionInfo())) is None
    assert light_param(resolve_type_descriptor(str, OptionInfo(parser=str.upper))) is None


def test_cli_errors_are_still_typers(cli):
    def error(*args):
        proc = cli("chunk", "fixtures/", *args)
        assert proc.returncode == 2
        return " ".join(proc.stderr.replace("\u2502", " ").split())  # the box, unwrapped

    assert "Invalid value for '--size' / '-n': Input should be greater than or equal to 1" in error(
        "--size", "0"
    )
    message = error("--strategy", "nope")
    assert "Invalid value for '--strategy' / '-s': Value error, 'nope' is not one of" in message
    assert "'recursive'" in message


def test_chunk_command_does_not_import_pydantic(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# Title\n\nSome text here.\n", encoding="utf-8")
    code = (
        "import sys\nfrom ragsift.cli import app\n"
        "try:\n"
        f"    app(['chunk', {str(doc)!r}, '--tokenizer', 'chars', '--size', '64',"
        " '--strategy', 'recursive', '--include', '*.md'])\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, file=sys.stderr)\n"
        "print('pydantic' in sys.modules, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stderr.strip().splitlines()[-2:] == ["exit 0", "False"], out.stderr
    assert '"text": "Some text here."' in out.stdout or "Some text here." in out.stdout


def test_typer_is_the_one_patched():
    from typer.core import _TyperParameter

    assert getattr(_TyperParameter.get_runtime_param, "_ragsift_light", False)
    assert typer  # the public API is untouched: only the lazy runtime-parameter hook
