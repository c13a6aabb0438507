"""``404.html`` for the web host."""

from __future__ import annotations

import html
import urllib.parse
from pathlib import Path

from sphinx.application import Sphinx

from ..cache import write_atomic

_NOT_FOUND = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Page not found — {title}</title>
<link rel="icon" type="image/svg+xml" href="{icon}">
<meta name="description" content="This page does not exist in {title}.">
<style>
  body {{ font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; padding: 0 1rem;
         line-height: 1.5; color: #1f2328; background: #fff; }}
  @media (prefers-color-scheme: dark) {{ body {{ color: #e6edf3; background: #0d1117; }} a {{ color: #58a6ff; }} }}
  a {{ color: #0550ae; }}
</style></head>
<body><main>
<h1>Page not found</h1>
<p>There is no page at this address in <a href="{base}">{title}</a>. It may have moved when
the book was reorganised.</p>
<ul>
<li><a href="{base}">Go to the start of the book</a>, where the reading path lists every chapter;</li>
<li>or <a href="{base}search.html">search the book</a>.</li>
</ul>
</main></body></html>
"""


def write_not_found(app: Sphinx, outdir: Path) -> None:
    """``404.html`` for the web host (GitHub Pages serves it for any missing path, so its
    links are absolute: relative ones would resolve against the missing address)."""
    base = (app.config.html_baseurl or "").rstrip("/") + "/"
    title = html.escape(app.config.html_title or app.config.project)
    page = _NOT_FOUND.format(base=base, title=title, icon=html.escape(_icon(app)))
    write_atomic(outdir / "404.html", page.encode())


def _icon(app: Sphinx) -> str:
    """The site's SVG favicon as a data URI: without a ``<link rel="icon">`` a browser
    asks the host for ``/favicon.ico``, which the site does not have (a console error on
    the 404 page); a URL into the site would not load from a local copy either."""
    favicon = Path(app.srcdir) / (app.config.html_favicon or "")
    if favicon.suffix != ".svg" or not favicon.is_file():
        return "data:,"  # no request at all
    return "data:image/svg+xml," + urllib.parse.quote(
        favicon.read_text(encoding="utf-8").strip(), safe=" =:/\"'"
    )
