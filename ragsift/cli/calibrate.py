"""``ragsift calibrate``: fit the relevance score and its default threshold for the index's model."""

from __future__ import annotations

import json
import sys

import typer

from ragsift.cli._common import handle_errors, warn
from ragsift.cli.query import INDEX_OPTION, MODEL_OPTION
from ragsift.errors import EXIT_OK

EPILOG = """
The set ships with ragsift: short documentation passages in English, Chinese and Japanese,
questions they answer, keyword forms of those questions and off-topic queries. calibrate
indexes them with the index's model in a temporary folder and asks every query through the
ranking engine; the English set is asked the same way with the bundled MiniLM, whose relevance
score and default thresholds were fitted on a large English labelled set. The model's cosines
are then mapped onto MiniLM's scale (a·cosine + b, so that its best relevant and best unrelated
passages score as MiniLM's do on the same English queries), and the index is scored with
MiniLM's coefficients and thresholds read through that map (for MiniLM itself: a 1, b 0, the
shipped calibration). The result is stored in the index for its model's fingerprint: query,
explain and MCP then use it when no --threshold is given and no `tune --save` threshold is
stored (that one still wins, when it was tuned on the same calibration).

Examples:

  ragsift calibrate --index zh.db          # an index built with --model multilingual

  ragsift calibrate -i docs.db --model ./bge-small   # an index built with --model DIR

  ragsift calibrate -i zh.db --json | jq .thresholds
"""


def calibrate_command(
    index: str = INDEX_OPTION,
    model: str | None = MODEL_OPTION,
    as_json: bool = typer.Option(
        False, "--json", help="Print the calibration as one JSON object on stdout."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
) -> None:
    """Fit the relevance score and its default thresholds for the index's model on the
    labelled set that ships with ragsift, and store them in the index."""
    from ragsift.api import calibrate, calibration_cost

    if not quiet:
        warn(f"calibrating on the shipped set: {calibration_cost(index, model=model).line()}")
    result = calibrate(index, model=model, progress=None if quiet else (lambda line: warn(line)))
    if not quiet and "sent" in result.embedded:
        warn(calibrated_line(result))
    if as_json:
        sys.stdout.write(json.dumps(result.as_dict()) + "\n")
        raise typer.Exit(EXIT_OK)
    m = result.dense_map
    head = (
        f"calibrated {result.model} ({result.fingerprint}) in {result.seconds:.1f} s on "
        f"{result.queries} queries: cosine read as {m.a:.4f} × cosine {m.b:+.4f}; stored "
        f"in {index}"
    )
    columns = (
        "mode     threshold  per language (answered / first hit right / off-topic "
        "admitted; zh, ja held out)"
    )
    out = [head, columns]
    for mode, t in result.thresholds.items():
        folds = "  ".join(
            f"{f.held_out}: {100 * f.answered:.0f}/{100 * f.first_right:.0f}/{100 * f.false:.0f}%"
            for f in result.folds
            if f.mode == mode
        )
        out.append(f"{mode:<8} {t:9.2f}  {folds}")
    sys.stdout.write("\n".join(out) + "\n")
    raise typer.Exit(EXIT_OK)


def calibrated_line(result) -> str:
    """What a calibration took: its time and, through an endpoint, what it sent."""
    sent = result.embedded.get("sent")
    if sent is None:
        return f"calibrated in {result.seconds:.1f} s"
    return (
        f"calibrated in {result.seconds:.1f} s: sent {sent} texts to the endpoint in "
        f"{result.embedded.get('requests', 0)} requests"
    )


def register(app: typer.Typer) -> None:
    app.command("calibrate", epilog=EPILOG, help=calibrate_command.__doc__)(
        handle_errors(calibrate_command)
    )
