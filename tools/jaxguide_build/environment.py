"""The repository and the tools its environment is made with (``make env``)."""

from __future__ import annotations

import shutil
from pathlib import Path

#: The repository's root folder.
ROOT = Path(__file__).resolve().parents[2]


def uv() -> str:
    """The path of ``uv``: the one on the PATH, else the one ``make env`` installs into
    ``.tools/``.

    Raises:
        FileNotFoundError: neither exists.
    """
    found = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    if not Path(found).exists():
        raise FileNotFoundError("uv not found: run `make env` first (it installs uv in .tools/)")
    return found
