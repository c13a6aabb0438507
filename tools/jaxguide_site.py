"""Sphinx extension (build tooling, not part of the jaxguide package): a site that is
self-contained, light, and logs no errors in the browser.

A default Jupyter Book 1 page fetches MathJax from a CDN, ships 1.5 MB of Font Awesome
JavaScript plus icon webfonts, and logs three console errors. This extension removes
the causes:

* **Math** is rendered to MathML at build time (``latex2mathml``), which browsers
  display natively: no MathJax, no CDN, no JavaScript (``html_math_renderer = "mathml"``).
* **Thebe** is dropped. The book offers Colab, not live code in the page, and
  sphinx-thebe's inline configuration was added twice, declaring ``const
  THEBE_JS_URL`` twice (``SyntaxError: Identifier 'THEBE_JS_URL' has already been
  declared``).
* **Icons**: the theme's ``fontawesome.js`` (1.5 MB, which swaps icon elements for
  inline SVGs) is removed from every page; Font Awesome's CSS, already in the theme's
  stylesheet, draws the icons from its webfonts instead. The stylesheet keeps the
  rules of the icons the pages use (about 20 of 1,900), and the webfonts are subset to
  the glyphs the stylesheets refer to (``fontTools``), a few kB instead of 270 kB.
* **Theme mode**: the theme's inline script sets the mode from ``default_mode``, which
  is empty unless configured (``Got invalid theme mode: . Resetting to auto.``); it is
  set to ``"auto"``.
* **Figures**: each PNG output is stored as a 256-colour palette image when that looks
  the same (mean error under one grey level), typically a third of the size.
* **Search scorer**: ``html_search_scorer`` (``book/_static/jaxguide-search.js``) is
  resolved against the book's folder, not the working directory.
* **Favicon**: configured in ``_config.yml`` (``html.favicon``), so browsers do not
  request a missing ``/favicon.ico``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes
from jaxguide_cache import ContentCache, write_atomic
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

_FA_SCRIPT = re.compile(r'[ \t]*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?')
# A whole icon rule, e.g. }.fa-magnifying-glass:before,.fa-search:before{content:"\f002"}
_FA_CONTENT_RULE = re.compile(r'(?<=\})((?:\.fa-[a-z0-9-]+:{1,2}before,)*\.fa-[a-z0-9-]+:{1,2}before)\{content:"[^"]*"\}')
_FA_SELECTOR = re.compile(r"\.(fa-[a-z0-9-]+):")
_CSS_ESCAPE = re.compile(r'\\([0-9a-fA-F]{4,6})')
_CLASS_ATTR = re.compile(r'class="([^"]*\bfa[a-z-]*\b[^"]*)"')
# Class tokens that style an icon rather than name it.
_FA_MODIFIERS = {
    "fa", "fas", "far", "fab", "fa-solid", "fa-regular", "fa-brands", "fa-fw", "fa-lg", "fa-xs", "fa-sm",
    "fa-xl", "fa-2x", "fa-3x", "fa-spin", "fa-pulse", "fa-inverse", "fa-stack",
}
_STYLES = {"fa", "fas", "far", "fab", "fa-solid", "fa-regular", "fa-brands"}


# ----------------------------------------------------------------------------- math


def _mathml(self, node, display: str) -> str:
    from latex2mathml.converter import convert

    latex = node.astext().strip()
    try:
        mathml = convert(latex, display=display)
    except Exception as err:  # latex2mathml raises many types for unsupported input
        logger.warning(f"jaxguide_site: cannot render math {latex!r} as MathML: {err}", location=node)
        return f"<code>{self.encode(latex)}</code>"
    # Keep the TeX source as an annotation: not drawn, but there for assistive
    # technology, copying and text search (MathML's <semantics>).
    head, _, rest = mathml.partition(">")
    body = rest.rsplit("</math>", 1)[0]
    return (f'{head}><semantics><mrow>{body}</mrow><annotation encoding="application/x-tex">'
            f"{self.encode(latex)}</annotation></semantics></math>")


def visit_math(self, node) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_mathml(self, node, "inline") + "</span>")
    raise nodes.SkipNode


def visit_math_block(self, node) -> None:
    from sphinx.util.math import get_node_equation_number

    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("number"):
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, "Link to this equation")
        self.body.append("</span>")
    self.body.append(_mathml(self, node, "block") + "</div>\n")
    raise nodes.SkipNode


# ----------------------------------------------------------------------------- thebe, theme mode


def _drop_thebe_nodes(app: Sphinx, doctree, docname: str) -> None:
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if "text/x-thebe-config" in text or "kernelName =" in text:
            raw.parent.remove(raw)


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    def thebe(asset) -> bool:
        name = getattr(asset, "filename", None) or ""
        body = getattr(asset, "attributes", {}).get("body", "")
        return "thebe" in str(name) or "THEBE_JS_URL" in body

    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not thebe(asset)]
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    # A description for search results and link previews: the page's first paragraph.
    if doctree is not None and "name=\"description\"" not in context.get("metatags", ""):
        text = _first_paragraph(doctree)
        if text:
            context["metatags"] = context.get("metatags", "") + (
                f'\n<meta name="description" content="{html.escape(text, quote=True)}" />'
                f'\n<meta property="og:description" content="{html.escape(text, quote=True)}" />'
            )


def _first_paragraph(doctree, limit: int = 200) -> str:
    """The first paragraph of prose of a page, cut at a word to ``limit`` characters."""
    for para in doctree.findall(nodes.paragraph):
        if para.next_node(nodes.raw) is not None:
            continue
        text = " ".join(para.astext().split())
        if len(text) >= 40 and not text.startswith("How this page was produced"):
            return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
    return ""


# ----------------------------------------------------------------------------- icons


def _used_icons(outdir: Path) -> set[str]:
    """Names of the Font Awesome icons the pages use: ``fa-github`` in ``class="fab fa-github"``."""
    used = set()
    for page in outdir.rglob("*.html"):
        for classes in _CLASS_ATTR.findall(page.read_text(encoding="utf-8")):
            tokens = classes.split()
            if any(t in _STYLES for t in tokens):
                used.update(t for t in tokens if t.startswith("fa-") and t not in _FA_MODIFIERS)
    return used


def _keep_used_rules(css: str, used: set[str]) -> str:
    """Drop the ``.fa-<name>:before{content:...}`` rules of icons no page uses."""
    def keep(match: re.Match) -> str:
        return match.group(0) if used.intersection(_FA_SELECTOR.findall(match.group(1))) else ""

    return _FA_CONTENT_RULE.sub(keep, css)


def _codepoints(css: str) -> set[int]:
    """Private-use code points (icon glyphs) a stylesheet refers to, written or escaped."""
    points = {ord(c) for c in css if 0xE000 <= ord(c) <= 0xF8FF}
    points |= {int(h, 16) for h in _CSS_ESCAPE.findall(css) if 0xE000 <= int(h, 16) <= 0xF8FF}
    return points


def _theme_static() -> Path:
    import pydata_sphinx_theme

    return Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"


def _subset_font(source: Path, target: Path, codepoints: set[int], cache: Path) -> None:
    """Write ``source`` to ``target`` with only the glyphs of ``codepoints``; reuse the
    result of an earlier build from ``cache`` when the font and code points are the same."""
    import hashlib

    key = hashlib.sha256(source.read_bytes() + repr(sorted(codepoints)).encode()).hexdigest()
    fonts = ContentCache(cache, source.suffix)
    cached = fonts.get(key)
    if cached is not None:
        write_atomic(target, cached)
        return
    from fontTools import subset  # imported only when there is work: it takes a second
    from fontTools.ttLib import TTFont

    font = TTFont(source)
    options = subset.Options()
    options.flavor = "woff2" if source.suffix == ".woff2" else None
    options.layout_features = []
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints))
    subsetter.subset(font)
    font.flavor = options.flavor
    font.save(target)
    fonts.put(key, target.read_bytes())


# ----------------------------------------------------------------------------- figures


def _smaller_png(data: bytes) -> bytes:
    """``data`` as a 256-colour palette PNG when that is smaller and looks the same
    (mean error under one grey level); otherwise ``data`` unchanged. Matplotlib's
    figures are flat colours plus anti-aliased edges, so this is usually 3-4x smaller."""
    import io

    import numpy as np
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("RGBA")
    if image.getextrema()[3][0] == 255:  # opaque, as matplotlib's figures are: median cut is closest
        palette = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    else:
        palette = image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    error = np.abs(np.asarray(palette.convert("RGBA"), dtype=np.int16) - np.asarray(image, dtype=np.int16)).mean()
    out = io.BytesIO()
    palette.save(out, "PNG", optimize=True)
    return out.getvalue() if error < 1.0 and out.tell() < len(data) else data


def _shrink_images(outdir: Path) -> None:
    import hashlib

    cache = ContentCache(outdir.parent / ".jaxguide-images", ".png")
    for png in (outdir / "_images").glob("*.png"):
        data = png.read_bytes()
        key = hashlib.sha256(data).hexdigest()
        small = cache.get(key)
        if small is None:
            small = _smaller_png(data)
            cache.put(key, small)
            # The output of a shrunk image maps to itself, so a rebuild that keeps it skips it.
            cache.put(hashlib.sha256(small).hexdigest(), small)
        if small != data:
            write_atomic(png, small)


_SEARCH_SCRIPTS = re.compile(
    r'[ \t]*<script src="(?:\.\./)*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)[^"]*"></script>\n?'
)


def _finish(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    static = outdir / "_static"
    # pydata-sphinx-theme loads Sphinx's search tools and the whole search index in the
    # head of every page, for its search-as-you-type option. With that option off (its
    # default, and this book's), only search.html uses them: elsewhere they are ~110 kB
    # of render-blocking scripts. The search dialog submits to search.html either way.
    as_you_type = (app.config.html_theme_options or {}).get("search_as_you_type", False)
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        slim = _FA_SCRIPT.sub("", text)
        if not as_you_type and page.name != "search.html":
            slim = _SEARCH_SCRIPTS.sub("", slim)
        if slim != text:
            page.write_text(slim, encoding="utf-8")
        if "fontawesome.js" in slim:
            raise ExtensionError(f"jaxguide_site: {page.name} still loads fontawesome.js; did the theme change?")
    for leftover in (static / "scripts").glob("fontawesome.js*"):
        leftover.unlink()
    used = _used_icons(outdir)
    # Always start from the theme's own files: an incremental build may keep the output's.
    theme = _theme_static()
    css = (theme / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    (static / "styles" / "pydata-sphinx-theme.css").write_text(_keep_used_rules(css, used), encoding="utf-8")
    stylesheets = "".join(p.read_text(encoding="utf-8") for p in static.rglob("*.css"))
    missing = sorted(n for n in used if not re.search(rf"\.{n}::?before[,{{]", stylesheets))
    if missing:
        raise ExtensionError(f"jaxguide_site: no CSS rule for Font Awesome icon(s) {missing}; did the theme change?")
    codepoints = _codepoints(stylesheets)
    _shrink_images(outdir)
    _write_not_found(app, outdir)
    fonts = theme / "vendor" / "fontawesome"
    for font in list(fonts.rglob("*.woff2")) + list(fonts.rglob("*.ttf")):
        target = static / "vendor" / "fontawesome" / font.relative_to(fonts)
        _subset_font(font, target, codepoints, outdir.parent / ".jaxguide-fonts")


_NOT_FOUND = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Page not found — {title}</title>
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


def _write_not_found(app: Sphinx, outdir: Path) -> None:
    """``404.html`` for the web host (GitHub Pages serves it for any missing path, so its
    links are absolute: relative ones would resolve against the missing address)."""
    base = (app.config.html_baseurl or "").rstrip("/") + "/"
    title = html.escape(app.config.html_title or app.config.project)
    write_atomic(outdir / "404.html", _NOT_FOUND.format(base=base, title=title).encode())


def _clear_rewritten(app: Sphinx) -> None:
    """``builder-inited``: remove the theme files that :func:`_finish` rewrote in the
    output last time, so that Sphinx copies the theme's originals into an empty spot
    instead of warning, file by file, that it "will overwrite data"."""
    static = Path(app.outdir) / "_static"
    rewritten = [static / "webpack-macros.html", static / "styles" / "pydata-sphinx-theme.css"]
    rewritten += list((static / "vendor" / "fontawesome").rglob("*.woff2"))
    rewritten += list((static / "vendor" / "fontawesome").rglob("*.ttf"))
    for path in rewritten:
        path.unlink(missing_ok=True)


def _scorer_path(app: Sphinx, config) -> None:
    """``html_search_scorer`` is opened relative to the working directory; resolve it
    against the book's folder, so the build works from any directory."""
    scorer = config.html_search_scorer
    if scorer and not Path(scorer).is_absolute():
        config.html_search_scorer = str(Path(app.confdir) / scorer)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _scorer_path)
    app.connect("builder-inited", _clear_rewritten)
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    app.connect("doctree-resolved", _drop_thebe_nodes, priority=900)
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _finish)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
