"""Run the book's chapters on an accelerator and report what differs from the CPU build.

Usage (from the repository root, inside the environment, on a machine with a GPU or TPU
and the book's CPU build in ``_build/``):

    .venv/bin/python bench/accelerator_check.py                  # every chapter
    .venv/bin/python bench/accelerator_check.py --chapters numpy sharding
    .venv/bin/python bench/accelerator_check.py --smoke          # CPU: a quick check

Each chapter is turned into a notebook as ``make notebooks`` makes its Colab notebook
(``jaxguide_build.notebooks``), executed with nbclient in a fresh kernel (one at a time on
a GPU, two at a time elsewhere, the longest first: ``jaxguide_build.notebook_runs``) with
claims not strict, so a claim that does not hold on the accelerator is reported (its
``✗`` line, as ``jaxguide.page.failed_claims`` reads it) instead of stopping the
chapter. The report (Markdown) has:

* the device JAX found, and the published chip in ``jaxguide.hardware`` it matched;
* the hardware predictions the chapters divide by, against what this device measured
  with ``jaxguide.benchmark``: the dense matmul rate (bfloat16 on an accelerator), the
  memory bandwidth of a copy, and, with several devices, an all-reduce's bandwidth
  against the chip's links;
* per chapter: its status and time, the claims that did not hold, and the cells whose
  outputs differ from the book's CPU build (``_build/jupyter_execute/<chapter>.ipynb``),
  found with ``jaxguide_build.outputs.output_differences``.

``--smoke`` runs one small chapter (``migration``) and the measurements at CPU sizes, and
writes the report: what the tests run. ``--root`` points at another checkout of the book
(its ``book/``, ``_toc.yml``, ``_config.yml`` and ``_build/``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from jaxguide.page import STRICT_ENV, failed_claims
from jaxguide_build import notebook_runs, notebooks  # tools/: the editable install's path
from jaxguide_build.environment import ROOT
from jaxguide_build.outputs import output_differences, printed  # what a reader sees

#: The chapter --smoke runs: the book's shortest execution.
SMOKE_CHAPTER = "migration"
#: device_kind substrings -> the chip's name in jaxguide.hardware (first match wins).
KINDS = (
    ("H200", "H200"),
    ("H100", "H100 SXM"),
    ("TPU v6 lite", "TPU v6e"),
    ("TPU v6e", "TPU v6e"),
    ("TPU v5 lite", "TPU v5e"),
    ("TPU v5e", "TPU v5e"),
    ("TPU v5p", "TPU v5p"),
    ("TPU v5", "TPU v5p"),
    ("TPU v4", "TPU v4"),
)


@dataclass
class ChapterResult:
    name: str
    seconds: float
    error: str = ""
    failed_claims: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    compared: bool = False


def chip_for(kind: str) -> str | None:
    """The ``jaxguide.hardware`` chip name for a JAX ``device_kind``, or None."""
    for needle, name in KINDS:
        if needle.lower() in kind.lower():
            return name
    return None


def measure(smoke: bool) -> dict:
    """Matmul rate, copy bandwidth and (several devices) all-reduce bandwidth on JAX's
    default backend, each the median of jaxguide.benchmark's repeats."""
    import jax
    import jax.numpy as jnp

    import jaxguide
    from jaxguide import hardware

    device = jax.devices()[0]
    accelerator = device.platform != "cpu"
    n = 256 if smoke or not accelerator else 8192
    dtype = jnp.bfloat16 if accelerator else jnp.float32
    a = jnp.ones((n, n), dtype)
    t_mm = jaxguide.benchmark(jax.jit(lambda x, y: x @ y), a, a, repeats=5 if smoke else 20)
    copy_n = 2**20 if smoke or not accelerator else 2**28  # float32 elements
    v = jnp.ones(copy_n, jnp.float32)
    t_copy = jaxguide.benchmark(jax.jit(lambda x: x + 1.0), v, repeats=5 if smoke else 20)
    found = {
        "backend": jax.default_backend(),
        "kind": device.device_kind,
        "count": jax.device_count(),
        "chip": chip_for(device.device_kind),
        "matmul": (f"{n}×{n} {jnp.dtype(dtype).name}", 2 * n**3 / t_mm.median_s),
        "copy": (f"{copy_n * 4 / 2**20:.0f} MiB read + written", 2 * copy_n * 4 / t_copy.median_s),
    }
    chip = hardware.chip(found["chip"]) if found["chip"] else None
    found["published"] = {
        "matmul": chip.flops("bf16") if chip else None,
        "copy": chip.hbm_bandwidth if chip else None,
    }
    if jax.device_count() > 1 and accelerator:
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        k = jax.device_count()
        mesh = jax.make_mesh((k,), ("d",))
        per = 2**24  # float32 elements per device
        g = jax.device_put(jnp.ones((k, per)), NamedSharding(mesh, P("d")))
        reduce = jax.jit(
            jax.shard_map(lambda b: jax.lax.psum(b, "d"), mesh=mesh, in_specs=P("d"), out_specs=P())
        )
        t_ar = jaxguide.benchmark(reduce, g, repeats=10)
        sent = 2 * (k - 1) / k * per * 4
        found["all-reduce"] = (
            f"{per * 4 / 2**20:.0f} MiB per device over {k}",
            sent / t_ar.median_s,
        )
        found["published"]["all-reduce"] = chip.chip_one_way if chip else None
    return found


