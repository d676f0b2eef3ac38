"""Phase timers and reference-file makers; run from the repository root as
``python -m bench.tools.NAME``."""
