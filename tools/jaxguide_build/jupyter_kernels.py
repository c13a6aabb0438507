"""The kernels the build starts to execute its chapters, and what they get.

:class:`~jaxguide_build.notebook_runs.BuildKernelManager` (which ``nbclient.NotebookClient``
uses for every kernel of the build: :mod:`jaxguide_build.patches`) talks to the build over
IPC sockets in a fresh private folder each (``tempfile.mkdtemp``), not over TCP: no port
is opened, two builds never share a socket, and ipykernel has no reason to warn that TCP
is unencrypted. It lives in :mod:`~jaxguide_build.notebook_runs`, which runs notebooks
outside the build with it and stands alone (it is copied into environments without this
package). Its kernels get :data:`KERNEL_ENV` (:func:`kernel_settings`): strict claims, and
JAX's persistent compilation cache in a folder of the chapter's own under the build's
``_build/.jax_cache``, through their environment only (the chapters do not mention it,
so a Colab reader never has it). A chapter whose code looks at compilation itself, or
runs several JAX processes at once (:data:`CACHE_OFF`), runs without the cache; one
that counts compile log lines (:data:`CACHE_FRESH`) starts from an empty one
(:func:`notebook_env`).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .outputs import source

if TYPE_CHECKING:  # the Makefile and tests/wheelrun.py import this module without Sphinx
    from sphinx.application import Sphinx
    from sphinx.config import Config

#: Code that reads compilation itself: compile times (a benchmark's first call), compile
#: logs, compile events. A persistent-cache hit skips the compilation these show, so a
#: chapter whose code matches runs without the cache. So does a chapter that runs
#: several JAX processes at once (``jax.distributed``): JAX writes a cache entry in
#: place, and a process reading it at that moment would warn in the output.
CACHE_OFF = re.compile(
    r"first_call|explain_cache_misses|jax\.monitoring|compilation_cache|backend_compile"
    r"|jax\.distributed"
)

#: Code that counts JAX's compile log lines (``jax.log_compiles``) and shows no compile
#: time but the first step's (``train.fit``): JAX logs "Compiling ..." when it lowers a
#: program, before it looks in the persistent cache, so the cache changes no line such
#: code counts. Such a chapter gets the cache in a folder emptied before each of its
#: executions in the build (:func:`notebook_env`): every program is compiled there, as in
#: a reader's kernel (one compiled twice is read back the second time, which changes no
#: count), and the notebooks' run from a wheel (tests/wheelrun.py) reads them back.
CACHE_FRESH = re.compile(r"log_compiles")

#: The build's JAX compilation cache: this folder, next to the build's ``html/``, holds a
#: folder per chapter (:func:`kernel_settings`; tests/bookbuild.py reads it back).
CACHE_FOLDER = ".jax_cache"


#: Environment the build adds to its kernels (set by :func:`kernel_settings`).
KERNEL_ENV: dict[str, str] = {}


def compilation_cache_env(folder: Path) -> dict[str, str]:
    """The environment that gives a kernel JAX's persistent compilation cache in
    ``folder``, caching every program however small or fast to compile.

    By default JAX leaves a program's metadata out of the cache key: the ``op_name`` of
    each instruction, with its ``named_scope`` and function names. A chapter edited to
    rename a scope would then load the executable compiled before the edit and print its
    old names. So the key includes the metadata, but no source locations
    (``JAX_TRACEBACK_IN_LOCATIONS_LIMIT=0``): they name the file IPython writes each cell
    to, in a folder named after the kernel's process id, and would make every run miss.
    Without them a compiled program's text is shorter (no ``FileNames``/``StackFrames``
    tables) than a reader's kernel prints, so a chapter that shows compilation
    (:data:`CACHE_OFF`) gets none of these settings (:func:`notebook_env`)."""
    return {
        "JAX_COMPILATION_CACHE_DIR": str(folder),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        "JAX_COMPILATION_CACHE_INCLUDE_METADATA_IN_KEY": "1",
        "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0",
        # Not JAX_COMPILATION_CACHE_MAX_SIZE: JAX needs `filelock` for it, and without
        # it warns in the cell's output and caches nothing. trim_cache bounds it instead.
    }


def trim_cache(folder: Path, keep_bytes: int = 1 << 30) -> None:
    """Delete the oldest entries of a compilation cache folder until it holds at most
    ``keep_bytes`` (entries of programs no chapter compiles any more pile up)."""
    if not folder.is_dir():
        return
    entries = sorted(
        (p.stat().st_mtime, p.stat().st_size, p) for p in folder.rglob("*") if p.is_file()
    )
    total = sum(size for _, size, _ in entries)
    for _, size, path in entries:
        if total <= keep_bytes:
            break
        path.unlink(missing_ok=True)
        total -= size


def notebook_env(
    nb: dict[str, Any],
    chapter: str | None = None,
    env: dict[str, str] | None = None,
    *,
    empty_fresh: bool = True,
) -> dict[str, str]:
    """What of ``env`` (by default :data:`KERNEL_ENV`) a notebook's kernel gets: all of
    it, with the compilation cache in a folder of the chapter's own (two chapters
    executing at once never write or read one entry at the same moment: JAX writes
    entries in place), or none of the cache if the notebook's code looks at compilation
    (:data:`CACHE_OFF`) or the chapter is not known. The folder of a chapter whose code
    matches :data:`CACHE_FRESH` is emptied here, before its kernel starts, unless
    ``empty_fresh`` is False (the notebooks' run from a wheel, tests/wheelrun.py, reads
    back what the build compiled there).

    ``nb`` is a notebook as ``nbformat`` or ``json`` reads it (a cell's source is a
    string or a list of lines)."""
    code = "\n".join(source(c) for c in nb.get("cells", []) if c.get("cell_type") == "code")
    env = dict(KERNEL_ENV if env is None else env)
    if CACHE_OFF.search(code) or ("JAX_COMPILATION_CACHE_DIR" in env and not chapter):
        return {k: v for k, v in env.items() if k not in compilation_cache_env(Path())}
    if "JAX_COMPILATION_CACHE_DIR" in env and chapter:
        folder = Path(env["JAX_COMPILATION_CACHE_DIR"]) / chapter
        if empty_fresh and CACHE_FRESH.search(code):
            shutil.rmtree(folder, ignore_errors=True)
        env["JAX_COMPILATION_CACHE_DIR"] = str(folder)
    return env


def fingerprinted_env(nb: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, str]:
    """What :func:`notebook_env` gives a notebook's kernel (of ``env``, by default
    :data:`KERNEL_ENV`), with the compilation cache's folder named by what it is rather
    than by its path: the part of a chapter's environment its outputs can depend on, for
    :func:`jaxguide_build.staleness.fingerprint`. The path is this checkout's, and a
    build folder copied from another checkout keeps its outputs.

    >>> env = {"JAXGUIDE_STRICT_CLAIMS": "1", **compilation_cache_env(Path("/b/.jax_cache"))}
    >>> nb = {"cells": [{"cell_type": "code", "source": "jax.log_compiles()"}]}
    >>> fingerprinted_env(nb, env)["JAX_COMPILATION_CACHE_DIR"]
    "the chapter's own, emptied first"
    >>> nb = {"cells": [{"cell_type": "code", "source": "jax.monitoring"}]}  # CACHE_OFF
    >>> fingerprinted_env(nb, env)
    {'JAXGUIDE_STRICT_CLAIMS': '1'}
    """
    settings = notebook_env(nb, "chapter", env, empty_fresh=False)
    if "JAX_COMPILATION_CACHE_DIR" in settings:
        code = "\n".join(source(c) for c in nb.get("cells", []) if c.get("cell_type") == "code")
        fresh = ", emptied first" if CACHE_FRESH.search(code) else ""
        settings["JAX_COMPILATION_CACHE_DIR"] = f"the chapter's own{fresh}"
    return settings


def kernel_settings(app: Sphinx, config: Config) -> None:
    """``config-inited``: the environment of the build's kernels (:data:`KERNEL_ENV`), with
    the compilation cache in this build's own output folder (``jaxguide_compilation_cache``)."""
    from jaxguide.page import STRICT_ENV  # here: the Makefile's --cache-env needs none

    KERNEL_ENV.clear()
    # A claim that does not hold (jaxguide.claim) stops the build at its cell; in Colab it
    # prints what differs and carries on.
    KERNEL_ENV[STRICT_ENV] = "1"
    if config.jaxguide_compilation_cache:
        folder = Path(app.outdir).parent / CACHE_FOLDER
        trim_cache(folder)
        KERNEL_ENV.update(compilation_cache_env(folder))


def main(argv: list[str] | None = None) -> None:
    """``python -m jaxguide_build.jupyter_kernels --cache-env FOLDER``: print
    :func:`compilation_cache_env` for ``FOLDER`` as ``NAME=value`` words, for a shell
    command's environment (the Makefile's ``make unit`` runs the unit tests with it)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m jaxguide_build.jupyter_kernels")
    parser.add_argument("--cache-env", type=Path, required=True, metavar="FOLDER")
    folder = parser.parse_args(argv).cache_env
    print(" ".join(f"{k}={v}" for k, v in compilation_cache_env(folder.resolve()).items()))


if __name__ == "__main__":
    main()
