"""Write the bytecode of the environment's modules that the build and the tests import.

    .venv/bin/python tools/compile_env.py

Where ``PYTHONDONTWRITEBYTECODE`` is set (CI, some sandboxes), a process compiles
every module it imports that has no bytecode yet, and writes none: each chapter's
kernel would compile JAX, Flax and the rest again. ``compileall`` over the whole
environment did that once, but spent most of its minute on modules no process of
the book imports (scipy, mypy, its own tests, SQLAlchemy's dialects, ...). This
imports what the chapters' kernels, the build and the test session import, then
compiles the environment's sources among them, on every core. A module first
imported later (a lexer Sphinx picks by name, say) is compiled by the process that
imports it, as before: slower, never wrong.
"""

from __future__ import annotations

import compileall
import concurrent.futures
import importlib
import multiprocessing
import os
import pkgutil
import sys
import sysconfig
from pathlib import Path

#: What a chapter's kernel (and the notebooks' run, and the tests' JAX processes), the
#: Sphinx build and the test session import: each group imported in a fresh process
#: of its own, side by side.
GROUPS = (
    (
        "jax",
        "jax.numpy",
        "jax.experimental.pallas",
        "flax.nnx",
        "optax",
        "orbax.checkpoint",
        "matplotlib.pyplot",
        "ipykernel.kernelapp",
        "IPython",
        "jaxguide.*",  # the package and every module of it
    ),
    (
        "jupyter_book.cli.main",
        "sphinx.application",
        "sphinx.builders.html",
        "myst_nb.sphinx_ext",
        "sphinx_book_theme",
        "sphinx_exercise",
        "nbclient",
        "jupyter_cache",
    ),
    ("pytest", "bs4", "playwright.sync_api", "PIL.Image"),
)


def sources(modules: tuple[str, ...]) -> list[str]:
    """The ``.py`` files in the environment's site-packages and the book's ``src/`` of
    every module loaded
    after importing ``modules`` (one that fails to import is left out, with a word)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.dont_write_bytecode = False  # importing writes the bytecode: no second compile
    for name in modules:
        try:
            module = importlib.import_module(name.removesuffix(".*"))
            if name.endswith(".*"):
                for sub in pkgutil.iter_modules(module.__path__, f"{module.__name__}."):
                    importlib.import_module(sub.name)
        except Exception as err:  # a missing extra: compile the rest
            print(f"compile_env: not compiled, {name} did not import: {err}", file=sys.stderr)
    # The environment's packages, and the book's own (installed editable from src/).
    roots = (sysconfig.get_paths()["purelib"], str(Path(__file__).resolve().parents[1] / "src"))
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and path.startswith(roots):
            found.add(path)
    return sorted(found)


def _compile(path: str) -> str | None:
    """Compile ``path`` unless its bytecode is up to date (written by the import)."""
    ok = compileall.compile_file(path, quiet=2)
    return None if ok else path


def main() -> int:
    # Fresh processes (spawn): each group's imports are its own.
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(len(GROUPS), mp_context=spawn) as pool:
        paths = sorted({p for found in pool.map(sources, GROUPS) for p in found})
    with concurrent.futures.ProcessPoolExecutor(mp_context=spawn) as pool:
        failed = [e for e in pool.map(_compile, paths, chunksize=64) if e]
    for line in failed:
        print(f"compile_env: {line}", file=sys.stderr)
    print(f"compile_env: bytecode of {len(paths) - len(failed)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
