"""The test session's fixtures and hooks.

Importing this file sets up JAX for the in-process tests (8 simulated CPU devices,
quick compilation: :func:`_compile_quickly`). A session that collects a test of the built
book starts the strict build of the whole book in the background at its first test, and
the notebooks' run from a wheel if a test asks for it; tests/timeline.py draws that
timeline and holds its machinery. The fixtures here hand out the results: ``book`` (the
built book, waited for), ``wheel_notebooks``, ``book_copy``. The hooks check the
markers (a test that uses the built book must be marked ``book``, and one marked
``book`` must use it), order the tests (both rules are tests/timeline.py's) and summarise
the browser checks.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
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
    compiling small programs (bench/reports/build-times-2026-11.md has what these
    options save); none of them times compiled code against a figure, and
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

import timeline
import wheelrun
from bookcheck import ROOT, BuiltBook
from jaxguide_build.outputs import ANSI


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
    """Check the markers (tests/timeline.py: ``MARKED_FIXTURES``), then put the tests in
    the timeline's order."""
    unmarked = timeline.unmarked_book_tests(items)
    if unmarked:
        raise pytest.UsageError(
            "these tests use the built book but are not marked @pytest.mark.book, so "
            "`make unit` would build the whole book: " + ", ".join(unmarked)
        )
    needless = timeline.needlessly_marked_tests(items)
    if needless:
        raise pytest.UsageError(
            "these tests are marked book or browser but use neither the built book nor "
            "the browser, so `make unit` skips them for nothing: " + ", ".join(needless)
        )
    items[:] = timeline.suite_order(items)


@pytest.fixture(scope="session", autouse=True)
def _book_build(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[None]:
    """At the session's first test, start what the session needs in the background: the
    strict build of the whole book and the notebooks' run from a wheel
    (tests/timeline.py has the timeline)."""
    timeline.start(request.session.items, tmp_path_factory)
    yield
    timeline.stop()


@pytest.fixture(scope="session")
def book(_book_build: None) -> BuiltBook:
    """The whole book, built once per test session, strictly, from a clean output folder
    (:class:`BookBuild`, started by ``_book_build`` at the session's first test). Set
    JAXGUIDE_TEST_BUILD to the output folder of an earlier test build to reuse it while
    working on the tests themselves."""
    reuse = os.environ.get("JAXGUIDE_TEST_BUILD")
    if reuse:
        return BuiltBook(Path(reuse), "", 0.0)
    build = timeline.build()
    assert build is not None, "the book fixture was used but no build was started"
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


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("idle") is not None:
        timeline.enter_idle_phase()


def pytest_sessionfinish(session: pytest.Session) -> None:
    timeline.enter_idle_phase()


def pytest_unconfigure(config: pytest.Config) -> None:
    # pytest ends with a full garbage collection (its unraisable-exception check); over
    # what the session still holds (parsed pages, executed notebooks, JAX's caches) that
    # took 6 to 14 s. What is still alive at this point is kept out of its sight.
    gc.freeze()


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
