"""The notebook checks used by the book tests must catch what they claim to catch."""

import json
import os
from types import SimpleNamespace

import bookcheck
from bookcheck import (
    Raised,
    errors,
    glued,
    images,
    load,
    page_text,
    problems,
    should_output,
    suite_order,
    unmarked_book_tests,
)


def code(src, outputs=(), tags=()):
    return {
        "cell_type": "code",
        "source": src,
        "outputs": list(outputs),
        "metadata": {"tags": list(tags)},
    }


def md(src):
    return {"cell_type": "markdown", "source": src, "metadata": {}}


def stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def error(ename):
    return {
        "output_type": "error",
        "ename": ename,
        "evalue": "boom",
        "traceback": [f"{ename}: boom"],
    }


def test_clean_notebook_has_no_problems():
    nb = {"cells": [code("print(1)", [stream("1\n")]), code("x = 1"), md("text")]}
    assert problems(nb) == []


def test_unexpected_error_is_reported():
    assert (
        "unexpected ZeroDivisionError"
        in problems({"cells": [code("1/0", [error("ZeroDivisionError")])]})[0]
    )


def test_tagged_cell_must_raise_the_error_the_prose_names():
    ok = {
        "cells": [
            code("x[0] = 1", [error("TypeError")], ["raises-exception"]),
            md("This `TypeError` ..."),
        ]
    }
    assert problems(ok) == []
    wrong = {
        "cells": [
            code("x[0] = 1", [error("TypeError")], ["raises-exception"]),
            md("A ValueError ..."),
        ]
    }
    assert "does not name" in problems(wrong)[0]
    silent = {"cells": [code("x = 1", [], ["raises-exception"]), md("TypeError")]}
    assert "raised nothing" in problems(silent)[0]


def test_warnings_and_stderr_are_reported():
    warn = {"cells": [code("f()", [stream("x.py:1: DeprecationWarning: old\n", "stderr")])]}
    found = problems(warn)
    assert any("DeprecationWarning" in p for p in found) and any("stderr" in p for p in found)
    user = {"cells": [code("print(w)", [stream("UserWarning: careful\n")])]}
    assert any("UserWarning" in p for p in problems(user))


def test_missing_output_is_reported():
    assert "no output" in problems({"cells": [code("print(1)")]})[0]
    assert "no output" in problems({"cells": [code("x = 2\nx")]})[0]


def test_should_output():
    assert should_output(code("print(1)"))
    assert should_output(code("plt.show()"))
    assert should_output(code("x"))
    assert not should_output(code("x = 1"))
    assert not should_output(code("glue('a', 1)"))
    assert not should_output(code("print(1)", tags=["remove-output"]))


def test_a_test_that_uses_the_book_without_its_marker_is_found():
    class Item:
        def __init__(self, nodeid, fixtures, marked):
            self.nodeid, self.fixturenames, self.marked = nodeid, fixtures, marked

        def get_closest_marker(self, name):
            return object() if self.marked and name == "book" else None

    items = [
        Item("t::unit", ["tmp_path"], False),
        Item("t::marked", ["book"], True),
        Item("t::unmarked", ["book", "tmp_path"], False),
        Item("t::wheel", ["wheel_notebooks"], False),
    ]
    assert unmarked_book_tests(items) == ["t::unmarked", "t::wheel"]


def test_a_built_page_is_parsed_once_per_build(tmp_path, monkeypatch):
    book = SimpleNamespace(html=tmp_path, executed=tmp_path)
    page, glue = tmp_path / "ch.html", tmp_path / "ch.glue.json"
    page.write_text('<p>one  two</p><div class="cell_output"><img src="a.png"></div>')
    glue.write_text('{"n": {"data": {"text/plain": "3"}}}')
    parsed = []
    import bs4

    class Counted(bs4.BeautifulSoup):
        def __init__(self, *args, **kwargs):
            parsed.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(bookcheck, "BeautifulSoup", Counted)
    assert page_text(book, "ch") == "one two" and page_text(book, "ch") == "one two"
    assert [img["src"] for img in images(book, "ch")] == ["a.png"]
    assert len(parsed) == 1
    assert glued(book, "ch") == {"n": 3} and load(glue) is load(glue)
    # A new build rewrites the files: they are read again.
    page.write_text("<p>three</p>")
    glue.write_text('{"n": {"data": {"text/plain": "4"}}}')
    for f in (page, glue):
        os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    assert page_text(book, "ch") == "three" and images(book, "ch") == []
    assert glued(book, "ch") == {"n": 4} and len(parsed) == 2


def test_errors_are_the_ones_the_notebook_shows(tmp_path):
    """errors() lists each error output with its cell; a notebook that raised nothing,
    or raised another error, gives a list a chapter test's assertion fails on."""
    book = SimpleNamespace(executed=tmp_path, notebook=lambda name: tmp_path / f"{name}.ipynb")
    nb = {
        "cells": [
            md("An error:"),
            code("x = 1", [stream("ok\n")]),
            code("x[0] = 1", [stream("before\n"), error("TypeError")], ["raises-exception"]),
            code("1/0", [error("ZeroDivisionError")], ["raises-exception"]),
        ]
    }
    (tmp_path / "ch.ipynb").write_text(json.dumps(nb))
    assert errors(book, "ch") == [
        Raised("TypeError", "boom", "x[0] = 1", 1),
        Raised("ZeroDivisionError", "boom", "1/0", 2),
    ]
    # A notebook that raised nothing gives nothing, also when a new build rewrites the
    # one read above.
    (tmp_path / "clean.ipynb").write_text(json.dumps({"cells": [code("x = 1")]}))
    assert errors(book, "clean") == []
    f = tmp_path / "ch.ipynb"
    f.write_text(json.dumps({"cells": [code("x[0] = 1", [stream("fixed\n")])]}))
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    assert errors(book, "ch") == []


def test_the_suite_runs_tests_without_the_book_first_wheel_readers_after_and_idle_last():
    """And the readers of the browser's background checks after the other book tests."""

    class Item:
        def __init__(self, nodeid, fixtures, idle=False):
            self.nodeid, self.fixturenames, self.idle = nodeid, fixtures, idle

        def get_closest_marker(self, name):
            return object() if self.idle and name == "idle" else None

    items = [
        Item("lighthouse", ["book"], idle=True),
        Item("reproducible", ["book", "wheel_notebooks"]),
        Item("page", ["book"]),
        Item("unit", ["tmp_path"]),
        Item("notebooks", ["wheel_notebooks"]),
        Item("all pages", ["background", "site", "book"]),
        Item("browser", ["site", "browser", "book"]),
    ]
    order = [i.nodeid for i in suite_order(items)]
    assert order == [
        "unit",
        "page",
        "browser",
        "all pages",
        "reproducible",
        "notebooks",
        "lighthouse",
    ]
