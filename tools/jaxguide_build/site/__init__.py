"""Sphinx extension: a site that is self-contained, light, and logs no errors in the
browser.

A default Jupyter Book 1 page fetches MathJax from a CDN, ships Font Awesome's
JavaScript plus its icon webfonts, and logs console errors. Each module removes one
cause. At ``build-finished``, :func:`_finish` runs these passes over the written site,
in this order:

=  ===================================  ===================================================
1  ``images.shrink_images``             figures shrunk to palette PNGs
2  ``pages.rewrite_pages``              each page rewritten: scripts, Pygments spans,
                                        accessibility; within it, ``icons`` drops Font
                                        Awesome's script and preloads its fonts, ``images``
                                        sizes each ``<img>``, ``search`` gives
                                        ``search.html`` its own script
3  ``theme.patch_theme_script``         the theme's script without its load-time pass
4  ``icons.keep_used_icons``            only the Font Awesome rules the pages use
5  ``notfound.write_not_found``         ``404.html`` for the web host
6  ``stylesheets.purge_stylesheets``    rules no page can use dropped, ``@import`` inlined
7  ``bundle.bundle_stylesheets``        the stylesheets a page links, as one file
8  ``icons.subset_fonts``               the icon webfonts cut to the glyphs still used
9  ``search.write_index``               a Pagefind index of every section
=  ===================================  ===================================================

Passes 2 to 7 share a :class:`memo.PageMemo` (what each page holds, its words and
icons, read once per page version by ``reading``; saved after pass 7). ``memo`` is that
cache and ``reading`` what it reads; neither is a pass.

Earlier in the build, not passes: ``mathml`` renders math to MathML (a Sphinx math
renderer); ``theme`` drops Thebe and sets the theme mode and each page's description
(Sphinx events); ``images`` clears Sphinx's copies of figures it shrank; ``search``
keeps Sphinx from building its own search index, which no page reads (a patch of
Sphinx's builder, under the rule of ``patches``). Rewritten theme files are put back at
the next build (``builder-inited``: ``theme``, ``stylesheets``), so each build starts
from the theme's originals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from .. import patches
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
    app.add_transform(theme.GluedValuesKeepTheirQuotes)
    app.connect("builder-inited", stylesheets.restore_stylesheets)
    app.add_html_math_renderer("mathml", (mathml.visit_math, None), (mathml.visit_math_block, None))
    app.connect("doctree-resolved", theme.drop_thebe_nodes, priority=900)
    app.connect("html-page-context", theme.page_context, priority=900)
    app.connect("html-collect-pages", images.clear_replaced_images)
    patches.install(app, "sphinx no search index")  # applied by the handler below
    app.connect("write-started", search.without_sphinx_index)
    # Last: after the theme rewrites pygments.css and myst-nb copies its stylesheet.
    app.connect("build-finished", _finish, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
