"""Notebooks run outside the book's build, one process each, and the one scheduler that
runs several.

Four programs run the chapters' notebooks outside the build: the test suite's run from a
wheel (tests/wheelrun.py), the oldest-JAX check (tools/check_jax_floor.py), the
newest-JAX check in a Debian root (tools/check_jax_newest.py) and the accelerator check
(bench/accelerator_check.py). Each runs every notebook in a process of its own, with this
file as the program (:func:`main`)::

    python notebook_runs.py NOTEBOOK OUT PATH [--timeout SECONDS] [--installed] [--jax VERSION]

It executes ``NOTEBOOK`` in a fresh ``python3`` kernel working in the folder ``PATH``
(:func:`run_notebook`) and writes the executed notebook to ``OUT``, also when a cell
failed; it exits non-zero, with the traceback, when one did. The file is copied where it
runs (:func:`copy_runner`): the environments that matter have neither this package nor
the repository (a virtual environment with jaxguide installed from a wheel, a chroot).
So its top level imports only the standard library, nbformat, nbclient and
jupyter_client (tests/test_notebook_runs.py checks it); the helpers that need the
repository import it inside.

:func:`run_longest_first` runs such commands (:func:`runner_command`), a few at a time,
the longest first, each with its output in a log file. The JAX checks share their
command-line options and helpers here too (:func:`chapter_options`,
:func:`select_chapters`, :func:`work_folder`, :func:`error_line`).

The kernels, the build's among them (:mod:`jaxguide_build.jupyter_kernels`), are
:class:`BuildKernelManager`'s: IPC sockets in a private folder each, defined here so
that this file stands alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import nbclient
import nbformat
from jupyter_client import AsyncKernelManager

#: The name the runner has where it is copied (:func:`copy_runner`).
RUNNER_NAME = "notebook_runs.py"


class BuildKernelManager(AsyncKernelManager):
    """A kernel manager that talks to its kernel over IPC sockets (and keeps the
    connection file) in a fresh private folder (``tempfile.mkdtemp``), removed when the
    kernel shuts down, and adds :attr:`extra_env` to the kernel's environment. The
    build's kernels use it (:mod:`jaxguide_build.patches`, which sets ``extra_env``) and
    so does :func:`run_notebook`.

    Not TCP: no port is opened, and two kernels never share a socket. Each client picks
    "free" ports for its kernel before the kernel binds them, so two kernels started at
    once can pick the same port: in one CI run a kernel's heartbeat port was the other
    kernel's shell port, the first kernel's heartbeat thread died, and its client's pings
    reached the second kernel, which printed a ``DELIM not in msg_list`` traceback into
    the output of every cell. Nor does ipykernel have a reason to warn that TCP is
    unencrypted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.extra_env: dict[str, str] = {}
        self.socket_dir = tempfile.mkdtemp(prefix="jaxguide-kernel-")
        self.transport = "ipc"
        self.ip = os.path.join(self.socket_dir, "k")
        self.connection_file = os.path.join(self.socket_dir, "kernel.json")

    async def _async_pre_start_kernel(self, **kw: Any) -> tuple[list[str], dict[str, Any]]:
        if self.extra_env:
            kw["env"] = {**(kw.get("env") or os.environ), **self.extra_env}
        return await super()._async_pre_start_kernel(**kw)

    pre_start_kernel = _async_pre_start_kernel

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


def run_notebook(nb: nbformat.NotebookNode, path: str | Path, timeout: int) -> None:
    """Execute the notebook ``nb`` (filled in place) in a fresh ``python3`` kernel working
    in the folder ``path``, each cell for at most ``timeout`` seconds, as the build runs
    its chapters: over IPC sockets in a private temporary folder
    (:class:`BuildKernelManager`), and the kernel stopped at once when the notebook
    ends.

    Not a graceful shutdown: every output has arrived by then, and ipykernel's graceful
    shutdown can race with its own output thread and print a traceback.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell raised (its outputs are in ``nb``).
        nbclient.exceptions.CellTimeoutError: a cell ran longer than ``timeout``.
    """
    km = BuildKernelManager(kernel_name="python3")
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=int(timeout),
        kernel_name="python3",
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(path)}},
    )
    try:
        client.execute(cleanup_kc=True)  # a manager passed in is not stopped otherwise
    finally:  # also when the kernel did not start, and so was never cleaned up
        shutil.rmtree(km.socket_dir, ignore_errors=True)


