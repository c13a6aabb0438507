from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import pytest

# In-process tests run on 8 simulated CPU devices, like the multi-device chapters. This
# must happen before anything starts JAX's backends, so it is done on import.
jax.config.update("jax_num_cpu_devices", 8)

from bookcheck import ROOT, jupyter_book
from jaxguide_build import execution, toc  # what the build caches; the toc as Jupyter Book reads it
from jaxguide_build.environment import uv


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
    # is done, with the compilation cache the build filled (see _run_notebooks_from_a_wheel).
    wheel_waits = any(
        "wheel_notebooks" in getattr(item, "fixturenames", ()) for item in request.session.items
    )
    if wheel_waits:
        _start_wheel_run(tmp_path_factory, wait_for_book=True)
    out = tmp_path_factory.mktemp("book")
    start = time.perf_counter()
    try:
        proc = jupyter_book("build", "book/", "--path-output", str(out), "-W", "-n", "--keep-going")
    finally:
        if wheel_waits:
            _BOOK_CACHE["folder"] = out / "_build" / ".jax_cache"
            _BOOK_BUILT.set()
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


RUNNER = """
import sys, nbformat, nbclient, jaxguide
assert "site-packages" in jaxguide.__file__, jaxguide.__file__
path, out = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
try:
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": sys.argv[3]}}).execute()
finally:
    nbformat.write(nb, out)
print("OK", path)
"""


@dataclass
class WheelRun:
    executed: Path  # the executed notebooks, one per chapter
    failures: list[str]  # "<chapter>: <end of its output>" for each notebook that failed


_WHEEL_RUN: dict[str, object] = {}
# Set when the session's book build has ended; _BOOK_CACHE["folder"] is then its JAX
# compilation cache (tools/jaxguide_build/execution.py: one folder per chapter).
_BOOK_BUILT = threading.Event()
_BOOK_CACHE: dict[str, Path] = {}


def _start_wheel_run(tmp_path_factory, wait_for_book: bool = False) -> None:
    """Start :func:`_run_notebooks_from_a_wheel` in a thread, once per session."""
    if "future" not in _WHEEL_RUN:
        import concurrent.futures

        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        _WHEEL_RUN["future"] = pool.submit(
            _run_notebooks_from_a_wheel, tmp_path_factory.mktemp("wheel"), wait_for_book
        )
        pool.shutdown(wait=False)


@pytest.fixture(scope="session")
def wheel_notebooks(tmp_path_factory) -> WheelRun:
    """Every notebook in notebooks/, run top to bottom, once per session, as a Colab user
    would: in a fresh virtual environment where jaxguide is installed from a wheel built
    from this repository (with the locked versions), from a folder holding nothing but
    the notebooks. A second, independent execution of every chapter: the book's outputs
    are compared with it (tests/test_reproducible.py). When the book is built in the
    same session (the ``book`` fixture starts it), its environment is made during the
    build and its notebooks run after it, with the build's compilation cache."""
    _start_wheel_run(tmp_path_factory)
    return _WHEEL_RUN["future"].result()


def _run_notebooks_from_a_wheel(tmp: Path, wait_for_book: bool = False) -> WheelRun:
    """Build the wheel, make the environment, then run every notebook, two at a time.

    With ``wait_for_book``, the notebooks start only when the session's book build has
    ended, and each gets JAX's persistent compilation cache in the folder the build
    filled for its chapter, as the build's own re-executions do: the same programs are
    not compiled twice, and nothing else changes (a cached program is the program XLA
    would compile). Notebooks whose code reads compilation itself (compile times,
    compile logs, ``jax.distributed``: ``SHOWS_COMPILATION`` in tools/jaxguide_build/execution.py)
    compile from scratch, as in the build. Executing after the build rather than beside
    it also keeps four kernels off this 2-core machine's two cores."""
    run = lambda *a, **kw: subprocess.run(a, capture_output=True, text=True, check=True, **kw)  # noqa: E731
    run(uv(), "build", "--wheel", "--out-dir", str(tmp / "dist"), cwd=ROOT)
    wheel = next((tmp / "dist").glob("jaxguide-*.whl"))
    constraints = tmp / "constraints.txt"
    constraints.write_text(
        run(
            uv(), "export", "--frozen", "--all-groups", "--no-hashes", "--no-emit-project", cwd=ROOT
        ).stdout
    )
    venv = tmp / "venv"
    run(uv(), "venv", "--quiet", "--python", "3.11", str(venv))
    python = venv / "bin" / "python"
    run(
        uv(),
        "pip",
        "install",
        "--quiet",
        "--python",
        str(python),
        "-c",
        str(constraints),
        str(wheel),
        "ipykernel",
        "nbclient",
    )
    work = tmp / "work"  # no repository paths: only the notebooks
    shutil.copytree(ROOT / "notebooks", work)
    executed = tmp / "executed"
    executed.mkdir()
    (tmp / "runner.py").write_text(RUNNER)
    logs = tmp / "logs"  # files, not pipes: a full pipe would stall a chatty kernel
    logs.mkdir()
    procs: dict[str, subprocess.Popen] = {}
    handles = {}
    # Longest first, two at a time (this machine has 2 cores): the last to start is short.
    pending = sorted(work.glob("*.ipynb"), key=lambda p: -p.stat().st_size)
    failures = []
    # Claims are strict here as in the build: one that fails on this run stops its notebook.
    base_env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp),
        "JAXGUIDE_STRICT_CLAIMS": "1",
    }
    cache = None
    if wait_for_book:
        _BOOK_BUILT.wait()
        cache = _BOOK_CACHE.get("folder")

    def env_for(nb: Path) -> dict[str, str]:
        code = "\n".join(
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in json.loads(nb.read_text())["cells"]
            if c["cell_type"] == "code"
        )
        if cache is None or execution.SHOWS_COMPILATION.search(code):
            return base_env
        return {**base_env, **execution.compilation_cache_env(cache / nb.stem)}

    while pending or procs:
        while pending and len(procs) < 2:
            nb = pending.pop(0)
            handles[nb.stem] = (logs / f"{nb.stem}.log").open("w")
            procs[nb.stem] = subprocess.Popen(
                [str(python), str(tmp / "runner.py"), str(nb), str(executed / nb.name), str(work)],
                cwd=work,
                stdout=handles[nb.stem],
                stderr=subprocess.STDOUT,
                env=env_for(nb),
            )
        while True:  # wait for whichever finishes first
            done = [name for name, p in procs.items() if p.poll() is not None]
            if done:
                break
            time.sleep(0.2)
        for name in done:
            proc = procs.pop(name)
            handles.pop(name).close()
            out = (logs / f"{name}.log").read_text(errors="replace")
            if proc.returncode != 0:
                failures.append(f"{name}:\n{textwrap.shorten(out[-3000:], 3000)}")
    return WheelRun(executed, failures)


_SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter):
    """Say what the browser suite measured, when it ran in this session."""
    report = ROOT / "_build" / "test-output" / "browser" / "report.json"
    if not report.is_file() or report.stat().st_mtime < _SESSION_START:
        return
    import json

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
