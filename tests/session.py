"""How a full test session (``make test``) keeps a 2-core machine busy: the timeline.

``make test`` runs ruff, the browser's dependencies and the environment's bytecode side by
side, then one pytest session (this module drives it, through the fixtures and hooks of
tests/conftest.py), and mypy in the session's last part. Four things overlap:

1. **The book build** (tests/bookbuild.py). At the session's first test, when any
   collected test uses the ``book`` fixture, :func:`start` launches the strict
   ``jupyter-book build`` of the whole book in a subprocess, into a fresh folder. Its
   chapters execute two at a time (tools/jaxguide_build/execution.py).
2. **The tests that need no book** run meanwhile, in pytest's own thread, at a lower CPU
   priority (:data:`TESTS_NICENESS`), so the build keeps both cores when it needs them.
   tests/bookcheck.py's ``suite_order`` puts them first.
3. **The notebooks' run from a wheel** (tests/wheelrun.py), when a collected test asks
   for it: its clean environment is made during the build, and its notebooks execute
   once the build's log says the chapters have (:func:`_tell_the_wheel_run`), while
   Sphinx writes the pages, with the compilation cache the build filled.
4. **The tests of the built book** wait for the build (the ``book`` fixture), then run;
   the browser checks of every page run in threads of their own beside them
   (tests/test_browser.py, ``background``). Last come the ``idle`` tests (Lighthouse),
   which measure speed and so run when nothing else does.

Once the book is built the tests use about one core, so the session then writes
:data:`IDLE_PHASE`; the Makefile waits for that file to start mypy at the lowest
priority on what is left. Only a session that builds the book writes it (``make unit``
and a session reusing a build through ``JAXGUIDE_TEST_BUILD`` write nothing); the
Makefile also writes it when pytest ends, so mypy always runs.
"""

from __future__ import annotations

import os
import threading

import pytest

import wheelrun
from bookbuild import BookBuild
from bookcheck import ROOT

#: How much lower the tests' own CPU priority is than the book build's (os.nice, from the
#: moment the build starts): the build, which every book test waits for, keeps both
#: cores, and the tests that need no book fill the time it leaves. Linux keeps a niceness
#: per thread: this lowers the thread that runs the tests and what it starts afterwards
#: (Chromium, the small builds of the tools' tests). The build's process and the thread of
#: the notebooks' run from a wheel, both started before, keep the normal priority, and
#: with it the wheel run's kernels. A thread cannot raise its priority again: the tests
#: keep the lower one to the end of the session (the ``idle`` tests run alone anyway).
TESTS_NICENESS = 5

#: Written once this session's book is built, when its ``idle`` tests start, or when it
#: ends: ``make test`` starts the type check then (Makefile, ``test``).
IDLE_PHASE = ROOT / "_build" / ".idle-phase"

_BUILD: dict[str, BookBuild] = {}


def needs(items: list[pytest.Item], fixture: str) -> bool:
    """Whether any of the collected ``items`` uses ``fixture``."""
    return any(fixture in getattr(item, "fixturenames", ()) for item in items)


def start(items: list[pytest.Item], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Steps 1 to 3 of the timeline, when the collected ``items`` need the book and no
    earlier build is reused (``JAXGUIDE_TEST_BUILD``): the build, the wheel run if asked
    for, and this thread's lower priority."""
    if os.environ.get("JAXGUIDE_TEST_BUILD") or not needs(items, "book"):
        return
    if needs(items, "wheel_notebooks"):
        wheelrun.start(tmp_path_factory.mktemp("wheel"), wait_for_book=True)
    build = BookBuild(tmp_path_factory.mktemp("book"))
    _BUILD["build"] = build
    os.nice(TESTS_NICENESS)
    threading.Thread(target=_tell_the_wheel_run, args=(build,), daemon=True).start()


def build() -> BookBuild | None:
    """The build this session started, if it started one."""
    return _BUILD.get("build")


def stop() -> None:
    """Stop this session's build, if it is still running."""
    if "build" in _BUILD:
        _BUILD["build"].stop()


def _tell_the_wheel_run(build: BookBuild) -> None:
    """Tell the wheel run (wheelrun.book_built) that the build's chapters have executed,
    as soon as its log says so, or the build has ended, or it has run out of time."""
    seconds: dict[str, float] = {}
    try:
        seconds = build.wait_for_execution()
    finally:
        wheelrun.book_built(build.cache, seconds)


def enter_idle_phase() -> None:
    """Write :data:`IDLE_PHASE`, if this session builds the book."""
    if "build" in _BUILD and not IDLE_PHASE.exists():
        IDLE_PHASE.parent.mkdir(parents=True, exist_ok=True)
        IDLE_PHASE.touch()
