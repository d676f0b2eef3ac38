"""The ``ragsift`` console script, and ``python -m ragsift``: ``ragsift.cli.main``, imported
here so that a Ctrl-C while the CLI loads (typer and the subcommands, ~0.05 s) is exit 130 with
one line, as it is once a command runs, not a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from ragsift.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("ragsift: interrupted\n")
        raise SystemExit(130) from None
    cli_main()


if __name__ == "__main__":
    main()
