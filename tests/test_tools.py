"""Build tooling in tools/jaxguide_build/: the staleness fingerprint, the patches of
third-party libraries (the exact stream merge, the figure-number shortcut, one rule for
untested releases), the files kept between builds, the build lock, the toc reader and
the site's page memo."""

import os
import re
import sys
import types
from pathlib import Path

import pytest

from jaxguide_build import execution, jupyter_kernels, patches, staleness
from jaxguide_build.environment import installed_version

CHAPTER = """
```{code-cell} ipython3
:tags: [remove-cell]
%xmode Minimal
```

```{code-cell} ipython3
import numpy as np
from jaxguide.sharding import show
from jaxguide import data
x = jaxguide.timing.table
```
"""


def test_imports_found_in_code_cells():
    top, ours = staleness.imports_of(staleness.code_of(CHAPTER))
    assert {"numpy", "jaxguide"} <= top
    assert {"sharding", "data", "timing"} <= ours


def test_closure_follows_the_package_init():
    graph = staleness.PackageGraph()
    closure = graph.closure({"gradcheck"})
    assert {"", "gradcheck", "devices", "timing"} <= closure  # __init__ imports devices, timing
    assert "sharding" not in closure
    assert graph.closure(set()) == set()


def test_fingerprint_changes_with_a_package_version():
    graph = staleness.PackageGraph()
    a = staleness.fingerprint(CHAPTER, graph, version=lambda d: "1.0")
    b = staleness.fingerprint(CHAPTER, graph, version=lambda d: "2.0" if d == "jax" else "1.0")
    assert a["digest"] != b["digest"]
    assert "jax" in a["packages"] and "numpy" in a["packages"]
    assert "package versions changed: jax" in staleness._explain(a, b)
    assert staleness.fingerprint(CHAPTER, graph, version=lambda d: "1.0")["digest"] == a["digest"]


def test_stream_chunks_merge_exactly():
    import nbformat

    chunks = [
        nbformat.v4.new_output("stream", name="stdout", text=t)
        for t in ("cpu:2", " {CpuDevice(id=2)} cpu:2\n", "next line\n")
    ]
    image = nbformat.v4.new_output("display_data", data={"text/plain": "fig"})
    merged = patches.coalesce_streams(chunks[:1] + [image] + chunks[1:])
    assert [o["output_type"] for o in merged] == ["stream", "display_data"]
    assert merged[0]["text"] == "cpu:2 {CpuDevice(id=2)} cpu:2\nnext line\n"
    assert chunks[0]["text"] == "cpu:2"  # the notebook's own outputs are left untouched


# --- what the staleness check reads from a chapter ---------------------------------


def chapter(*cells: str) -> str:
    return "\n".join(f"```{{code-cell}} ipython3\n{c}\n```\n" for c in cells)


def test_cells_are_read_one_by_one_and_options_and_magics_are_skipped():
    src = chapter(
        "---\ntags: [remove-cell]\nmystnb:\n  image:\n    alt: a figure\n---\nfrom jaxguide import rng",
        "%%writefile prog.py\nimport jaxguide.distributed",
        "%time x = 1",
    )
    top, ours = staleness.imports_of(staleness.code_of(src))
    assert ours == {"", "rng", "distributed"} and staleness.ALL not in ours  # "": jaxguide itself


@pytest.mark.parametrize("cell", ["%%bash\necho hi", "x?", "---\ntags: [a]\n---\nprint(("])
def test_a_cell_that_is_not_python_depends_on_all_of_jaxguide(cell):
    graph = staleness.PackageGraph()
    src = chapter("from jaxguide import rng", cell)
    _, ours = staleness.imports_of(staleness.code_of(src))
    assert staleness.ALL in ours
    assert graph.closure(ours) == set(graph.files)
    fp = staleness.fingerprint(src, graph)
    assert set(fp["jaxguide"]) == {m or "__init__" for m in graph.files}


def test_files_next_to_a_chapter_that_it_names_are_fingerprinted(tmp_path):
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    (tmp_path / "unused.txt").write_text("not read\n")
    (tmp_path / "other.md").write_text("# another chapter\n")
    graph = staleness.PackageGraph()
    src = chapter('import numpy as np\nnp.loadtxt("table.csv")', "import helper")
    fp = staleness.fingerprint(src, graph, folder=tmp_path)
    assert set(fp["helpers"]) == {"table.csv", "helper.py"}
    (tmp_path / "table.csv").write_text("a,b\n1,3\n")
    changed = staleness.fingerprint(src, graph, folder=tmp_path)
    assert changed["digest"] != fp["digest"]
    assert "files it reads changed: table.csv" in staleness._explain(fp, changed)


