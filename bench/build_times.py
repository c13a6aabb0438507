"""Measure how long the book takes to build, and how that compares with the floor.

Usage (from the repository root, inside the environment):

    .venv/bin/python bench/build_times.py            # serial and parallel execution
    .venv/bin/python bench/build_times.py serial     # one mode only

For each mode it copies the book's sources to a temporary folder and measures:

* cold build: no _build folder, every chapter executed;
* no-change rebuild: the same build again;
* one-chapter edit: a code cell appended to one chapter, which alone re-executes;
* floor: the sum of each chapter's own execution time, as recorded by the serial cold
  build's jupyter-cache (what executing the chapters costs, without Sphinx).

and prints a table with the ratio cold / floor. The copy's _config.yml sets `jaxguide_parallel_execution` (tools/jaxguide_fresh.py)
to the mode's value; the book's own default is parallel.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JB = Path(sys.executable).parent / "jupyter-book"
EDITED = "migration"  # the chapter the edit benchmark appends a cell to


def copy_book(dst: Path, parallel: bool) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dst / name)
    shutil.copytree(ROOT / "book", dst / "book", symlinks=True)
    shutil.copytree(ROOT / "tools", dst / "tools")
    cfg = dst / "_config.yml"
    text = cfg.read_text()
    assert "jaxguide_parallel_execution: true" in text
    cfg.write_text(text.replace("jaxguide_parallel_execution: true", f"jaxguide_parallel_execution: {str(parallel).lower()}"))


def build(repo: Path) -> tuple[float, set[str]]:
    start = time.perf_counter()
    proc = subprocess.run([str(JB), "build", "book/"], cwd=repo, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"build failed in {repo}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    log = proc.stdout + proc.stderr
    executed = set(re.findall(r"/book/(\w+)\.md: Executing notebook", log))
    for match in re.findall(r"chapters in parallel: ([\w, ]+)", log):
        executed |= {n.strip() for n in match.split(",")}
    return seconds, executed


def floor(repo: Path) -> tuple[float, dict[str, float]]:
    from jupyter_cache import get_cache

    records = get_cache(repo / "_build" / ".jupyter_cache").list_cache_records()
    per = {Path(r.uri).stem: r.data.get("execution_seconds", 0.0) for r in records}
    return sum(per.values()), per


def measure(mode: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        copy_book(repo, parallel=(mode == "parallel"))
        cold, _ = build(repo)
        total, per = floor(repo)
        nochange, executed_nochange = build(repo)
        chapter = repo / "book" / f"{EDITED}.md"
        chapter.write_text(chapter.read_text() + '\n```{code-cell} ipython3\nprint("benchmark edit")\n```\n')
        edit, executed_edit = build(repo)
    return {
        "mode": mode, "cold": cold, "nochange": nochange, "edit": edit, "floor": total, "per": per,
        "executed_nochange": executed_nochange, "executed_edit": executed_edit,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modes", nargs="*", help="serial, parallel (default: both)")
    modes = parser.parse_args().modes or ["serial", "parallel"]
    if set(modes) - {"serial", "parallel"}:
        parser.error(f"modes are 'serial' and 'parallel', got {modes}")
    results = [measure(m) for m in modes]
    floor_s = results[0]["floor"] if results[0]["mode"] == "serial" else None
    print("\nPer-chapter execution (serial cold build):" if floor_s is not None else "")
    if floor_s is not None:
        for name, s in sorted(results[0]["per"].items()):
            print(f"  {name:12s} {s:6.1f} s")
    print()
    header = f"{'mode':9s} {'cold':>8s} {'no-change':>10s} {'1-chapter edit':>15s} {'floor':>8s} {'cold/floor':>11s}"
    print(header)
    print("-" * len(header))
    for r in results:
        base = floor_s if floor_s is not None else r["floor"]
        print(f"{r['mode']:9s} {r['cold']:7.1f}s {r['nochange']:9.1f}s {r['edit']:14.1f}s {base:7.1f}s {r['cold'] / base:10.2f}x")
    for r in results:
        print(f"{r['mode']}: re-executed on no-change rebuild: {sorted(r['executed_nochange']) or 'nothing'}; "
              f"after editing {EDITED}: {sorted(r['executed_edit'])}")


if __name__ == "__main__":
    main()
