"""The book's build tooling (not part of the ``jaxguide`` package): the Sphinx extension
that Jupyter Book loads (``_config.yml``: ``local_extensions``), and the helpers that the
scripts in ``tools/``, the tests and ``bench/`` share.

Each module does one job. In the order a build meets them:

==================  =================  =========================================================
module              build phase        job
==================  =================  =========================================================
``patches``         setup              the table of every patch of a third-party library, one
                                       rule for untested releases (the build stops and says
                                       what to check), and most patches' code
``buildprocess``    setup,             one build per output folder (a lock); the build
                    config-inited      process's garbage collection
``execution``       env-get-outdated   before Sphinx reads the pages: execute what has no
                                       cached outputs, in parallel; report a failure, or
                                       each chapter's time. Its docstring has the call
                                       sequence of a chapter's execution
``jupyter_kernels`` config-inited      the Jupyter kernels that execute: their environment
                                       (strict claims, the compilation cache, or not), IPC
                                       sockets (``notebook_runs``' kernel manager). Not
                                       :mod:`jaxguide.kernels` (Pallas kernels)
``staleness``       env-get-outdated,  fingerprints: which chapters' cached outputs are stale
                    build-finished     (a jaxguide module, a package or the kernels'
                                       environment they depend on changed)
``incremental``     env-updated        a rebuild does work in proportion to the edit
``colab``           page context       the Colab button opens ``notebooks/<page>.ipynb``
``site``            page context,      a light, self-contained site: MathML, icons, figures,
                    build-finished     pages, stylesheets, search, 404 (one module per pass)
``cache``           (shared)           atomic writes, content-checked caches between builds
``toc``             (shared)           the pages of ``_toc.yml``, as Jupyter Book reads them
``environment``     (shared)           the repository root, installed versions, ``uv``, fresh
                                       environments with jaxguide installed from a wheel
``outputs``         tests, bench       two executions of a chapter compared as a reader sees
                                       them (the book's build against a wheel or accelerator
                                       run); what a notebook printed; ANSI colour codes
``notebooks``       (shared)           the Colab notebooks made from the chapters
                                       (``make notebooks``), of this checkout or another
``notebook_runs``   outside the build  one notebook run in a fresh kernel by a file that is
                                       copied where it runs (a wheel's environment, a chroot);
                                       the longest-first scheduler of the wheel run, the JAX
                                       checks and the accelerator check; the kernel manager
                                       (IPC sockets) of every kernel, the build's too (here
                                       because this file must stand alone)
``serve``           after build        the built site on 127.0.0.1, gzip as GitHub Pages serves
``lighthouse``      after build        Lighthouse runs (tests/test_browser.py, bench/); several
                                       pages in one Node process: ``lighthouse_batch.mjs``
==================  =================  =========================================================

The pure functions show their job on a small input in a runnable example (a doctest,
which ``make unit`` runs): ``staleness.code_of``, ``imports_of`` and ``fingerprint``,
``jupyter_kernels.fingerprinted_env``, ``execution.failure_report``,
``outputs.output_differences``, ``notebooks.notebook``, ``guarded`` and ``glued_code``,
``site.stylesheets.purge_css``, ``site.search.sections``.

What a build keeps between builds, beside the site (``_build/html``), in ``_build/``.
Each is safe to delete (``make clean`` deletes them all); the next build redoes what it
saved:

=================================  ====================  ===========================================
file or folder                     written by            what it holds
=================================  ====================  ===========================================
``.jupyter_cache/``                jupyter-cache         each chapter's executed outputs
                                                         (``_config.yml``)
``jupyter_execute/``               myst-nb               the executed notebooks
``.doctrees/``                     Sphinx                the parsed pages
``jaxguide-fingerprints.json``     ``staleness``         each chapter's fingerprint, with its
                                                         cached outputs
``jaxguide-imports-memo.json``     ``staleness``         the imports of each chapter's code, and
                                                         which distribution holds each module
``.jax_cache/``                    ``jupyter_kernels``   JAX's compilation cache, a folder per
                                                         chapter
``.jaxguide-build.lock``           ``buildprocess``      held while a build runs
``.jaxguide-page-memo.json``       ``site.memo``         each page's digest, words and icons
``.jaxguide-images/``              ``site.images``       shrunk figures, by content
``.jaxguide-fonts/``               ``site.icons``        subset icon fonts, by content
``.jaxguide-purge-cache/``         ``site.stylesheets``  purged stylesheets, by content
``.jaxguide-css-originals/``       ``site.stylesheets``  the stylesheets before purging
``html/.jaxguide-purged-css``      ``site.stylesheets``  which stylesheets were purged
``.jaxguide-search-digest``        ``site.search``       what the search index was built from
``.jaxguide-search-records.json``  ``site.search``       each page's search records, by digest
=================================  ====================  ===========================================

The tests add ``.jax_cache_unit/`` (``make unit``'s compilation cache), ``.idle-phase``
and ``mypy.log`` (``make test``: tests/timeline.py, the Makefile).

The scripts ``tools/make_notebooks.py``, ``tools/make_questions.py``,
``tools/check_jax_floor.py``, ``tools/check_jax_newest.py`` and ``tools/jaxguide_serve.py``
import this package (``tools/`` is the folder of the script Python runs); the tests and
``bench/`` find it on their path (pytest's ``pythonpath``; the project's editable
install, which puts ``tools/`` on the path: so the scripts are importable as top-level
modules too, and their tests import them that way, e.g. ``import check_jax_floor``). What
two programs share lives in this package: no script imports another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx

#: The extensions of the package, in the order they are set up.
EXTENSIONS = ("execution", "staleness", "colab", "site", "incremental")


def setup(app: Sphinx) -> dict[str, Any]:
    """Set up every extension of the build tooling (:data:`EXTENSIONS`)."""
    from . import patches

    # How myst-nb renders executed outputs: printed lines merged exactly, the download
    # button's notebook with its cached outputs and stable cell ids.
    patches.install(app, "myst-nb stream merge", "myst-nb cached notebook")
    for name in EXTENSIONS:
        app.setup_extension(f"{__name__}.{name}")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
