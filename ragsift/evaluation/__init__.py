"""Evaluation: build an index per configuration through the pipeline and score retrieval on a
labelled set (span references or BEIR), with an embedding cache shared across configurations.

Orchestration, like ``pipeline.py``: it sits above the four layers and never prints.
"""
