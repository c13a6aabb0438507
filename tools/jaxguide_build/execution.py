"""Sphinx extension: execute the chapters that need it, before Sphinx reads them.

:mod:`jaxguide_build.staleness` decides which chapters' outputs are stale; this module
executes those, and every chapter with no cached outputs, with jupyter-cache (in
parallel when there are several: :func:`preexecute`). A chapter that fails there stops
the build with a short report (chapter, error, cell: :func:`failure_report`) and
nothing else, and is not executed a second time. Two builds into the same output folder
do not run at once: the second waits for the first
(:func:`jaxguide_build.buildprocess.lock_build`).

The kernels it starts, and the environment they get (the compilation cache among it),
are :mod:`jaxguide_build.jupyter_kernels`'. When the chapters have executed, the log
says so, with each one's time (:func:`executed_line`).

How a chapter executes, in the order of the calls (five modules take part; the patches
are entries of :data:`jaxguide_build.patches.PATCHES`, installed by :func:`setup`):

1. ``config-inited``: :func:`jaxguide_build.buildprocess.lock_build` (one build per
   output folder), then
   :func:`jaxguide_build.jupyter_kernels.kernel_settings` fills ``KERNEL_ENV`` (strict
   claims, the compilation cache's settings).
2. ``env-get-outdated``, priority 500: :func:`jaxguide_build.staleness.outdated`
   fingerprints every chapter and drops the cached outputs of the stale ones.
3. ``env-get-outdated``, priority 600: :func:`preexecute` takes the chapters Sphinx
   will read (new, edited or stale) and, inside
   :func:`jaxguide_build.patches.reading_once` (each chapter parsed once), adds them to
   jupyter-cache's project and lists those with no cached outputs.
4. :func:`_execute` runs them with :class:`LongestFirst` (in parallel, in
   :func:`longest_first`'s order) or jupyter-cache's serial executor.
5. In the executor's worker, ``execute`` (wrapped by ``patches._executing``) sets
   ``patches.EXECUTING`` to the chapter's name; nbclient's ``create_kernel_manager``
   (:func:`jaxguide_build.patches.create_kernel_manager`) makes a
   :class:`jaxguide_build.notebook_runs.BuildKernelManager` (IPC sockets in a private
   folder; it lives in ``notebook_runs`` because that file must stand alone) with the
   environment :func:`jaxguide_build.jupyter_kernels.notebook_env` gives that chapter;
   the kernel runs the cells and jupyter-cache stores the outputs.
6. Back in :func:`_execute`: :func:`executed_line` logs each chapter's seconds; or
   :func:`failure_report` says what failed, :func:`jaxguide_build.staleness.save` keeps
   the others' fingerprints, and the build stops.
7. Sphinx reads the pages (myst-nb takes the outputs from the cache), and at
   ``build-finished`` :func:`jaxguide_build.staleness.save` stores the fingerprints.
"""

from __future__ import annotations

import multiprocessing
import re
import sys
import time
from pathlib import Path
from typing import Any

from jupyter_cache.executors.base import ExecutorRunResult
from jupyter_cache.executors.basic import JupyterExecutorLocalMproc, ProcessData
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.errors import ExtensionError
from sphinx.util import logging

from . import buildprocess, jupyter_kernels, patches
from .outputs import ANSI
from .staleness import CODE_CELL, save

logger = logging.getLogger(__name__)


