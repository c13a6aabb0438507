"""Sphinx extension: a site that is self-contained, light, and logs no errors in the
browser.

A default Jupyter Book 1 page fetches MathJax from a CDN, ships Font Awesome's
JavaScript plus its icon webfonts, and logs console errors. Each module below removes
one cause; :func:`_finish` runs the passes over the written site in order:

==================  ===================================================================
``mathml``          math rendered to MathML at build time (a Sphinx math renderer)
``theme``           Thebe dropped, theme mode set, page descriptions, the theme's script
``search``          a Pagefind index of every section; search.html's own script
``images``          figures shrunk to palette PNGs, sized ``<img>`` tags, Sphinx's copies
``pages``           each page rewritten: scripts, Pygments spans, accessibility
``icons``           only the Font Awesome rules and glyphs the pages use
``notfound``        ``404.html`` for the web host
``stylesheets``     rules no page can use dropped, ``@import`` inlined
``bundle``          the stylesheets a page links, as one file
``memo``            what each page holds (words, icons), read once per page version
==================  ===================================================================

Rewritten theme files are put back at the next build (``builder-inited``), so each
build starts from the theme's originals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from . import bundle, icons, images, mathml, notfound, pages, search, stylesheets, theme


def _finish(app: Sphinx, exception: BaseException | None) -> None:
    """``build-finished``: the passes over the written site, in order."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    images.shrink_images(outdir)
    memo = pages.rewrite_pages(app, outdir)  # only the pages Sphinx wrote in this build
    theme.patch_theme_script(outdir)
    codepoints = icons.keep_used_icons(outdir, memo)
    notfound.write_not_found(app, outdir)
    # Last, when every page is final: the stylesheets lose the rules no page can use,
    # then each page links them as one file.
    stylesheets.purge_stylesheets(outdir, memo)
    bundle.bundle_stylesheets(outdir, memo)
    memo.save()
    icons.subset_fonts(outdir, codepoints)
    search.write_index(app, outdir)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", theme.clear_rewritten)
    app.connect("builder-inited", stylesheets.restore_stylesheets)
    app.add_html_math_renderer("mathml", (mathml.visit_math, None), (mathml.visit_math_block, None))
    app.connect("doctree-resolved", theme.drop_thebe_nodes, priority=900)
    app.connect("html-page-context", theme.page_context, priority=900)
    app.connect("html-collect-pages", images.clear_replaced_images)
    # Last: after the theme rewrites pygments.css and myst-nb copies its stylesheet.
    app.connect("build-finished", _finish, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
