"""The test session's background book build (tests/bookbuild.py) and what it tells the
notebooks' run from a wheel."""

from __future__ import annotations

from bookbuild import chapter_seconds
from jaxguide_build import execution


class _Record:
    def __init__(self, seconds: float) -> None:
        self.data = {"execution_seconds": seconds}


class _Cache:
    """A jupyter-cache stand-in: the cached record of two chapters, none for a third."""

    times = {"/b/numpy.md": 5.54, "/b/random.md": 31.0}

    def get_cached_project_nb(self, uri: str) -> _Record | None:
        return _Record(self.times[uri]) if uri in self.times else None


def test_the_build_log_says_when_chapters_executed_and_each_ones_time():
    uris = ["/b/numpy.md", "/b/random.md", "/b/failed.md"]
    line = execution.executed_line(_Cache(), uris, 36.94)
    assert line == (
        "[jaxguide-build] executed 3 chapters in 36.9 s (seconds each: random 31.0, numpy 5.5)"
    )
    # What the wheel run reads back from the log it is in, whatever surrounds it.
    log = f"updating environment: executing\n{line}\nreading sources... [ 4%] numpy\n"
    assert chapter_seconds(log) == {"random": 31.0, "numpy": 5.5}


def test_no_execution_line_means_no_times():
    assert chapter_seconds("reading sources... [ 4%] numpy\nbuild succeeded.") == {}
    assert chapter_seconds(execution.executed_line(_Cache(), ["/b/x.md"], 1.0)) == {}
