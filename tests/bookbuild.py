"""The strict build of the whole book that a test session runs in the background.

tests/timeline.py starts a :class:`BookBuild` at the session's first test (``start``,
which tests/conftest.py's ``_book_build`` fixture calls), lets the tests that need no
book run beside it, and hands the build to the ``book`` fixture, which waits for it. The build's log says when its chapters have executed
(tools/jaxguide_build/execution.py: :func:`~jaxguide_build.execution.executed_line`);
:func:`chapter_seconds` reads each chapter's time back from that line, for the notebooks'
run from a wheel (tests/wheelrun.py), which starts then.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from bookcheck import BUILD_TIMEOUT, ROOT
from jaxguide_build import execution, jupyter_kernels

_EACH = re.compile(r"seconds each: ([^)]*)\)")


def chapter_seconds(log: str) -> dict[str, float]:
    """Each chapter's execution time in seconds, from the line of the build's ``log``
    that says its chapters have executed; empty if there is no such line.

    >>> chapter_seconds("[jaxguide-build] executed 2 chapters in 9.0 s "
    ...                 "(seconds each: numpy 5.5, random 3.1)")
    {'numpy': 5.5, 'random': 3.1}
    """
    line = next((x for x in log.splitlines() if execution.EXECUTED in x), "")
    each = _EACH.search(line)
    pairs = [p.rsplit(" ", 1) for p in each.group(1).split(", ")] if each else []
    return {name: float(seconds) for name, seconds in pairs}


class BookBuild:
    """``jupyter-book build`` of the whole book into ``out``, strictly, from a clean output
    folder, in a process of its own, started at once; its output (stdout and stderr)
    goes to ``out/build-output.log``.

    -W turns every Sphinx warning into an error, -n reports every broken reference,
    --keep-going lists them all before failing."""

    TIMEOUT = BUILD_TIMEOUT  # seconds: wait() kills a build that takes longer

    def __init__(self, out: Path) -> None:
        self.out = out
        self.output = out / "build-output.log"
        self.started = time.perf_counter()
        self.seconds = 0.0  # its wall time, once wait() has seen it end
        with self.output.open("w") as log:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).parent / "jupyter-book"), "build", "book/"]
                + ["--path-output", str(out), "-W", "-n", "--keep-going"],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def cache(self) -> Path:
        """The build's JAX compilation cache (one folder per chapter)."""
        return self.out / "_build" / jupyter_kernels.CACHE_FOLDER

    def log(self) -> str:
        return self.output.read_text(errors="replace")

    def executed(self) -> bool:
        """Whether the log says the chapters have executed."""
        return execution.EXECUTED in self.log()

    def finished(self) -> bool:
        return self.proc.poll() is not None

    def wait_for_execution(self, poll: float = 1.0) -> dict[str, float]:
        """Wait until the chapters have executed or the build has ended (or TIMEOUT has
        passed); each chapter's execution time (:func:`chapter_seconds`)."""
        while not (self.executed() or self.finished()):
            if time.perf_counter() - self.started > self.TIMEOUT:
                break
            time.sleep(poll)
        return chapter_seconds(self.log())

    def wait(self) -> int:
        """The build's exit status, once it has ended; raises TimeoutError (after killing
        it) if it runs past TIMEOUT seconds from its start."""
        left = self.TIMEOUT - (time.perf_counter() - self.started)
        try:
            code = self.proc.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            self.stop()
            raise TimeoutError(f"the book build took more than {self.TIMEOUT} s") from None
        if not self.seconds:
            self.seconds = time.perf_counter() - self.started
        return code

    def stop(self) -> None:
        """Kill the build if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
