"""Site-wide parts of the built book: page descriptions for search results and link
previews, the licence in the footer, a 404 page for the web host, and what
tools/jaxguide_site.py does for a fast, accessible first paint: figures at 2x with their
size in the page, stylesheets without unused rules or @import, deferred scripts, and
coloured output text that keeps its contrast."""

from __future__ import annotations

import html
import re

import pytest
import yaml
from bs4 import BeautifulSoup
from PIL import Image

import jaxguide_site
from bookcheck import ROOT
from conftest import chapters

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


@pytest.mark.book
@pytest.mark.parametrize("page", chapters())
def test_every_page_has_a_description_from_its_own_prose(book, page):
    soup = BeautifulSoup(book.page(page), "html.parser")
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
def test_footer_names_the_licence(book):
    footers = BeautifulSoup(book.page("numpy"), "html.parser").select("footer")
    assert "Apache License 2.0" in " ".join(" ".join(f.get_text(" ") for f in footers).split())


@pytest.mark.book
def test_not_found_page_links_home_absolutely(book):
    page = (book.html / "404.html").read_text()
    base = CONFIG["html"]["baseurl"]
    soup = BeautifulSoup(page, "html.parser")
    links = [a["href"] for a in soup.select("a[href]")]
    assert links and all(h.startswith(base) for h in links), links
    assert base in links and f"{base}search.html" in links
    assert soup.title.get_text() == f"Page not found — {html.unescape(CONFIG['title'])}"


# ----------------------------------------------------------------------------- first paint


def test_purge_css_keeps_every_rule_that_can_match():
    css = (
        '@charset "utf-8";/* a } comment */.a,.b .c{color:red}.d:not(.gone){x:1}'
        "@media (min-width:1px){.gone{y:2}.a>.b{z:3}}@media print{.gone{q:1}}"
        '@font-face{font-family:X;src:url("a}b.woff2")}@keyframes k{from{top:0}to{top:1px}}'
        '.e[data-x=".gone"]{w:1}#id1{a:b}#gone{c:d}.bs-tooltip-top{t:1}a[href*="}"]{u:1}.gone .a{v:1}'
    )
    out = jaxguide_site.purge_css(css, {"a", "b", "c", "d", "e", "id1"}, ("bs-tooltip-",))
    assert out.split("\n") == [
        '@charset "utf-8";',
        ".a,.b .c{color:red}",
        ".d:not(.gone){x:1}",
        "@media (min-width:1px){.a>.b{z:3}}",
        '@font-face{font-family:X;src:url("a}b.woff2")}',
        "@keyframes k{from{top:0}to{top:1px}}",
        '.e[data-x=".gone"]{w:1}',
        "#id1{a:b}",
        ".bs-tooltip-top{t:1}",
        'a[href*="}"]{u:1}',
    ]


def test_low_contrast_output_text_gets_black_or_white():
    pink = '<span style="color: #ffffff; text-decoration-color: #ffffff; background-color: #de9ed6">CPU 0</span>'
    navy = '<span style="color: #ffffff; text-decoration-color: #ffffff; background-color: #393b79">CPU 1</span>'
    fixed = jaxguide_site._RICH_SPAN.sub(jaxguide_site._readable_span, pink + navy)
    assert (
        'color: #000000; text-decoration-color: #000000; background-color: #de9ed6">CPU 0' in fixed
    )
    assert navy in fixed  # already 10:1
    assert round(jaxguide_site.contrast("#ffffff", "#de9ed6"), 1) == 2.1
    assert round(jaxguide_site.contrast("#000000", "#ffffff"), 1) == 21.0


def _chapter_soups(book):
    return {
        name: BeautifulSoup(book.page(name), "html.parser")
        for name in chapters()
        if name not in ("index", "report")
    }


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
def test_only_stylesheets_block_the_first_paint(book):
    """In a chapter's <head>, scripts are deferred (but the few bytes of
    documentation_options.js that inline scripts need), and no stylesheet @imports
    another (a second round trip before anything is drawn)."""
    for name, soup in _chapter_soups(book).items():
        blocking = [
            s["src"]
            for s in soup.head.select("script[src]")
            if not (s.has_attr("defer") or s.has_attr("async"))
        ]
        assert [b.split("?")[0] for b in blocking] == ["_static/documentation_options.js"], (
            name,
            blocking,
        )
        assert not soup.select(
            'script[src*="jaxguide-search.js"], script[src*="searchindex.js"]'
        ), name
    for css in (book.html / "_static").rglob("*.css"):
        assert "@import" not in css.read_text(encoding="utf-8"), css


@pytest.mark.book
def test_purge_memo_is_reused_only_while_its_inputs_match(tmp_path, monkeypatch):
    """A rebuild reuses the purged stylesheet while the stylesheet and the names its
    selectors use that occur in the site are unchanged, and purges again when a page
    brings one of those names."""
    html_dir = tmp_path / "html"
    (html_dir / "_static").mkdir(parents=True)
    page = html_dir / "index.html"
    page.write_text('<link rel="stylesheet" href="_static/site.css"><p class="a">x</p>')
    original = ".a{color:red}.b{color:blue}"
    (html_dir / "_static" / "site.css").write_text(original)
    calls = []
    real = jaxguide_site.purge_css
    monkeypatch.setattr(jaxguide_site, "purge_css", lambda *a: calls.append(1) or real(*a))

    def purge() -> str:
        (html_dir / "_static" / "site.css").write_text(original)  # as the next build starts
        jaxguide_site._purge_stylesheets(html_dir)
        return (html_dir / "_static" / "site.css").read_text()

    assert purge() == ".a{color:red}" and len(calls) == 1
    assert purge() == ".a{color:red}" and len(calls) == 1  # from the memo
    page.write_text(page.read_text() + '<p class="zzz">new words, 12.5 s</p>')
    assert purge() == ".a{color:red}" and len(calls) == 1  # no name the stylesheet uses
    page.write_text(page.read_text() + '<p class="b">y</p>')
    assert purge() == original and len(calls) == 2  # nothing left to drop


def test_purged_stylesheets_keep_every_rule_the_pages_use(book):
    """The theme's stylesheet in the site is a fraction of the original, yet every
    selector of the original whose classes and ids all occur in the pages' markup is
    still there."""
    original = (jaxguide_site._theme_static() / "styles" / "pydata-sphinx-theme.css").read_text(
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
    for prelude, body in jaxguide_site._css_blocks(original):
        if body is None or prelude.startswith("@"):
            continue
        for selector in jaxguide_site._split_top(prelude, ","):
            if jaxguide_site._selector_used(selector, marked, ()):
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
    low = {
        p: round(jaxguide_site.contrast(*p), 2) for p in pairs if jaxguide_site.contrast(*p) < 4.5
    }
    assert low == {}, low
