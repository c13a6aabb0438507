"""Strictness of the build itself: a cell that raises unexpectedly must fail it."""

from __future__ import annotations

import pytest

from bookcheck import MYST_HEADER, assert_quiet, jupyter_book
from jaxguide_build.execution import longest_first

pytestmark = pytest.mark.builds

PAGE = (
    MYST_HEADER
    + """# Planted

```{code-cell} ipython3
:tags: [raises-exception]
raise KeyError("expected and tagged")
```

The cell above raises a `KeyError`, on purpose.

```{code-cell} ipython3
planted_value = 1 / 0
```
"""
)


GOOD = (
    MYST_HEADER
    + """# Fine

```{code-cell} ipython3
print("fine")
```
"""
)


@pytest.mark.parametrize("pages", [1, 2])
def test_planted_failing_cell_breaks_the_build(book_copy, pages):
    # Two pages go through the parallel pre-execution (tools/jaxguide_build/execution.py), one
    # page through the serial one: a failure in either must fail the build, and be
    # reported the same way.
    (book_copy / "book" / "planted.md").write_text(PAGE)
    (book_copy / "book" / "fine.md").write_text(GOOD)
    toc = (
        "format: jb-book\nroot: fine\nchapters:\n  - file: planted\n"
        if pages == 2
        else "format: jb-book\nroot: planted\n"
    )
    (book_copy / "_toc.yml").write_text(toc)
    proc = jupyter_book("build", "book/", cwd=book_copy)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "a page with an unexpected error was published"
    assert "ZeroDivisionError" in log
    assert "planted_value = 1 / 0" in log, "the log must show the failing cell"
    # The tagged cell before it raised as allowed: it is not what the build reports.
    assert "KeyError" not in log
    # Two chapters start longest first (by the bytes of their code), one is alone.
    by_size = sorted(
        ["fine", "planted"], key=lambda c: longest_first(book_copy / "book" / f"{c}.md")
    )
    ran = (
        f"executing 2 chapters in parallel, longest first: {', '.join(by_size)}"
        if pages == 2
        else "executing 1 chapter: planted"
    )
    assert ran in log
    # Reported from that run, chapter and error first, then the cell, and not executed
    # again; no internal traceback of the build tools, no request to report a bug.
    report = log[log.index("[jaxguide-build] chapter 'planted' failed") :]
    assert report.startswith(
        "[jaxguide-build] chapter 'planted' failed: ZeroDivisionError: division by zero\n"
        "  in the cell, at line "
    )
    assert "Executing notebook" not in log
    assert "Traceback (most recent call last)" not in log and "Please also report" not in log
    assert len(log.splitlines()) < 40, log
    assert_quiet(log)


CLAIMING = (
    MYST_HEADER
    + """# Claiming

```{code-cell} ipython3
:tags: [remove-cell]
import jaxguide

jaxguide.claim("planted_claim", 1, 1 == 2, "one is two")
```

One is {glue:text}`planted_claim`.
"""
)


def test_a_false_claim_stops_a_parallel_build(book_copy):
    """The book's central guarantee, end to end: in a build of two chapters (the
    parallel pre-execution, forked workers), a claim that does not hold raises
    ``ClaimError`` in its kernel (the build's kernels set ``JAXGUIDE_STRICT_CLAIMS``)
    and stops the build, where Colab would only print a line."""
    (book_copy / "book" / "claiming.md").write_text(CLAIMING)
    (book_copy / "book" / "fine.md").write_text(GOOD)
    (book_copy / "_toc.yml").write_text(
        "format: jb-book\nroot: fine\nchapters:\n  - file: claiming\n"
    )
    proc = jupyter_book("build", "book/", cwd=book_copy)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "a page with a false claim was published"
    assert "executing 2 chapters in parallel" in log
    assert "[jaxguide-build] chapter 'claiming' failed: ClaimError" in log, log
    assert "planted_claim" in log