# --- files kept between builds --------------------------------------------------------


@pytest.mark.parametrize("text", ["", "{not json", "[1, 2]", '{"a": 1'])
def test_an_unreadable_fingerprint_store_counts_as_empty(tmp_path, text):
    store = tmp_path / "jaxguide-fingerprints.json"
    store.write_text(text)
    assert staleness.read_store(store) == {}
    assert staleness.read_store(tmp_path / "missing.json") == {}
    store.write_text('{"numpy": {"digest": "x"}}')
    assert staleness.read_store(store) == {"numpy": {"digest": "x"}}


def test_write_atomic_leaves_no_partial_file(tmp_path, monkeypatch):
    import os

    from jaxguide_build import cache

    target = tmp_path / "store.json"
    cache.write_atomic(target, b"old")

    def crash(src, dst):
        raise KeyboardInterrupt  # interrupted between writing and renaming

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        cache.write_atomic(target, b"new")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["store.json"]


def test_a_damaged_cache_entry_is_never_used(tmp_path):
    from jaxguide_build.cache import ContentCache

    cache = ContentCache(tmp_path, ".png")
    assert cache.get("k") is None
    cache.put("k", b"\x89PNG full image")
    assert cache.get("k") == b"\x89PNG full image"
    (entry,) = tmp_path.glob("k.*.png")
    entry.write_bytes(b"\x89PNG fu")  # truncated by an interrupted build
    assert cache.get("k") is None and not entry.exists()


def test_failure_report_names_chapter_error_and_cell():
    tb = (
        "An error occurred while executing the following cell:\n------------------\n"
        "x = 1\nprint(1 / 0)\n------------------\n\n\x1b[31mZeroDivisionError\x1b[39m Traceback\n"
        "Cell In[3], line 2\n\x1b[31mZeroDivisionError\x1b[39m: division by zero\n"
    )
    report = execution.failure_report("numpy", tb)
    head, where, *cell = report.splitlines()
    assert head == "[jaxguide-build] chapter 'numpy' failed: ZeroDivisionError: division by zero"
    assert where == "  in the cell:" and cell == ["    x = 1", "    print(1 / 0)"]


def test_patches_refuse_an_untested_release():
    """One rule for every patch: the release it was tested on goes, another stops the
    build with a message that says what to re-check."""
    from sphinx.errors import ExtensionError

    patches.check("myst-nb stream merge", "1.4.0")
    with pytest.raises(ExtensionError, match=r"myst-nb 1\.5\.0 is installed\. Check whether"):
        patches.check("myst-nb stream merge", "1.5.0")
    for name, patch in patches.PATCHES.items():
        patches.check(name, installed_version(patch.distribution))  # this build's
        with pytest.raises(ExtensionError, match=re.escape(patch.recheck)):
            patches.check(name, "999.0")
    with pytest.raises(ExtensionError, match=r"myst-nb \(none\) is installed"):
        patches.check("myst-nb stream merge", None)


