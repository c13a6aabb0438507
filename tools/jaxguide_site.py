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
  the same (mean error under one grey level), typically a third of the size. Chapters
  draw them at 2x (``%config InlineBackend.figure_formats = ["retina"]`` in their
  hidden first cell); each ``<img>`` gets ``width``/``height`` attributes (its CSS size,
  half its pixels) so nothing moves while it loads.
* **First paint**: the stylesheets the pages link keep only the rules whose classes
  and ids occur somewhere in the site's pages or scripts (:func:`purge_css`: 460 kB of
  theme CSS become ~180 kB), an ``@import`` is inlined, and they are bundled into one
  stylesheet (:func:`_bundle_stylesheets`: one request on a phone's connection instead
  of ten). The scripts in ``<head>`` are deferred, ``documentation_options.js`` (which
  inline scripts use) is written into the page, the theme's scripts are not preloaded,
  and a page loads the copy-button, toggle-button and tab scripts only when it has
  what they work on. The theme (light or dark) is decided in the first inline script,
  not after the first paint. The originals are kept beside the output and put back at
  the next build.
* **Long pages** do work proportional to the screen: Pygments spans that change nothing
  are dropped (:func:`plain_token_classes`: half a long chapter's elements), and the
  theme's load-time measurement of every code block is removed from its script
  (``book/_static/jaxguide-nav.js`` measures each near the screen; sections far from it
  are not rendered, ``content-visibility: auto`` in ``book/_static/jaxguide.css``).
* **Accessibility** (axe-core, ``tests/test_browser.py``): coloured output text below
  4.5:1 contrast (rich's HTML) gets black or white text; the sidebar's title, search
  and chapter list form a ``banner`` landmark; the search button's accessible name is
  its visible text ("Search Ctrl+K") and a hidden cell's toggle its "Show code cell
  source".
* **Search scorer**: ``html_search_scorer`` (``book/_static/jaxguide-search.js``) is
  resolved against the book's folder, not the working directory.
* **Favicon**: configured in ``_config.yml`` (``html.favicon``), so browsers do not
  request a missing ``/favicon.ico``.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import posixpath
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

from jaxguide_cache import ContentCache, write_atomic

logger = logging.getLogger(__name__)

_FA_SCRIPT = re.compile(
    r'[ \t]*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?'
)
# A whole icon rule, e.g. }.fa-magnifying-glass:before,.fa-search:before{content:"\f002"}
_FA_CONTENT_RULE = re.compile(
    r'(?<=\})((?:\.fa-[a-z0-9-]+:{1,2}before,)*\.fa-[a-z0-9-]+:{1,2}before)\{content:"[^"]*"\}'
)
_FA_SELECTOR = re.compile(r"\.(fa-[a-z0-9-]+):")
_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{4,6})")
_CLASS_ATTR = re.compile(r'class="([^"]*\bfa[a-z-]*\b[^"]*)"')
# Class tokens that style an icon rather than name it.
_FA_MODIFIERS = {
    "fa",
    "fas",
    "far",
    "fab",
    "fa-solid",
    "fa-regular",
    "fa-brands",
    "fa-fw",
    "fa-lg",
    "fa-xs",
    "fa-sm",
    "fa-xl",
    "fa-2x",
    "fa-3x",
    "fa-spin",
    "fa-pulse",
    "fa-inverse",
    "fa-stack",
}
_STYLES = {"fa", "fas", "far", "fab", "fa-solid", "fa-regular", "fa-brands"}


# ----------------------------------------------------------------------------- math


def _mathml(self, node, display: str) -> str:
    from latex2mathml.converter import convert

    latex = node.astext().strip()
    try:
        mathml = convert(latex, display=display)
    except Exception as err:  # latex2mathml raises many types for unsupported input
        logger.warning(
            f"jaxguide_site: cannot render math {latex!r} as MathML: {err}", location=node
        )
        return f"<code>{self.encode(latex)}</code>"
    # Keep the TeX source as an annotation: not drawn, but there for assistive
    # technology, copying and text search (MathML's <semantics>).
    head, _, rest = mathml.partition(">")
    body = rest.rsplit("</math>", 1)[0]
    return (
        f'{head}><semantics><mrow>{body}</mrow><annotation encoding="application/x-tex">'
        f"{self.encode(latex)}</annotation></semantics></math>"
    )


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
    if doctree is not None and 'name="description"' not in context.get("metatags", ""):
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


def _icons_in(text: str) -> set[str]:
    """Names of the Font Awesome icons a page uses: ``fa-github`` in ``class="fab fa-github"``."""
    used = set()
    for classes in _CLASS_ATTR.findall(text):
        tokens = classes.split()
        if any(t in _STYLES for t in tokens):
            used.update(t for t in tokens if t.startswith("fa-") and t not in _FA_MODIFIERS)
    return used


def _used_icons(outdir: Path, memo: PageMemo | None = None) -> set[str]:
    """Names of the Font Awesome icons the pages use."""
    memo = memo or PageMemo(outdir)
    return set().union(*(set(memo.entry(page)["icons"]) for page in outdir.rglob("*.html")))


class PageMemo:
    """What the site's finishing steps read from each page (the words in it, the icons it
    uses), kept beside the output with the digest of the page it was read from: a
    rebuild reads again only the pages Sphinx wrote. A digest also tells whether a
    page is already in its final form (:meth:`final`). The memo is tied to ``setting``
    and to this module's code (which decides what a final page is): with another, it
    starts empty, and every page is finished and read again. Saved atomically; an
    unreadable memo counts as empty."""

    NAME = ".jaxguide-page-memo.json"

    def __init__(self, outdir: Path, setting: str = ""):
        self.outdir = outdir
        self.path = outdir.parent / self.NAME
        self.version = hashlib.sha256(Path(__file__).read_bytes() + setting.encode()).hexdigest()
        self.pages: dict[str, dict] = {}
        if self.path.is_file():
            try:
                stored = json.loads(self.path.read_text(encoding="utf-8"))
                if not isinstance(stored, dict) or not isinstance(stored.get("pages"), dict):
                    raise ValueError("not a page memo")
                if stored.get("version") == self.version:
                    self.pages = stored["pages"]
            except (ValueError, UnicodeDecodeError) as err:
                logger.info(
                    f"[jaxguide-site] {self.path.name} unreadable ({err}): reading every page"
                )
        self.changed = False

    def _key(self, page: Path) -> str:
        return page.relative_to(self.outdir).as_posix()

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def final(self, page: Path, text: str) -> bool:
        """Whether ``text`` is what this memo last recorded for ``page``."""
        entry = self.pages.get(self._key(page))
        return isinstance(entry, dict) and entry.get("digest") == self._digest(text)

    def entry(self, page: Path) -> dict:
        """``{"digest", "words", "icons"}`` for the page as it is now."""
        text = page.read_text(encoding="utf-8")
        if self.final(page, text):
            return self.pages[self._key(page)]
        entry = {
            "digest": self._digest(text),
            # A <link> names files, not classes: whether a page links the stylesheets
            # one by one or their bundle (:func:`_bundle_stylesheets`) changes no word.
            "words": sorted(set(_WORD.findall(_LINK.sub("", text)))),
            "icons": sorted(_icons_in(text)),
        }
        self.pages[self._key(page)] = entry
        self.changed = True
        return entry

    def save(self) -> None:
        live = {self._key(p) for p in self.outdir.rglob("*.html")}
        pages = {k: v for k, v in self.pages.items() if k in live}
        if self.changed or pages.keys() != self.pages.keys():
            data = {"version": self.version, "pages": pages}
            write_atomic(self.path, json.dumps(data, sort_keys=True).encode())


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
    if (
        image.getextrema()[3][0] == 255
    ):  # opaque, as matplotlib's figures are: median cut is closest
        palette = image.convert("RGB").quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    else:
        palette = image.quantize(
            colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
        )
    error = np.abs(
        np.asarray(palette.convert("RGBA"), dtype=np.int16) - np.asarray(image, dtype=np.int16)
    ).mean()
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


# ----------------------------------------------------------------------------- unused CSS


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses, brackets and strings."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote and text[i - 1] != "\\" else quote
        elif c in "\"'":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _css_blocks(css: str):
    """Top-level items of a stylesheet: ``(prelude, body)`` for a rule or a block at-rule
    (``body`` without its braces), ``(statement, None)`` for ``@import ...;`` and the
    like. Comments are dropped; strings are respected."""
    i, n, prelude = 0, len(css), []
    while i < n:
        c = css[i]
        if css.startswith("/*", i):
            end = css.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "\"'":
            j = i + 1
            while j < n and css[j] != c:
                j += 2 if css[j] == "\\" else 1
            prelude.append(css[i : j + 1])
            i = j + 1
        elif c == ";":  # ends a statement at-rule: @import ...; @charset ...;
            if "".join(prelude).strip():
                yield "".join(prelude).strip() + ";", None
            prelude, i = [], i + 1
        elif c == "{":
            depth, j, quote = 1, i + 1, ""
            while j < n and depth:
                d = css[j]
                if quote:
                    if d == "\\":
                        j += 1
                    elif d == quote:
                        quote = ""
                elif d in "\"'":
                    quote = d
                elif css.startswith("/*", j):
                    j = css.find("*/", j + 2) + 1 or n
                elif d == "{":
                    depth += 1
                elif d == "}":
                    depth -= 1
                j += 1
            yield "".join(prelude).strip(), css[i + 1 : j - 1]
            prelude, i = [], j
        else:
            prelude.append(c)
            i += 1
    if "".join(prelude).strip():
        yield "".join(prelude).strip(), None


_NAME_IN_SELECTOR = re.compile(r"[.#]((?:[A-Za-z0-9_-]|\\.)+)")
# At-rules whose block holds rules (purged inside); any other block is kept whole.
_NESTING_AT_RULES = ("@media", "@supports", "@layer", "@container", "@document")


def _selector_used(selector: str, used: set[str], prefixes: tuple[str, ...]) -> bool:
    """Whether ``selector`` can match: every class and id it requires occurs somewhere
    in the site. Arguments of ``:not()``, ``:is()``, ``:where()``, ``:has()`` and
    attribute selectors are ignored (they never make a selector need more)."""
    plain, depth = [], 0
    for c in selector:
        depth += c in "(["
        if depth == 0:
            plain.append(c)
        depth -= c in ")]"
    for name in _NAME_IN_SELECTOR.findall("".join(plain)):
        if "\\" in name:
            continue  # an escaped name (e.g. md\:flex): keep, do not guess
        if name not in used and not name.startswith(prefixes):
            return False
    return True


def purge_css(css: str, used: set[str], prefixes: tuple[str, ...] = ()) -> str:
    """``css`` without the rules whose selectors need a class or id that occurs nowhere
    in ``used`` (nor starts with one of ``prefixes``, for names that scripts build,
    such as ``bs-tooltip-`` + a placement). A rule keeps the selectors that can match;
    ``@media``/``@supports`` blocks are purged inside and dropped when empty; other
    at-rules (``@font-face``, ``@keyframes``, ``@import``) are kept as they are."""
    out = []
    for prelude, body in _css_blocks(css):
        if body is None:
            out.append(prelude)
        elif prelude.startswith("@"):
            if prelude.lower().startswith(_NESTING_AT_RULES):
                inner = purge_css(body, used, prefixes)
                if inner:
                    out.append(f"{prelude}{{{inner}}}")
            else:
                out.append(f"{prelude}{{{body}}}")
        else:
            keep = [
                s.strip() for s in _split_top(prelude, ",") if _selector_used(s, used, prefixes)
            ]
            if keep:
                out.append(f"{','.join(keep)}{{{body}}}")
    return "\n".join(out)


_WORD = re.compile(r"[A-Za-z0-9_-]+")  # names may start with "-" or a digit: "-Color-Blue"


def _names_in_site(outdir: Path, memo: PageMemo | None = None) -> tuple[set[str], tuple[str, ...]]:
    """Every word in the site's pages and scripts (a superset of the classes and ids
    that can ever be on an element), and the words ending in ``-`` that scripts join
    to a variable part (``"bs-" + placement``), as prefixes."""
    memo = memo or PageMemo(outdir)
    words: set[str] = set()
    for page in outdir.rglob("*.html"):
        words.update(memo.entry(page)["words"])
    scripts: set[str] = set()
    for script in outdir.rglob("*.js"):
        if script.name == "searchindex.js":
            continue  # the pages' words, not code
        scripts.update(_WORD.findall(script.read_text(encoding="utf-8", errors="replace")))
    prefixes = tuple(sorted(w for w in scripts if w.endswith("-") and len(w) >= 4))
    return words | scripts, prefixes


def _purge_stylesheets(outdir: Path, memo: PageMemo | None = None) -> list[Path]:
    """Purge every stylesheet the pages link or import (but the book's own) of rules no
    page can use; return the files rewritten, relative to ``outdir``."""
    used, prefixes = _names_in_site(outdir, memo)
    linked = set()
    for page in outdir.glob("*.html"):
        for href in _stylesheet_hrefs(page.read_text(encoding="utf-8")):
            if _BUNDLE_NAME.search(href):
                linked.update(_bundle_sources(outdir / href.split("?")[0]))
            else:
                linked.add(href.split("?")[0])
    paths = {(outdir / href).resolve() for href in linked}
    for path in list(paths):  # and the stylesheets they @import (theme.css: basic.css)
        if path.is_file():
            paths.update(
                (path.parent / m).resolve()
                for m in _IMPORT.findall(path.read_text(encoding="utf-8"))
            )
    # Keep each original: the next build starts from it (_restore_stylesheets), whether
    # or not Sphinx copies its static files again (it does not when no page changed).
    originals = outdir.parent / _ORIGINALS
    for path in paths:
        if path.is_file() and not path.name.startswith("jaxguide"):
            saved = originals / path.relative_to(outdir.resolve())
            saved.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(saved, path.read_bytes())
    rewritten = []
    # Purging is the slow part of a rebuild's post-processing. Its result depends on the
    # stylesheet, the prefixes, and which of the names its selectors use occur in the
    # site: kept per stylesheet with the digest of those, it is reused while they match
    # (an edited chapter rarely brings a class or id a stylesheet mentions).
    memo = ContentCache(outdir.parent / _PURGE_MEMO, ".css")
    for path in sorted(paths):
        if not path.is_file() or path.name.startswith("jaxguide"):
            continue
        css = path.read_text(encoding="utf-8")
        relevant = sorted(used.intersection(_NAME_IN_SELECTOR.findall(css)))
        inputs = hashlib.sha256("\n".join([css, *relevant, "", *prefixes]).encode()).hexdigest()
        key = re.sub(r"[^A-Za-z0-9_-]", "_", str(path.relative_to(outdir.resolve())))
        stored = memo.get(key)
        if stored is not None and stored.startswith(f"{inputs}\n".encode()):
            slim = stored[len(inputs) + 1 :].decode("utf-8")
        else:
            slim = purge_css(css, used, prefixes)
            memo.put(key, f"{inputs}\n{slim}".encode())
        if len(slim) < len(css):
            path.write_text(slim, encoding="utf-8")
            rewritten.append(path.relative_to(outdir.resolve()))
    # An @import is a second round trip before the first paint (theme.css imports
    # basic.css): put the imported rules in its place, their relative url()s rewritten
    # to resolve from the importing file's folder.
    for path in sorted((outdir / href).resolve() for href in linked):
        if not path.is_file():
            continue
        css = path.read_text(encoding="utf-8")

        def inline(match: re.Match, path: Path = path) -> str:
            target = (path.parent / match.group(1)).resolve()
            if "://" in match.group(1) or not target.is_file():
                return match.group(0)
            up = Path(os.path.relpath(target.parent, path.parent)).as_posix()

            def moved(url: re.Match) -> str:
                quote, ref = url.group(1), url.group(2)
                if re.match(r"^(?:[a-z]+:|/|#)", ref):
                    return url.group(0)
                return f"url({quote}{up}/{ref}{quote})"

            return _CSS_URL.sub(moved, target.read_text(encoding="utf-8"))

        flat = _IMPORT_STATEMENT.sub(inline, css)
        if flat != css:
            path.write_text(flat, encoding="utf-8")
            if path.relative_to(outdir.resolve()) not in rewritten:
                rewritten.append(path.relative_to(outdir.resolve()))
    return rewritten


_LINK = re.compile(r"<link\b[^>]*>")
_HREF = re.compile(r'\bhref="([^"]+)"')


def _is_local_stylesheet(link: str) -> bool:
    href = _HREF.search(link)
    return (
        re.search(r'\brel="stylesheet"', link) is not None
        and href is not None
        and "://" not in href.group(1)
        and not href.group(1).startswith("//")
        and re.search(r'\bmedia="(?!all")', link) is None
    )


def _stylesheet_hrefs(text: str) -> list[str]:
    """The local stylesheets (for every medium) a page's <head> links, in order."""
    head = text.partition("</head>")[0]
    links = [link for link in _LINK.findall(head) if _is_local_stylesheet(link)]
    return [m.group(1) for m in map(_HREF.search, links) if m]


# ----------------------------------------------------------------------------- one stylesheet

# The theme and its extensions link ten stylesheets. On a phone's connection each is a
# request before the first paint, more than the six a browser opens at once to a host
# over HTTP/1.1: one stylesheet made of them, in the same order, is one request.
_BUNDLE_DIR = "_static"
_BUNDLE_NAME = re.compile(r"_static/jaxguide-bundle-[0-9a-f]{12}\.css")
_BUNDLE_HEADER = "/* jaxguide bundle of: "


def _bundle_sources(path: Path) -> list[str]:
    """The stylesheets (paths relative to the output folder) a bundle was made of: its
    first line. A page that links a bundle another build wrote needs it."""
    if not path.is_file():
        raise ExtensionError(
            f"jaxguide_site: {path.name} is missing (a page links it); build from a clean "
            "output folder (jupyter-book clean book/)"
        )
    first = path.read_text(encoding="utf-8").partition("\n")[0]
    if not first.startswith(_BUNDLE_HEADER):
        raise ExtensionError(f"jaxguide_site: {path} is not a stylesheet bundle")
    return first.removeprefix(_BUNDLE_HEADER).removesuffix(" */").split()


def _relocated_css(css: str, source: Path, target_dir: Path) -> str:
    """``css`` from ``source``, with its relative ``url()``s rewritten to resolve from
    ``target_dir``, and without ``@charset`` (only allowed first in a file)."""
    up = Path(os.path.relpath(source.parent, target_dir)).as_posix()

    def moved(url: re.Match) -> str:
        quote, ref = url.group(1), url.group(2)
        if up == "." or re.match(r"^(?:[a-z]+:|/|#)", ref):
            return url.group(0)
        return f"url({quote}{posixpath.normpath(f'{up}/{ref}')}{quote})"

    css = re.sub(r'@charset\s+"[^"]*"\s*;', "", css)
    return _CSS_URL.sub(moved, css)


def _bundle_stylesheets(outdir: Path, memo: PageMemo) -> None:
    """Link one stylesheet instead of several from every page: the local stylesheets a
    page links (already purged) written into ``_static/jaxguide-bundle-<digest>.css``,
    in order, named by its content; a page that links an older bundle links the new one."""
    outdir = outdir.resolve()
    bundles: dict[tuple[str, ...], str] = {}
    for page in sorted(outdir.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        head, sep, body = text.partition("</head>")
        links = [link for link in _LINK.findall(head) if _is_local_stylesheet(link)]
        if not links or not sep:
            continue
        prefix = "../" * (len(page.relative_to(outdir).parts) - 1)
        sources: list[str] = []
        for link in links:
            href = links_href = _HREF.search(link)
            href = links_href.group(1).split("?")[0] if links_href else ""
            path = (page.parent / href).resolve()
            if _BUNDLE_NAME.search(href):
                sources += _bundle_sources(path)
            else:
                sources.append(path.relative_to(outdir).as_posix())
        key = tuple(sources)
        if key not in bundles:
            parts = []
            for source in sources:
                path = outdir / source
                css = path.read_text(encoding="utf-8")
                parts.append(_relocated_css(css, path, outdir / _BUNDLE_DIR))
            content = "\n".join(parts)
            digest = hashlib.sha256(content.encode()).hexdigest()[:12]
            name = f"{_BUNDLE_DIR}/jaxguide-bundle-{digest}.css"
            full = f"{_BUNDLE_HEADER}{' '.join(sources)} */\n{content}"
            target = outdir / name
            if not target.is_file() or target.read_text(encoding="utf-8") != full:
                write_atomic(target, full.encode())
            bundles[key] = name
        first = head.index(links[0])
        new_head = head[:first] + f'<link rel="stylesheet" href="{prefix}{bundles[key]}" />'
        rest = head[first + len(links[0]) :]
        for link in links[1:]:
            rest = re.sub(r"[ \t]*" + re.escape(link) + r"\n?", "", rest, count=1)
        new = new_head + rest + sep + body
        if new != text:
            page.write_text(new, encoding="utf-8")
            memo.entry(page)
    # Bundles no page links any more (an earlier build's): removed.
    live = {outdir / name for name in bundles.values()}
    for old in (outdir / _BUNDLE_DIR).glob("jaxguide-bundle-*.css"):
        if old not in live:
            old.unlink()


_IMPORT = re.compile(r"""@import\s+(?:url\()?["']?([^"')\s;]+)""")
_CSS_URL = re.compile(r"""url\((['"]?)([^'")]+)\1\)""")
_IMPORT_STATEMENT = re.compile(r"""@import\s+(?:url\()?["']([^"')\s;]+)["']\)?\s*;""")


# ----------------------------------------------------------------------------- pages


# Scripts in <head> that do not need to run before the page is parsed: deferred (they
# run in order once the document is parsed, before DOMContentLoaded, where their work
# starts; on search.html Sphinx's search tools, then the index they read).
# documentation_options.js stays: inline scripts in <head> use what it defines.
_HEAD_SCRIPT = re.compile(
    r'<script((?: data-[a-z-]+="[^"]*")*) src="((?:\.\./)*(?:_static/(?!documentation_options\.js)|searchindex\.js)[^"]*)"></script>'
)
_SCORER_SCRIPT = re.compile(
    r'[ \t]*<script[^>]* src="(?:\.\./)*_static/jaxguide-search\.js[^"]*"></script>\n?'
)
_IMG = re.compile(r"<img\b[^>]*>")
_SIZE_STYLE = re.compile(r'\s*style="width: (\d+(?:\.\d+)?)px; height: (\d+(?:\.\d+)?)px;"')
_RICH_SPAN = re.compile(
    r'<span style="(color: (#[0-9a-fA-F]{6}); text-decoration-color: #[0-9a-fA-F]{6}; '
    r'background-color: (#[0-9a-fA-F]{6}))">'
)
_SIDEBAR_START = '<div class="sidebar-primary-items__start sidebar-primary__section">'
_SEARCH_BUTTON = re.compile(
    r'(<button class="btn search-button-field search-button__button[^"]*") title="Search" aria-label="Search"'
)


def _luminance(color: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _readable_span(match: re.Match) -> str:
    """A coloured output span (rich's HTML, e.g. jax.debug.visualize_array_sharding's
    blocks) whose text contrasts less than 4.5:1 with its background: its text in black
    or white, whichever contrasts more."""
    style, fg, bg = match.group(1), match.group(2), match.group(3)
    if contrast(fg, bg) >= 4.5:
        return match.group(0)
    best = max(("#000000", "#ffffff"), key=lambda c: contrast(c, bg))
    return match.group(0).replace(
        style, f"color: {best}; text-decoration-color: {best}; background-color: {bg}"
    )


def _sized_img(tag: str, outdir: Path, page: Path) -> str:
    """An output figure's <img> with ``width`` and ``height`` attributes (its CSS size:
    a 2x figure's half size), so the page keeps its layout while images load, and
    loaded lazily. Sphinx writes the size as an inline style, which also fixes the
    height on a narrow screen."""
    if " width=" in tag or "_images/" not in tag:
        return tag
    size = _SIZE_STYLE.search(tag)
    if size:
        width, height = (round(float(v)) for v in size.groups())
        tag = _SIZE_STYLE.sub("", tag, count=1)
    else:
        from PIL import Image

        src = re.search(r'src="([^"]+)"', tag)
        path = (page.parent / src.group(1)) if src else None
        if path is None or not path.is_file():
            return tag
        with Image.open(path) as image:
            width, height = image.size
    # Loaded when near the screen: figures are below the first screenful, and their
    # bytes would otherwise compete with the text for the first paint.
    return tag.replace(
        "<img ", f'<img width="{width}" height="{height}" loading="lazy" decoding="async" ', 1
    )


_ICON_FONTS = {
    "fa-solid-900": ("fa-solid", "fas"),
    "fa-brands-400": ("fa-brands", "fab"),
    "fa-regular-400": ("fa-regular", "far"),
}


def _preload_icon_fonts(text: str, page: Path, outdir: Path) -> str:
    """Preload the (subset, few-kB) icon webfonts a page's icons use: fetched with the
    stylesheets, they are there for the first paint, instead of arriving after it and
    widening the header's buttons (a layout shift)."""
    if "</head>" not in text or 'rel="preload" as="font"' in text:
        return text
    classes = set(" ".join(_CLASS_ATTR.findall(text)).split())
    prefix = "../" * (len(page.relative_to(outdir).parts) - 1)
    links = "".join(
        f'<link rel="preload" as="font" type="font/woff2" crossorigin '
        f'href="{prefix}_static/vendor/fontawesome/webfonts/{font}.woff2">\n'
        for font, styles in _ICON_FONTS.items()
        if classes & set(styles)
    )
    return text.replace("</head>", links + "</head>", 1)


# Scripts a page loads only when it has what they work on (each is deferred, but its
# download and its work at DOMContentLoaded still cost a phone): sphinx-design's tabs,
# the toggle buttons of dropdown admonitions (the exercises' solutions) and the copy
# buttons of code blocks.
_SCRIPT_NEEDS: dict[str, tuple[frozenset[str], ...]] = {
    "design-tabs.js": (frozenset({"sd-tab-set"}),),
    # togglebutton's selector: '.toggle, .admonition.dropdown'
    "togglebutton.js": (frozenset({"toggle"}), frozenset({"admonition", "dropdown"})),
    # copybutton's selector: 'div.highlight pre'
    "copybutton.js": (frozenset({"highlight"}),),
    "clipboard.min.js": (frozenset({"highlight"}),),
}
_ANY_CLASS = re.compile(r'class="([^"]*)"')


# The theme preloads its two main scripts at high priority, where they compete with the
# stylesheets for the first paint; they are loaded (deferred) at the end of the body anyway.
_SCRIPT_PRELOAD = re.compile(r'[ \t]*<link rel="preload" as="script" href="[^"]*"\s*/?>\n?')
_DOC_OPTIONS = re.compile(
    r'<script src="((?:\.\./)*)_static/documentation_options\.js(?:\?[^"]*)?"></script>'
)


def _drop_unused_scripts(text: str) -> str:
    head, sep, body = text.partition("</head>")
    classes = {frozenset(c.split()) for c in _ANY_CLASS.findall(body)}
    for script, needs in _SCRIPT_NEEDS.items():
        if not any(need <= c for need in needs for c in classes):
            head = re.sub(
                rf'[ \t]*<script[^>]* src="[^"]*_static/{re.escape(script)}[^"]*"></script>\n?',
                "",
                head,
            )
    return head + sep + body


def _inline_doc_options(text: str, outdir: Path) -> str:
    """documentation_options.js (a few hundred bytes that inline scripts in <head> use)
    written into the page: the only script that blocked the first paint, gone."""
    source = outdir / "_static" / "documentation_options.js"
    if not source.is_file():
        return text
    code = source.read_text(encoding="utf-8").strip()
    return _DOC_OPTIONS.sub(lambda m: f"<script>{code}</script>", text, count=1)


# pydata-sphinx-theme, once a page has loaded, measures every code block and output
# (scrollWidth against clientWidth) to give the scrollable ones tabindex=0. On a long
# chapter that lays out the whole page at once, sections the reader has not reached
# included: the longest task on a phone. Its call is removed from the theme's script;
# book/_static/jaxguide-nav.js does the same for each block when it comes near the
# screen, and until then every <pre> keeps the tabindex="0" the build gives it.
_THEME_TAB_STOPS = re.compile(
    r',"complete"===document\.readyState\?(\w+)\(\):window\.addEventListener\("load",\1\)'
)


def _patch_theme_script(theme: Path, static: Path) -> None:
    """Write the theme's script into the output without its whole-page tab-stop pass."""
    code = (theme / "scripts" / "pydata-sphinx-theme.js").read_text(encoding="utf-8")
    calls = list(_THEME_TAB_STOPS.finditer(code))
    if (
        len(calls) != 1
        or f'function {calls[0].group(1)}(){{const e=()=>{{document.querySelectorAll(["pre"'
        not in code
    ):
        raise ExtensionError(
            "jaxguide_site: pydata-sphinx-theme.js has no single load-time tab-stop pass to "
            "remove; did the theme change?"
        )
    code = code[: calls[0].start()] + code[calls[0].end() :]
    write_atomic(static / "scripts" / "pydata-sphinx-theme.js", code.encode())


_PYGMENTS_RULE = re.compile(r"^(.*?)\.highlight(?: \.([\w-]+))?\s*\{([^}]*)\}", re.M)


def plain_token_classes(pygments_css: str, other_css: str) -> frozenset[str]:
    """Pygments token classes that change nothing: in every theme mode their only style
    is the colour the code block has anyway (``.n`` names, ``.p`` punctuation and ``.w``
    whitespace in the book's styles), and no other stylesheet names them. Their spans
    are half the elements of a long chapter: :func:`unwrap_plain_tokens` drops them."""
    block: dict[str, str] = {}
    tokens: dict[str, dict[str, str]] = {}
    for prefix, cls, body in _PYGMENTS_RULE.findall(pygments_css):
        decls = {
            k.strip(): v.strip()
            for k, _, v in (d.partition(":") for d in body.split(";") if d.strip())
        }
        if not cls:
            if "color" in decls:
                block[prefix] = decls["color"].lower()
        else:
            tokens.setdefault(cls, {})[prefix] = (
                decls["color"].lower() if set(decls) == {"color"} else "<other>"
            )
    if not block:
        return frozenset()
    plain = {
        cls
        for cls, colours in tokens.items()
        if colours.keys() == block.keys() and all(colours[p] == block[p] for p in block)
    }
    # A selector can match a token's span (one class, no id or other attribute) only
    # through a compound with that class alone: `.sig-param.n` (Sphinx's signatures) cannot.
    named = set()
    for prelude in re.findall(r"([^{}]*)\{", other_css):
        for compound in re.split(r"[\s>+~,()]+", prelude):
            classes = re.findall(r"\.([\w-]+)", compound)
            if len(classes) == 1 and "#" not in compound and "[" not in compound:
                named.add(classes[0])
    return frozenset(plain - named)


_HIGHLIGHT_PRE = re.compile(r'(<div class="highlight"><pre[^>]*>)(.*?)(</pre>)', re.S)


def unwrap_plain_tokens(text: str, plain: frozenset[str]) -> str:
    """``text`` with the spans of ``plain`` token classes in code blocks replaced by
    their text (see :func:`plain_token_classes`)."""
    if not plain:
        return text
    span = re.compile(
        r'<span class="(?:' + "|".join(map(re.escape, sorted(plain))) + r')">([^<]*)</span>'
    )
    return _HIGHLIGHT_PRE.sub(lambda m: m.group(1) + span.sub(r"\1", m.group(2)) + m.group(3), text)


# The theme's inline script in <head> sets data-theme to the stored theme or "auto", and
# its deferred script resolves "auto" to light or dark later. The code's colours and line
# height (pygments.css: html[data-theme="light"] .highlight ...) wait for that: a page
# painted before it shifts its code blocks (CLS) and, in dark mode, flashes light colours.
# Resolved in the inline script instead, as the theme's setTheme() does.
_THEME_INIT = 'document.documentElement.dataset.theme = localStorage.getItem("theme") || "auto";'
_THEME_INIT_RESOLVED = (
    "document.documentElement.dataset.theme = "
    '["light", "dark"].includes(document.documentElement.dataset.mode) '
    "? document.documentElement.dataset.mode "
    ': (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");'
)


_PRE = re.compile(r"<pre(?![^>]*\btabindex=)(?=[\s>])")


def _rewrite_page(
    text: str, page: Path, outdir: Path, *, as_you_type: bool, plain: frozenset[str] = frozenset()
) -> str:
    slim = _FA_SCRIPT.sub("", text)
    slim = slim.replace(_THEME_INIT, _THEME_INIT_RESOLVED, 1)
    slim = unwrap_plain_tokens(slim, plain)
    slim = _SCRIPT_PRELOAD.sub("", slim)
    slim = _drop_unused_scripts(slim)
    slim = _inline_doc_options(slim, outdir)
    if page.name != "search.html":
        if not as_you_type:
            slim = _SEARCH_SCRIPTS.sub("", slim)
        # The search scorer (book/_static/jaxguide-search.js) is for search.html only.
        slim = _SCORER_SCRIPT.sub("", slim)
    head, sep, body = slim.partition("</head>")
    slim = _HEAD_SCRIPT.sub(r'<script\1 defer src="\2"></script>', head) + sep + body
    slim = _preload_icon_fonts(slim, page, outdir)
    slim = _IMG.sub(lambda m: _sized_img(m.group(0), outdir, page), slim)
    slim = _RICH_SPAN.sub(_readable_span, slim)
    # Scrollable blocks must take keyboard focus; which ones scroll is known only in the
    # browser, near the screen (_patch_theme_script): focusable until measured.
    slim = _PRE.sub('<pre tabindex="0"', slim)
    # The book's title, search button and chapter list open the sidebar: a banner
    # landmark (the theme's top bar, which would be one, is empty and hidden here).
    slim = slim.replace(_SIDEBAR_START, _SIDEBAR_START[:-1] + ' role="banner">', 1)
    # The search button shows "Search Ctrl+K": its accessible name must contain what
    # it shows (WCAG 2.5.3), so the name comes from its text, and the shortcut is declared.
    slim = _SEARCH_BUTTON.sub(r'\1 title="Search" aria-keyshortcuts="Control+K"', slim)
    # A hidden cell's toggle says "Show code cell source": that is its name, not the
    # aria-label "Toggle hidden content" myst-nb gives it.
    slim = slim.replace('<summary aria-label="Toggle hidden content">', "<summary>")
    return slim


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
    _shrink_images(outdir)
    # Only the pages Sphinx wrote in this build need rewriting: the others are as the
    # last build left them, which the memo recognises by their digest.
    pygments = static / "pygments.css"
    others = [p for p in static.rglob("*.css") if p != pygments and "bundle" not in p.name]
    plain = plain_token_classes(
        pygments.read_text(encoding="utf-8") if pygments.is_file() else "",
        "".join(p.read_text(encoding="utf-8") for p in others),
    )
    memo = PageMemo(
        outdir, setting=f"search_as_you_type={as_you_type} plain={','.join(sorted(plain))}"
    )
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if memo.final(page, text):
            continue
        slim = _rewrite_page(text, page, outdir, as_you_type=as_you_type, plain=plain)
        if slim != text:
            page.write_text(slim, encoding="utf-8")
        if "fontawesome.js" in slim:
            raise ExtensionError(
                f"jaxguide_site: {page.name} still loads fontawesome.js; did the theme change?"
            )
    for leftover in (static / "scripts").glob("fontawesome.js*"):
        leftover.unlink()
    used = _used_icons(outdir, memo)
    # Always start from the theme's own files: an incremental build may keep the output's.
    theme = _theme_static()
    _patch_theme_script(theme, static)
    css = (theme / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    (static / "styles" / "pydata-sphinx-theme.css").write_text(
        _keep_used_rules(css, used), encoding="utf-8"
    )
    stylesheets = "".join(p.read_text(encoding="utf-8") for p in static.rglob("*.css"))
    missing = sorted(n for n in used if not re.search(rf"\.{n}::?before[,{{]", stylesheets))
    if missing:
        raise ExtensionError(
            f"jaxguide_site: no CSS rule for Font Awesome icon(s) {missing}; did the theme change?"
        )
    codepoints = _codepoints(stylesheets)
    _write_not_found(app, outdir)
    # Last, when every page is final: drop the CSS rules no page can use (most of
    # Bootstrap's and sphinx-design's), so the stylesheets that block the first paint
    # are a fraction of their size. Their originals come back at the next build.
    rewritten = _purge_stylesheets(outdir, memo)
    _bundle_stylesheets(outdir, memo)
    memo.save()
    write_atomic(outdir / _PURGED_LIST, "\n".join(str(p) for p in rewritten).encode())
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


# The stylesheets _finish purged, listed in the output (one path a line), and where
# their originals are kept (next to the output folder).
_PURGED_LIST = ".jaxguide-purged-css"
_PURGE_MEMO = ".jaxguide-purge-memo"  # beside the html folder, like the font cache
_ORIGINALS = ".jaxguide-css-originals"


def _restore_stylesheets(app: Sphinx) -> None:
    """``builder-inited``: put back the originals of the stylesheets the last build
    purged, so this build purges them afresh for its pages (Sphinx copies static files
    only when it writes a page, and then finds them unchanged: no "overwrite" notes)."""
    outdir = Path(app.outdir)
    originals = outdir.parent / _ORIGINALS
    listed = outdir / _PURGED_LIST
    if not listed.is_file():
        return
    for name in listed.read_text().split():
        if name.endswith("pydata-sphinx-theme.css"):
            continue  # _clear_rewritten removed it; _finish writes it from the theme's
        saved = originals / name
        if saved.is_file():
            write_atomic(outdir / name, saved.read_bytes())


def _clear_rewritten(app: Sphinx) -> None:
    """``builder-inited``: remove the theme files that :func:`_finish` rewrote in the
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


def _scorer_path(app: Sphinx, config) -> None:
    """``html_search_scorer`` is opened relative to the working directory; resolve it
    against the book's folder, so the build works from any directory."""
    scorer = config.html_search_scorer
    if scorer and not Path(scorer).is_absolute():
        config.html_search_scorer = str(Path(app.confdir) / scorer)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _scorer_path)
    app.connect("builder-inited", _clear_rewritten)
    app.connect("builder-inited", _restore_stylesheets)
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    app.connect("doctree-resolved", _drop_thebe_nodes, priority=900)
    app.connect("html-page-context", _page_context, priority=900)
    # Last: after the theme rewrites pygments.css and myst-nb copies its stylesheet.
    app.connect("build-finished", _finish, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
