"""jaxguide_build.patches: the patches of third-party libraries (the exact stream merge,
jupyter-cache's single parse) and their one rule for untested releases."""

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