def test_a_second_build_of_one_folder_waits_for_the_first(tmp_path):
    import subprocess
    import time

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time, types; from jaxguide_build import execution as e;"
                "e.lock_build(types.SimpleNamespace(outdir=sys.argv[1]), None); print('held', flush=True);"
                "time.sleep(2)"
            ),
            str(tmp_path / "_build" / "html"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    start = time.perf_counter()
    execution.lock_build(types.SimpleNamespace(outdir=str(tmp_path / "_build" / "html")), None)
    waited = time.perf_counter() - start
    holder.wait(timeout=30)
    assert waited > 1.0, waited
    execution._LOCK.close()
    # Another output folder does not wait.
    start = time.perf_counter()
    execution.lock_build(types.SimpleNamespace(outdir=str(tmp_path / "other" / "html")), None)
    assert time.perf_counter() - start < 0.5
    execution._LOCK.close()


SCOPED = """\
import sys
import jax
import jax.numpy as jnp
import numpy as np

def f(x):
    with jax.named_scope(sys.argv[1]):
        return jnp.sin(x) * 2

print(jax.jit(f).lower(np.ones(4, np.float32)).compile().as_text())
"""


def test_the_compilation_cache_never_shows_a_renamed_scopes_old_name(tmp_path):
    """The build's kernels share a compilation cache from one build to the next. A
    chapter edited to rename a ``named_scope`` prints the new name in its compiled
    program, not the one a cached executable was compiled with; the same program run
    again from a cell file in another folder (IPython's folder is named after the
    kernel's process id) still loads from the cache."""
    import subprocess

    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.update(jupyter_kernels.compilation_cache_env(cache))

    def compiled_text(folder: str, scope: str) -> str:
        cell = tmp_path / folder / "cell.py"
        cell.parent.mkdir()
        cell.write_text(SCOPED)
        run = subprocess.run(
            [sys.executable, str(cell), scope], env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert "/before/sin" in compiled_text("ipykernel_1", "before")
    entries = sorted(p.name for p in cache.iterdir())
    assert any(name.startswith("jit_f-") for name in entries)
    compiled_text("ipykernel_2", "before")
    assert sorted(p.name for p in cache.iterdir()) == entries, "the cache missed"
    renamed = compiled_text("ipykernel_3", "after")
    assert "/after/sin" in renamed and "before" not in renamed


# --- the table of contents, read as Jupyter Book reads it ---------------------------


def write_book(tmp_path, toc: str, pages=("intro", "a", "b", "c")) -> tuple:
    book = tmp_path / "book"
    book.mkdir(parents=True)
    for p in pages:
        (book / f"{p}.md").write_text(f"# {p}\n")
    (tmp_path / "_toc.yml").write_text(toc)
    return tmp_path / "_toc.yml", book


def test_toc_forms(tmp_path):
    from jaxguide_build import toc

    flat = write_book(
        tmp_path / "flat", "format: jb-book\nroot: intro\nchapters:\n- file: a\n- file: b\n"
    )
    assert toc.pages(*flat) == ["intro", "a", "b"]
    nested = write_book(
        tmp_path / "nested",
        (
            "format: jb-book\nroot: intro\nparts:\n- caption: One\n  chapters:\n  - file: a\n"
            "    sections:\n    - file: b\n- caption: Two\n  chapters:\n  - file: c\n"
        ),
    )
    assert toc.pages(*nested) == ["intro", "a", "b", "c"]
    assert [(p.caption, p.pages) for p in toc.parts(*nested)] == [
        ("One", ("a", "b")),
        ("Two", ("c",)),
    ]
    missing = write_book(
        tmp_path / "missing", "format: jb-book\nroot: intro\nchapters:\n- file: nope\n"
    )
    with pytest.raises(toc.TocError, match=r"no source file in book/: nope"):
        toc.pages(*missing)
    bad = write_book(tmp_path / "bad", "format: jb-book\nchapters: [}\n")
    with pytest.raises(toc.TocError, match="cannot be read"):
        toc.pages(*bad)
    assert toc.pages()[0] == "index" and "numpy" in toc.pages()  # this book's own toc


# ----------------------------------------------------------------------------- rebuild shortcuts

INDEX_RST = """Book
====

.. toctree::
   :numbered:

   one
   two
"""

ONE_RST = """One
===

.. code-block:: python
   :caption: First listing

   x = 1

.. code-block:: python

   no_caption = True

.. table:: A table

   ===  ===
   a    b
   ===  ===
   1    2
   ===  ===

Part
----

.. code-block:: python
   :caption: Second listing

   y = 2

Deeper
~~~~~~

.. only:: html

   .. code-block:: python
      :caption: Listing for the web

      v = 4

.. exercise:: Add
   :label: one-ex

   Add two numbers.

   .. code-block:: python
      :caption: A listing inside an exercise

      u = 5

.. solution:: one-ex
   :label: one-sol

   ``1 + 1``
"""

TWO_RST = """Two
===

.. code-block:: python
   :caption: Only listing

   z = 3

.. exercise:: Multiply
   :label: two-ex

   Multiply two numbers, then see :ref:`one-ex`.
"""


def _sphinx_build(src, tmp_path):
    import io

    from sphinx.application import Sphinx

    app = Sphinx(
        str(src),
        str(src),
        str(tmp_path / "out"),
        str(tmp_path / "doctrees"),
        "html",
        status=None,
        warning=io.StringIO(),
        freshenv=False,
    )
    app.build()
    return app


@pytest.mark.parametrize("numbered", [True, False])
def test_figure_numbers_from_page_skeletons_are_sphinxs_and_follow_an_edit(tmp_path, numbered):
    """The shortcut gives the numbers Sphinx's own walk over the full doctrees gives,
    on a first build and after edits that move them, on the edited page or (numbers
    counted across the book, with no section numbers) on a page not read again; the
    environment it pickles holds no document."""
    import pickle

    from sphinx.environment.collectors.toctree import TocTreeCollector

    from jaxguide_build import incremental

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "extensions = ['sphinx_exercise', 'jaxguide_build.incremental']\nnumfig = True\n"
    )
    (src / "index.rst").write_text(
        INDEX_RST if numbered else INDEX_RST.replace("   :numbered:\n", "")
    )
    (src / "one.rst").write_text(ONE_RST)
    (src / "two.rst").write_text(TWO_RST)

    def check(app) -> dict:
        env = app.env
        patched = TocTreeCollector.assign_figure_numbers
        ours = {d: {k: dict(v) for k, v in n.items()} for d, n in env.toc_fignumbers.items()}
        assert patched.jaxguide and set(env.jaxguide_figure_skeletons) == set(env.all_docs)
        assert "get_doctree" not in env.__dict__  # Sphinx's own method again
        patched.original(TocTreeCollector(), env)  # Sphinx's walk over the full doctrees
        assert ours == env.toc_fignumbers
        # The environment as pickled (sphinx-exercise puts live nodes back while writing
        # pages, after that) keeps the exercises' nodes without their pages.
        with open(tmp_path / "doctrees" / "environment.pickle", "rb") as f:
            registry = pickle.load(f).sphinx_exercise_registry
        assert set(registry) == {"one-ex", "one-sol", "two-ex"}
        assert not any(incremental._attached(entry["node"]) for entry in registry.values())
        return ours

    def listings(numbers: dict, page: str) -> list:
        return sorted(numbers[page]["code-block"].values())

    numbers = check(_sphinx_build(src, tmp_path))
    if numbered:
        # Captioned listings only, counted per chapter; the one under `only` and the
        # one inside an exercise too.
        assert listings(numbers, "one") == [(1, 1), (1, 2), (1, 3), (1, 4)]
        assert list(numbers["one"]["table"].values()) == [(1, 1)]
        assert numbers["one"]["exercise"] == {"one-ex": (1, 1)}
        assert numbers["two"]["exercise"] == {"two-ex": (2, 1)}
    else:
        assert listings(numbers, "one") == [(1,), (2,), (3,), (4,)]
        assert listings(numbers, "two") == [(5,)]

    # An edit to the second page moves its numbers; its skeleton is made again.
    before = dict(_sphinx_build(src, tmp_path).env.jaxguide_figure_skeletons)
    new_listing = "\n.. code-block:: python\n   :caption: New\n\n   w = 0\n"
    (src / "two.rst").write_text(TWO_RST.replace("Two\n===\n", "Two\n===\n" + new_listing))
    app = _sphinx_build(src, tmp_path)
    numbers = check(app)
    assert listings(numbers, "two") == ([(2, 1), (2, 2)] if numbered else [(5,), (6,)])
    after = app.env.jaxguide_figure_skeletons
    assert after["one"] == before["one"] and after["two"] != before["two"]
    # The edited page's reference to an exercise on a page not read again is resolved
    # from the detached node the environment kept.
    two = (tmp_path / "out" / "two.html").read_text()
    assert re.search(r'href="one.html#one-ex"[^>]*><span class="std std-numref">Exercise 1', two)

    # An edit to the first page: without section numbers, the second page's listings
    # move too, although that page is not read again (its stored skeleton is used).
    (src / "one.rst").write_text(ONE_RST.replace("One\n===\n", "One\n===\n" + new_listing))
    app = _sphinx_build(src, tmp_path)
    numbers = check(app)
    assert app.env.jaxguide_figure_skeletons["two"] == after["two"]
    assert listings(numbers, "two") == ([(2, 1), (2, 2)] if numbered else [(6,), (7,)])
    if not numbered:
        assert "Listing 7" in (tmp_path / "out" / "two.html").read_text()


def test_jupyter_cache_parses_a_chapter_once_per_version(tmp_path, monkeypatch):
    """Inside ``reading_once`` each reader call gives a fresh copy of one parse, and a
    changed file is parsed again."""
    import jupyter_cache.cache.main as cache_main

    parses = []

    def fake_get_reader(data):
        def read(uri):
            parses.append(uri)
            return {"text": Path(uri).read_text(), "cells": []}

        return read

    monkeypatch.setattr(cache_main, "get_reader", fake_get_reader)
    chapter = tmp_path / "c.md"
    chapter.write_text("one")
    with patches.reading_once():
        read = cache_main.get_reader({"type": "plugin", "name": "myst_nb_md"})
        a, b = read(str(chapter)), read(str(chapter))
        assert a == b == {"text": "one", "cells": []} and a is not b and len(parses) == 1
        a["cells"].append("executed")  # an executor changes its copy
        assert read(str(chapter))["cells"] == []
        chapter.write_text("two, longer")
        assert read(str(chapter))["text"] == "two, longer" and len(parses) == 2
        # An edit of the same size is seen by its modification time.
        stat = chapter.stat()
        chapter.write_text("six, longer")
        os.utime(chapter, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        assert read(str(chapter))["text"] == "six, longer" and len(parses) == 3
    assert cache_main.get_reader is fake_get_reader  # put back on the way out


def test_page_memo_reads_a_page_again_only_when_it_changed(tmp_path, monkeypatch, caplog):
    import json

    from jaxguide_build.site import memo as site

    out = tmp_path / "html"
    out.mkdir()
    page = out / "a.html"
    page.write_text('<i class="fab fa-github"></i><p class="intro">hello</p>')
    reads = []
    real = site.icons_in
    monkeypatch.setattr(site, "icons_in", lambda text: reads.append(1) or real(text))
    memo = site.PageMemo(out)
    assert memo.entry(page)["icons"] == ["fa-github"]
    assert {"intro", "hello"} <= set(memo.entry(page)["words"]) and len(reads) == 1
    memo.save()

    again = site.PageMemo(out)
    assert again.final(page, page.read_text())
    assert again.entry(page)["icons"] == ["fa-github"] and len(reads) == 1  # from the memo
    page.write_text("<p>bye</p>")
    assert not again.final(page, page.read_text())
    assert again.entry(page)["icons"] == [] and len(reads) == 2
    assert site.PageMemo(out, setting="other").pages == {}  # finished otherwise: start again
    page.unlink()
    again.save()
    assert json.loads(again.path.read_text())["pages"] == {}  # a page that is gone is forgotten

    again.path.write_text("{broken")
    assert site.PageMemo(out).pages == {}  # unreadable: every page is read again


def test_page_memo_is_tied_to_the_code_that_finishes_pages(tmp_path, monkeypatch):
    """A change to the code of the site's passes (what a final page is) empties the memo."""
    import shutil

    from jaxguide_build.site import memo as site

    out = tmp_path / "html"
    out.mkdir()
    (out / "a.html").write_text("<p>hello</p>")
    memo = site.PageMemo(out)
    memo.entry(out / "a.html")
    memo.save()
    assert site.PageMemo(out).pages
    code = shutil.copytree(
        site.CODE, tmp_path / "site", ignore=shutil.ignore_patterns("__pycache__")
    )
    assert site.code_digest(code) == site.code_digest()
    pages = code / "pages.py"
    pages.write_bytes(pages.read_bytes() + b"\n# changed\n")
    monkeypatch.setattr(site, "CODE", code)
    assert site.PageMemo(out).pages == {}


def test_the_server_is_quiet_when_a_browser_hangs_up(tmp_path, capsys):
    """A client that closes its connection mid-response is not reported; other errors are."""
    from jaxguide_build import serve

    base, server = serve.serve(tmp_path)
    try:
        for error in (BrokenPipeError(), ConnectionResetError()):
            try:
                raise error
            except OSError:
                server.handle_error(None, ("127.0.0.1", 0))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a real fault")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 0))
        assert "a real fault" in capsys.readouterr().err
    finally:
        server.shutdown()
        server.server_close()