def _installed_jaxguide() -> None:
    """Stop unless ``jaxguide`` is imported from an installed wheel (``site-packages``),
    not from a checkout."""
    import jaxguide

    if "site-packages" not in (jaxguide.__file__ or ""):
        raise SystemExit(
            f"notebook_runs: jaxguide is imported from {jaxguide.__file__}, not from an "
            "installed wheel (site-packages)"
        )


def _jax_version(expected: str) -> None:
    """Stop unless the JAX this Python imports is release ``expected``."""
    import jax

    if jax.__version__ != expected:
        raise SystemExit(f"notebook_runs: jax is {jax.__version__} here, not {expected}")


def main(argv: list[str] | None = None) -> int:
    """``python notebook_runs.py NOTEBOOK OUT PATH``: run one notebook (:func:`run_notebook`)
    and write it to ``OUT``, also when a cell failed (the outputs up to the failure); a
    failed cell raises on (a traceback, exit status 1). Prints ``OK NOTEBOOK`` at the end
    of a run in which every cell ran."""
    parser = argparse.ArgumentParser(
        prog=RUNNER_NAME, description="Run one notebook in a fresh kernel, as the book's build."
    )
    parser.add_argument("notebook", type=Path, help="the notebook to run")
    parser.add_argument("out", type=Path, help="where the executed notebook is written")
    parser.add_argument("path", type=Path, help="the folder the kernel works in")
    parser.add_argument(
        "--timeout", type=int, default=600, help="seconds each cell may take (default 600)"
    )
    parser.add_argument(
        "--installed",
        action="store_true",
        help="stop unless jaxguide is imported from an installed wheel (site-packages)",
    )
    parser.add_argument("--jax", metavar="VERSION", help="stop unless jax is this release")
    args = parser.parse_args(argv)
    if args.installed:
        _installed_jaxguide()
    if args.jax:
        _jax_version(args.jax)
    nb = nbformat.read(args.notebook, as_version=4)
    try:
        run_notebook(nb, args.path, args.timeout)
    finally:  # the outputs so far, also when a cell failed
        nbformat.write(nb, args.out)
    print("OK", args.notebook)
    return 0


# --------------------------------------------------------------------- for the callers


def copy_runner(folder: Path) -> Path:
    """Copy this file into ``folder`` as :data:`RUNNER_NAME`, for an environment without
    this package to run (:func:`main`); its path there."""
    target = folder / RUNNER_NAME
    shutil.copyfile(__file__, target)
    return target


def runner_command(
    python: str | Path,
    runner: str | Path,
    notebook: str | Path,
    out: str | Path,
    path: str | Path,
    *,
    timeout: int,
    installed: bool = False,
    jax: str | None = None,
) -> list[str]:
    """The command that runs ``notebook`` with the copy ``runner`` of this file
    (:func:`copy_runner`) under the interpreter ``python``: the arguments of
    :func:`main`. Paths are as the command sees them (inside a chroot, say)."""
    command = [str(python), str(runner), str(notebook), str(out), str(path)]
    command += ["--timeout", str(int(timeout))]
    command += ["--installed"] if installed else []
    command += ["--jax", jax] if jax else []
    return command


