"""Site-wide parts of the built book: page descriptions for search results and link
previews, the licence in the footer, a 404 page for the web host, and what
tools/jaxguide_build/site/ does for a fast, accessible first paint: figures at 2x with their
size in the page, stylesheets without unused rules or @import, deferred scripts, and
coloured output text that keeps its contrast."""

from __future__ import annotations

import html
import re
import urllib.parse

import pytest
import yaml
from PIL import Image

from bookcheck import ROOT, chapters, parsed_file, parsed_page
from jaxguide._wcag import contrast
from jaxguide_build.site import bundle, stylesheets, theme

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


@pytest.mark.book
@pytest.mark.parametrize("page", chapters())
def test_every_page_has_a_description_from_its_own_prose(book, page):
    soup = parsed_page(book, page)
    (meta,) = soup.select('meta[name="description"]')
    description = meta["content"]
    assert 40 <= len(description) <= 205, description
    # The page's first paragraph (compared without spaces: inline code splits the text).
    squeeze = lambda text: "".join(text.split())  # noqa: E731
    assert squeeze(description.removesuffix(" …"))[:60] in squeeze(
        soup.select_one("article").get_text(" ")
    )
    assert soup.select_one('meta[property="og:description"]')["content"] == description


@pytest.mark.book
def test_glued_values_keep_their_straight_quotes(book):
    """A value glued into the prose is printed output: Sphinx's smart quotes leave it
    alone (theme.GluedValuesKeepTheirQuotes), so ``[1]['w']`` reads as the cell printed
    it, never ``[1][‘w’]``."""
    curled, straight = [], 0
    for page in chapters():
        soup = parsed_page(book, page)
        for span in soup.select("span.pasted-text"):
            text = span.get_text()
            straight += "'" in text
            if "‘" in text or "“" in text:  # an apostrophe (’) in glued prose is fine
                curled.append(f"{page}: {text}")
    assert curled == []
    assert straight  # some glued values do hold quotes (pytrees' key paths)


@pytest.mark.book
def test_footer_names_the_licence(book):
    footers = parsed_page(book, "numpy").select("footer")
    assert "Apache License 2.0" in " ".join(" ".join(f.get_text(" ") for f in footers).split())


@pytest.mark.book
def test_not_found_page_links_home_absolutely(book):
    base = CONFIG["html"]["baseurl"]
    soup = parsed_file(book.html / "404.html")
    links = [a["href"] for a in soup.select("a[href]")]
    assert links and all(h.startswith(base) for h in links), links
    assert base in links and f"{base}search.html" in links
    assert soup.title.get_text() == f"Page not found — {html.unescape(CONFIG['title'])}"
    # Its icon is inline: no request for the /favicon.ico the site does not have.
    icon = soup.select_one('link[rel="icon"]')["href"]
    favicon = (ROOT / "book" / CONFIG["html"]["favicon"]).read_text().strip()
    assert icon.startswith("data:image/svg+xml,")
    assert urllib.parse.unquote(icon.removeprefix("data:image/svg+xml,")) == favicon


# ----------------------------------------------------------------------------- first paint


def _chapter_soups(book):
    return {name: parsed_page(book, name) for name in chapters() if name not in ("index", "report")}


@pytest.mark.book
def test_figures_are_2x_images_shown_at_their_size(book):
    """Every figure's PNG has twice the pixels of the size the page gives it (width and
    height attributes, so nothing moves while it loads)."""
    checked = 0
    for name, soup in _chapter_soups(book).items():
        for img in soup.select("div.cell_output img"):
            assert img.get("width") and img.get("height"), f"{name}: {img.get('src')} has no size"
            with Image.open(book.html / img["src"]) as png:
                natural = png.size
            shown = (int(img["width"]), int(img["height"]))
            assert all(abs(n - 2 * s) <= 1 for n, s in zip(natural, shown)), (
                name,
                img["src"],
                natural,
                shown,
            )
            assert "height:" not in (img.get("style") or ""), img  # a fixed height would stretch it
            checked += 1
    assert checked >= 15, checked


