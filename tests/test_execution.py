"""The build's execution: which chapters execute and in what order, how a failure is
reported, the build lock (jaxguide_build.buildprocess), and the kernels that execute them
with their compilation cache (jaxguide_build.jupyter_kernels).

Never stale: a change to jaxguide re-executes exactly the chapters that import the
changed module (jaxguide_build.staleness decides which: tests/test_staleness.py), and a
rebuild with nothing changed executes nothing.

The build tests run on a two-page book in a temporary copy of the repository. The build
runs with PYTHONPATH pointing at the copy's src/, so the kernel and the extension both
see the copy of jaxguide, which the test edits.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest

from bookcheck import MYST_HEADER, ROOT, assert_quiet
from jaxguide_build import buildprocess, execution, jupyter_kernels

# The tests that build a book or start kernels carry the ``builds`` marker (make test,
# not make unit); the checks of the passes' pure functions below them do not.
USES_COMPILED = (
    MYST_HEADER
    + """# Uses compiled

```{code-cell} ipython3
from jaxguide.compiled import format_bytes

print("size:", format_bytes(512))
```

```{code-cell} ipython3
import jax
import jax.numpy as jnp

print("total:", int(jax.jit(jnp.sum)(jnp.arange(4))))
```
"""
)

USES_TIMING_ONLY = (
    MYST_HEADER
    + """# Uses timing only

```{code-cell} ipython3
import jaxguide

print("formatted:", jaxguide.format_seconds(0.0015))
```

```{code-cell} ipython3
import matplotlib.pyplot as plt

plt.figure(figsize=(2, 2))
plt.plot([0, 1], [0, 1])
plt.show()
```
"""
)


def build(repo: Path, ok: bool = True) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    exe = Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    proc = subprocess.run(
        [str(exe), "build", "book/"], cwd=repo, env=env, capture_output=True, text=True, timeout=600
    )
    seconds = time.perf_counter() - start
    assert (proc.returncode == 0) == ok, (proc.stdout + proc.stderr)[-3000:]
    assert_quiet(proc.stdout + proc.stderr)
    # No Sphinx warning either, first build or rebuild (a rebuild that writes only some
    # pages once warned that the search index could not be loaded).
    if ok:
        assert "WARNING" not in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr, seconds


def executed(log: str) -> set[str]:
    """Chapters executed by myst-nb, or by the extension's parallel pre-execution."""
    names = {
        Path(line.split(":")[0]).stem for line in log.splitlines() if "Executing notebook" in line
    }
    for match in re.findall(
        r"executing \d+ chapters?(?: in parallel, longest first)?: ([\w, ]+)", log
    ):
        names |= {n.strip() for n in match.split(",")}
    return names


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "book").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "_config.yml", repo)
    shutil.copytree(ROOT / "tools", repo / "tools")
    shutil.copytree(ROOT / "book" / "_static", repo / "book" / "_static")
    shutil.copytree(
        ROOT / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    (repo / "_toc.yml").write_text("format: jb-book\nroot: a\nchapters:\n  - file: b\n")
    os.symlink("../_toc.yml", repo / "book" / "_toc.yml")
    (repo / "book" / "a.md").write_text(USES_COMPILED)
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY)
    return repo


@pytest.mark.builds
def test_rebuilds_exactly_what_a_jaxguide_change_affects(tmp_path):
    repo = make_repo(tmp_path)
    log, _ = build(repo)
    assert executed(log) == {"a", "b"}
    assert "size: 512 B" in (repo / "_build/html/a.html").read_text()
    # The kernels kept JAX's compiled programs in the build's own folder, one folder
    # per chapter.
    assert any(
        p.name.startswith("jit_")
        for p in (repo / "_build" / jupyter_kernels.CACHE_FOLDER / "a").iterdir()
    )

    log, seconds = build(repo)
    assert executed(log) == set(), "a rebuild with nothing changed executed something"

    compiled = repo / "src/jaxguide/compiled.py"
    text = compiled.read_text()
    assert 'return f"{n:.0f} B"' in text
    compiled.write_text(text.replace('return f"{n:.0f} B"', 'return f"{n:.0f} bytes"'))
    log, _ = build(repo)
    assert executed(log) == {"a"}, "only the page importing jaxguide.compiled should re-execute"
    assert "jaxguide modules changed: compiled" in log
    html = (repo / "_build/html/a.html").read_text()
    assert "size: 512 bytes" in html and "size: 512 B<" not in html

    # A build folder copied from another checkout caches the chapters under that
    # checkout's paths; a change still re-executes them (matched by their code's hash).
    moved = tmp_path / "moved"
    shutil.copytree(repo, moved, symlinks=True)
    compiled = moved / "src/jaxguide/compiled.py"
    compiled.write_text(
        compiled.read_text().replace('return f"{n:.0f} bytes"', 'return f"{n:.0f} octets"')
    )
    log, _ = build(moved)
    assert executed(log) == {"a"}
    assert "size: 512 octets" in (moved / "_build/html/a.html").read_text()

    # Editing the chapter itself still re-executes it, as myst-nb's cache does. Its
    # figure is copied again over the copy the site extension shrank, quietly (build
    # checks the log).
    shrunk = {p.name: p.read_bytes() for p in (repo / "_build/html/_images").glob("*.png")}
    assert shrunk and all(
        data != (repo / "_build/jupyter_execute" / name).read_bytes()
        for name, data in shrunk.items()
    )
    pages = {p.name: p.read_bytes() for p in (repo / "_build/html").glob("*.html")}
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY.replace("0.0015", "2.5"))
    log, _ = build(repo)
    assert executed(log) == {"b"}
    assert "formatted: 2.5 s" in (repo / "_build/html/b.html").read_text()
    # The site extension finished the pages Sphinx wrote again (b, and a, the root, which
    # Sphinx always writes) and left the others as they were.
    after = {p.name: p.read_bytes() for p in (repo / "_build/html").glob("*.html")}
    assert after.keys() == pages.keys()
    assert [n for n in pages if after[n] != pages[n]] == ["b.html"]
    for name in ("a.html", "b.html"):
        assert b"fontawesome.js" not in after[name] and b'role="banner"' in after[name], name
    assert {p.name: p.read_bytes() for p in (repo / "_build/html/_images").glob("*.png")} == shrunk


