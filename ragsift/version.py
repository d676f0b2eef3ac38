"""The package version (one place; ``pyproject.toml`` carries the same number)."""

__version__ = "0.8.0"

# The oldest ragsift that may write an index this one has written (``min_writer_version`` in
# the index's settings; ``index.opening.check_versions``). 0.4.0: documents keyed relative to
# a project root and a pipeline fingerprint per document; an older writer would add a second
# copy of each document under its absolute path. 0.5.0: the rst reader 4 (sources/formats.py);
# a 0.4.0 writer would re-chunk every .rst document with its reader 3, and this one back
# again at its next run. 0.6.0: the rst reader 5 likewise, and the evidence layout units-2
# (chunk vectors weighted by unit length), which 0.5.0 would refuse as "one vector per
# chunk". 0.7.0 (CJK terms: SQLite schema 6, Lance schema 4; evidence layout units-3, CJK
# sentences as units) leaves it at 0.6.0: the schema numbers already stop 0.6.0 from opening
# such an index at all, and 0.6.0 refuses an evidence layout other than its units-2. 0.8.0: the
# markdown reader 6 (heading attribute lists out of the trails); a 0.7.0 writer would re-chunk
# every markdown document with its reader 5, and this one back again at its next run. Raise it whenever an older
# writer would misread what this one writes; readers are bound the same way by
# ``MIN_READER_VERSION`` (None: every version that reads the schema may read it).
MIN_WRITER_VERSION = "0.8.0"
MIN_READER_VERSION: str | None = None


def version_tuple(text: str) -> tuple[int, ...]:
    """``"0.4.0"`` -> ``(0, 4, 0)`` (a pre-release suffix ignored: ``"1.0.0rc1"`` -> 1.0.0)."""
    import re

    return tuple(int(m) for m in re.findall(r"\d+", text.split("+")[0])[:3])
