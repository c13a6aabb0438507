from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jax
import pytest
from _pytest.terminal import TerminalReporter

# In-process tests run on 8 simulated CPU devices, like the multi-device chapters. This
# must happen before anything starts JAX's backends, so it is done on import.
jax.config.update("jax_num_cpu_devices", 8)


#: XLA options for the in-process tests' programs (:func:`_compile_quickly`).
QUICK_COMPILE = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"


def _compile_quickly() -> None:
    """XLA compiles this process's programs with :data:`QUICK_COMPILE`: at backend
    optimisation level 0 (the same optimised HLO, LLVM's passes skipped; about a third
    quicker to compile and slower to run: book/performance.md, "Compiling faster on the
    CPU, running slower", measures both), and with XLA:CPU's older loop emitters in
    place of its MLIR fusion emitters (its default), which compile a small program in
    about half the time but fuse some operations differently (a scatter, for one), so
    the compiled text differs from a reader's. Most of the in-process tests' time is
    compiling small programs (CONTRIBUTING.md, "The tests", has what these options
    save); none of them times compiled code against a figure, and
    all of them pass with these options and without. The chapters, built with XLA's
    defaults (or a level they state on the page), are where the book reads what a
    reader's compiler does. XLA reads ``XLA_FLAGS`` once, when JAX starts its backends,
    so the variable is set just for that moment: the processes the tests start (the
    book build, the notebooks' run, ``jax.distributed`` worlds) do not inherit it, and
    compile as a reader's do."""
    before = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = f"{before or ''} {QUICK_COMPILE}".strip()
    try:
        jax.devices()
    finally:
        if before is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = before


_compile_quickly()

import wheelrun
from bookbuild import BookBuild
from bookcheck import ROOT, suite_order, unmarked_book_tests


class BuiltBook:
    def __init__(self, out: Path, log: str, seconds: float):
        self.out = out
        self.html = out / "_build" / "html"
        self.executed = out / "_build" / "jupyter_execute"
        self.log = log
        self.seconds = seconds

    def page(self, name: str) -> str:
        return (self.html / f"{name}.html").read_text()

    def notebook(self, name: str) -> Path:
        return self.executed / f"{name}.ipynb"