FAILING = USES_TIMING_ONLY.replace('print("formatted:"', 'print(1 / 0)\nprint("formatted:"')


@pytest.mark.builds
def test_a_failing_chapter_is_reported_once_and_keeps_the_others_cached(tmp_path):
    repo = make_repo(tmp_path)
    (repo / "book" / "b.md").write_text(FAILING)
    log, _ = build(repo, ok=False)
    # One execution of each chapter, in parallel; the failure reported from that run,
    # starting with the chapter and the error, then the cell.
    assert executed(log) == {"a", "b"} and "Executing notebook" not in log
    report = log[log.index("[jaxguide-build] chapter 'b' failed") :]
    assert report.startswith(
        "[jaxguide-build] chapter 'b' failed: ZeroDivisionError: division by zero"
    )
    # The cell with its failing line marked, and the error again last (a log's tail).
    assert report.splitlines()[1].startswith("  in the cell, at line ")
    assert "    --> print(1 / 0)" in report.splitlines()
    last = "of the cell above: ZeroDivisionError: division by zero"
    assert last in report and log.count("ZeroDivisionError: division by zero") <= 3
    # a's outputs were cached and fingerprinted although the build failed: fixing b
    # re-executes b alone.
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY)
    log, _ = build(repo)
    assert executed(log) == {"b"}
    assert "formatted: 1.5 ms" in (repo / "_build/html/b.html").read_text()


@pytest.mark.builds
def test_build_kernels_use_private_ipc_sockets_and_the_compilation_cache(tmp_path, monkeypatch):
    """The build's kernel manager: IPC transport, sockets and connection file in a
    fresh private folder (two at once never share one), removed at shutdown; the
    compilation cache reaches the kernel through its environment, except for a
    notebook whose code looks at compilation."""
    import nbformat
    from nbclient import NotebookClient

    from jaxguide_build import jupyter_kernels, notebook_runs, patches

    monkeypatch.setattr(NotebookClient, "create_kernel_manager", patches.create_kernel_manager)
    monkeypatch.setattr(
        jupyter_kernels, "KERNEL_ENV", jupyter_kernels.compilation_cache_env(tmp_path / "jc")
    )
    monkeypatch.setattr(patches, "EXECUTING", "chapter")
    code = 'import os; print(os.environ.get("JAX_COMPILATION_CACHE_DIR", "none"))'
    seen = []
    for extra in ("", "# jax.explain_cache_misses shows cache misses"):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code + "\n" + extra)])
        client = NotebookClient(nb, kernel_name="python3", timeout=120)
        with client.setup_kernel():
            km = client.km
            assert isinstance(km, notebook_runs.BuildKernelManager) and km.transport == "ipc"
            folder = Path(km.socket_dir)
            assert folder.parent == Path(tempfile.gettempdir()) and folder.name.startswith(
                "jaxguide-kernel-"
            )
            assert oct(folder.stat().st_mode & 0o777) == "0o700"
            assert Path(km.connection_file).parent == folder
            seen.append(folder)
            client.execute_cell(nb.cells[0], 0)
        assert not folder.exists(), "the kernel's socket folder was left behind"
        seen.append(nb.cells[0].outputs[0]["text"].strip())
    assert seen[0] != seen[2]
    assert seen[1] == str(tmp_path / "jc" / "chapter") and seen[3] == "none"


