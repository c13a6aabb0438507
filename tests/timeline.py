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
   :func:`suite_order` puts them first.
3. **The notebooks' run from a wheel** (tests/wheelrun.py), when a collected test asks
   for it: its clean environment is made during the build, and its notebooks execute
   once the build's log says the chapters have (:func:`_tell_the_wheel_run`), while
   Sphinx writes the pages, with the compilation cache the build filled.
4. **The tests of the built book** wait for the build (the ``book`` fixture), then run;
   the browser checks of every page run in threads of their own beside them
   (tests/test_browser.py, ``background``). Last come the ``idle`` tests (Lighthouse),
   which measure speed and so run when nothing else does.

The tests of the built book and the browser checks keep both cores busy; Lighthouse's
runs leave about one idle (each is mostly one Chromium waiting on its page), so the
session writes :data:`IDLE_PHASE` when the ``idle`` tests start, and the Makefile waits
for that file to start mypy at the lowest priority on what they leave. (Started when
the book was built, mypy's 28 s of CPU went to the browser checks' time: in an idle run
both cores were busy from the book's end to Lighthouse's start, and idle half of
Lighthouse's minute and a half.) Only a session that builds the book writes it (``make unit``
and a session reusing a build through ``JAXGUIDE_TEST_BUILD`` write nothing); the
Makefile also writes it when pytest ends, so mypy always runs.

The marker rules live here too (:data:`MARKED_FIXTURES`): a test that uses the built book
is marked ``book``, so ``make unit`` never builds it, and a test marked ``book`` or
``browser`` uses what its marker stands for, so ``make unit`` skips no test it could run.
"""

from __future__ import annotations

import os
import threading
from typing import Any

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

#: Written when this session's ``idle`` tests start, or when it ends: ``make test``
#: starts the type check then (Makefile, ``test``).
IDLE_PHASE = ROOT / "_build" / ".idle-phase"

#: The book build this session started (:func:`start`), if it started one.
_build: BookBuild | None = None


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
    global _build
    build = BookBuild(tmp_path_factory.mktemp("book"))
    _build = build
    os.nice(TESTS_NICENESS)
    threading.Thread(target=_tell_the_wheel_run, args=(build,), daemon=True).start()


def build() -> BookBuild | None:
    """The build this session started, if it started one."""
    return _build


def stop() -> None:
    """Stop this session's build, if it is still running."""
    if _build is not None:
        _build.stop()


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
    if _build is not None and not IDLE_PHASE.exists():
        IDLE_PHASE.parent.mkdir(parents=True, exist_ok=True)
        IDLE_PHASE.touch()


# --- The markers, and the suite's order ---

#: The fixtures each marker stands for (tests/conftest.py, tests/test_browser.py). A test
#: whose fixtures include one of them must carry its marker: ``make unit`` (-m "not book
#: and not browser and not builds") never builds the book or starts Chromium. Conversely,
#: a test marked ``book`` or ``browser`` must use one of them, or ``make unit`` skips a
#: test it could run. (Tests that build a small book of their own, from ``book_copy`` or
#: a folder of their own, are marked ``builds``: make unit skips them too. No fixture
#: tells those apart, so that marker is not checked.)
MARKED_FIXTURES = {"book": ("book", "wheel_notebooks"), "browser": ("browser",)}
#: Fixtures that build or execute the whole book.
BOOK_FIXTURES = MARKED_FIXTURES["book"]


def unmarked_book_tests(items: list) -> list[str]:
    """The ids of collected tests that use a book fixture without the ``book`` marker."""
    return [
        item.nodeid
        for item in items
        if set(BOOK_FIXTURES) & set(getattr(item, "fixturenames", ()))
        and item.get_closest_marker("book") is None
    ]


def needlessly_marked_tests(items: list) -> list[str]:
    """The ids of collected tests marked ``book`` or ``browser`` whose fixtures (their
    whole closure) include none of :data:`MARKED_FIXTURES`: ``make unit`` skips them for
    nothing."""
    fixtures = {f for names in MARKED_FIXTURES.values() for f in names}
    return [
        item.nodeid
        for item in items
        if any(item.get_closest_marker(m) is not None for m in MARKED_FIXTURES)
        and not fixtures & set(getattr(item, "fixturenames", ()))
    ]


def suite_order(items: list) -> list:
    """The collected tests in the order that keeps this 2-core machine's cores busy.

    The book builds in the background from the session's first test (:func:`start`),
    so the tests that need no book run first, beside it. Then the tests of the built book;
    the notebooks' run from a wheel (tests/wheelrun.py) executes its chapters in the
    background meanwhile, so the tests that read its result come after
    those. The browser checks that open every page run in a thread of their own from the
    first browser test on (tests/test_browser.py: ``background``), so the tests that read
    their results come after the other tests of the built book. The tests marked ``idle``
    (Lighthouse: its mobile simulation scales the main-thread time it observes, so a busy
    machine scores a fast page low) come last, when nothing else runs. Within each group
    the order is pytest's."""

    def group(item: Any) -> int:
        names = getattr(item, "fixturenames", ())
        if item.get_closest_marker("idle") is not None:
            return 4
        if "wheel_notebooks" in names:
            return 3
        if "background" in names:
            return 2
        return int(any(f in names for f in BOOK_FIXTURES))

    return sorted(items, key=group)
