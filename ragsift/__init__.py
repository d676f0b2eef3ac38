"""ragsift: file → parse → chunk → embed → index, and evidence for why a query found what it found.

The package is layered; data flows one way:
``sources`` → ``chunkers`` → ``embedders`` → ``retrieval``.
``ingest`` orchestrates them; ``cli`` only parses arguments and prints. This module wires
the one part a lower layer takes from a higher one: the ``model`` token counter.
"""

from ragsift.version import __version__  # noqa: F401 (the package version)


def _model_counter():
    """``tokenizer="model"``: the default embedder's WordPiece (the tokenizer alone: counting
    tokens never builds an onnxruntime session)."""
    from ragsift.embedders import model_counter

    return model_counter()


def _wire() -> None:
    """The package root hands the lower layers the parts of the higher ones (``counting``)."""
    from ragsift.counting import register_counter

    register_counter("model", _model_counter)


_wire()
