"""The theme's own parts, adjusted: Thebe dropped (the book offers Colab, not live
code; sphinx-thebe's configuration was added twice and declared a constant twice, a
console error), the theme mode set (``"auto"``, not the empty default the theme warns
about), a description for each page, glued values whose quotes stay straight, and the
theme's script without its load-time pass over every code block
(``book/_static/jaxguide-nav.js`` does it near the screen)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms import SphinxTransform

from ..cache import write_atomic


def drop_thebe_nodes(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """``doctree-resolved``: Thebe's inline configuration, out of the page."""
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if "text/x-thebe-config" in text or "kernelName =" in text:
            raw.parent.remove(raw)


def page_context(
    app: Sphinx,
    pagename: str,
    templatename: str,
    context: dict[str, Any],
    doctree: nodes.document | None,
) -> None:
    """``html-page-context``: no Thebe assets, the theme mode ``"auto"``, and a
    description (the page's first paragraph) for search results and link previews."""

    def thebe(asset: Any) -> bool:
        name = getattr(asset, "filename", None) or ""
        body = getattr(asset, "attributes", {}).get("body", "")
        return "thebe" in str(name) or "THEBE_JS_URL" in body

    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not thebe(asset)]
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    # A description for search results and link previews: the page's first paragraph.
    if doctree is not None and 'name="description"' not in context.get("metatags", ""):
        text = _first_paragraph(doctree)
        if text:
            context["metatags"] = context.get("metatags", "") + (
                f'\n<meta name="description" content="{html.escape(text, quote=True)}" />'
                f'\n<meta property="og:description" content="{html.escape(text, quote=True)}" />'
            )


def _first_paragraph(doctree: nodes.document, limit: int = 200) -> str:
    """The first paragraph of prose of a page, cut at a word to ``limit`` characters."""
    for para in doctree.findall(nodes.paragraph):
        if para.next_node(nodes.raw) is not None:
            continue
        text = " ".join(para.astext().split())
        if len(text) >= 40 and not text.startswith("How this page was produced"):
            return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
    return ""


def theme_static() -> Path:
    """The static files of the installed pydata-sphinx-theme (the originals)."""
    import pydata_sphinx_theme

    return Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"


# pydata-sphinx-theme, once a page has loaded, measures every code block and output
# (scrollWidth against clientWidth) to give the scrollable ones tabindex=0. On a long
# chapter that lays out the whole page at once, sections the reader has not reached
# included: the longest task on a phone. Its call is removed from the theme's script;
# book/_static/jaxguide-nav.js does the same for each block when it comes near the
# screen, and until then every <pre> keeps the tabindex="0" the build gives it.
_THEME_TAB_STOPS = re.compile(
    r',"complete"===document\.readyState\?(\w+)\(\):window\.addEventListener\("load",\1\)'
)


def patch_theme_script(outdir: Path) -> None:
    """Write the theme's script into the output without its whole-page tab-stop pass
    (always from the theme's own file: an incremental build may keep the output's)."""
    code = (theme_static() / "scripts" / "pydata-sphinx-theme.js").read_text(encoding="utf-8")
    calls = list(_THEME_TAB_STOPS.finditer(code))
    if (
        len(calls) != 1
        or f'function {calls[0].group(1)}(){{const e=()=>{{document.querySelectorAll(["pre"'
        not in code
    ):
        raise ExtensionError(
            "jaxguide_build.site: pydata-sphinx-theme.js has no single load-time tab-stop pass to "
            "remove; did the theme change? (a content check: tools/jaxguide_build/patches.py)"
        )
    code = code[: calls[0].start()] + code[calls[0].end() :]
    write_atomic(outdir / "_static" / "scripts" / "pydata-sphinx-theme.js", code.encode())


def clear_rewritten(app: Sphinx) -> None:
    """``builder-inited``: remove the theme files the site's passes rewrote in the
    output last time, so that Sphinx copies the theme's originals into an empty spot
    instead of warning, file by file, that it "will overwrite data"."""
    static = Path(app.outdir) / "_static"
    rewritten = [
        static / "webpack-macros.html",
        static / "styles" / "pydata-sphinx-theme.css",
        static / "scripts" / "pydata-sphinx-theme.js",
    ]
    rewritten += list((static / "vendor" / "fontawesome").rglob("*.woff2"))
    rewritten += list((static / "vendor" / "fontawesome").rglob("*.ttf"))
    for path in rewritten:
        path.unlink(missing_ok=True)


class GluedValuesKeepTheirQuotes(SphinxTransform):
    """A value glued into the prose (``{glue:text}``, a ``pasted-text`` inline) is what
    a cell printed, often Python (``[1]['w']``): Sphinx's smart quotes would curl its
    quotes (``[1][‘w’]``) and the prose would no longer match the output. Runs before
    Sphinx's SmartQuotes transform (priority 750), which skips a node whose
    ``support_smartquotes`` is False."""

    default_priority = 740

    def apply(self, **kwargs: Any) -> None:
        for node in self.document.findall(nodes.inline):
            if "pasted-text" in node.get("classes", ()):
                node["support_smartquotes"] = False
