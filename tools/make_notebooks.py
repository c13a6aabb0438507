"""Generate notebooks/<chapter>.ipynb from each chapter's MyST source, for Colab.

    .venv/bin/python tools/make_notebooks.py          # write notebooks/ (make notebooks)
    .venv/bin/python tools/make_notebooks.py numpy    # write notebooks/numpy.ipynb only
    .venv/bin/python tools/make_notebooks.py --check  # exit 1 if any is missing or stale

The notebooks are never edited by hand: how a chapter becomes its notebook is
:mod:`jaxguide_build.notebooks`.
"""

from __future__ import annotations

import argparse
import sys

from jaxguide_build import notebooks


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line; ``--help`` (or an unknown option) exits before anything is
    written.

    >>> parse(["--check"]).check, parse(["numpy", "pytrees"]).chapters
    (True, ['numpy', 'pytrees'])
    """
    parser = argparse.ArgumentParser(
        prog="make_notebooks.py",
        description="Write notebooks/<chapter>.ipynb (for Colab) from book/<chapter>.md.",
    )
    parser.add_argument(
        "chapters", nargs="*", help="the chapters to write (default: every chapter)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a notebook is missing, out of date or left over",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    return notebooks.update(check=args.check, names=args.chapters or None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
