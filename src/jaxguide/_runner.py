"""Entry point of a process started by :func:`jaxguide.distributed.launch`.

``python -m jaxguide._runner file PATH`` or ``python -m jaxguide._runner module NAME``
runs the program as ``__main__`` after one change: what Python prints (``sys.stdout``)
goes to the original standard output, and the process's C-level standard output, where
native libraries write (XLA, Gloo's "Rank 3 is connected to 7 peer ranks" from its own
threads), goes to standard error. Those lines would otherwise land between the
program's own lines in an order that changes from run to run.
"""

from __future__ import annotations

import os
import runpy
import sys


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] not in ("file", "module"):
        raise SystemExit("usage: python -m jaxguide._runner {file PATH | module NAME}")
    kind, target = argv
    python_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.__stdout__ = open(python_out, "w", buffering=1, encoding="utf-8", closefd=True)
    if kind == "file":
        sys.argv = [target]
        runpy.run_path(target, run_name="__main__")
    else:
        sys.argv = [target]
        runpy.run_module(target, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
