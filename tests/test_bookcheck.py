"""tests/bookcheck.py: the checks used by the book tests must catch what they claim to
catch, and its readers of a built book read what the build wrote."""

import json
import os
from types import SimpleNamespace

import bookcheck
from bookcheck import (
    Raised,
    code_colour_pages,
    errors,
    glued,
    images,
    load,
    page_text,
    problems,
    should_output,
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
    # A print inside a definition runs only when a later cell calls it.
    assert not should_output(code("def show(t):\n    print(t)"))
    assert should_output(code("def show(t):\n    print(t)\n\nshow(1)\nprint(2)"))


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


def test_code_colour_pages_cover_every_token_kind(tmp_path):
    code = '<div class="cell"><div class="cell_input"><div class="highlight-ipython3"><div class="highlight"><pre>{}</pre></div></div></div></div>'
    prose = '<div class="highlight-bash"><div class="highlight"><pre>{}</pre></div></div>'
    pages = {
        "a": code.format('<span class="k">def</span><span class="n">f</span>'),
        "b": code.format('<span class="k">if</span>') + prose.format('<span class="c">#</span>'),
        "c": code.format('<span class="n">x</span><span class="mi">1</span>'),
    }
    for name, body in pages.items():
        (tmp_path / f"{name}.html").write_text(f"<html><body>{body}</body></html>")
    # b shows the most pairings (its prose block among them); c adds the two it lacks.
    assert code_colour_pages(tmp_path) == ("b", "c")
    (tmp_path / "d.html").write_text(
        "<html><body>"
        + code.format('<span class="k">def</span><span class="mi">2</span>')
        + prose.format('<span class="c">#</span>')
        + "</body></html>"
    )
    code_colour_pages.cache_clear()
    assert code_colour_pages(tmp_path) == ("d", "a")
