"""ragsift: file → parse → chunk → embed → index, and evidence for why a query found what it found.

The package is layered; data flows one way:
``sources`` → ``chunkers`` → ``embedders`` → ``retrieval``.
``ingest`` orchestrates them; ``cli`` only parses arguments and prints.
"""

__version__ = "0.2.0"
