"""Where a chapter's execution time goes: kernel start, imports, JAX tracing and
lowering, XLA compilation, and the rest (running the programs, Python, plotting).

Usage (from the repository root, inside the environment):

    .venv/bin/python bench/chapter_profile.py training scaling
    .venv/bin/python bench/chapter_profile.py training --cache /tmp/jc   # twice: warm

Each chapter is executed as the build executes it (nbclient, a fresh kernel, the
chapter's folder as working directory), with two cells added around its own: a first
one that imports what the chapter imports, timing each, and registers a listener for
JAX's compile events (``jax.monitoring``: ``jaxpr_trace_duration``,
``jaxpr_to_mlir_module_duration``, ``backend_compile_duration``), summed per cell; and a
last one that reports them. Nothing of the book is written. ``--cache DIR`` gives the
kernel JAX's persistent compilation cache in DIR, as the build does (run it twice to
see a rebuild); ``--save DIR`` keeps the executed notebooks (to compare outputs with
tests/bookcheck.py's ``output_differences``). Processes a chapter starts itself (the multiprocess chapter's JAX
processes) are not seen by the listener: their time counts as "the rest".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import nbformat
from myst_nb.core.read import read_myst_markdown_notebook
from nbclient import NotebookClient

from jaxguide_build import jupyter_kernels, patches
from jaxguide_build.environment import ROOT
from jaxguide_build.jupyter_kernels import compilation_cache_env
from jaxguide_build.staleness import code_of, imports_of

EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}

FIRST = """\
import json as _j, time as _t
_jg = {{"imports": {{}}, "cells": [], "now": {{"trace": 0.0, "lower": 0.0, "compile": 0.0, "n": 0}}, "names": {{}}}}
for _m in {modules!r}:
    _s = _t.perf_counter()
    try:
        __import__(_m)
    except ImportError:  # a module the chapter writes itself, imported later
        continue
    _jg["imports"][_m] = _t.perf_counter() - _s
# (spelt, and the event names passed in the environment, so that the build's test for
# code that shows compilation does not match this cell and --cache keeps the cache)
_mon = getattr(__import__("jax"), "monitoring")
_jg_events = _j.loads(__import__("os").environ["JAXGUIDE_PROFILE_EVENTS"])

def _jg_listen(event, seconds, **kw):
    name = _jg_events.get(event)
    if name:
        _jg["now"][name] += seconds
        _jg["now"]["n"] += name == "compile"
        if name == "compile":
            fun = str(kw.get("fun_name", "?"))
            n, s = _jg["names"].get(fun, (0, 0.0))
            _jg["names"][fun] = (n + 1, s + seconds)

_mon.register_event_duration_secs_listener(_jg_listen)

def _jg_cell(result):
    _jg["cells"].append(dict(_jg["now"]))

