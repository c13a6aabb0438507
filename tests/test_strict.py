"""Strictness of the build itself: a cell that raises unexpectedly must fail it."""

from __future__ import annotations

import pytest

from bookcheck import MYST_HEADER, jupyter_book

pytestmark = pytest.mark.book

PAGE = MYST_HEADER + """# Planted

```{code-cell} ipython3
:tags: [raises-exception]
raise KeyError("expected and tagged")
```

The cell above raises a `KeyError`, on purpose.

```{code-cell} ipython3
planted_value = 1 / 0
```
"""


GOOD = MYST_HEADER + """# Fine

```{code-cell} ipython3
print("fine")
```
"""


def test_planted_failing_cell_breaks_the_build(book_copy):
    # Two pages, so that they go through the parallel pre-execution first
    # (tools/jaxguide_fresh.py): a failure there must still fail the build.
    (book_copy / "book" / "planted.md").write_text(PAGE)
    (book_copy / "book" / "fine.md").write_text(GOOD)
    (book_copy / "_toc.yml").write_text("format: jb-book\nroot: fine\nchapters:\n  - file: planted\n")
    proc = jupyter_book("build", "book/", cwd=book_copy)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "a page with an unexpected error was published"
    assert "ZeroDivisionError" in log
    assert "planted_value = 1 / 0" in log, "the log must show the failing cell"
    # The tagged cell before it raised as allowed: it is not what the build reports.
    assert "KeyError" not in log
    assert "chapters in parallel: fine, planted" in log
    # Reported from the parallel run, chapter and error first, and not executed again.
    assert "[jaxguide-fresh] chapter 'planted' failed: ZeroDivisionError: division by zero" in log
    assert "Executing notebook" not in log