def test_notebook_env_leaves_the_cache_out_where_compilation_is_shown(monkeypatch):
    from jaxguide_build import jupyter_kernels

    monkeypatch.setattr(
        jupyter_kernels,
        "KERNEL_ENV",
        {"OTHER": "1", **jupyter_kernels.compilation_cache_env(Path("/c"))},
    )
    cell = lambda src: {"cell_type": "code", "source": src}  # noqa: E731
    plain = {"cells": [cell("y = jax.jit(f)(x)")]}
    assert jupyter_kernels.notebook_env(plain, "ch")["JAX_COMPILATION_CACHE_DIR"] == "/c/ch"
    # A kernel for an unknown chapter would share a folder: no cache.
    assert jupyter_kernels.notebook_env(plain) == {"OTHER": "1"}
    for shows in (
        "t.first_call_s",
        "jax.explain_cache_misses(True)",
        "jax.monitoring.register_event_duration_secs_listener(f)",
        '[e for e in events if e.name == "backend_compile_and_load"]',
        "jax.distributed.initialize()",
    ):
        env = jupyter_kernels.notebook_env({"cells": [cell("x = 1"), cell(shows)]}, "ch")
        assert env == {"OTHER": "1"}, shows
    # Markdown that mentions it does not count: only code does.
    md = {"cells": [{"cell_type": "markdown", "source": "first_call_s"}, cell("x = 1")]}
    assert "JAX_COMPILATION_CACHE_DIR" in jupyter_kernels.notebook_env(md, "ch")


def test_a_chapter_that_counts_compile_logs_starts_from_an_empty_cache(monkeypatch, tmp_path):
    from jaxguide_build import jupyter_kernels

    monkeypatch.setattr(
        jupyter_kernels, "KERNEL_ENV", jupyter_kernels.compilation_cache_env(tmp_path)
    )
    cell = lambda src: {"cell_type": "code", "source": src}  # noqa: E731
    for chapter in ("counts", "plain"):
        (tmp_path / chapter).mkdir()
        (tmp_path / chapter / "jit_f-0-cache").write_bytes(b"entry of an earlier build")
    counts = {"cells": [cell("with jax.log_compiles(True):\n    f(x)")]}
    env = jupyter_kernels.notebook_env(counts, "counts")
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "counts")
    assert not (tmp_path / "counts").exists()  # emptied: every program compiles
    jupyter_kernels.notebook_env({"cells": [cell("f(x)")]}, "plain")
    assert (tmp_path / "plain" / "jit_f-0-cache").exists()  # kept: read back
    # Counting logs and looking at compilation otherwise: no cache at all.
    both = {"cells": [cell("jax.log_compiles(True)"), cell("jax.explain_cache_misses(True)")]}
    assert "JAX_COMPILATION_CACHE_DIR" not in jupyter_kernels.notebook_env(both, "counts")


def test_trim_cache_deletes_the_oldest_entries_first(tmp_path):
    from jaxguide_build import jupyter_kernels

    for i, name in enumerate(("a/old", "b/mid", "a/new")):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 + i, 1000 + i))
    jupyter_kernels.trim_cache(tmp_path, keep_bytes=250)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "a/new",
        "b/mid",
    ]
    jupyter_kernels.trim_cache(tmp_path, keep_bytes=100)
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["new"]
    jupyter_kernels.trim_cache(tmp_path / "missing")  # no folder yet: nothing to do


def test_chapters_are_ordered_launchers_first_then_longest_first_by_their_code(tmp_path):
    from jaxguide_build.execution import longest_first, md_code_bytes

    short = MYST_HEADER + "# S\n\n```{code-cell} ipython3\nx = 1\n```\n\n```python\n" + "y\n" * 99
    long = MYST_HEADER + "# L\n\n```{code-cell} ipython3\n:tags: [hide-input]\nx = 12345\n```\n"
    (tmp_path / "s.md").write_text(short + "```\n")
    (tmp_path / "l.md").write_text(long)
    # Only code cells count: the plain ```python block and the markdown do not.
    assert md_code_bytes(tmp_path / "s.md") == len("x = 1\n")
    assert md_code_bytes(tmp_path / "l.md") == len(":tags: [hide-input]\nx = 12345\n")
    (tmp_path / "t.md").write_text(short + "```\n")  # a tie goes by name
    paths = [tmp_path / n for n in ("t.md", "s.md", "l.md")]
    assert [p.stem for p in sorted(paths, key=longest_first)] == ["l", "s", "t"]
    # A chapter that launches processes of its own goes first, however short its code;
    # the words in prose or a plain block do not count.
    launcher = "```{code-cell} ipython3\nout = distributed.launch('w.py', n_processes=2)\n```\n"
    (tmp_path / "p.md").write_text(MYST_HEADER + "# P\n\n" + launcher)
    (tmp_path / "q.md").write_text(MYST_HEADER + "# Q\n\ndistributed.launch(\n\n" + short + "```\n")
    paths += [tmp_path / "p.md", tmp_path / "q.md"]
    assert [p.stem for p in sorted(paths, key=longest_first)] == ["p", "l", "q", "s", "t"]