def preexecute(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """``env-get-outdated`` (runs after :func:`~jaxguide_build.staleness.outdated`): execute every chapter that
    has no cached outputs, before Sphinx reads them, with jupyter-cache's parallel
    executor (one process per core) when ``jaxguide_parallel_execution`` is on and more
    than one needs it, else its serial one; myst-nb then finds their outputs in the
    cache. A chapter that fails stops the build with :func:`failure_report`'s short
    report (chapter, error, cell), one chapter or many, and is not executed again.
    """
    from jupyter_cache import get_cache

    state: Any = app.env  # holds staleness's jaxguide_* attributes and mystnb_config
    # Only pages Sphinx is about to read can need executing: new, edited or stale ones.
    candidates = set(added) | set(changed) | set(getattr(state, "jaxguide_stale", ()))
    chapters = {d: p for d, p in state.jaxguide_chapters.items() if d in candidates}
    if not chapters:
        return []
    cache = get_cache(state.mystnb_config.execution_cache_path)
    paths = [str(p.resolve()) for p in chapters.values()]
    with patches.reading_once():
        for path in paths:
            cache.add_nb_to_project(path, read_data={"type": "plugin", "name": "myst_nb_md"})
        pending = [r.uri for r in cache.list_unexecuted(filter_uris=paths)]
        if pending:
            _execute(app, cache, pending)
    return []


def _execute(app: Sphinx, cache: Any, pending: list[str]) -> None:
    """Execute the chapters ``pending`` (their URIs) into ``cache``; stop the build with
    :func:`failure_report` if one fails."""
    import logging as std_logging

    from jupyter_cache.executors import load_executor

    names = ", ".join(sorted(Path(u).stem for u in pending))
    parallel = app.config.jaxguide_parallel_execution and len(pending) > 1
    if parallel:
        order = ", ".join(Path(u).stem for u in sorted(pending, key=longest_first))
        logger.info(
            f"[jaxguide-build] executing {len(pending)} chapters in parallel, "
            f"longest first: {order}"
        )
    else:
        logger.info(
            f"[jaxguide-build] executing {len(pending)} chapter{'s' * (len(pending) > 1)}: {names}"
        )
    # jupyter-cache logs each failure with its whole coloured traceback; the report below
    # says it shorter, so its log stays out of the build's.
    # (The parallel executor sets the level of its workers' multiprocessing logger
    # from this logger's.)
    quiet = std_logging.getLogger("jaxguide_build.execution.jupyter_cache")
    quiet.propagate = False
    quiet.setLevel(std_logging.CRITICAL)
    if not quiet.handlers:
        quiet.addHandler(std_logging.NullHandler())
    executor = (
        LongestFirst(cache=cache, logger=quiet)
        if parallel
        else load_executor("local-serial", cache=cache, logger=quiet)
    )
    start = time.perf_counter()
    result = executor.run_and_cache(
        filter_uris=pending,
        timeout=app.env.mystnb_config.execution_timeout,  # type: ignore[attr-defined]
        allow_errors=False,
    )
    failed = result.excepted + result.errored
    if not failed:
        logger.info(executed_line(cache, pending, time.perf_counter() - start))
    if failed:
        # Report every failure now, from the run that made it, and stop: executing a
        # failing chapter a second time only to report it would double the wait. The
        # report is all the log says: raising an exception here would add dozens of lines
        # of Sphinx's and Jupyter Book's own traceback after it. The fingerprints of the
        # chapters that did execute are saved first (staleness.save).
        reports = [
            failure_report(Path(uri).stem, cache.get_project_record(uri).traceback or "")
            for uri in failed
        ]
        report = "\n\n".join(reports)
        save(app, ExtensionError(report))
        print(
            f"\n{report}\n\nThe build stopped: fix the cell above and build again.",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(1)


#: How the build's log begins the line that says the execution has ended (tests/conftest.py
#: waits for it to start the notebooks' run from a wheel while Sphinx writes the pages).
EXECUTED = "[jaxguide-build] executed "


def executed_line(cache: Any, uris: list[str], seconds: float) -> str:
    """The log line after a successful execution of ``uris``: how long it took, and each
    chapter's own execution time (from the cache's records), slowest first."""
    each = {}
    for uri in uris:
        record = cache.get_cached_project_nb(uri)
        if record is not None and record.data.get("execution_seconds") is not None:
            each[Path(uri).stem] = float(record.data["execution_seconds"])
    times = ", ".join(f"{name} {s:.1f}" for name, s in sorted(each.items(), key=lambda x: -x[1]))
    count = f"{len(uris)} chapter{'s' * (len(uris) > 1)}"
    return f"{EXECUTED}{count} in {seconds:.1f} s" + (f" (seconds each: {times})" if times else "")


def md_code_bytes(path: str | Path) -> int:
    """The bytes of code in a chapter's code cells (MyST ``code-cell`` blocks): the
    proxy :class:`LongestFirst` orders chapters by. It ranks the long chapters first
    without any record of earlier builds (a fresh clone has none)."""
    text = Path(path).read_text(encoding="utf-8")
    return sum(len(m) for m in CODE_CELL.findall(text))


#: A code cell that starts JAX processes of its own (``jaxguide.distributed.launch``).
LAUNCHES = re.compile(r"\bdistributed\.launch\(")


def starts_processes(path: str | Path) -> bool:
    """Whether a chapter's code starts JAX processes of its own and waits on them
    (``jaxguide.distributed.launch``). Such a chapter spends seconds at a time with no
    CPU of its own in use (a heartbeat or a collective timing out, a process that
    sleeps); run last, with nothing beside it, its waits left both cores idle
    (bench/reports/make-test-2026-11.md). Run first, the other core fills them."""
    text = Path(path).read_text(encoding="utf-8")
    return any(LAUNCHES.search(cell) for cell in CODE_CELL.findall(text))


def longest_first(path: str | Path) -> tuple[bool, int, str]:
    """The key that sorts chapters: those that start processes first
    (:func:`starts_processes`), then longest first (most :func:`md_code_bytes`), then by
    name."""
    return (not starts_processes(path), -md_code_bytes(path), Path(path).stem)


class LongestFirst(JupyterExecutorLocalMproc):
    """jupyter-cache's parallel executor (one process per core), scheduled so that both
    cores stay busy to the end: the chapters start in :func:`longest_first` order
    (those that wait on processes of their own, then the most code first) and a worker takes the next one as soon as it is free. jupyter-cache's own
    ``Pool.map`` hands each worker chunks of three chapters in the order they were added,
    so one core could run the last three long ones while the other sat idle."""

    def run_and_cache(
        self, *, filter_uris: list[str] | None = None, timeout: int = 30, allow_errors: bool = False
    ) -> ExecutorRunResult:
        records = self.get_records(filter_uris, None, clear_tracebacks=True)
        records.sort(key=lambda r: longest_first(r.uri))
        work = [ProcessData(r.pk, r.uri, self.cache, timeout, allow_errors) for r in records]
        # As jupyter-cache does: its workers log through multiprocessing's logger, at
        # this executor's level (critical only: the build reports failures itself).
        multiprocessing.log_to_stderr(self.logger.level)
        with POOL_CONTEXT.Pool() as pool:
            results = list(pool.imap_unordered(self._EXECUTION_WORKER(), work, chunksize=1))
        return ExecutorRunResult(
            succeeded=[p for i, p in results if i == 0],
            excepted=[p for i, p in results if i == 1],
            errored=[p for i, p in results if i == 2],
        )


#: Workers are forked, whatever the platform's default start method: the execution
#: patches (``patches.install``) and the kernels' environment
#: (``jupyter_kernels.KERNEL_ENV``, strict claims included) are this process's
#: globals, and a spawned or forkserver worker (macOS's default; Linux's from Python
#: 3.14) would start without them, running kernels that let a false claim pass.
POOL_CONTEXT = multiprocessing.get_context("fork")


def failure_report(chapter: str, traceback: str) -> str:
    """A failing cell's report: the chapter and the error, the cell with its failing line
    marked, and the error again last, so the tail of a long log (what CI shows) holds it.

    ``traceback`` is what nbclient recorded (its ``CellExecutionError`` text: the cell's
    source between dashed lines, then the traceback, ending with ``Name: message``).
    A cell longer than :data:`REPORT_LINES` is shown around the line that failed.

    >>> print(failure_report("numpy", (
    ...     "An error occurred while executing the following cell:\\n------------------\\n"
    ...     "y = 2\\nx = 1 / 0\\n------------------\\n\\nCell In[4], line 2\\n"
    ...     "\\x1b[0;31mZeroDivisionError\\x1b[0m: division by zero"
    ... )))
    [jaxguide-build] chapter 'numpy' failed: ZeroDivisionError: division by zero
      in the cell, at line 2:
            y = 2
        --> x = 1 / 0
    [jaxguide-build] chapter 'numpy' failed at line 2 of the cell above: ZeroDivisionError: division by zero
    """
    text = ANSI.sub("", traceback).strip()
    parts = re.split(r"^-{10,}$", text, flags=re.M)
    cell = parts[1].strip("\n").splitlines() if len(parts) >= 3 else []
    lines = [l for l in text.splitlines() if l.strip()]
    error = next(
        (
            l.strip()
            for l in reversed(lines)
            if re.match(r"^\s*[\w.]+(Error|Exception|Exit|Interrupt)\b", l)
        ),
        lines[-1] if lines else "unknown error",
    )
    # IPython names the failing line of the cell ("Cell In[4], line 2"); the last such
    # mention is the innermost frame in the cell.
    at = [int(m) for m in re.findall(r"^Cell In\[\d+\], line (\d+)", text, flags=re.M)]
    line = at[-1] if at and 1 <= at[-1] <= len(cell) else None
    start = 0 if line is None else max(0, min(line - REPORT_LINES // 2, len(cell) - REPORT_LINES))
    shown = cell[start : start + REPORT_LINES]
    marked = "\n".join(
        f"    {'-->' if start + i + 1 == line else '   '} {l}" if line else f"    {l}"
        for i, l in enumerate(shown)
    )
    where = f", at line {line}" if line else ""
    return (
        f"[jaxguide-build] chapter {chapter!r} failed: {error}\n  in the cell{where}:\n"
        f"{marked}\n[jaxguide-build] chapter {chapter!r} failed"
        f"{f' at line {line} of the cell above' if line else ''}: {error}"
    )


REPORT_LINES = 25
"""The most lines of a failing cell that :func:`failure_report` shows."""


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("jaxguide_parallel_execution", False, "env")
    app.add_config_value("jaxguide_compilation_cache", False, "")
    app.connect("config-inited", buildprocess.lock_build)
    buildprocess.tune_garbage_collector(app)
    app.connect("config-inited", jupyter_kernels.kernel_settings)
    # The kernels it starts: BuildKernelManager, knowing their chapter; jupyter-cache
    # parses each chapter once; LongestFirst.
    patches.install(
        app,
        "nbclient kernel manager",
        "jupyter-client kernel manager",
        "jupyter-cache worker chapter",
        "jupyter-cache single parse",
        "jupyter-cache parallel executor",
    )
    # After staleness.outdated (priority 500) has dropped the stale chapters' outputs.
    app.connect("env-get-outdated", preexecute, priority=600)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
