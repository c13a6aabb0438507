"""Generate notebooks/<chapter>.ipynb from each chapter's MyST source, for Colab.

    .venv/bin/python tools/make_notebooks.py          # write notebooks/ (make notebooks)
    .venv/bin/python tools/make_notebooks.py --check  # exit 1 if any is missing or stale

The notebooks are never edited by hand: how a chapter becomes its notebook is
:mod:`jaxguide_build.notebooks`.
"""

from __future__ import annotations

import sys

from jaxguide_build import notebooks


def main(argv: list[str]) -> int:
    return notebooks.update(check="--check" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
