"""jaxguide_build.staleness: what a chapter's code cells import, the fingerprint of what
they depend on (jaxguide's modules, package versions, files next to the chapter), and
the files the check keeps between builds. The rebuilds that follow from it, on a small
book, are tests/test_execution.py's."""

import os

import pytest

from jaxguide_build import staleness

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


def test_closure_sees_the_module_launch_runs_by_name():
    """distributed.launch starts ``python -m jaxguide._runner``: a chapter that imports
    distributed depends on _runner too."""
    graph = staleness.PackageGraph()
    assert "_runner" in graph.closure({"distributed"})


def test_fingerprint_changes_with_a_package_version():
    graph = staleness.PackageGraph()
    a = staleness.fingerprint(CHAPTER, graph, version=lambda d: "1.0")
    b = staleness.fingerprint(CHAPTER, graph, version=lambda d: "2.0" if d == "jax" else "1.0")
    assert a["digest"] != b["digest"]
    assert "jax" in a["packages"] and "numpy" in a["packages"]
    assert "package versions changed: jax" in staleness._explain(a, b)
    assert staleness.fingerprint(CHAPTER, graph, version=lambda d: "1.0")["digest"] == a["digest"]


def chapter(*cells: str) -> str:
    return "\n".join(f"```{{code-cell}} ipython3\n{c}\n```\n" for c in cells)


def test_fingerprint_changes_with_the_kernels_environment(monkeypatch, tmp_path):
    """An edit of the kernels' environment (jupyter_kernels: KERNEL_ENV, the compilation
    cache's settings) makes every chapter that gets it stale; where the cache's folder
    is (this checkout's path) does not, and a chapter run without the cache (CACHE_OFF)
    does not depend on its settings."""
    from jaxguide_build import jupyter_kernels

    graph, version = staleness.PackageGraph(), lambda d: "1.0"
    plain, timed = chapter("import numpy as np"), chapter("import jax.monitoring")

    def env(folder, **changes):
        base = {"JAXGUIDE_STRICT_CLAIMS": "1", **jupyter_kernels.compilation_cache_env(folder)}
        return base | changes

    def digests(**changes):
        return [
            staleness.fingerprint(src, graph, version, env=env(tmp_path / "a", **changes))
            for src in (plain, timed)
        ]

    (a, a_timed), (b, b_timed) = digests(), digests(JAX_TRACEBACK_IN_LOCATIONS_LIMIT="-1")
    assert a["digest"] != b["digest"]
    assert staleness._explain(a, b) == (
        "kernel environment changed: JAX_TRACEBACK_IN_LOCATIONS_LIMIT"
    )
    assert a_timed["digest"] == b_timed["digest"]
    assert a_timed["kernel_env"] == {"JAXGUIDE_STRICT_CLAIMS": "1"}
    moved = staleness.fingerprint(plain, graph, version, env=env(tmp_path / "elsewhere"))
    assert moved["digest"] == a["digest"]
    # By default, the build's own: what kernel_settings put in KERNEL_ENV.
    monkeypatch.setattr(jupyter_kernels, "KERNEL_ENV", env(tmp_path / "build"))
    assert staleness.fingerprint(plain, graph, version)["digest"] == a["digest"]
    monkeypatch.setattr(jupyter_kernels, "KERNEL_ENV", {})
    assert staleness.fingerprint(plain, graph, version)["kernel_env"] == {}


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


@pytest.mark.parametrize("text", ["", "{not json", "[1, 2]", '{"a": 1'])
def test_an_unreadable_fingerprint_store_counts_as_empty(tmp_path, text):
    store = tmp_path / "jaxguide-fingerprints.json"
    store.write_text(text)
    assert staleness.read_store(store) == {}
    assert staleness.read_store(tmp_path / "missing.json") == {}
    store.write_text('{"numpy": {"digest": "x"}}')
    assert staleness.read_store(store) == {"numpy": {"digest": "x"}}


def test_the_memo_is_used_and_a_damaged_one_is_ignored(tmp_path, monkeypatch):
    from jaxguide_build import staleness

    calls = []
    real = staleness.imports_of
    monkeypatch.setattr(staleness, "imports_of", lambda code: calls.append(1) or real(code))
    staleness.load_memo(tmp_path)
    assert staleness.cached_imports(["import optax"]) == ({"optax"}, set())
    key = next(iter(staleness._MEMO["imports"]))
    staleness.save_memo(tmp_path, {key})
    staleness.load_memo(tmp_path)
    assert staleness.cached_imports(["import optax"]) == ({"optax"}, set()) and len(calls) == 1
    (tmp_path / staleness.MEMO).write_text("{not json")
    staleness.load_memo(tmp_path)
    assert staleness.cached_imports(["import optax"]) == ({"optax"}, set()) and len(calls) == 2


def test_fingerprint_changes_with_the_jax_and_xla_variables_of_the_builds_shell(monkeypatch):
    """A JAX_* or XLA_* variable the kernels inherit from the build's shell (XLA_FLAGS,
    JAX_ENABLE_X64) changes what JAX computes and prints, so setting, changing or
    unsetting one makes every chapter stale; other variables, and one the kernels' own
    environment sets (it wins), do not. A shell without any gives the digest of a
    fingerprint without this part, so builds made before it keep their outputs."""
    import hashlib
    import json

    graph, version = staleness.PackageGraph(), lambda d: "1.0"
    src = chapter("import numpy as np")
    kernel = {"JAXGUIDE_STRICT_CLAIMS": "1", "JAX_ENABLE_COMPILATION_CACHE": "true"}

    def fp(**shell):
        return staleness.fingerprint(src, graph, version, env=kernel, shell=shell)

    plain = fp(HOME="/root", PATH="/bin")
    assert "inherited_env" not in plain
    before = {k: v for k, v in plain.items() if k != "digest"}  # the parts of old builds
    old_digest = hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    assert plain["digest"] == old_digest == fp()["digest"]
    assert fp(JAX_ENABLE_COMPILATION_CACHE="false")["digest"] == plain["digest"]  # overridden
    flags = fp(XLA_FLAGS="--xla_force_host_platform_device_count=4")
    x64 = fp(JAX_ENABLE_X64="1")
    assert len({plain["digest"], flags["digest"], x64["digest"]}) == 3
    assert fp(XLA_FLAGS="--xla_force_host_platform_device_count=8")["digest"] != flags["digest"]
    assert staleness._explain(plain, flags) == "build's shell changed: XLA_FLAGS"
    assert staleness._explain(x64, plain) == "build's shell changed: JAX_ENABLE_X64"
    # By default, this process's environment.
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    for name in [k for k in os.environ if k.startswith(("JAX_", "XLA_")) and k != "JAX_ENABLE_X64"]:
        monkeypatch.delenv(name)
    default = staleness.fingerprint(src, graph, version, env=kernel)
    assert default["digest"] == x64["digest"]
