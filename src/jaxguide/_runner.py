"""Entry point of a process started by :func:`jaxguide.distributed.launch`.

``python -m jaxguide._runner file PATH`` or ``python -m jaxguide._runner module NAME``
runs the program as ``__main__`` after one change: what Python prints (``sys.stdout``)
goes to the original standard output, and the process's C-level standard output, where
native libraries write (XLA, Gloo's "Rank 3 is connected to 7 peer ranks" from its own
threads), goes to standard error. Those lines would otherwise land between the
program's own lines in an order that changes from run to run.

An exception that escapes the program is reported the way ``python program.py``
would report it, without the runner's own frames, and with file names under the
working directory written relative to it: the report names the program's lines, not
where this package or the program happen to be installed on this machine.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback


def _shown_name(filename: str, cwd: str) -> str:
    """``filename`` relative to ``cwd`` when it lies under it, else unchanged."""
    try:
        if os.path.commonpath([os.path.abspath(filename), cwd]) == cwd:
            return os.path.relpath(filename, cwd)
    except ValueError:  # different drives, or a name such as "<frozen runpy>"
        pass
    return filename


def format_exception(exc: BaseException, cwd: str | None = None) -> str:
    """The traceback of ``exc`` without the frames of ``runpy`` and this runner.

    Args:
        exc: an exception raised by the launched program.
        cwd: file names under this folder are shown relative to it (default: the
            current working directory).

    Returns:
        The text Python would print for an uncaught ``exc``, starting at the
        program's own frames.
    """
    cwd = os.path.abspath(cwd or os.getcwd())
    ours = (os.path.abspath(__file__), os.path.abspath(runpy.__file__))
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if os.path.abspath(f.filename) not in ours and not f.filename.startswith("<frozen")
    ]
    for f in frames:
        f.filename = _shown_name(f.filename, cwd)
    head = "Traceback (most recent call last):\n" if frames else ""
    body = "".join(traceback.format_list(frames))
    return head + body + "".join(traceback.format_exception_only(type(exc), exc))


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] not in ("file", "module"):
        raise SystemExit("usage: python -m jaxguide._runner {file PATH | module NAME}")
    kind, target = argv
    python_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = open(python_out, "w", buffering=1, encoding="utf-8", closefd=True)
    sys.__stdout__ = sys.stdout  # type: ignore[misc]  # the program's "real" stdout is this one too
    sys.argv = [target]
    try:
        if kind == "file":
            runpy.run_path(target, run_name="__main__")
        else:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
    except SystemExit:
        raise
    except BaseException as exc:  # report it as python would, then exit 1
        sys.stdout.flush()
        sys.stderr.write(format_exception(exc))
        sys.stderr.flush()
        raise SystemExit(1) from None


if __name__ == "__main__":
    main(sys.argv[1:])