def run_chapters(
    chapters: list[str], root: Path, timeout: float, parallel: int
) -> list[ChapterResult]:
    """Execute each chapter's notebook in a fresh kernel (``parallel`` at a time, the
    longest first; the kernels get this process's environment) and compare it with the
    CPU build; the results in the order of ``chapters``."""
    with tempfile.TemporaryDirectory(prefix="jaxguide-accelerator-") as folder:
        tmp = Path(folder)
        runner = notebook_runs.copy_runner(tmp)
        runs = []
        for name in chapters:
            nb = tmp / f"{name}.ipynb"
            nb.write_text(notebooks.notebook(name, root))
            command = notebook_runs.runner_command(
                sys.executable,
                runner,
                nb,
                tmp / f"{name}.out.ipynb",
                root / "book",
                timeout=int(timeout),
            )
            runs.append(notebook_runs.Run(name, command, notebook_runs.ipynb_code_bytes(nb)))
        results = {}
        for ended in notebook_runs.run_longest_first(runs, tmp, parallel):
            results[ended.name] = result(ended, tmp / f"{ended.name}.out.ipynb", root)
    return [results[name] for name in chapters]


def result(ended: notebook_runs.Ended, executed: Path, root: Path) -> ChapterResult:
    """What a chapter's run found: its error, the claims that did not hold, and the cells
    whose outputs differ from the CPU build's (``root/_build/jupyter_execute``)."""
    found = ChapterResult(ended.name, ended.seconds)
    if ended.returncode != 0:  # a failing cell: report it, carry on with the others
        found.error = notebook_runs.error_line(ended.log)
    nb = json.loads(executed.read_text()) if executed.is_file() else {"cells": []}
    found.failed_claims = failed_claims(printed(nb))
    built = root / "_build" / "jupyter_execute" / f"{ended.name}.ipynb"
    if built.is_file():
        found.compared = True
        found.differences = output_differences(json.loads(built.read_text()), nb)
    return found


def _ratio(measured: float, published: float | None) -> str:
    return f"{measured / published:.0%}" if published else "no published figure"


def report(found: dict, results: list[ChapterResult], smoke: bool) -> str:
    lines = [
        "# Accelerator check" + (" (smoke run)" if smoke else ""),
        "",
        f"Device: {found['count']} × {found['kind']} (backend `{found['backend']}`); "
        f"published figures: {found['chip'] or 'none in jaxguide.hardware for this kind'}.",
        "",
        "## Hardware predictions against measurements",
        "",
        "| what | measured | published peak | fraction |",
        "|---|---:|---:|---:|",
    ]
    units = {"matmul": "FLOP/s", "copy": "bytes/s", "all-reduce": "bytes/s"}
    for key in ("matmul", "copy", "all-reduce"):
        if key not in found:
            continue
        what, value = found[key]
        pub = found["published"].get(key)
        lines.append(
            f"| {key} ({what}) | {value:.3g} {units[key]} | "
            f"{f'{pub:.3g}' if pub else '—'} | {_ratio(value, pub)} |"
        )
    lines += ["", "## Chapters", ""]
    lines += ["| chapter | status | seconds | claims not holding | outputs differing |"]
    lines += ["|---|---|---:|---:|---:|"]
    for r in results:
        status = f"failed: {r.error}" if r.error else "ran"
        diffs = str(len(r.differences)) if r.compared else "no CPU build to compare"
        lines.append(
            f"| {r.name} | {status} | {r.seconds:.1f} | {len(r.failed_claims)} | {diffs} |"
        )
    for r in results:
        if r.failed_claims or r.differences:
            lines += ["", f"### {r.name}", ""]
            lines += [f"- claim: {c}" for c in r.failed_claims]
            lines += [f"- output: {d}" for d in r.differences]
    return "\n".join(lines) + "\n"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", help="chapters to run (default: all)")
    parser.add_argument("--smoke", action="store_true", help="one small chapter, CPU sizes")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's checkout")
    parser.add_argument(
        "--out", type=Path, help="report path (default <root>/_build/accelerator_check.md)"
    )
    parser.add_argument(
        "--parallel", type=int, help="chapters at once (default 1 on a GPU, else 2)"
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per cell")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / "_toc.yml").is_file() or not (root / "book").is_dir():
        parser.error(f"--root {args.root}: no _toc.yml and book/ there; pass the book's checkout")
    known = notebooks.chapters(root)
    if args.chapters is None:
        args.chapters = [SMOKE_CHAPTER] if args.smoke else known
    unknown = [c for c in args.chapters if c not in known]
    if unknown:
        parser.error(
            f"--chapters: {', '.join(unknown)} not an executed chapter of {root / '_toc.yml'}; "
            f"choose from: {', '.join(known)}"
        )
    if args.parallel is not None and args.parallel < 1:
        parser.error(f"--parallel {args.parallel}: must be at least 1, e.g. 2")
    if not args.timeout > 0:
        parser.error(f"--timeout {args.timeout}: must be a positive number of seconds, e.g. 600")
    args.root = root
    args.out = args.out or root / "_build" / "accelerator_check.md"
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    # Kernels inherit this process's environment: claims warn there, never stop a chapter.
    os.environ.pop(STRICT_ENV, None)
    # This process measures on the accelerator, then only waits for the kernels. By
    # default JAX would take 75% of a GPU's memory here and keep it, leaving a chapter's
    # kernel too little (a CUDA out-of-memory in debugging's first program, seen on an
    # H100). So this process allocates only what it uses; the kernels start after the
    # variable is gone and take memory as a reader's would. XLA reads it once, when JAX
    # starts its backends, which measure() does.
    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    try:
        found = measure(args.smoke)
    finally:
        del os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"]
    parallel = args.parallel or (1 if found["backend"] == "gpu" else 2)
    results = run_chapters(args.chapters, args.root, args.timeout, parallel)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(found, results, args.smoke))
    print(
        f"wrote {args.out}: {len(results)} chapter(s), {sum(bool(r.error) for r in results)} failed"
    )
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
