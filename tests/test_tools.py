"""Build tooling in tools/: the staleness fingerprint and the exact stream merge."""

import sys

from bookcheck import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import jaxguide_fresh as fresh  # noqa: E402

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
    top, ours = fresh.imports_of(fresh.code_of(CHAPTER))
    assert {"numpy", "jaxguide"} <= top
    assert {"sharding", "data", "timing"} <= ours


def test_closure_follows_the_package_init():
    graph = fresh.PackageGraph()
    closure = graph.closure({"gradcheck"})
    assert {"", "gradcheck", "devices", "timing"} <= closure  # __init__ imports devices, timing
    assert "sharding" not in closure
    assert graph.closure(set()) == set()


def test_fingerprint_changes_with_a_package_version():
    graph = fresh.PackageGraph()
    a = fresh.fingerprint(CHAPTER, graph, version=lambda d: "1.0")
    b = fresh.fingerprint(CHAPTER, graph, version=lambda d: "2.0" if d == "jax" else "1.0")
    assert a["digest"] != b["digest"]
    assert "jax" in a["packages"] and "numpy" in a["packages"]
    assert "package versions changed: jax" in fresh._explain(a, b)
    assert fresh.fingerprint(CHAPTER, graph, version=lambda d: "1.0")["digest"] == a["digest"]


def test_stream_chunks_merge_exactly():
    import nbformat

    import jaxguide_mystnb_fixes as fixes

    chunks = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in ("cpu:2", " {CpuDevice(id=2)} cpu:2\n", "next line\n")]
    image = nbformat.v4.new_output("display_data", data={"text/plain": "fig"})
    merged = fixes.coalesce_streams(chunks[:1] + [image] + chunks[1:])
    assert [o["output_type"] for o in merged] == ["stream", "display_data"]
    assert merged[0]["text"] == "cpu:2 {CpuDevice(id=2)} cpu:2\nnext line\n"
    assert chunks[0]["text"] == "cpu:2"  # the notebook's own outputs are left untouched