def test_failure_report_names_chapter_error_and_cell():
    tb = (
        "An error occurred while executing the following cell:\n------------------\n"
        "x = 1\nprint(1 / 0)\n------------------\n\n\x1b[31mZeroDivisionError\x1b[39m Traceback\n"
        "Cell In[3], line 2\n\x1b[31mZeroDivisionError\x1b[39m: division by zero\n"
    )
    report = execution.failure_report("numpy", tb)
    head, where, *cell, last = report.splitlines()
    assert head == "[jaxguide-build] chapter 'numpy' failed: ZeroDivisionError: division by zero"
    assert where == "  in the cell, at line 2:"
    assert cell == ["        x = 1", "    --> print(1 / 0)"]
    # The error again last: CI shows a long log's tail.
    assert last.endswith("line 2 of the cell above: ZeroDivisionError: division by zero")


def test_failure_report_shows_a_long_cell_around_its_failing_line():
    body = "\n".join(f"v{i} = {i}" for i in range(1, 61))
    tb = (
        f"An error occurred while executing the following cell:\n------------------\n{body}\n"
        "------------------\n\nCell In[7], line 40\nClaimError: claim 'k' does not hold\n"
    )
    lines = execution.failure_report("performance", tb).splitlines()[2:-1]
    assert len(lines) == execution.REPORT_LINES
    assert lines.count("    --> v40 = 40") == 1 and "v1 = 1" not in "\n".join(lines)
    # Without a line number (a kernel that died), the cell's start is shown unmarked.
    dead = tb.replace("Cell In[7], line 40\n", "")
    lines = execution.failure_report("performance", dead).splitlines()
    assert lines[1] == "  in the cell:" and lines[2] == "    v1 = 1"
    assert not any("-->" in line for line in lines)


def test_a_second_build_of_one_folder_waits_for_the_first(tmp_path):
    import subprocess
    import time

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time, types; from jaxguide_build import buildprocess as e;"
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
    buildprocess.lock_build(types.SimpleNamespace(outdir=str(tmp_path / "_build" / "html")), None)
    waited = time.perf_counter() - start
    holder.wait(timeout=30)
    assert waited > 1.0, waited
    buildprocess._LOCK.close()
    # Another output folder does not wait.
    start = time.perf_counter()
    buildprocess.lock_build(types.SimpleNamespace(outdir=str(tmp_path / "other" / "html")), None)
    assert time.perf_counter() - start < 0.5
    buildprocess._LOCK.close()


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


def test_the_builds_garbage_collector_setting_ends_with_the_build(monkeypatch):
    """The execution extension's setup makes full collections rarer for the build (one
    after every 100 middle-generation collections), and the build's end restores the
    setting the process had, so that a program that runs a build keeps its own."""
    import gc

    from jaxguide_build import buildprocess, execution, patches

    monkeypatch.setattr(patches, "install", lambda app, *names: None)
    monkeypatch.setattr(buildprocess, "_AT_EXIT", {gc.freeze})  # no freeze at this test's exit
    handlers: list[tuple[str, object]] = []
    app = types.SimpleNamespace(
        connect=lambda event, fn, priority=500: handlers.append((event, fn)),
        add_config_value=lambda *args: None,
    )
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], 7)
    try:
        execution.setup(app)
        assert gc.get_threshold() == (before[0], before[1], 100)
        finished = [fn for event, fn in handlers if event == "build-finished"]
        assert len(finished) == 1
        finished[0](app, None)
        assert gc.get_threshold() == (before[0], before[1], 7)
    finally:
        gc.set_threshold(*before)


def _worker_sees(_: int) -> tuple[bool, str]:
    """What a pool worker sees of the parent's execution set-up."""
    return bool(jupyter_kernels.KERNEL_ENV), jupyter_kernels.KERNEL_ENV.get(
        "JAXGUIDE_TEST_MARK", ""
    )


# This test process has imported JAX (other tests did), which warns at any fork; the
# build's own process does not import it.
@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")
def test_pool_workers_inherit_the_kernels_environment(monkeypatch):
    """The parallel executor's workers see the parent's kernel environment (strict
    claims among it), whatever the platform's default start method."""
    monkeypatch.setitem(jupyter_kernels.KERNEL_ENV, "JAXGUIDE_TEST_MARK", "set in the parent")
    with execution.POOL_CONTEXT.Pool(1) as pool:
        assert pool.map(_worker_sees, [0]) == [(True, "set in the parent")]
