from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import pytest

# In-process tests run on 8 simulated CPU devices, like the multi-device chapters. This
# must happen before anything starts JAX's backends, so it is done on import.
jax.config.update("jax_num_cpu_devices", 8)

import wheelrun
from bookcheck import ROOT, suite_order, unmarked_book_tests
from jaxguide_build import execution, toc  # toc: the toc as Jupyter Book reads it


def chapters() -> list[str]:
    """Every page named in _toc.yml (the root and all chapters), in reading order."""
    return toc.pages()


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
def _no_shared_compilation_cache_across_processes(request, monkeypatch):
    """Processes a test starts at once do not share a persistent compilation cache
    (``make unit`` sets one): JAX writes its entries in place, and one process could
    read another's half-written entry. The build's kernels follow the same rule."""
    if "distributed" in request.node.path.stem:
        monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)


def pytest_collection_modifyitems(config, items):
    unmarked = unmarked_book_tests(items)
    if unmarked:
        raise pytest.UsageError(
            "these tests use the built book but are not marked @pytest.mark.book, so "
            "`make unit` would build the whole book: " + ", ".join(unmarked)
        )
    items[:] = suite_order(items)


#: How much lower than the book build's the tests' own CPU priority is while the build
#: runs (os.nice): the build, which every book test waits for, keeps both cores, and the
#: tests that need no book fill the time it leaves.
TESTS_NICENESS = 5


def _needs(items: list, fixture: str) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for item in items)


@pytest.fixture(scope="session", autouse=True)
def _book_build(tmp_path_factory, request):
    """Start the strict build of the whole book at the session's first test, in the
    background, when any collected test needs it; the tests that need no book run
    meanwhile (tests/bookcheck.py: suite_order), at a lower priority (TESTS_NICENESS).
    When the session also runs the notebooks from a wheel, their environment is made
    during the build and they execute once the build's execution has ended, while
    Sphinx writes the pages, with the compilation cache it filled (tests/wheelrun.py)."""
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


_BUILD: dict[str, BookBuild] = {}


def _tell_the_wheel_run(build: BookBuild) -> None:
    """Call wheelrun.book_built as soon as the build's log says its chapters have
    executed (or the build has ended), with each chapter's execution time."""
    while not (build.executed() or build.finished()):
        time.sleep(1)
    wheelrun.book_built(build.out / "_build" / ".jax_cache", build.chapter_seconds())


class BookBuild:
    """``jupyter-book build`` of the whole book into ``out``, strictly, from a clean output
    folder, in a process of its own; its output goes to ``out/build-output.log``.

    -W turns every Sphinx warning into an error, -n reports every broken reference,
    --keep-going lists them all before failing."""

    TIMEOUT = 1500  # seconds

    def __init__(self, out: Path):
        self.out = out
        self.output = out / "build-output.log"
        self.started = time.perf_counter()
        self.seconds = 0.0
        with self.output.open("w") as log:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).parent / "jupyter-book"), "build", "book/"]
                + ["--path-output", str(out), "-W", "-n", "--keep-going"],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def log(self) -> str:
        return self.output.read_text(errors="replace")

    def executed(self) -> bool:
        return execution.EXECUTED in self.log()

    def finished(self) -> bool:
        return self.proc.poll() is not None

    def chapter_seconds(self) -> dict[str, float]:
        """Each chapter's execution time, as the build's log gives it (empty if it does not)."""
        line = next((x for x in self.log().splitlines() if execution.EXECUTED in x), "")
        each = re.search(r"seconds each: ([^)]*)", line)
        pairs = [p.rsplit(" ", 1) for p in each.group(1).split(", ")] if each else []
        return {name: float(s) for name, s in pairs}

    def wait(self) -> int:
        """The build's exit status, once it has ended (killed after TIMEOUT seconds)."""
        left = self.TIMEOUT - (time.perf_counter() - self.started)
        try:
            code = self.proc.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the book build took more than {self.TIMEOUT} s", pytrace=False)
        if not self.seconds:
            self.seconds = time.perf_counter() - self.started
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def book(_book_build) -> BuiltBook:
    """The whole book, built once per test session, strictly, from a clean output folder
    (:class:`BookBuild`, started by ``_book_build`` at the session's first test). Set
    JAXGUIDE_TEST_BUILD to the output folder of an earlier test build to reuse it while
    working on the tests themselves."""
    reuse = os.environ.get("JAXGUIDE_TEST_BUILD")
    if reuse:
        return BuiltBook(Path(reuse), "", 0.0)
    build = _BUILD["build"]
    code = build.wait()
    log = build.log()
    if code != 0:
        tail = "\n".join(log.splitlines()[-80:])
        pytest.fail(f"strict book build failed (exit {code}):\n{tail}", pytrace=False)
    # Keep a copy of the log without its colours next to the build for anyone debugging.
    (build.out / "build.log").write_text(re.sub(r"\x1b\[[0-9;]*m", "", log))
    return BuiltBook(build.out, log, build.seconds)


@pytest.fixture
def book_copy(tmp_path) -> Path:
    """A throw-away copy of the book sources (config, toc, chapters, package)."""
    dst = tmp_path / "repo"
    dst.mkdir()
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dst / name)
    shutil.copytree(ROOT / "book", dst / "book", symlinks=True)
    shutil.copytree(ROOT / "tools", dst / "tools")
    return dst


@pytest.fixture(scope="session")
def wheel_notebooks(tmp_path_factory) -> wheelrun.WheelRun:
    """Every notebook in notebooks/, run once per session from a wheel in a clean
    environment (tests/wheelrun.py). When the book is built in the same session (the
    ``book`` fixture starts it), its environment is made during the build and its
    notebooks run after it, with the build's compilation cache."""
    wheelrun.start(tmp_path_factory.mktemp("wheel"))
    return wheelrun.result()


_SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter):
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
