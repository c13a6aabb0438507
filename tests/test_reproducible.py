"""Two independent executions of a chapter show identical outputs, apart from cells
tagged `measured` (timings) and build-only cells: the book's build, and the chapter's
Colab notebook run from a wheel in a clean environment (tests/conftest.py). The two run
in different folders, processes and environments, so a chapter whose outputs depend on
a path, a clock, leftover files or unseeded randomness fails here. ``make test``
compares the sample of chapters tests/wheelrun.py runs from the wheel;
``make notebooks-check`` (JAXGUIDE_WHEEL_RUN=all) compares every chapter."""

from __future__ import annotations

import pytest

import wheelrun
from bookcheck import comparable_outputs, executed_chapters, load, output_differences


@pytest.mark.book
@pytest.mark.parametrize("chapter", wheelrun.chosen(executed_chapters()))
def test_book_and_notebook_executions_have_identical_outputs(book, wheel_notebooks, chapter):
    other = wheel_notebooks.executed / f"{chapter}.ipynb"
    assert other.is_file(), f"the notebook of {chapter} did not run"
    assert output_differences(load(book.notebook(chapter)), load(other)) == []


def cell(src, outputs, tags=()):
    return {
        "cell_type": "code",
        "source": src,
        "metadata": {"tags": list(tags)},
        "outputs": outputs,
    }


def stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def test_comparison_ignores_only_what_it_should():
    def nb(*cells):
        return {"cells": list(cells)}

    a = nb(cell("print(1)", [stream("1\n")]), cell("t()", [stream("1.2 ms")], ["measured"]))
    b = nb(
        cell("setup()", []),
        cell("print(1)", [stream("1\n")]),
        cell("t()", [stream("3 ms")], ["measured"]),
    )
    assert output_differences(a, b) == []  # measured cells and cells only one side has
    # A stream split into chunks differently is the same text; different text is not.
    assert (
        output_differences(
            nb(cell("p()", [stream("ab\n")])), nb(cell("p()", [stream("a"), stream("b\n")]))
        )
        == []
    )
    assert output_differences(nb(cell("p()", [stream("a\n")])), nb(cell("p()", [stream("b\n")])))
    # The kernel's file name for a cell differs between runs; anything else in an error does not.
    err = lambda v: {"output_type": "error", "ename": "E", "evalue": v, "traceback": []}  # noqa: E731
    assert (
        output_differences(
            nb(cell("f()", [err("at /tmp/ipykernel_12/345.py:1")])),
            nb(cell("f()", [err("at /tmp/ipykernel_99/345.py:1")])),
        )
        == []
    )
    assert output_differences(
        nb(cell("f()", [err("at /tmp/a/x.py")])), nb(cell("f()", [err("at /tmp/b/x.py")]))
    )
    png = lambda data: {"output_type": "display_data", "metadata": {}, "data": {"image/png": data}}  # noqa: E731
    assert output_differences(nb(cell("plot()", [png("aa")])), nb(cell("plot()", [png("bb")])))
    glue = {
        "output_type": "display_data",
        "metadata": {"scrapbook": {"name": "k"}},
        "data": {"text/plain": "1"},
    }
    assert output_differences(nb(cell("glue()", [glue])), nb(cell("glue()", []))) == []
    # A cell missing from the other execution is reported.
    assert output_differences(nb(cell("x()", []), cell("y()", [])), nb(cell("x()", [])))
    assert comparable_outputs(nb(cell("box()", [stream("v")], ["remove-cell"]))) == []
    # A solution the notebook hides behind a Colab form title is the same cell.
    hidden = nb(
        cell('# @title Solution to exercise 1 { display-mode: "form" }\nx()', [stream("1")])
    )
    assert output_differences(nb(cell("x()", [stream("1")])), hidden) == []
