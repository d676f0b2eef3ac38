"""The index on disk (persistence only: no ranking, no model).

- ``store.py``: ``IndexStore``, the SQLite implementation of the index (see docs/CONTRACTS.md).
- ``migrations.py``: the schema and its numbered migrations.
- ``locking.py``: the writer lock (``INDEX-lock`` with the PID).

Importing this package is cheap: numpy loads inside the functions that use it.
"""

# The index file every command uses when --index (or $RAGSIFT_INDEX) is not given.
DEFAULT_INDEX = "ragsift.db"