get_ipython().events.register("post_run_cell", _jg_cell)
"""

LAST = 'print("JGPROFILE" + _j.dumps(_jg))'


def profile(chapter: str, cache: str | None, save: str | None = None) -> dict:
    path = ROOT / "book" / f"{chapter}.md"
    source = path.read_text()
    nb = read_myst_markdown_notebook(source)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    cached = bool(cache) and not jupyter_kernels.CACHE_OFF.search(code)
    top, _ = imports_of(code_of(source))
    # jax first (the others import it), then the chapter's other third-party imports.
    stdlib = set(sys.stdlib_module_names) | {"jaxguide"}
    modules = ["jax"] + sorted(m for m in top - stdlib if m != "jax")
    first = nbformat.v4.new_code_cell(FIRST.format(modules=modules))
    nb.cells = [first] + nb.cells + [nbformat.v4.new_code_cell(LAST)]
    # The build's kernels: IPC sockets, and the cache where the build would use it.
    jupyter_kernels.KERNEL_ENV.clear()
    jupyter_kernels.KERNEL_ENV.update(compilation_cache_env(Path(cache).resolve()) if cache else {})
    jupyter_kernels.KERNEL_ENV["JAXGUIDE_PROFILE_EVENTS"] = json.dumps(EVENTS)
    assert not jupyter_kernels.CACHE_OFF.search(first.source), "the profile cell hides the cache"
    NotebookClient.create_kernel_manager = patches.create_kernel_manager  # type: ignore[method-assign]
    patches.EXECUTING = chapter
    client = NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.time()
    client.execute()
    total = time.time() - start
    if save:
        Path(save).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, Path(save) / f"{chapter}.ipynb")
    stats = None
    for out in nb.cells[-1].get("outputs", []):  # the LAST cell
        if "JGPROFILE" in out.get("text", ""):
            stats = json.loads(out["text"].split("JGPROFILE", 1)[1])
    assert stats is not None, "the profile cell printed nothing"

    def span(cell: nbformat.NotebookNode) -> tuple[float, float]:
        t = cell.metadata.get("execution", {})
        from datetime import datetime

        parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()  # noqa: E731
        return parse(t["iopub.execute_input"]), parse(t["shell.execute_reply"])

    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    first_start, first_end = span(code_cells[0])
    cells = code_cells[1:-1]
    cell_s = [span(c)[1] - span(c)[0] for c in cells]
    # stats["cells"][i] is the running total after cell i (0: the imports cell).
    totals = stats["cells"]
    per_cell = []
    for i, cell in enumerate(cells):
        before, after = totals[i], totals[i + 1]
        jax_s = sum(after[k] - before[k] for k in ("trace", "lower", "compile"))
        per_cell.append((cell_s[i], jax_s, after["n"] - before["n"], cell.source.splitlines()[:1]))
    last = totals[len(cells)]
    imports = sum(stats["imports"].values())
    run_cells = sum(cell_s)
    jax_total = last["trace"] + last["lower"] + last["compile"]
    return {
        "chapter": chapter,
        "total": total,
        "kernel_start": first_start - start,
        "imports": imports,
        "import_detail": stats["imports"],
        "trace": last["trace"],
        "lower": last["lower"],
        "compile": last["compile"],
        "compilations": last["n"],
        "rest": run_cells - jax_total,
        "cells": per_cell,
        "first_cell_overhead": (first_end - first_start) - imports,
        "cache": "yes" if cached else "no",
        "names": stats.get("names", {}),
    }


def table(results: list[dict]) -> str:
    head = "| chapter | compilation cache | total | kernel start | imports | tracing | lowering | XLA compile (n) | rest |"
    rows = [head, "|" + "---|" * 9]
    for r in results:
        rows.append(
            f"| {r['chapter']} | {r['cache']} | {r['total']:.1f} s | {r['kernel_start']:.1f} s | {r['imports']:.1f} s "
            f"| {r['trace']:.1f} s | {r['lower']:.1f} s | {r['compile']:.1f} s ({r['compilations']}) "
            f"| {r['rest']:.1f} s |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="+")
    parser.add_argument("--cache", help="folder for JAX's persistent compilation cache")
    parser.add_argument("--top", type=int, default=6, help="slowest cells to list per chapter")
    parser.add_argument("--save", help="folder to write the executed notebooks to")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.1f}")
    results = [profile(c, args.cache, args.save) for c in args.chapters]
    print(f"load after: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} cores)\n")
    print(table(results))
    for r in results:
        print(
            f"\n{r['chapter']}: imports "
            + ", ".join(f"{m} {s:.1f} s" for m, s in r["import_detail"].items())
        )
        print(
            "  slowest cells (seconds in the cell, of which tracing+lowering+compiling, compilations):"
        )
        for s, j, n, first in sorted(r["cells"], key=lambda c: -c[0])[: args.top]:
            print(f"  {s:6.1f} s {j:6.1f} s {n:4d}  {(first or [''])[0][:60]}")
        print("  most compiled functions (compilations, XLA compile seconds):")
        for fun, (n, s) in sorted(r["names"].items(), key=lambda kv: -kv[1][1])[: args.top * 2]:
            print(f"  {n:5d} {s:7.1f} s  {fun}")


if __name__ == "__main__":
    main()
