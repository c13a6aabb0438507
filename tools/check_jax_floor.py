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
a notebook exactly as ``make notebooks`` does (jupytext), and executes it with
nbclient, two chapters at a time. It prints one line per chapter (pass or fail, with
the error and the time taken) and exits 1 if any chapter failed.

It is not part of ``make test``: it downloads packages (PyPI must be reachable) and
executes every chapter, which takes a while on a small machine. Run it after changing
the floor, and set the floor to the lowest version on which every chapter passes.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import make_notebooks  # tools/, the folder of this script
from jaxguide_build import jupyter_kernels
from jaxguide_build.environment import ROOT, CommandFailed, wheel_environment
from jaxguide_build.outputs import ANSI

RUNNER = (
    jupyter_kernels.RUN_NOTEBOOK
    + """
import sys, nbformat, jax, jaxguide
assert "site-packages" in jaxguide.__file__, jaxguide.__file__
assert jax.__version__ == sys.argv[3], (jax.__version__, sys.argv[3])
nb = nbformat.read(sys.argv[1], as_version=4)
run_notebook(nb, sys.argv[2], timeout=900)
"""
)


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


def error_line(output: str) -> str:
    """The most telling line of a failed run: the last line naming an error."""
    output = ANSI.sub("", output)  # nbclient colours tracebacks
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    named = [line for line in lines if re.search(r"\b\w*(Error|Exception)\b", line)]
    return textwrap.shorten((named or lines or ["(no output)"])[-1], 160)


def execute(
    commands: dict[str, list[str]], logs: Path, parallel: int, **popen: Any
) -> Iterator[tuple[str, int, float, str]]:
    """Run each chapter's command, ``parallel`` at a time, with its output in
    ``logs/<chapter>.log``; yield (chapter, exit status, seconds, output) as each ends."""
    pending = list(commands)
    running: dict[str, tuple[subprocess.Popen[str], float, IO[str]]] = {}
    while pending or running:
        while pending and len(running) < parallel:
            name = pending.pop(0)
            log: IO[str] = open(logs / f"{name}.log", "w")  # a file: a pipe could fill and block
            proc = subprocess.Popen(
                commands[name], stdout=log, stderr=subprocess.STDOUT, text=True, **popen
            )
            running[name] = (proc, time.perf_counter(), log)
        time.sleep(0.5)
        for name, (proc, began, log) in list(running.items()):
            if proc.poll() is None:
                continue
            log.close()
            del running[name]
            out = (logs / f"{name}.log").read_text(errors="replace")
            yield name, proc.returncode, time.perf_counter() - began, out


def chapter_options(parser: argparse.ArgumentParser, keep: str) -> None:
    """The options of both JAX checks (this one and check_jax_newest.py): ``--chapters``,
    ``--parallel`` (at least 1) and ``--keep`` (``keep``: what it keeps)."""

    def at_least_one(text: str) -> int:
        if not text.strip().isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text}")
        return int(text)

    parser.add_argument(
        "--chapters", nargs="*", default=None, help="chapters to run (default: every chapter)"
    )
    parser.add_argument(
        "--parallel", type=at_least_one, default=2, help="chapters executed at once (default 2)"
    )
    parser.add_argument("--keep", action="store_true", help=keep)


def select_chapters(wanted: list[str] | None, program: str) -> list[str]:
    """The chapters to run (``wanted``, or every one), in the book's order; an unknown
    name stops ``program`` with the choices."""
    chapters = make_notebooks.chapters()
    if wanted:
        unknown = sorted(set(wanted) - set(chapters))
        if unknown:
            raise SystemExit(f"{program}: unknown chapters {unknown}; choose from {chapters}.")
        chapters = [c for c in chapters if c in wanted]
    return chapters


@contextlib.contextmanager
def work_folder(prefix: str, keep: bool, parent: Path | None = None) -> Iterator[Path]:
    """A fresh temporary folder (in ``parent``, else the system's), removed afterwards,
    or kept and its path printed if ``keep`` (both JAX checks' ``--keep``)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield tmp
    finally:
        if keep:
            print("kept:", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--jax",
        default=None,
        help="jax/jaxlib version to test (default: the floor in pyproject.toml)",
    )
    chapter_options(parser, keep="keep the temporary folder and print its path")
    args = parser.parse_args(argv)

    version = args.jax or floor()
    chapters = select_chapters(args.chapters, "check_jax_floor")

    with work_folder("jaxguide-floor-", args.keep) as tmp:
        print(f"jax floor check: jax/jaxlib {version}, {len(chapters)} chapters", flush=True)
        start = time.perf_counter()
        python = environment(tmp, version)
        print(f"environment ready in {time.perf_counter() - start:.0f} s", flush=True)
        work = tmp / "work"  # nothing but the notebooks: no repository paths
        work.mkdir()
        for name in chapters:
            (work / f"{name}.ipynb").write_text(make_notebooks.notebook(name))
        (tmp / "runner.py").write_text(RUNNER)

        python_args = [str(python), str(tmp / "runner.py")]
        commands = {
            name: [*python_args, str(work / f"{name}.ipynb"), str(work), version]
            for name in chapters
        }
        env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(tmp)}
        results = {}
        for name, code, seconds, out in execute(commands, tmp, args.parallel, cwd=work, env=env):
            results[name] = code == 0
            verdict = "pass" if code == 0 else f"FAIL  {error_line(out)}"
            print(f"  {name:<14} {seconds:6.0f} s  {verdict}", flush=True)

        failed = [c for c in chapters if not results[c]]
        print(
            f"jax {version}: {len(chapters) - len(failed)} of {len(chapters)} chapters pass"
            + (f"; failed: {', '.join(failed)}" if failed else "")
        )
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
