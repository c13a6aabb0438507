"""Files the build keeps between runs, written so that an interrupted build never leaves
a half-written one behind, and read so that a damaged one is never used.

* :func:`write_atomic` writes a temporary file in the same folder, then renames it over
  the target: a reader sees the old file or the new one, never a part.
* :class:`ContentCache` stores derived files (shrunk figures, subset fonts) under their
  key *and* a digest of their content; an entry whose bytes no longer match its digest
  (truncated, edited) is deleted and counts as missing, so it is made again.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` all at once (temporary file, then ``os.replace``)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


class ContentCache:
    """A folder of ``<key>.<content digest><suffix>`` files."""

    def __init__(self, folder: Path, suffix: str):
        self.folder, self.suffix = Path(folder), suffix

    def get(self, key: str) -> bytes | None:
        """The stored bytes for ``key``, or ``None`` if absent or damaged."""
        for entry in self.folder.glob(f"{key}.*{self.suffix}"):
            data = entry.read_bytes()
            if entry.name == f"{key}.{_digest(data)}{self.suffix}":
                return data
            entry.unlink(missing_ok=True)  # damaged: its bytes do not match its name
        return None

    def put(self, key: str, data: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for old in self.folder.glob(f"{key}.*{self.suffix}"):
            old.unlink(missing_ok=True)
        write_atomic(self.folder / f"{key}.{_digest(data)}{self.suffix}", data)
