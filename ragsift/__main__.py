"""``python -m ragsift`` is the same as the ``ragsift`` console script."""

from ragsift.cli import main

main()
