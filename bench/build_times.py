"""Measure how long the book takes to build, and how that compares with the floor.

Usage (from the repository root, inside the environment):

    .venv/bin/python bench/build_times.py              # parallel execution (the default)
    .venv/bin/python bench/build_times.py --serial     # serial execution as well
    .venv/bin/python bench/build_times.py --quick      # cold, no-change and migration edit only

It copies the book's sources to a temporary folder and measures, for each mode:

* cold build: no _build folder, every chapter executed;
* no-change rebuild: the same build again (goal: at most 4 s);
* one-chapter edit: a code cell appended to ``migration``, which alone re-executes
  (goal: at most that chapter's execution + 3 s);
* the same edit of ``training`` with JAX's persistent compilation cache (filled by the
  cold build, as any earlier build fills it) and without it
  (``jaxguide_compilation_cache: false`` in the copy's _config.yml);
* floor: the sum of the chapters' own execution times, as recorded by the cold build's
  jupyter-cache (what executing the chapters costs, without Sphinx).

For each build it gives the wall time, the CPU time of the build and its kernels
(user + sys), and the load average before it: the machine may be shared, and wall
times then say more about the neighbours than about the build. It prints a Markdown
table. The default run builds the book from cold and then once per edit, so it takes
a few cold builds' time; ``--serial`` adds a cold build executing one chapter at a
time, and ``--quick`` leaves out the two ``training`` edits.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jaxguide_build.environment import ROOT

JB = Path(sys.executable).parent / "jupyter-book"
# Log lines a build must not print (issue 16), as tests/bookcheck.py (NOISE) checks them.
NOISE = (
    "Kernel is running over TCP",
    "will overwrite data",
    "Please also report this",
    "ersistent compilation cache",
    "PERSISTENT COMPILATION CACHE",
)
EDITED = "migration"  # a short chapter: the one-chapter edit
SLOW = "training"  # a slow one, with and without the compilation cache


def copy_book(dst: Path, parallel: bool) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dst / name)
    shutil.copytree(ROOT / "book", dst / "book", symlinks=True)
    shutil.copytree(ROOT / "tools", dst / "tools")
    # The chapters include code from src/ (literalinclude); the kernels import the
    # installed jaxguide, which is this checkout's.
    shutil.copytree(
        ROOT / "src", dst / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    set_config(dst, "jaxguide_parallel_execution", parallel)


def set_config(repo: Path, key: str, value: bool) -> None:
    cfg = repo / "_config.yml"
    text, n = re.subn(
        rf"^(\s*{key}:) \w+$", rf"\1 {str(value).lower()}", cfg.read_text(), flags=re.M
    )
    assert n == 1, f"{key} is not set in _config.yml"
    cfg.write_text(text)


def build(repo: Path) -> dict:
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(JB), "build", "book/"], cwd=repo, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"build failed in {repo}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    log = proc.stdout + proc.stderr
    executed = set(re.findall(r"/book/(\w+)\.md: Executing notebook", log))
    for match in re.findall(r"executing \d+ chapters?(?: in parallel)?: ([\w, ]+)", log):
        executed |= {n.strip() for n in match.split(",")}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    noise = sorted({n for n in NOISE if n in log})
    return {"wall": seconds, "cpu": cpu, "load": load, "executed": executed, "noise": noise}


def executions(repo: Path) -> dict[str, float]:
    from jupyter_cache import get_cache

    records = get_cache(repo / "_build" / ".jupyter_cache").list_cache_records()
    return {Path(r.uri).stem: r.data.get("execution_seconds", 0.0) for r in records}


def edit(repo: Path, chapter: str, n: int) -> None:
    path = repo / "book" / f"{chapter}.md"
    path.write_text(
        path.read_text() + f'\n```{{code-cell}} ipython3\nprint("benchmark edit {n}")\n```\n'
    )


def measure(mode: str, quick: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="jaxguide-bench-") as tmp:
        repo = Path(tmp)
        copy_book(repo, parallel=(mode == "parallel"))
        rows = {"cold": build(repo)}
        per = executions(repo)
        rows["no-change"] = build(repo)
        edit(repo, EDITED, 1)
        rows[f"edit {EDITED}"] = build(repo)
        rows[f"edit {EDITED}"]["chapter"] = executions(repo)[EDITED]
        if not quick:
            edit(repo, SLOW, 1)
            rows[f"edit {SLOW}, compilation cache"] = build(repo)
            rows[f"edit {SLOW}, compilation cache"]["chapter"] = executions(repo)[SLOW]
            set_config(repo, "jaxguide_compilation_cache", False)
            edit(repo, SLOW, 2)
            rows[f"edit {SLOW}, no compilation cache"] = build(repo)
            rows[f"edit {SLOW}, no compilation cache"]["chapter"] = executions(repo)[SLOW]
    return {"mode": mode, "rows": rows, "per": per, "floor": sum(per.values())}


def markdown(results: list[dict]) -> str:
    lines = [
        "| mode | build | wall | CPU (build + kernels) | load before | chapter's execution | re-executed |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        for name, row in r["rows"].items():
            chapter = f"{row['chapter']:.1f} s" if "chapter" in row else ""
            ran = (
                ", ".join(sorted(row["executed"]))
                if name != "cold"
                else f"all {len(row['executed'])}"
            )
            lines.append(
                f"| {r['mode']} | {name} | {row['wall']:.1f} s | {row['cpu']:.1f} s | {row['load']:.1f} "
                f"| {chapter} | {ran or 'nothing'} |"
            )
        lines.append(
            f"| {r['mode']} | sum of the cold build's chapter executions{' (two at a time)' if r['mode'] == 'parallel' else ''} | {r['floor']:.1f} s | | | "
            f"| cold / floor = {r['rows']['cold']['wall'] / r['floor']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--serial", action="store_true", help="also measure serial chapter execution"
    )
    parser.add_argument("--quick", action="store_true", help=f"skip the {SLOW} edits")
    args = parser.parse_args()
    modes = ["parallel"] + (["serial"] if args.serial else [])
    import sphinx

    if (
        os.environ.get("PYTHONDONTWRITEBYTECODE")
        and not (Path(sphinx.__file__).parent / "__pycache__").is_dir()
    ):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set and .venv holds no compiled bytecode, so every build "
            "and every kernel compiles the sources of Sphinx, JAX, ... again (seconds of CPU per "
            "build). Run `.venv/bin/python -m compileall -q .venv/lib` first to measure the build itself."
        )
    start = time.perf_counter()
    results = [measure(m, args.quick) for m in modes]
    print(f"\nPer-chapter execution in the {modes[0]} cold build (jupyter-cache's record):")
    for name, s in sorted(results[0]["per"].items(), key=lambda kv: -kv[1]):
        print(f"  {name:14s} {s:6.1f} s")
    print(f"\n{os.cpu_count()} cores; benchmark took {time.perf_counter() - start:.0f} s.\n")
    print(markdown(results))
    noisy = {
        f"{r['mode']} {name}": row["noise"]
        for r in results
        for name, row in r["rows"].items()
        if row["noise"]
    }
    print(f"\nNoise in the build logs: {noisy or 'none'}")
    for r in results:
        nochange = r["rows"]["no-change"]
        edited = r["rows"][f"edit {EDITED}"]
        print(
            f"\n{r['mode']}: no-change rebuild {nochange['wall']:.1f} s (goal <= 4 s); "
            f"{EDITED} edit {edited['wall']:.1f} s = its execution {edited['chapter']:.1f} s "
            f"+ {edited['wall'] - edited['chapter']:.1f} s (goal <= + 3 s)"
        )


if __name__ == "__main__":
    main()