@pytest.mark.book
def test_only_one_stylesheet_blocks_the_first_paint(book):
    """In a page's <head>, no script blocks the parser (they are deferred, and the few
    bytes of documentation_options.js that inline scripts need are written in the page),
    the theme's scripts are not preloaded ahead of the stylesheet, one stylesheet is
    linked (the bundle of the theme's and extensions' stylesheets), and no stylesheet
    @imports another (a second round trip before anything is drawn)."""
    bundles = set()
    for name in chapters() + ["search", "genindex"]:
        soup = parsed_page(book, name)
        blocking = [
            s["src"]
            for s in soup.head.select("script[src]")
            if not (s.has_attr("defer") or s.has_attr("async"))
        ]
        assert blocking == [], (name, blocking)
        assert any("const DOCUMENTATION_OPTIONS" in s.get_text() for s in soup.head("script"))
        assert not soup.select('link[rel="preload"][as="script"]'), name
        # The theme (light or dark) is decided before the first paint, not by the
        # deferred theme script after it (a code block would change its line height).
        first_script = soup.head.select_one("script").get_text()
        assert 'matchMedia("(prefers-color-scheme: dark)")' in first_script, name
        assert '|| "auto";\n' not in first_script.split("dataset.theme", 1)[1], name
        sheets = [link["href"] for link in soup.select('link[rel="stylesheet"]')]
        assert len(sheets) == 1 and re.fullmatch(
            r"_static/jaxguide-bundle-[0-9a-f]{12}\.css", sheets[0]
        ), (name, sheets)
        bundles.add(sheets[0])
        if name != "search":
            assert not soup.select(
                'script[src*="jaxguide-search.js"], script[src*="searchindex.js"]'
            ), name
    # Sphinx's own search index is not built: the search page reads Pagefind's.
    assert not (book.html / "searchindex.js").exists()
    for css in (book.html / "_static").rglob("*.css"):
        assert "@import" not in css.read_text(encoding="utf-8"), css
    # Every page links the same bundle: one download for the whole site.
    assert len(bundles) == 1, bundles
    (bundled,) = bundles
    text = (book.html / bundled).read_text(encoding="utf-8")
    sources = bundle.bundle_sources(book.html / bundled)
    assert "_static/styles/pydata-sphinx-theme.css" in sources and sources[-1].endswith(
        "jaxguide.css"
    )
    assert "content-visibility: auto" in text  # book/_static/jaxguide.css, last
    # Its url()s resolve from the bundle's folder (the icon fonts).
    for ref in re.findall(r"url\(([^)\"':]+)\)", text):
        assert (book.html / "_static" / ref.split("?")[0].split("#")[0]).is_file(), ref


@pytest.mark.book
def test_pages_load_only_the_scripts_they_use(book):
    """The copy buttons' scripts load where there is code, the toggle buttons' where a
    solution is hidden, sphinx-design's tabs nowhere without tabs."""
    for name in chapters() + ["search", "genindex"]:
        soup = parsed_page(book, name)
        scripts = {s["src"].split("?")[0].split("/")[-1] for s in soup.select("script[src]")}
        has_code = bool(soup.select("div.highlight pre"))
        has_dropdown = bool(soup.select(".admonition.dropdown, .toggle"))
        assert ("copybutton.js" in scripts) == has_code, name
        assert ("clipboard.min.js" in scripts) == has_code, name
        assert ("togglebutton.js" in scripts) == has_dropdown, name
        assert ("design-tabs.js" in scripts) == bool(soup.select(".sd-tab-set")), name
    assert "togglebutton.js" in book.page("numpy") and "copybutton.js" in book.page("numpy")


@pytest.mark.book
def test_theme_script_does_not_measure_the_whole_page_on_load(book):
    """pydata-sphinx-theme's load-time pass over every code block is gone from its
    script (tools/jaxguide_build/site/theme.py); jaxguide-nav.js measures blocks near the
    screen, and every code block is focusable until then."""
    script = (book.html / "_static" / "scripts" / "pydata-sphinx-theme.js").read_text()
    assert theme._THEME_TAB_STOPS.search(script) is None
    assert 'addEventListener("load"' not in script
    original = (theme.theme_static() / "scripts" / "pydata-sphinx-theme.js").read_text()
    assert theme._THEME_TAB_STOPS.search(original) is not None
    assert "IntersectionObserver" in (book.html / "_static" / "jaxguide-nav.js").read_text()
    pres = parsed_page(book, "numpy").select("pre")
    assert pres and all(p.get("tabindex") == "0" for p in pres)


@pytest.mark.book
def test_plain_token_spans_are_gone_from_the_pages(book):
    text = book.page("training")
    assert '<span class="n">' not in text and '<span class="p">' not in text
    assert '<span class="k">' in text or '<span class="kn">' in text


@pytest.mark.book
def test_purged_stylesheets_keep_every_rule_the_pages_use(book):
    """The theme's stylesheet in the site is a fraction of the original, yet every
    selector of the original whose classes and ids all occur in the pages' markup is
    still there."""
    original = (theme.theme_static() / "styles" / "pydata-sphinx-theme.css").read_text(
        encoding="utf-8"
    )
    purged = (book.html / "_static" / "styles" / "pydata-sphinx-theme.css").read_text(
        encoding="utf-8"
    )
    assert len(purged) < 0.5 * len(original), (len(purged), len(original))
    marked = set()
    for page in book.html.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        for classes in re.findall(r'class="([^"]*)"', text):
            marked.update(classes.split())
        marked.update(re.findall(r'id="([^"]*)"', text))
    needed, checked = [], 0
    for prelude, body in stylesheets._css_blocks(original):
        if body is None or prelude.startswith("@"):
            continue
        for selector in stylesheets._split_top(prelude, ","):
            if stylesheets._selector_used(selector, marked, ()):
                checked += 1
                if selector.strip() not in purged:
                    needed.append(selector.strip())
    assert checked > 200 and needed == [], needed[:20]


@pytest.mark.book
def test_coloured_output_text_contrasts_at_4_5_to_1(book):
    """Coloured text in outputs (rich's HTML: JAX's sharding pictures) reaches 4.5:1
    on its background, on every page."""
    pairs = set()
    for name in chapters():
        pairs.update(
            re.findall(
                r'<span style="color: (#[0-9a-fA-F]{6});[^"]*background-color: (#[0-9a-fA-F]{6})',
                book.page(name),
            )
        )
    assert len(pairs) >= 8, pairs
    low = {p: round(contrast(*p), 2) for p in pairs if contrast(*p) < 4.5}
    assert low == {}, low