@pytest.fixture(autouse=True)
def _no_shared_compilation_cache_across_processes(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Processes a test starts at once do not share a persistent compilation cache
    (``make unit`` sets one): JAX writes its entries in place, and one process could
    read another's half-written entry. The build's kernels follow the same rule."""
    if "distributed" in request.node.path.stem:
        monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = unmarked_book_tests(items)
    if unmarked:
        raise pytest.UsageError(
            "these tests use the built book but are not marked @pytest.mark.book, so "
            "`make unit` would build the whole book: " + ", ".join(unmarked)
        )
    items[:] = suite_order(items)


#: How much lower the tests' own CPU priority is than the book build's (os.nice, from the
#: moment the build starts): the build, which every book test waits for, keeps both
#: cores, and the tests that need no book fill the time it leaves. Linux keeps a niceness
#: per thread: this lowers the thread that runs the tests and what it starts afterwards
#: (Chromium, the small builds of the tools' tests). The build's process and the thread of
#: the notebooks' run from a wheel, both started before, keep the normal priority, and
#: with it the wheel run's kernels. A thread cannot raise its priority again: the tests
#: keep the lower one to the end of the session (the ``idle`` tests run alone anyway).
TESTS_NICENESS = 5


def _needs(items: list[pytest.Item], fixture: str) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for item in items)


_BUILD: dict[str, BookBuild] = {}


@pytest.fixture(scope="session", autouse=True)
def _book_build(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[None]:
    """Start the strict build of the whole book (:class:`bookbuild.BookBuild`) at the
    session's first test, in the background, when any collected test needs it; the
    tests that need no book run meanwhile (tests/bookcheck.py: suite_order), at a lower
    priority (TESTS_NICENESS). When the session also runs the notebooks from a wheel,
    their environment is made during the build and they execute once the build's
    chapters have, while Sphinx writes the pages, with the compilation cache it filled
    (tests/wheelrun.py)."""
    items = request.session.items
    if os.environ.get("JAXGUIDE_TEST_BUILD") or not _needs(items, "book"):
        yield
        return
    if _needs(items, "wheel_notebooks"):
        wheelrun.start(tmp_path_factory.mktemp("wheel"), wait_for_book=True)
    build = BookBuild(tmp_path_factory.mktemp("book"))
    _BUILD["build"] = build
    os.nice(TESTS_NICENESS)
    threading.Thread(target=_tell_the_wheel_run, args=(build,), daemon=True).start()
    yield
    build.stop()


def _tell_the_wheel_run(build: BookBuild) -> None:
    """Tell the wheel run (wheelrun.book_built) that the build's chapters have executed,
    as soon as its log says so, or the build has ended, or it has run out of time."""
    seconds: dict[str, float] = {}
    try:
        seconds = build.wait_for_execution()
    finally:
        wheelrun.book_built(build.cache, seconds)


@pytest.fixture(scope="session")
def book(_book_build: None) -> BuiltBook:
    """The whole book, built once per test session, strictly, from a clean output folder
    (:class:`BookBuild`, started by ``_book_build`` at the session's first test). Set
    JAXGUIDE_TEST_BUILD to the output folder of an earlier test build to reuse it while
    working on the tests themselves."""
    reuse = os.environ.get("JAXGUIDE_TEST_BUILD")
    if reuse:
        return BuiltBook(Path(reuse), "", 0.0)
    build = _BUILD["build"]
    try:
        code = build.wait()
    except TimeoutError as err:
        pytest.fail(str(err), pytrace=False)
    log = build.log()
    if code != 0:
        tail = "\n".join(log.splitlines()[-80:])
        pytest.fail(f"strict book build failed (exit {code}):\n{tail}", pytrace=False)
    # Keep a copy of the log without its colours next to the build for anyone debugging.
    (build.out / "build.log").write_text(ANSI.sub("", log))
    _enter_idle_phase()
    return BuiltBook(build.out, log, build.seconds)


@pytest.fixture
def book_copy(tmp_path: Path) -> Path:
    """A throw-away copy of the book sources (config, toc, chapters, package)."""
    dst = tmp_path / "repo"
    dst.mkdir()
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dst / name)
    shutil.copytree(ROOT / "book", dst / "book", symlinks=True)
    shutil.copytree(ROOT / "tools", dst / "tools")
    return dst


@pytest.fixture(scope="session")
def wheel_notebooks(tmp_path_factory: pytest.TempPathFactory) -> wheelrun.WheelRun:
    """Every notebook in notebooks/, run once per session from a wheel in a clean
    environment (tests/wheelrun.py). When the book is built in the same session (the
    ``_book_build`` fixture starts it), its environment is made during the build and
    its notebooks run once the build's chapters have executed, with the build's
    compilation cache."""
    wheelrun.start(tmp_path_factory.mktemp("wheel"))
    return wheelrun.result()


#: Written once the session's book is built (from then on the tests leave part of the
#: machine idle: the browser checks and Lighthouse use about one core), when the
#: ``idle`` tests start, or when the session ends: ``make test`` starts the type check
#: then, at the lowest priority, on what they leave free (Makefile, ``test``).
IDLE_PHASE = ROOT / "_build" / ".idle-phase"


def _enter_idle_phase() -> None:
    IDLE_PHASE.parent.mkdir(parents=True, exist_ok=True)
    IDLE_PHASE.touch()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("idle") is not None and not IDLE_PHASE.exists():
        _enter_idle_phase()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _enter_idle_phase()


_SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    """Say what the browser suite measured, when it ran in this session."""
    report = ROOT / "_build" / "test-output" / "browser" / "report.json"
    if not report.is_file() or report.stat().st_mtime < _SESSION_START:
        return

    # Time spent in the browser tests themselves (their "call" phases): the book build
    # they share with the other book tests is not counted.
    calls = [
        r
        for key in ("passed", "failed")
        for r in terminalreporter.stats.get(key, [])
        if getattr(r, "when", "") == "call" and "browser" in r.keywords
    ]
    data = json.loads(report.read_text())
    data["browser_tests"] = len(calls)
    data["browser_tests_seconds"] = round(sum(r.duration for r in calls), 1)
    report.write_text(json.dumps(data, indent=2))
    terminalreporter.write_sep("-", "browser checks")
    heaviest = (
        f"heaviest chapter page: {data['heaviest_chapter']}.html, {data['heaviest_chapter_bytes']:,} bytes "
        "transferred (uncompressed, no cache)"
        if data.get("heaviest_chapter")
        else "no chapter page weighed"
    )
    terminalreporter.write_line(
        f"{data['browser_tests']} browser tests in {data['browser_tests_seconds']} s, "
        f"{data['pages_checked']} pages opened in Chromium; {heaviest}; "
        f"screenshots and report.json in {report.parent.relative_to(ROOT)}/"
    )
