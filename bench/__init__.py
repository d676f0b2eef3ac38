"""Benchmarks of what ragsift ships. Run from the repository root as ``python -m bench.NAME``
(see bench/README.md); the scripts import each other as ``bench.NAME``."""
