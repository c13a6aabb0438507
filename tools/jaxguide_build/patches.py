"""Every change the build makes to a third-party library's code, in one table, under one
rule.

Each patch below reaches into a package's internals, so each names the release it was
written and tested on (:data:`PATCHES`: a version prefix such as ``"1.4."``). The rule
for any other release is the same for all of them: :func:`install` stops the build with
a message saying what to re-check, rather than patching code that may have changed.
Each extension of the package installs the patches it relies on, by name. Each row's
override and what it replaces are named in :class:`Patch` (``code``, ``replaces``), and
tests/test_patches.py checks the table against them and against the installers' calls.

Most patches' code is here. A patch with no ``apply`` in the table is one its user puts
in place: an override in a subclass or an extension's own event handler, in the module
that uses it (the table's "code" column), or ``reading_once``, a context manager here
that :mod:`~jaxguide_build.execution` enters around its reads. Installing such a patch
checks the release; its user applies it.

===================================  ===============  ===================  ==================
patch                                package          code                 installed by
===================================  ===============  ===================  ==================
``myst-nb stream merge``             myst-nb          here                 ``jaxguide_build``
``myst-nb cached notebook``          myst-nb          here                 ``jaxguide_build``
``nbclient kernel manager``          nbclient         here                 ``execution``
``jupyter-client kernel manager``    jupyter-client   ``notebook_runs``    ``execution``
``jupyter-cache worker chapter``     jupyter-cache    here                 ``execution``
``jupyter-cache single parse``       jupyter-cache    here                 ``execution``
``jupyter-cache parallel executor``  jupyter-cache    ``execution``        ``execution``
``sphinx figure numbers``            sphinx           ``incremental``      ``incremental``
``sphinx pickled doctrees``          sphinx           ``incremental``      ``incremental``
``sphinx no search index``           sphinx           ``site.search``      ``site``
``sphinx-exercise registry``         sphinx-exercise  ``incremental``      ``incremental``
===================================  ===============  ===================  ==================

**A second rule, for the theme's files: a content check.** The site rewrites two files
of pydata-sphinx-theme, not its code. Each rewrite first checks that the text it
changes is there, as it expects it, and otherwise stops the build with "did the theme
change?": ``site/theme.py`` (:func:`~jaxguide_build.site.theme.patch_theme_script`: the
script's one load-time tab-stop pass) and ``site/icons.py``
(:func:`~jaxguide_build.site.icons.keep_used_icons`: a Font Awesome rule for every icon
a page uses). A content check looks at the very text it rewrites, so it catches a change
in any release and lets through a release that changed nothing there; no release is
named.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager, KernelManager
from nbclient import NotebookClient
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from .environment import installed_version
from .jupyter_kernels import notebook_env
from .notebook_runs import BuildKernelManager


@dataclass(frozen=True)
class Patch:
    """One change to a library's code: what it fixes, the release it was tested on, and
    what to re-check on another release."""

    distribution: str  # the package patched, as pip names it
    tested: str  # the release it was tested on: a version prefix, "1.4."
    fixes: str  # what goes wrong without it, in a few words
    recheck: str  # how to see whether another release still needs it
    apply: Callable[[Sphinx], None] | None = None  # None: its module applies it
    #: The override, by its name in this package (``"notebook_runs.BuildKernelManager"``):
    #: the table's "code" column is its module (tests/test_patches.py checks both).
    code: str = field(default="", kw_only=True)
    #: What of the library it replaces or reads, by full name
    #: (``"jupyter_client.AsyncKernelManager._async_pre_start_kernel"``); an attribute
    #: an instance gets is named by its class, whose source sets it.
    replaces: tuple[str, ...] = field(default=(), kw_only=True)


# ----------------------------------------------------------------------------- myst-nb


def coalesce_streams(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """myst-nb's ``coalesce_streams`` with stream chunks concatenated exactly.

    A kernel sends ``print`` output in chunks whose boundaries depend on when its output
    thread flushes, a race: ``print("a", "b")`` may arrive as ``"a"`` and ``" b\\n"``.
    myst-nb's ``nb_merge_streams`` joins chunks by stripping each and adding a newline,
    so a flush in mid-line split the line on the page and the same code rendered
    differently from build to build. ``\\r``/``\\b`` handling and the stdout-before-stderr
    order are kept from myst-nb's own function, which runs on the merged text.
    """
    from myst_nb.core.utils import coalesce_streams as myst_nb_coalesce

    merged: list[dict[str, Any]] = []
    first: dict[str, dict[str, Any]] = {}
    for output in outputs:
        if output["output_type"] == "stream" and output["name"] in first:
            first[output["name"]]["text"] += output["text"]
            continue
        if output["output_type"] == "stream":
            output = output.copy()
            first[output["name"]] = output
        merged.append(output)
    # One chunk per stream is left: myst-nb's function now only cleans it up.
    return myst_nb_coalesce(merged)


def _patch_streams(app: Sphinx) -> None:
    import myst_nb.core.render as render

    render.coalesce_streams = coalesce_streams


def stable_cell_ids(notebook: dict[str, Any], name: str) -> None:
    """Name each cell ``<page>-<index>`` (as tools/make_notebooks.py names the Colab
    notebooks' cells) in place of the random id the Markdown reader gave it, so the
    executed notebook does not differ from build to build in its ids alone."""
    # nbformat allows 1 to 64 of [a-zA-Z0-9-_] in an id.
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", name)[:50] or "cell"
    for i, cell in enumerate(notebook.get("cells", [])):
        if "id" in cell:
            cell["id"] = f"{prefix}-{i}"


def _patch_cached_notebook(app: Sphinx) -> None:
    """When a page's outputs come from the execution cache, myst-nb renders them but
    writes the *unexecuted* notebook to ``_build/jupyter_execute/<page>.ipynb`` (what
    the page's download button offers): the merged notebook replaces the client's
    reference, not the object myst-nb writes. The cached outputs are merged into that
    object in place instead, and its cells get stable ids (:func:`stable_cell_ids`)."""
    from myst_nb.core.execute.cache import NotebookClientCache

    original = NotebookClientCache.start_client
    if getattr(original, "jaxguide", False):
        return

    def start_client(self: NotebookClientCache) -> None:
        notebook = self._notebook
        original(self)
        if self._notebook is not notebook:  # outputs came from the cache
            notebook.clear()
            notebook.update(self._notebook)
            self._notebook = notebook
        stable_cell_ids(notebook, Path(self._path).stem if self._path else "cell")

    start_client.jaxguide = True  # type: ignore[attr-defined]
    NotebookClientCache.start_client = start_client


# ----------------------------------------------------------------------------- nbclient

#: The chapter a kernel is started for (set by :func:`_executing`), or None.
EXECUTING: str | None = None
_create_kernel_manager = NotebookClient.create_kernel_manager


def create_kernel_manager(self: NotebookClient) -> KernelManager:
    """``NotebookClient.create_kernel_manager`` for the build: a
    :class:`~jaxguide_build.notebook_runs.BuildKernelManager` (where nothing else was asked
    for), with the notebook's environment (:func:`~jaxguide_build.jupyter_kernels.notebook_env`).

    The kernel is stopped at once when its chapter ends (``shutdown_kernel="immediate"``):
    every output has arrived by then, and ipykernel's graceful shutdown can race with its
    own output thread and print a ``ZMQError: Socket operation on non-socket`` traceback
    into the build's log (seen in CI with two chapters in parallel, one failing)."""

    self.shutdown_kernel = "immediate"
    if self.kernel_manager_class is AsyncKernelManager:
        self.kernel_manager_class = BuildKernelManager
    km = _create_kernel_manager(self)
    if isinstance(km, BuildKernelManager):
        km.extra_env = notebook_env(self.nb, EXECUTING)
    return km


def _patch_kernel_manager(app: Sphinx) -> None:
    NotebookClient.create_kernel_manager = create_kernel_manager  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- jupyter-cache


def _executing(execute: Callable[[Any, Any], Any]) -> staticmethod[[Any, Any], Any]:
    """Wrap a jupyter-cache worker's ``execute(project_nb, data)`` so that the kernel it
    starts knows its chapter (a worker executes one notebook at a time)."""

    def wrapper(project_nb: Any, data: Any) -> Any:
        global EXECUTING
        EXECUTING = Path(project_nb.uri).stem
        try:
            return execute(project_nb, data)
        finally:
            EXECUTING = None

    wrapper.jaxguide = True  # type: ignore[attr-defined]
    return staticmethod(wrapper)


def _patch_worker_chapter(app: Sphinx) -> None:
    from jupyter_cache.executors import basic

    for worker in (basic.ExecutionWorkerLocalSerial, basic.ExecutionWorkerLocalMProc):
        if not getattr(worker.execute, "jaxguide", False):
            worker.execute = _executing(worker.execute)


@contextlib.contextmanager
def reading_once() -> Iterator[None]:
    """Within this block, jupyter-cache parses each chapter once. It parses a chapter's
    Markdown into a notebook each time it is asked about it: three times before
    executing it (``list_unexecuted``, again in the executor, then to execute it).
    Each reader call returns a fresh copy of the notebook it parsed, while the file is
    unchanged (same modification time and size)."""
    import jupyter_cache.cache.main as cache_main

    original = cache_main.get_reader
    parsed: dict[tuple[str, str, int, int], Any] = {}

    def get_reader(data: dict[str, Any]) -> Callable[[str], Any]:
        reader = original(data)

        def read(uri: str) -> Any:
            stat = os.stat(uri)
            key = (json.dumps(data, sort_keys=True), str(uri), stat.st_mtime_ns, stat.st_size)
            if key not in parsed:
                parsed[key] = reader(uri)
            return copy.deepcopy(parsed[key])

        return read

    cache_main.get_reader = get_reader
    try:
        yield
    finally:
        cache_main.get_reader = original


# ----------------------------------------------------------------------------- the table

PATCHES: dict[str, Patch] = {
    "myst-nb stream merge": Patch(
        "myst-nb",
        "1.4.",
        "a printed line split in two where the kernel flushed in mid-line",
        "whether two builds still render printed lines alike (tests/test_reproducible.py)",
        _patch_streams,
        code="patches.coalesce_streams",
        replaces=("myst_nb.core.render.coalesce_streams",),
    ),
    "myst-nb cached notebook": Patch(
        "myst-nb",
        "1.4.",
        "the download button's notebook written without its cached outputs, random cell ids",
        "whether cached notebooks are still written without outputs "
        "(tests/test_notebooks.py::test_colab_and_download_buttons)",
        _patch_cached_notebook,
        code="patches._patch_cached_notebook",
        replaces=("myst_nb.core.execute.cache.NotebookClientCache.start_client",),
    ),
    "nbclient kernel manager": Patch(
        "nbclient",
        "0.11.",
        "kernels on TCP ports, without the build's environment",
        "NotebookClient.create_kernel_manager (tests/test_execution.py::"
        "test_build_kernels_use_private_ipc_sockets_and_the_compilation_cache)",
        _patch_kernel_manager,
        code="patches.create_kernel_manager",
        replaces=("nbclient.NotebookClient.create_kernel_manager",),
    ),
    "jupyter-client kernel manager": Patch(
        "jupyter-client",
        "8.",
        "kernels without the build's environment, their socket folders left behind",
        "that AsyncKernelManager still calls _async_pre_start_kernel and "
        "_async_cleanup_resources, which BuildKernelManager overrides "
        "(tests/test_execution.py::"
        "test_build_kernels_use_private_ipc_sockets_and_the_compilation_cache)",
        code="notebook_runs.BuildKernelManager",
        replaces=(
            "jupyter_client.AsyncKernelManager._async_pre_start_kernel",
            "jupyter_client.AsyncKernelManager._async_cleanup_resources",
        ),
    ),
    "jupyter-cache worker chapter": Patch(
        "jupyter-cache",
        "1.0.",
        "a kernel that does not know its chapter (no compilation cache folder of its own)",
        "the execute() of jupyter_cache.executors.basic's workers (tests/test_execution.py)",
        _patch_worker_chapter,
        code="patches._executing",
        replaces=(
            "jupyter_cache.executors.basic.ExecutionWorkerLocalSerial.execute",
            "jupyter_cache.executors.basic.ExecutionWorkerLocalMProc.execute",
        ),
    ),
    "jupyter-cache single parse": Patch(
        "jupyter-cache",
        "1.0.",
        "each chapter parsed three times before it executes",
        "jupyter_cache.cache.main.get_reader (tests/test_patches.py::"
        "test_jupyter_cache_parses_a_chapter_once_per_version)",
        code="patches.reading_once",
        replaces=("jupyter_cache.cache.main.get_reader",),
    ),
    "jupyter-cache parallel executor": Patch(
        "jupyter-cache",
        "1.0.",
        "one core idle at the end of a parallel execution (chapters handed out in threes)",
        "JupyterExecutorLocalMproc.run_and_cache and its private _EXECUTION_WORKER, which "
        "execution.LongestFirst re-implements and calls (tests/test_execution.py::"
        "test_a_failing_chapter_is_reported_once_and_keeps_the_others_cached)",
        code="execution.LongestFirst",
        replaces=(
            "jupyter_cache.executors.basic.JupyterExecutorLocalMproc.run_and_cache",
            "jupyter_cache.executors.basic.JupyterExecutorLocalMproc._EXECUTION_WORKER",
        ),
    ),
    "sphinx figure numbers": Patch(
        "sphinx",
        "7.4.",
        "every chapter's doctree unpickled to number figures at each rebuild",
        "TocTreeCollector.assign_figure_numbers (tests/test_incremental.py::"
        "test_figure_numbers_from_page_skeletons_are_sphinxs_and_follow_an_edit)",
        code="incremental.patch_figure_numbers",
        replaces=("sphinx.environment.collectors.toctree.TocTreeCollector.assign_figure_numbers",),
    ),
    "sphinx pickled doctrees": Patch(
        "sphinx",
        "7.4.",
        "each doctree read from disk a second time while figures are numbered",
        "the private env._pickled_doctree_cache that incremental.skeleton_of reads "
        "(tests/test_incremental.py::"
        "test_figure_numbers_from_page_skeletons_are_sphinxs_and_follow_an_edit)",
        code="incremental.skeleton_of",
        replaces=("sphinx.environment.BuildEnvironment._pickled_doctree_cache",),
    ),
    "sphinx no search index": Patch(
        "sphinx",
        "7.4.",
        "Sphinx's own search index built beside Pagefind's as every page is written",
        "that StandaloneHTMLBuilder.prepare_writing still makes builder.indexer, and that "
        "Sphinx feeds and dumps no index when it is None (site.search.without_sphinx_index; "
        "tests/test_search_index.py::test_sphinx_builds_no_search_index_of_its_own)",
        code="site.search.without_sphinx_index",
        replaces=(
            "sphinx.builders.html.StandaloneHTMLBuilder.prepare_writing",
            "sphinx.builders.html.StandaloneHTMLBuilder.load_indexer",
        ),
    ),
    "sphinx-exercise registry": Patch(
        "sphinx-exercise",
        "1.2.",
        "every chapter's doctree pickled with the environment, through the exercises",
        "what env.sphinx_exercise_registry holds (tests/test_incremental.py::"
        "test_figure_numbers_from_page_skeletons_are_sphinxs_and_follow_an_edit)",
        code="incremental.detach_exercise_nodes",
        replaces=("sphinx_exercise.sphinx_exercise_registry",),
    ),
}


def check(name: str, version: str | None) -> None:
    """The rule for every patch: refuse a release it was not tested on.

    Raises:
        ExtensionError: ``version`` is not the release patch ``name`` was tested on; the
            message says what to re-check.
    """
    patch = PATCHES[name]
    if version is None or not version.startswith(patch.tested):
        raise ExtensionError(
            f"jaxguide_build.patches: the patch '{name}' ({patch.fixes}) was tested on "
            f"{patch.distribution} {patch.tested}x, but {patch.distribution} "
            f"{version or '(none)'} is installed. Check {patch.recheck}; then drop the "
            "patch, or set the release it was tested on in PATCHES in "
            "tools/jaxguide_build/patches.py."
        )


def install(app: Sphinx, *names: str) -> None:
    """Apply the patches ``names``, each after :func:`check` (applying one twice in a
    process changes nothing); for a patch without ``apply``, only :func:`check`."""
    for name in names:
        check(name, installed_version(PATCHES[name].distribution))
    for name in names:
        apply = PATCHES[name].apply
        if apply is not None:
            apply(app)
