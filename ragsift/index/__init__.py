"""The index on disk (persistence only: no ranking, no model).

- ``opening.py``: ``open_index(path, mode)``, how every caller opens an index (the backend is
  chosen there), and ``inspect_index``.
- ``backend.py``: the contract (``IndexReader``, ``IndexWriter``, ``FragmentCommits``).
- ``store.py``: ``IndexStore``, the SQLite implementation of the index (see docs/CONTRACTS.md):
  opening and reads; its writer side is the ``StoreWriter`` mixin in ``store_write.py``, the
  file helpers (``inspect_file``, ``sqlite_uri``, ``write_error``) are in ``sqlite_file.py``.
- ``lance.py``, ``ann.py``: ``LanceIndex``, the Lance implementation (the ``lance`` extra):
  opening and reads; its writer side is the ``LanceWriter`` mixin in ``lance_write.py``, the
  schema, row and fragment helpers are in ``lance_rows.py``.
- ``migrations.py``: the schema and its numbered migrations.
- ``locking.py``: the writer lock (``INDEX-lock`` with the PID).

Importing this package is cheap: numpy loads inside the functions that use it.
"""

# The index file every command uses when --index (or $RAGSIFT_INDEX) is not given.
DEFAULT_INDEX = "ragsift.db"

from ragsift.index.opening import inspect_index, open_index  # noqa: E402

__all__ = ["DEFAULT_INDEX", "inspect_index", "open_index"]
