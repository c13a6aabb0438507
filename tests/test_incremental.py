"""jaxguide_build.incremental: the rebuild shortcut that numbers figures, listings and
exercises from page skeletons, checked against Sphinx's own walk on a small project."""

import re

import pytest

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
