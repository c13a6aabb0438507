"""Run every chapter against the lowest JAX that jaxguide claims to support.

    .venv/bin/python tools/check_jax_floor.py              # the floor in pyproject.toml
    .venv/bin/python tools/check_jax_floor.py --jax 0.10.1 # another version
    .venv/bin/python tools/check_jax_floor.py --chapters numpy sharding

``pyproject.toml`` gives jax a floor (``jax>=X``), not a pin, so that Colab can keep its
newer JAX; the book itself is built and tested with the one version in ``uv.lock``.
This script checks that the floor is honest. In a fresh temporary folder it builds a
jaxguide wheel from this repository, creates a virtual environment (Python 3.11, with
uv), installs the wheel with ``jax`` and ``jaxlib`` pinned to the version under test
and every other package at its locked version, turns each chapter of ``_toc.yml`` into
a notebook exactly as ``make notebooks`` does (``jaxguide_build.notebooks``), and
executes it with nbclient, two chapters at a time, the longest first
(``jaxguide_build.notebook_runs``; the runner checks that it runs the wheel's jaxguide on
the JAX under test). It prints one line per chapter (pass or fail, with the error and the
time taken) and exits 1 if any chapter failed.

It is not part of ``make test``: it downloads packages (PyPI must be reachable) and
executes every chapter, which takes a while on a small machine. Run it after changing
the floor, and set the floor to the lowest version on which every chapter passes.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import tomllib
from pathlib import Path

from jaxguide_build import notebook_runs, notebooks
from jaxguide_build.environment import ROOT, CommandFailed, wheel_environment

#: The longest a cell may run, in seconds.
CELL_TIMEOUT = 900


def floor() -> str:
    """The X of ``jax>=X`` in pyproject.toml's dependencies."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in deps:
        m = re.fullmatch(r"jax\s*>=\s*([0-9][0-9.]*)", dep.split(";")[0].strip())
        if m:
            return m.group(1)
    raise SystemExit("check_jax_floor: pyproject.toml has no 'jax>=X' dependency.")


def environment(tmp: Path, version: str) -> Path:
    """A venv with the jaxguide wheel, jax/jaxlib == version, the rest as locked."""
    try:
        return wheel_environment(tmp, jax=version)
    except (CommandFailed, FileNotFoundError) as err:
        raise SystemExit(f"check_jax_floor: {err}") from None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--jax",
        default=None,
        help="jax/jaxlib version to test (default: the floor in pyproject.toml)",
    )
    notebook_runs.chapter_options(parser, keep="keep the temporary folder and print its path")
    args = parser.parse_args(argv)

    version = args.jax or floor()
    chapters = notebook_runs.select_chapters(args.chapters, "check_jax_floor")

    with notebook_runs.work_folder("jaxguide-floor-", args.keep) as tmp:
        print(f"jax floor check: jax/jaxlib {version}, {len(chapters)} chapters", flush=True)
        start = time.perf_counter()
        python = environment(tmp, version)
        print(f"environment ready in {time.perf_counter() - start:.0f} s", flush=True)
        work = tmp / "work"  # nothing but the notebooks: no repository paths
        out = tmp / "executed"
        for folder in (work, out):
            folder.mkdir()
        for name in chapters:
            (work / f"{name}.ipynb").write_text(notebooks.notebook(name))
        runner = notebook_runs.copy_runner(tmp)

        env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(tmp)}
        runs = [
            notebook_runs.Run(
                name,
                notebook_runs.runner_command(
                    python,
                    runner,
                    work / f"{name}.ipynb",
                    out / f"{name}.ipynb",
                    work,
                    timeout=CELL_TIMEOUT,
                    installed=True,
                    jax=version,
                ),
                notebook_runs.ipynb_code_bytes(work / f"{name}.ipynb"),
                env,
            )
            for name in chapters
        ]
        results = {}
        for ended in notebook_runs.run_longest_first(runs, tmp, args.parallel, cwd=work):
            results[ended.name] = ended.returncode == 0
            verdict = (
                "pass" if ended.returncode == 0 else f"FAIL  {notebook_runs.error_line(ended.log)}"
            )
            print(f"  {ended.name:<14} {ended.seconds:6.0f} s  {verdict}", flush=True)

        failed = [c for c in chapters if not results[c]]
        print(
            f"jax {version}: {len(chapters) - len(failed)} of {len(chapters)} chapters pass"
            + (f"; failed: {', '.join(failed)}" if failed else "")
        )
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
