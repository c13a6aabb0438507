"""The notebooks run from a wheel: a second, independent execution of chapters.

Notebooks in notebooks/ run top to bottom as a Colab user would: in a fresh virtual
environment where jaxguide is installed from a wheel built from this repository (with
the locked versions), from a folder holding nothing but the notebooks.
tests/test_reproducible.py compares the book's outputs with it, and
tests/test_notebooks.py checks that every chosen notebook ran.

Which notebooks: ``make test`` runs :data:`SAMPLE`, and the wheel's every module is
imported in that environment; ``JAXGUIDE_WHEEL_RUN=all`` (``make notebooks-check``)
runs every notebook, and ``JAXGUIDE_WHEEL_RUN=<chapter>,...`` (``make notebook
CHAPTER=<name> WHEEL=1``) the ones named. The sample keeps ``make test`` short: a second execution of every
chapter would cost about as much CPU again as the build's own execution.
What the sample leaves to the build is safe to leave there: a notebook's code cells are
its page's, made by tools/make_notebooks.py and checked up to date
(tests/test_notebooks.py), and the build executes every page strictly; what only the
full run checks is that the other chapters' outputs are reproducible.

tests/timeline.py starts the run (:func:`start`) while the book builds, and calls
:func:`book_built` when the build's chapters have executed, so that the notebooks execute
then (while Sphinx writes the pages), with the compilation cache the build filled;
tests/conftest.py's ``wheel_notebooks`` fixture hands out the result (:func:`result`),
starting the run itself when the session builds no book.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path

from bookcheck import BUILD_TIMEOUT, ROOT
from jaxguide.page import STRICT_ENV
from jaxguide_build import notebook_runs
from jaxguide_build.environment import wheel_environment
from jaxguide_build.jupyter_kernels import compilation_cache_env, notebook_env

#: The longest a cell of a notebook may run here, in seconds.
CELL_TIMEOUT = 600


@dataclass
class WheelRun:
    executed: Path  # the executed notebooks, one per chosen chapter
    chapters: list[str]  # the chosen chapters (chosen())
    failures: list[str]  # "<chapter>: <end of its log>" for each notebook that failed or
    # whose log holds a traceback


@dataclass
class _BookExecuted:
    """What the session's book build hands this run once its chapters have executed
    (:func:`book_built`)."""

    done: threading.Event = field(default_factory=threading.Event)  # set then
    cache: Path | None = None  # its JAX compilation cache (a folder per chapter)
    seconds: dict[str, float] = field(default_factory=dict)  # each chapter's time there


#: This session's run, once :func:`start` has begun it.
_run: concurrent.futures.Future[WheelRun] | None = None
_book = _BookExecuted()

#: The notebooks ``make test`` runs from the wheel: five of the cheapest, with one device
#: and with eight, a subprocess, the random stream and sharded programs among them.
SAMPLE = ("migration", "pmap", "pytrees", "random", "sharding")
#: ``all`` runs every notebook (``make notebooks-check``, and the workflow), chapter
#: names separated by commas run those (``make notebook CHAPTER=<name> WHEEL=1``), and
#: unset or ``sample`` runs :data:`SAMPLE`.
CHOICE_VARIABLE = "JAXGUIDE_WHEEL_RUN"


def chosen(chapters: list[str]) -> list[str]:
    """The chapters, of ``chapters``, whose notebooks this session runs from the wheel,
    as ``JAXGUIDE_WHEEL_RUN`` chooses them (:data:`CHOICE_VARIABLE`), in their order.
    A name that is not one of ``chapters`` is refused, with the choices.
    """
    choice = os.environ.get(CHOICE_VARIABLE, "").strip()
    if choice == "all":
        return list(chapters)
    if choice in ("", "sample"):
        return [c for c in chapters if c in SAMPLE]
    names = {name.strip() for name in choice.split(",") if name.strip()}
    unknown = sorted(names - set(chapters))
    if unknown or not names:
        raise ValueError(
            f"{CHOICE_VARIABLE}={choice!r}: use 'all' for every notebook, chapter names "
            f"separated by commas (unknown: {', '.join(unknown) or 'none given'}; choose "
            f"from {', '.join(chapters)}), or leave it unset (or 'sample') for the sample "
            "make test runs"
        )
    return [c for c in chapters if c in names]


# Imports every module of the installed package: a module the wheel lacks, or one that
# imports something only the repository has, fails here and not only in a notebook.
IMPORT_ALL = """
import importlib, pkgutil, jaxguide
assert "site-packages" in jaxguide.__file__, jaxguide.__file__
names = sorted(m.name for m in pkgutil.iter_modules(jaxguide.__path__))
for name in names:
    importlib.import_module(f"jaxguide.{name}")
