from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import jax
import pytest

# In-process tests run on 8 simulated CPU devices, like the multi-device chapters. This
# must happen before anything starts JAX's backends, so it is done on import.
jax.config.update("jax_num_cpu_devices", 8)

import wheelrun
from bookcheck import ROOT, jupyter_book, suite_order, unmarked_book_tests
from jaxguide_build import toc  # the toc as Jupyter Book reads it


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


@pytest.fixture(scope="session")
def book(tmp_path_factory, request) -> BuiltBook:
    """The whole book, built once per test session, strictly, from a clean output folder.

    -W turns every Sphinx warning into an error, -n reports every broken reference,
    --keep-going lists them all before failing. Set JAXGUIDE_TEST_BUILD to the output
    folder of an earlier test build to reuse it while working on the tests themselves.
    """
    reuse = os.environ.get("JAXGUIDE_TEST_BUILD")
    if reuse:
        return BuiltBook(Path(reuse), "", 0.0)
    # The notebooks' run from a wheel (another execution of every chapter) prepares its
    # environment now, while the book builds, and executes the notebooks once the build
    # is done, with the compilation cache the build filled (tests/wheelrun.py).
    wheel_waits = any(
        "wheel_notebooks" in getattr(item, "fixturenames", ()) for item in request.session.items
    )
    if wheel_waits:
        wheelrun.start(tmp_path_factory.mktemp("wheel"), wait_for_book=True)
    out = tmp_path_factory.mktemp("book")
    start = time.perf_counter()
    try:
        proc = jupyter_book("build", "book/", "--path-output", str(out), "-W", "-n", "--keep-going")
    finally:
        if wheel_waits:
            wheelrun.book_built(out / "_build" / ".jax_cache")
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        tail = "\n".join(log.splitlines()[-80:])
        pytest.fail(f"strict book build failed (exit {proc.returncode}):\n{tail}", pytrace=False)
    # Keep a copy of the log next to the build for anyone debugging a failure.
    (out / "build.log").write_text(re.sub(r"\x1b\[[0-9;]*m", "", log))
    return BuiltBook(out, log, seconds)


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
