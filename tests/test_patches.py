"""jaxguide_build.patches: the patches of third-party libraries (the exact stream merge,
jupyter-cache's single parse) and their one rule for untested releases."""

import inspect
import os
import re
from pathlib import Path

import pytest

from jaxguide_build import patches
from jaxguide_build.environment import installed_version


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


def _table_rows(doc: str | None = None) -> dict[str, tuple[str, str, str]]:
    """The rows of the table in patches' docstring: patch -> (package, code, installed by),
    as docutils reads it (so Sphinx renders the same), without the double backquotes; a
    malformed table (a cell past its column's edge) stops the test."""
    import docutils.core
    import docutils.nodes

    lines = inspect.cleandoc(doc or patches.__doc__ or "").splitlines()
    edges = [i for i, line in enumerate(lines) if line.startswith("====")]
    table = "\n".join(lines[edges[0] : edges[-1] + 1])
    tree = docutils.core.publish_doctree(
        table, settings_overrides={"halt_level": 2, "report_level": 5}
    )
    rows = {}
    for row in tree.findall(docutils.nodes.row):
        cells = [entry.astext() for entry in row.findall(docutils.nodes.entry)]
        assert len(cells) == 4, cells
        if cells[0] != "patch":  # the header
            name, package, code, by = cells
            rows[name] = (package, code, by)
    return rows


def test_a_malformed_table_row_fails_the_table_check():
    """A cell one character past its column's edge (review r37 found one) is an error
    for docutils, and so for the test that reads the table."""
    import docutils.utils

    bad = "\n".join(
        line.replace(
            "``sphinx no search index``           ", "``sphinx no search index``          "
        )
        for line in (patches.__doc__ or "").splitlines()
    )
    assert bad != patches.__doc__
    with pytest.raises(docutils.utils.SystemMessage, match="Malformed table"):
        _table_rows(bad)


def _installs(module: str) -> set[str]:
    """The patch names ``module`` (of jaxguide_build) passes to ``patches.install``, read
    from its source."""
    import ast
    import importlib

    source = Path(importlib.import_module(f"jaxguide_build.{module}").__file__).read_text()
    names = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "install"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "patches"
        ):
            names |= {a.value for a in node.args[1:] if isinstance(a, ast.Constant)}
    return names


def _resolve(dotted: str) -> object:
    """The object a full dotted name names: the longest importable module, then attributes."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_the_patch_table_is_true_to_the_code():
    """Each row of the table in patches' docstring is a patch of PATCHES, of its package;
    its "installed by" module calls patches.install with its name; its "code" module
    ("here": patches) defines the override (Patch.code), and what the override replaces
    or reads (Patch.replaces) is still in the installed release. A patch moved, renamed
    or installed elsewhere without the table following fails here."""
    import inspect

    rows = _table_rows()
    assert list(rows) == list(patches.PATCHES)
    for name, (package, code, by) in rows.items():
        patch = patches.PATCHES[name]
        assert package == patch.distribution, name
        installer = "__init__" if by == "jaxguide_build" else by
        assert name in _installs(installer), f"{name}: {by} does not install it"
        module, _, attr = patch.code.rpartition(".")
        assert module == ("patches" if code == "here" else code), f"{name}: code is {module}"
        assert hasattr(_resolve(f"jaxguide_build.{module}"), attr), f"{name}: no {patch.code}"
        if patch.apply is not None:
            assert patch.apply.__module__ == "jaxguide_build.patches", name
        assert patch.replaces, name
        for target in patch.replaces:
            owner, _, member = target.rpartition(".")
            found = _resolve(owner)
            assert hasattr(found, member) or member in inspect.getsource(found), (name, target)
    # Nothing installs a patch the table does not list.
    modules = {"__init__", "execution", "incremental", "site", "jupyter_kernels", "notebook_runs"}
    assert set().union(*(_installs(m) for m in modules)) == set(rows)
