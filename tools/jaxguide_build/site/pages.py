"""Each page rewritten for a fast, accessible first paint (:func:`_rewrite_page`).

* Scripts: those in ``<head>`` deferred, ``documentation_options.js`` written into the
  page, the theme's scripts not preloaded, and the copy-button, toggle-button and tab
  scripts loaded only by a page that has what they work on. The theme (light or dark)
  is decided in the first inline script, not after the first paint.
* Long pages: Pygments spans that change nothing are dropped
  (:func:`plain_token_classes`).
* Accessibility (axe-core, ``tests/test_browser.py``): coloured output text below 4.5:1
  contrast (rich's HTML) gets black or white text; the sidebar's title, search and
  chapter list form a ``banner`` landmark; the search button's accessible name is its
  visible text and a hidden cell's toggle its "Show code cell source".
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from jaxguide._wcag import contrast

from . import icons, images, search
from .memo import PageMemo

# Scripts in <head> that do not need to run before the page is parsed: deferred (they
# run in order once the document is parsed, before DOMContentLoaded, where their work
# starts; on search.html Sphinx's search tools, then the index they read).
# documentation_options.js stays: inline scripts in <head> use what it defines.
_HEAD_SCRIPT = re.compile(
    r'<script((?: data-[a-z-]+="[^"]*")*) src="((?:\.\./)*(?:_static/(?!documentation_options\.js)|searchindex\.js)[^"]*)"></script>'
)
_RICH_SPAN = re.compile(
    r'<span style="(color: (#[0-9a-fA-F]{6}); text-decoration-color: #[0-9a-fA-F]{6}; '
    r'background-color: (#[0-9a-fA-F]{6}))">'
)
_SIDEBAR_START = '<div class="sidebar-primary-items__start sidebar-primary__section">'
_SEARCH_BUTTON = re.compile(
    r'(<button class="btn search-button-field search-button__button[^"]*") title="Search" aria-label="Search"'
)


def _readable_span(match: re.Match[str]) -> str:
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
    # Each prelude starts at the text's start or just after a brace (the lookbehind):
    # without it, every position inside a rule's body began a match that failed only
    # at the body's closing brace, quadratic in the body's length: 1.3 s on the theme's
    # stylesheets (blocks of custom properties up to 3,700 characters), 0.01 s with it.
    for prelude in re.findall(r"(?<![^{}])([^{}]*)\{", other_css):
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
    text: str, page: Path, outdir: Path, *, plain: frozenset[str] = frozenset()
) -> str:
    """``text``, the page ``page`` of the site in ``outdir``, as the site serves it."""
    slim = icons.FA_SCRIPT.sub("", text)
    slim = slim.replace(_THEME_INIT, _THEME_INIT_RESOLVED, 1)
    slim = unwrap_plain_tokens(slim, plain)
    slim = _SCRIPT_PRELOAD.sub("", slim)
    slim = _drop_unused_scripts(slim)
    slim = _inline_doc_options(slim, outdir)
    slim = search.search_scripts(slim, page)
    head, sep, body = slim.partition("</head>")
    slim = _HEAD_SCRIPT.sub(r'<script\1 defer src="\2"></script>', head) + sep + body
    slim = icons.preload_icon_fonts(slim, page, outdir)
    slim = images.IMG.sub(lambda m: images.sized_img(m.group(0), outdir, page), slim)
    slim = _RICH_SPAN.sub(_readable_span, slim)
    # Scrollable blocks must take keyboard focus; which ones scroll is known only in the
    # browser, near the screen (theme.patch_theme_script): focusable until measured.
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


def rewrite_pages(app: Sphinx, outdir: Path) -> PageMemo:
    """Rewrite every page Sphinx wrote in this build (:func:`_rewrite_page`); the others
    are as the last build left them, which the memo returned recognises by their digest."""
    static = outdir / "_static"
    as_you_type = (app.config.html_theme_options or {}).get("search_as_you_type", False)
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
        slim = _rewrite_page(text, page, outdir, plain=plain)
        if slim != text:
            page.write_text(slim, encoding="utf-8")
        if "fontawesome.js" in slim:
            raise ExtensionError(
                f"jaxguide_build.site: {page.name} still loads fontawesome.js; "
                "did the theme change?"
            )
    for leftover in (static / "scripts").glob("fontawesome.js*"):
        leftover.unlink()
    return memo