def ipynb_code_bytes(notebook: Path) -> int:
    """The bytes of code in a notebook's code cells: how long it should take when nothing
    better is known (as the build ranks its chapters: ``execution.md_code_bytes``)."""
    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    return sum(
        len("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
        for c in cells
        if c.get("cell_type") == "code"
    )


@dataclass(frozen=True)
class Run:
    """One command of :func:`run_longest_first`: a notebook's run."""

    name: str  # its name in the results, and its log's (``<name>.log``)
    command: list[str]
    #: How long it should take, in seconds or anything in proportion (bytes of code):
    #: the longest starts first.
    expected: float
    env: dict[str, str] | None = None  # its whole environment; None: this process's


@dataclass(frozen=True)
class Ended:
    """A :class:`Run` that has ended."""

    name: str
    returncode: int
    seconds: float
    log: str  # everything it printed, stdout and stderr


def run_longest_first(
    runs: Iterable[Run], logs: Path, parallel: int, *, cwd: Path | None = None
) -> Iterator[Ended]:
    """Run the commands, at most ``parallel`` at a time, each writing its output to
    ``logs/<name>.log`` (a file: a pipe could fill and stall a chatty kernel); yield each
    as it ends.

    They start longest first (most :attr:`Run.expected`, then by name), and the next
    starts as soon as one ends: the last to start are the short ones, so no core idles
    at the end while one long run finishes alone."""
    pending = sorted(runs, key=lambda r: (-r.expected, r.name))
    running: dict[str, tuple[subprocess.Popen[bytes], float, IO[bytes]]] = {}
    while pending or running:
        while pending and len(running) < parallel:
            run = pending.pop(0)
            file: IO[bytes] = (logs / f"{run.name}.log").open("wb")
            proc = subprocess.Popen(
                run.command, stdout=file, stderr=subprocess.STDOUT, cwd=cwd, env=run.env
            )
            running[run.name] = (proc, time.perf_counter(), file)
        time.sleep(0.2)
        for name, (proc, began, log) in list(running.items()):
            if proc.poll() is None:
                continue
            log.close()
            del running[name]
            out = (logs / f"{name}.log").read_text(errors="replace")
            yield Ended(name, proc.returncode, time.perf_counter() - began, out)


def error_line(output: str) -> str:
    """The most telling line of a failed run's output: the last line naming an error
    (without colour codes), shortened."""
    from .outputs import ANSI

    output = ANSI.sub("", output)  # nbclient colours tracebacks
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    named = [line for line in lines if re.search(r"\b\w*(Error|Exception)\b", line)]
    return textwrap.shorten((named or lines or ["(no output)"])[-1], 160)


def chapter_options(parser: argparse.ArgumentParser, keep: str) -> None:
    """The options of both JAX checks (tools/check_jax_floor.py, tools/check_jax_newest.py):
    ``--chapters``, ``--parallel`` (at least 1) and ``--keep`` (``keep``: what it keeps)."""

    def at_least_one(text: str) -> int:
        if not text.strip().isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text}")
        return int(text)

    parser.add_argument(
        "--chapters", nargs="*", default=None, help="chapters to run (default: every chapter)"
    )
    parser.add_argument(
        "--parallel", type=at_least_one, default=2, help="chapters executed at once (default 2)"
    )
    parser.add_argument("--keep", action="store_true", help=keep)


def select_chapters(wanted: list[str] | None, program: str) -> list[str]:
    """The chapters to run (``wanted``, or every one), in the book's order; an unknown
    name stops ``program`` with the choices."""
    from .notebooks import chapters as book_chapters

    chapters = book_chapters()
    if wanted:
        unknown = sorted(set(wanted) - set(chapters))
        if unknown:
            raise SystemExit(f"{program}: unknown chapters {unknown}; choose from {chapters}.")
        chapters = [c for c in chapters if c in wanted]
    return chapters


@contextlib.contextmanager
def work_folder(prefix: str, keep: bool, parent: Path | None = None) -> Iterator[Path]:
    """A fresh temporary folder (in ``parent``, else the system's), removed afterwards,
    or kept and its path printed if ``keep`` (both JAX checks' ``--keep``)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield tmp
    finally:
        if keep:
            print("kept:", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
