"""The book's build tooling (not part of the ``jaxguide`` package): the Sphinx extension
that Jupyter Book loads (``_config.yml``: ``local_extensions``), and the helpers that the
scripts in ``tools/``, the tests and ``bench/`` share.

Each module does one job. In the order a build meets them:

==================  =================  =========================================================
module              build phase        job
==================  =================  =========================================================
``patches``         setup              every patch of a third-party library, one rule for
                                       untested releases (the build stops and says what to check)
``execution``       config-inited      one build per output folder, and before Sphinx reads
                                       the pages: execute what has no cached outputs, in
                                       parallel; report a failure, or each chapter's time
``kernels``         config-inited      the kernels that execute: IPC sockets, their environment
                                       (strict claims, the compilation cache, or not)
``staleness``       env-get-outdated   fingerprints: which chapters' cached outputs are stale
                    build-finished     (a jaxguide module or package they depend on changed)
``incremental``     env-updated        a rebuild does work in proportion to the edit
``colab``           page context       the Colab button opens ``notebooks/<page>.ipynb``
``site``            page context,      a light, self-contained site: MathML, icons, figures,
                    build-finished     pages, stylesheets, search, 404 (one module per pass)
``cache``           (shared)           atomic writes, content-checked caches between builds
``toc``             (shared)           the pages of ``_toc.yml``, as Jupyter Book reads them
``environment``     (shared)           the repository root, ``uv``, fresh environments with
                                       jaxguide installed from a wheel
``outputs``         tests, bench       two executions of a chapter compared as a reader sees
                                       them (the book's build against a wheel or accelerator run)
``serve``           after build        the built site on 127.0.0.1, gzip as GitHub Pages serves
``lighthouse``      after build        Lighthouse runs (tests/test_browser.py, bench/)
==================  =================  =========================================================

The scripts ``tools/make_notebooks.py``, ``tools/make_questions.py``,
``tools/check_jax_floor.py``, ``tools/check_jax_newest.py`` and ``tools/jaxguide_serve.py``
import this package (``tools/`` is the folder of the script
Python runs); the tests and ``bench/`` find it on their path (pytest's ``pythonpath``;
the project's editable install).
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
