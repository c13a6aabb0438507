"""Sphinx extension (build tooling): three fixes for myst-nb 1.4, each found by this
book's tests.

1. **Stream merging.** A kernel sends ``print`` output in chunks whose boundaries
   depend on when its output thread flushes, a race: ``print("a", "b")`` may arrive
   as ``"a"`` and ``" b\\n"``. myst-nb's ``nb_merge_streams`` joins chunks by stripping
   each and adding a newline, so a flush in mid-line splits the line on the page and
   the same code renders differently from build to build. Chunks are concatenated
   exactly instead; ``\\r``/``\\b`` handling and the stdout-before-stderr order are
   kept from myst-nb's own function, which runs on the merged text.
   (tests/test_reproducible.py compares two builds.)

2. **Executed notebooks from the cache.** When a page's outputs come from the
   execution cache, myst-nb renders them, but writes the *unexecuted* notebook to
   ``_build/jupyter_execute/<page>.ipynb`` (what the page's download button offers):
   the merged notebook replaces the client's reference, not the object myst-nb
   writes. The cached outputs are merged into that object in place instead.

3. **Cell ids.** The Markdown reader gives each cell a random id, so the executed
   notebook differed from build to build in its ids alone. Its cells are named
   ``<page>-<index>`` instead (:func:`stable_cell_ids`).

All three patch myst-nb's internals (two replaced functions: the third fix runs inside
the second's), so they are applied only to the myst-nb release they were written and
tested for (:data:`TESTED`); another release stops the build with a message saying what
to check, rather than patching code that may have changed.
"""

from __future__ import annotations

import re
from pathlib import Path

import myst_nb
import myst_nb.core.render as render
from myst_nb.core.execute.cache import NotebookClientCache
from myst_nb.core.utils import coalesce_streams as _myst_nb_coalesce
from sphinx.errors import ExtensionError


def coalesce_streams(outputs):
    merged, first = [], {}
    for output in outputs:
        if output["output_type"] == "stream" and output["name"] in first:
            first[output["name"]]["text"] += output["text"]
            continue
        if output["output_type"] == "stream":
            output = output.copy()
            first[output["name"]] = output
        merged.append(output)
    # One chunk per stream is left: myst-nb's function now only cleans it up.
    return _myst_nb_coalesce(merged)


_start_client = NotebookClientCache.start_client


def start_client(self):
    original = self._notebook
    _start_client(self)
    if self._notebook is not original:  # outputs came from the cache
        original.clear()
        original.update(self._notebook)
        self._notebook = original
    stable_cell_ids(original, Path(self._path).stem if self._path else "cell")


def stable_cell_ids(notebook, name: str) -> None:
    """Name each cell ``<page>-<index>`` (as tools/make_notebooks.py names the Colab
    notebooks' cells) in place of the random id the Markdown reader gave it."""
    # nbformat allows 1 to 64 of [a-zA-Z0-9-_] in an id.
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", name)[:50] or "cell"
    for i, cell in enumerate(notebook.get("cells", [])):
        if "id" in cell:
            cell["id"] = f"{prefix}-{i}"


#: The myst-nb releases these patches were written and tested for.
TESTED = ("1.4.",)


def check_version(version: str) -> None:
    """Refuse a myst-nb release the patches were not tested on."""
    if not version.startswith(TESTED):
        raise ExtensionError(
            f"jaxguide_mystnb_fixes patches myst-nb {' / '.join(t + 'x' for t in TESTED)}, but myst-nb "
            f"{version} is installed. Check whether that release still splits printed lines "
            "(tests/test_reproducible.py) and still writes cached notebooks without outputs "
            "(tests/test_notebooks.py::test_colab_and_download_buttons); then drop the patch it "
            "fixed, or add the release to TESTED in tools/jaxguide_mystnb_fixes.py."
        )


def setup(app):
    check_version(myst_nb.__version__)
    render.coalesce_streams = coalesce_streams
    NotebookClientCache.start_client = start_client
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