print("imported", len(names), "modules")
"""


def start(tmp: Path, wait_for_book: bool = False) -> None:
    """Start :func:`run_notebooks_from_a_wheel` in a thread in ``tmp``, once per session
    (later calls do nothing). With ``wait_for_book``, its notebooks wait for
    :func:`book_built`."""
    global _run
    if _run is None:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        _run = pool.submit(run_notebooks_from_a_wheel, tmp, wait_for_book)
        pool.shutdown(wait=False)


def book_built(cache: Path, seconds: dict[str, float] | None = None) -> None:
    """The session's book build has executed its chapters (``seconds``: each one's
    execution time, when the build's log gives them); ``cache`` is its JAX compilation
    cache."""
    _book.cache = cache
    _book.seconds.update(seconds or {})
    _book.done.set()


def expected_seconds(notebook: Path, cached: bool) -> float:
    """How long ``notebook`` should take here: its chapter's time in the book build (a
    third less with the build's compilation cache), or, without one, the bytes of its
    code (``notebook_runs.ipynb_code_bytes``: a longer notebook takes longer): what orders the
    run, longest first."""
    build = _book.seconds.get(notebook.stem)
    if build is None:
        return float(notebook_runs.ipynb_code_bytes(notebook))
    return build * (2 / 3 if cached else 1.0)


def result() -> WheelRun:
    """The run :func:`start` began, once it has finished."""
    assert _run is not None, "result() before start()"
    return _run.result()


def run_notebooks_from_a_wheel(tmp: Path, wait_for_book: bool = False) -> WheelRun:
    """Build the wheel, make the environment, import every module of the package
    there, then run the chosen notebooks (:func:`chosen`), two at a time (one at a time
    with ``wait_for_book``).

    With ``wait_for_book``, the notebooks start only when the session's book build has
    executed its chapters (:func:`book_built`), and each gets JAX's persistent
    compilation cache in the folder the build filled for its chapter, as the build's own
    re-executions do: the same programs are not compiled twice, and nothing else
    changes (a cached program is the program XLA would compile). Notebooks whose code reads compilation itself (compile times,
    explained cache misses, ``jax.distributed``: ``CACHE_OFF`` in
    tools/jaxguide_build/jupyter_kernels.py) compile from scratch, as in the build
    (the rule is :func:`~jaxguide_build.jupyter_kernels.notebook_env`'s). Executing after
    the build rather than beside it also keeps four kernels off a 2-core machine's two
    cores."""

    python = wheel_environment(tmp)
    work = tmp / "work"  # no repository paths: only the notebooks
    shutil.copytree(ROOT / "notebooks", work)
    chapters = chosen(sorted(nb.stem for nb in work.glob("*.ipynb")))
    executed = tmp / "executed"
    executed.mkdir()
    runner = notebook_runs.copy_runner(tmp)
    logs = tmp / "logs"
    logs.mkdir()
    failures = []
    imported = subprocess.run(
        [str(python), "-c", IMPORT_ALL],
        cwd=work,
        capture_output=True,
        text=True,
        env={"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(tmp)},
    )
    if imported.returncode != 0:
        failures.append(f"importing every module of the wheel:\n{imported.stderr[-3000:]}")
    # Claims are strict here as in the build: one that fails on this run stops its notebook.
    base_env = {
        "PATH": f"{python.parent}:/usr/bin:/bin",
        "HOME": str(tmp),
        STRICT_ENV: "1",
    }
    cache = None
    if wait_for_book:
        if not _book.done.wait(timeout=BUILD_TIMEOUT):
            raise TimeoutError(f"the book build did not execute its chapters in {BUILD_TIMEOUT} s")
        cache = _book.cache

    def env_for(nb: Path) -> dict[str, str]:
        """The build's rule for a kernel's environment (jupyter_kernels.notebook_env),
        reading back what the build compiled (no folder is emptied)."""
        env = base_env if cache is None else {**base_env, **compilation_cache_env(cache)}
        notebook = json.loads(nb.read_text())
        return notebook_env(notebook, nb.stem, env, empty_fresh=False)

    def run(nb: Path) -> notebook_runs.Run:
        """The notebook's run: from the wheel's environment (the runner checks that
        jaxguide comes from it), longest first."""
        env = env_for(nb)
        command = notebook_runs.runner_command(
            python, runner, nb, executed / nb.name, work, timeout=CELL_TIMEOUT, installed=True
        )
        expected = expected_seconds(nb, "JAX_COMPILATION_CACHE_DIR" in env)
        return notebook_runs.Run(nb.stem, command, expected, env)

    # Two at a time on this 2-core machine; one at a time after the session's book build,
    # whose Sphinx, writing the pages then, is what the tests wait for: it keeps a core of
    # its own.
    runs = [run(work / f"{c}.ipynb") for c in chapters]
    for ended in notebook_runs.run_longest_first(
        runs, logs, parallel=1 if wait_for_book else 2, cwd=work
    ):
        # A kernel that went wrong outside any cell (its sockets, its threads) says so
        # only here, and may still run its notebook to the end.
        if ended.returncode != 0 or "Traceback" in ended.log:
            failures.append(f"{ended.name}:\n{textwrap.shorten(ended.log[-3000:], 3000)}")
    return WheelRun(executed, chapters, failures)
