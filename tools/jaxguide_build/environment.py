"""The repository, the tools its environment is made with (``make env``), and fresh
environments with jaxguide installed from a wheel, as a reader installs it
(:func:`wheel_environment`: the notebooks run from a wheel in tests/wheelrun.py, and
tools/check_jax_floor.py)."""

from __future__ import annotations

import functools
import importlib.metadata
import re
import shutil
import subprocess
from pathlib import Path

#: The repository's root folder.
ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def installed_version(distribution: str) -> str | None:
    """The installed release of ``distribution`` (as pip names it), or None when it is
    not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def uv() -> str:
    """The path of ``uv``: the one on the PATH, else the one ``make env`` installs into
    ``.tools/``.

    Raises:
        FileNotFoundError: neither exists.
    """
    found = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    if not Path(found).exists():
        raise FileNotFoundError("uv not found: run `make env` first (it installs uv in .tools/)")
    return found


class CommandFailed(RuntimeError):
    """A command that :func:`wheel_environment` or :func:`build_wheel` ran failed; the
    message ends with the end of its error output."""


def _run(*args: str) -> str:
    """Run ``args`` in the repository; its output, or :class:`CommandFailed`."""
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise CommandFailed(f"{' '.join(args[:4])} ... failed:\n{done.stderr[-3000:]}")
    return done.stdout


def build_wheel(out: Path) -> Path:
    """Build jaxguide's wheel from this checkout into the folder ``out``; its path.

    Raises:
        CommandFailed: ``uv build`` failed.
        FileNotFoundError: no uv (:func:`uv`).
    """
    _run(uv(), "build", "--quiet", "--wheel", "--out-dir", str(out))
    return next(out.glob("jaxguide-*.whl"))


def wheel_environment(tmp: Path, jax: str | None = None) -> Path:
    """A fresh virtual environment in ``tmp/venv`` (Python 3.11, made with uv) with the
    jaxguide wheel built from this checkout (into ``tmp/dist``), ipykernel and nbclient,
    and every package at its version in ``uv.lock``; its Python.

    Nothing is byte-compiled at install (uv's ``--compile-bytecode`` compiles every
    module of every package): run the environment's processes without
    ``PYTHONDONTWRITEBYTECODE``, and the first to import a module writes its bytecode
    for the others, for what they import only (bench/reports/make-test-2026-11.md).

    Args:
        tmp: an empty folder of the caller's; it also gets the constraints file.
        jax: a version for jax and jaxlib instead of the locked one. It overrides
            jaxguide's own floor too, so that a version below it can be tried.

    Raises:
        CommandFailed: a step failed (building, resolving or downloading).
        FileNotFoundError: no uv (:func:`uv`).
    """
    wheel = build_wheel(tmp / "dist")
    locked = _run(uv(), "export", "--frozen", "--all-groups", "--no-hashes", "--no-emit-project")
    pins = locked.splitlines()
    override: list[str] = []
    if jax is not None:
        pins = [line for line in pins if not re.match(r"(jax|jaxlib)==", line)]
        pins += [f"jax=={jax}", f"jaxlib=={jax}"]
        overrides = tmp / "overrides.txt"
        overrides.write_text(f"jax=={jax}\njaxlib=={jax}\n", encoding="utf-8")
        override = ["--override", str(overrides)]
    constraints = tmp / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n", encoding="utf-8")
    venv = tmp / "venv"
    _run(uv(), "venv", "--quiet", "--python", "3.11", str(venv))
    python = venv / "bin" / "python"
    _run(
        uv(),
        "pip",
        "install",
        "--quiet",
        "--python",
        str(python),
        "-c",
        str(constraints),
        *override,
        str(wheel),
        "ipykernel",
        "nbclient",
    )
    return python
