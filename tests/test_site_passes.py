"""The site's passes over the built pages (tools/jaxguide_build/site/), on small
synthetic pages: stylesheets purged and bundled, plain token spans unwrapped, output
text kept readable, the page memo, the words and icons read from a page (reading), the
icon rules, fonts and preloads (icons), figures shrunk and sized (images), math as
MathML (mathml) and the 404 page (notfound). Their result on the built book is
tests/test_site.py's."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

import numpy as np
import pytest
from bs4 import BeautifulSoup
from PIL import Image
from sphinx.errors import ExtensionError

from jaxguide._wcag import contrast
from jaxguide_build.site import (
    bundle,
    icons,
    images,
    mathml,
    memo,
    notfound,
    pages,
    reading,
    stylesheets,
)
from jaxguide_build.site.theme import theme_static


def test_purge_css_keeps_every_rule_that_can_match():
    css = (
        '@charset "utf-8";/* a } comment */.a,.b .c{color:red}.d:not(.gone){x:1}'
        "@media (min-width:1px){.gone{y:2}.a>.b{z:3}}@media print{.gone{q:1}}"
        '@font-face{font-family:X;src:url("a}b.woff2")}@keyframes k{from{top:0}to{top:1px}}'
        '.e[data-x=".gone"]{w:1}#id1{a:b}#gone{c:d}.bs-tooltip-top{t:1}a[href*="}"]{u:1}.gone .a{v:1}'
    )
    out = stylesheets.purge_css(css, {"a", "b", "c", "d", "e", "id1"}, ("bs-tooltip-",))
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
    fixed = pages._RICH_SPAN.sub(pages._readable_span, pink + navy)
    assert (
        'color: #000000; text-decoration-color: #000000; background-color: #de9ed6">CPU 0' in fixed
    )
    assert navy in fixed  # already 10:1
    assert round(contrast("#ffffff", "#de9ed6"), 1) == 2.1
    assert round(contrast("#000000", "#ffffff"), 1) == 21.0


def test_plain_token_spans_are_unwrapped():
    """Spans of Pygments tokens whose only style is the code block's own colour, in every
    mode, are dropped (half the elements of a long chapter); coloured ones stay."""
    pygments = (
        'html[data-theme="light"] .highlight{ background: #fff; color: #080808 }\n'
        'html[data-theme="light"] .highlight .n{ color: #080808 }\n'
        'html[data-theme="light"] .highlight .k{ color: #6730C5 }\n'
        'html[data-theme="light"] .highlight .p{ color: #080808 }\n'
        'html[data-theme="light"] .highlight .w{ color: #080808; font-weight: bold }\n'
        'html[data-theme="dark"] .highlight{ background: #222; color: #F8F8F2 }\n'
        'html[data-theme="dark"] .highlight .n{ color: #F8F8F2 }\n'
        'html[data-theme="dark"] .highlight .k{ color: #DCC6E0 }\n'
        'html[data-theme="dark"] .highlight .p{ color: #ffffff }\n'
        'html[data-theme="dark"] .highlight .w{ color: #F8F8F2 }\n'
    )
    # .p differs in dark mode, .w has a weight: both kept. `.sig-param.n` cannot match a
    # token span; a rule for `.n` alone elsewhere would keep it.
    assert pages.plain_token_classes(pygments, "em.sig-param.n{x:1}") == {"n"}
    assert pages.plain_token_classes(pygments, "span.n:hover{x:1}") == set()
    # Linear in the stylesheets' length: long rule bodies (custom properties) took
    # seconds when every position inside a body could begin a selector's match.
    long_bodies = ".n{" + "--x:1;" * 3_000 + "}" + ":root{" + "--y:2;" * 3_000 + "}"
    start = time.perf_counter()
    assert pages.plain_token_classes(pygments, long_bodies) == set()
    assert time.perf_counter() - start < 1.0  # about 6 s when quadratic, 2 ms now
    page = (
        '<div class="highlight"><pre tabindex="0"><span class="n">x</span> '
        '<span class="k">if</span> <span class="n">y</span></pre></div>'
        '<p><span class="n">prose</span></p>'
    )
    assert pages.unwrap_plain_tokens(page, frozenset({"n"})) == (
        '<div class="highlight"><pre tabindex="0">x <span class="k">if</span> y</pre></div>'
        '<p><span class="n">prose</span></p>'
    )


def test_bundle_keeps_order_and_rewrites_urls(tmp_path):
    """Pages link one bundle of their stylesheets, in their order, its url()s moved to
    the bundle's folder; a page that links an older bundle links the new one."""
    html_dir = tmp_path / "html"
    (html_dir / "_static" / "styles").mkdir(parents=True)
    (html_dir / "_static" / "styles" / "a.css").write_text(
        '@charset "utf-8";.a{background:url(../img/x.png)}'
    )
    (html_dir / "_static" / "b.css").write_text('.b{background:url("data:image/png;base64,AA")}')
    head = (
        '<html><head>\n<link href="_static/styles/a.css?digest=1" rel="stylesheet" />\n'
        '    <link rel="stylesheet" type="text/css" href="_static/b.css?v=2" />\n'
        '<link rel="stylesheet" href="https://example.org/x.css" />\n'
        '<link rel="stylesheet" media="print" href="_static/b.css" />\n'
    )
    page = html_dir / "index.html"
    page.write_text(head + '</head><body><p class="a b">x</p></body></html>')
    page_memo = memo.PageMemo(html_dir)
    bundle.bundle_stylesheets(html_dir, page_memo)
    soup = BeautifulSoup(page.read_text(), "html.parser")
    links = [link["href"] for link in soup.select('link[rel="stylesheet"]')]
    assert links[1:] == ["https://example.org/x.css", "_static/b.css"], links
    bundled = html_dir / links[0]
    text = bundled.read_text()
    assert bundle.bundle_sources(bundled) == ["_static/styles/a.css", "_static/b.css"]
    assert "@charset" not in text and "url(img/x.png)" in text
    assert text.index(".a{") < text.index(".b{") and "data:image/png;base64,AA" in text
    assert page_memo.final(page, page.read_text())
    # The sources change (as a rebuild purges them again): the page links the new bundle.
    (html_dir / "_static" / "b.css").write_text(".b{color:red}")
    bundle.bundle_stylesheets(html_dir, page_memo)
    new = BeautifulSoup(page.read_text(), "html.parser").select('link[rel="stylesheet"]')[0]
    assert new["href"] != links[0] and not bundled.exists()
    assert ".b{color:red}" in (html_dir / new["href"]).read_text()


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
    real = stylesheets.purge_css
    monkeypatch.setattr(stylesheets, "purge_css", lambda *a: calls.append(1) or real(*a))

    def purge() -> str:
        (html_dir / "_static" / "site.css").write_text(original)  # as the next build starts
        stylesheets._purge_stylesheets(html_dir)
        return (html_dir / "_static" / "site.css").read_text()

    assert purge() == ".a{color:red}" and len(calls) == 1
    assert purge() == ".a{color:red}" and len(calls) == 1  # from the memo
    page.write_text(page.read_text() + '<p class="zzz">new words, 12.5 s</p>')
    assert purge() == ".a{color:red}" and len(calls) == 1  # no name the stylesheet uses
    page.write_text(page.read_text() + '<p class="b">y</p>')
    assert purge() == original and len(calls) == 2  # nothing left to drop


def test_page_memo_reads_a_page_again_only_when_it_changed(tmp_path, monkeypatch, caplog):
    import json

    from jaxguide_build.site import memo as site

    out = tmp_path / "html"
    out.mkdir()
    page = out / "a.html"
    page.write_text('<i class="fab fa-github"></i><p class="intro">hello</p>')
    reads = []
    real = site.icons_in
    monkeypatch.setattr(site, "icons_in", lambda text: reads.append(1) or real(text))
    memo = site.PageMemo(out)
    assert memo.entry(page)["icons"] == ["fa-github"]
    assert {"intro", "hello"} <= set(memo.entry(page)["words"]) and len(reads) == 1
    memo.save()

    again = site.PageMemo(out)
    assert again.final(page, page.read_text())
    assert again.entry(page)["icons"] == ["fa-github"] and len(reads) == 1  # from the memo
    page.write_text("<p>bye</p>")
    assert not again.final(page, page.read_text())
    assert again.entry(page)["icons"] == [] and len(reads) == 2
    assert site.PageMemo(out, setting="other").pages == {}  # finished otherwise: start again
    page.unlink()
    again.save()
    assert json.loads(again.path.read_text())["pages"] == {}  # a page that is gone is forgotten

    again.path.write_text("{broken")
    assert site.PageMemo(out).pages == {}  # unreadable: every page is read again


def test_page_memo_is_tied_to_the_code_that_finishes_pages(tmp_path, monkeypatch):
    """A change to the code of the site's passes (what a final page is) empties the memo."""
    import shutil

    from jaxguide_build.site import memo as site

    out = tmp_path / "html"
    out.mkdir()
    (out / "a.html").write_text("<p>hello</p>")
    memo = site.PageMemo(out)
    memo.entry(out / "a.html")
    memo.save()
    assert site.PageMemo(out).pages
    code = shutil.copytree(
        site.CODE, tmp_path / "site", ignore=shutil.ignore_patterns("__pycache__")
    )
    assert site.code_digest(code) == site.code_digest()
    pages = code / "pages.py"
    pages.write_bytes(pages.read_bytes() + b"\n# changed\n")
    monkeypatch.setattr(site, "CODE", code)
    assert site.PageMemo(out).pages == {}


def test_words_and_icons_read_from_a_page():
    """A page's words (names may start with "-" or a digit; a <link> names files, not
    classes) and the Font Awesome icons it uses, without the classes that only style one."""
    page = (
        '<link rel="stylesheet" href="_static/site.css">'
        '<p class="a-b -Color-Blue">x_1 took 12.5 s</p>'
        '<i class="fab fa-github fa-lg"></i><span class="fa-solid fa-magnifying-glass fa-fw">'
        '<span class="fa-stack fa-2x"></span><div class="fa-not-an-icon"></div>'
        '<a class="btn far fa-copy fa-spin" href="#">'
    )
    words = set(reading.WORD.findall(reading.LINK.sub("", page)))
    assert words == set(
        "p class a-b -Color-Blue x_1 took 12 5 s i fab fa-github fa-lg span fa-solid "
        "fa-magnifying-glass fa-fw fa-stack fa-2x div fa-not-an-icon a btn far fa-copy "
        "fa-spin href".split()
    )
    # A class list with no style token (fa, fas, fab, fa-solid...) names no icon.
    assert reading.icons_in(page) == {"fa-github", "fa-magnifying-glass", "fa-copy"}
    assert reading.icons_in('<p class="farm">fa-github</p>') == set()


def test_only_the_used_icons_rules_are_kept_and_their_glyphs_listed():
    css = (
        '.fa{font-family:X}.fa-magnifying-glass:before,.fa-search:before{content:"\\f002"}'
        '.fa-github:before{content:"\\f09b"}.fa-php::before{content:"\\f457"}'
        ".fa-github-alt{color:red}"
    )
    kept = icons._keep_used_rules(css, {"fa-search", "fa-php"})
    assert kept == (
        '.fa{font-family:X}.fa-magnifying-glass:before,.fa-search:before{content:"\\f002"}'
        '.fa-php::before{content:"\\f457"}.fa-github-alt{color:red}'
    )
    # Glyphs written as escapes or as characters; only private-use ones are icons.
    css = kept + '.x:after{content:"\\2014"}.y:after{content:"\uf0c9"}.z:after{content:"\\1f600"}'
    assert icons._codepoints(css) == {0xF002, 0xF457, 0xF0C9}


def test_the_theme_stylesheet_keeps_the_icons_the_pages_use(tmp_path):
    out = tmp_path / "html"
    (out / "_static" / "styles").mkdir(parents=True)
    (out / "sub").mkdir()
    (out / "index.html").write_text('<i class="fab fa-github"></i>')
    (out / "sub" / "a.html").write_text('<span class="fa-solid fa-bars"></span>')
    points = icons.keep_used_icons(out, memo.PageMemo(out))
    css = (out / "_static" / "styles" / "pydata-sphinx-theme.css").read_text()
    assert '.fa-github:before{content:"\\f09b"}' in css
    assert '.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}' in css
    assert ".fa-php:" not in css and ".fa-uber:" not in css
    assert {0xF09B, 0xF0C9} <= points and not {0xF457, 0xF402} & points
    (out / "index.html").write_text('<i class="fab fa-no-such-icon"></i>')
    with pytest.raises(ExtensionError, match=r"\['fa-no-such-icon'\]"):
        icons.keep_used_icons(out, memo.PageMemo(out))


def test_a_webfont_is_subset_to_the_glyphs_and_reused(tmp_path, monkeypatch):
    from fontTools import subset
    from fontTools.ttLib import TTFont

    source = theme_static() / "vendor" / "fontawesome" / "webfonts" / "fa-brands-400.woff2"
    target, cache = tmp_path / "a.woff2", tmp_path / "fonts"
    icons._subset_font(source, target, {0xF09B}, cache)
    data = target.read_bytes()
    assert data[:4] == b"wOF2" and len(data) < source.stat().st_size / 20
    assert set(TTFont(target).getBestCmap()) == {0xF09B}

    def refuse(*args, **kwargs):
        raise AssertionError("subset again")

    monkeypatch.setattr(subset, "Subsetter", refuse)
    icons._subset_font(source, tmp_path / "b.woff2", {0xF09B}, cache)  # from the cache
    assert (tmp_path / "b.woff2").read_bytes() == data


def test_pages_preload_the_fonts_of_their_icons_and_drop_fontawesome_js(tmp_path):
    head = (
        "<html><head>\n"
        '    <script defer src="../_static/scripts/bootstrap.js?digest=1"></script>\n'
        '    <script defer src="../_static/scripts/fontawesome.js?digest=1"></script>\n'
        "</head>"
    )
    body = '<body><i class="fab fa-github"></i><i class="fa-solid fa-bars fa-fw"></i></body>'
    page = icons.preload_icon_fonts(
        icons.FA_SCRIPT.sub("", head + body), tmp_path / "a" / "b.html", tmp_path
    )
    link = '<link rel="preload" as="font" type="font/woff2" crossorigin href="{}">\n'
    fonts = "../_static/vendor/fontawesome/webfonts/"
    assert page == (
        "<html><head>\n"
        '    <script defer src="../_static/scripts/bootstrap.js?digest=1"></script>\n'
        + link.format(fonts + "fa-solid-900.woff2")
        + link.format(fonts + "fa-brands-400.woff2")
        + "</head>"
        + body
    )
    for name in ("fa-solid-900.woff2", "fa-brands-400.woff2"):
        assert (theme_static() / "vendor" / "fontawesome" / "webfonts" / name).is_file()
    assert icons.preload_icon_fonts(page, tmp_path / "a" / "b.html", tmp_path) == page  # once
    top = icons.preload_icon_fonts("<head></head>" + body, tmp_path / "index.html", tmp_path)
    assert 'href="_static/vendor/fontawesome/webfonts/fa-brands-400.woff2"' in top
    assert icons.preload_icon_fonts("<head></head><p>x</p>", tmp_path / "i.html", tmp_path) == (
        "<head></head><p>x</p>"
    )


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def _pixels(data: bytes) -> tuple[str, np.ndarray]:
    with Image.open(io.BytesIO(data)) as image:
        return image.mode, np.asarray(image.convert("RGBA"), dtype=np.int16)


def _figure(colours: int, seed: int = 0) -> np.ndarray:
    """A 64x64 opaque figure of ``colours`` x 49 colours: flat ones, each with close
    shades (as anti-aliased edges are), scattered so that the PNG does not compress."""
    rng = np.random.default_rng(seed)
    flat = rng.integers(20, 200, (colours, 3))
    shades = np.array([(r, g, 0) for r in range(7) for g in range(7)])
    palette = (flat[:, None, :] + shades[None]).reshape(-1, 3).astype(np.uint8)
    return palette[rng.integers(0, len(palette), (64, 64))]


def test_a_figure_a_palette_represents_is_stored_as_one():
    # Within one grey level: 392 colours, at most 6 levels apart in 8 groups.
    figure = _figure(8)
    assert len(np.unique(figure.reshape(-1, 3), axis=0)) == 392
    data = _png(figure)
    small = images._smaller_png(data)
    mode, pixels = _pixels(small)
    error = np.abs(pixels[..., :3] - figure).mean()
    assert mode == "P" and len(small) < len(data) / 2 and 0 < error < 1
    # Transparency is kept exactly.
    rgba = np.random.default_rng(1).integers(0, 256, (16, 4)).astype(np.uint8)
    figure = rgba[np.random.default_rng(2).integers(0, 16, (64, 64))]
    small = images._smaller_png(_png(figure))
    assert _pixels(small)[0] == "P" and np.array_equal(_pixels(small)[1], figure)
    # Noise: 256 colours cannot draw it (12 levels off); left as it was.
    noise = np.random.default_rng(3).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    assert images._smaller_png(_png(noise)) == _png(noise)


def test_figures_are_shrunk_once_and_their_img_sized_to_half_their_pixels(tmp_path, monkeypatch):
    out = tmp_path / "html"
    (out / "_images").mkdir(parents=True)
    (out / "_images" / "fig.png").write_bytes(_png(np.repeat(np.repeat(_figure(8), 2, 0), 2, 1)))
    noise = _png(np.random.default_rng(3).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    (out / "_images" / "noise.png").write_bytes(noise)
    images.shrink_images(out)
    shrunk = (out / "_images" / "fig.png").read_bytes()
    assert _pixels(shrunk)[0] == "P" and (out / "_images" / "noise.png").read_bytes() == noise

    def refuse(data):
        raise AssertionError("shrunk again")

    monkeypatch.setattr(images, "_smaller_png", refuse)
    (out / "_images" / "fig.png").write_bytes(_png(np.repeat(np.repeat(_figure(8), 2, 0), 2, 1)))
    images.shrink_images(out)  # from the cache, both the original and the shrunk copy
    assert (out / "_images" / "fig.png").read_bytes() == shrunk
    images.shrink_images(out)

    # Sphinx's inline style gives a 2x figure's CSS size: half its 128x128 pixels.
    page = out / "chapter" / "p.html"
    page.parent.mkdir()
    tag = '<img alt="" src="../_images/fig.png" style="width: 64.0px; height: 63.6px;" />'
    assert images.sized_img(tag, out, page) == (
        '<img width="64" height="64" loading="lazy" decoding="async" alt="" '
        'src="../_images/fig.png" />'
    )
    # No style: the PNG's own size, read from the file the page links.
    (out / "_images" / "small.png").write_bytes(_png(np.zeros((20, 30, 3), np.uint8)))
    assert images.sized_img('<img src="../_images/small.png">', out, page) == (
        '<img width="30" height="20" loading="lazy" decoding="async" src="../_images/small.png">'
    )
    for tag in (
        '<img src="../_images/small.png" width="10">',  # sized already
        '<img src="../_static/logo.png">',  # not a figure
        '<img src="../_images/missing.png">',
    ):
        assert images.sized_img(tag, out, page) == tag


def test_copies_of_figures_that_differ_from_their_source_are_cleared(tmp_path):
    src, out = tmp_path / "book", tmp_path / "html"
    (src / "fig").mkdir(parents=True)
    (out / "_images").mkdir(parents=True)
    (src / "fig" / "a.png").write_bytes(b"a")
    (src / "b.png").write_bytes(b"b")
    (out / "_images" / "a.png").write_bytes(b"a, shrunk")
    (out / "_images" / "b.png").write_bytes(b"b")
    (out / "_images" / "c.png").write_bytes(b"c")  # its source is gone
    builder = SimpleNamespace(
        imagedir="_images",
        images={"fig/a.png": "a.png", "b.png": "b.png", "c.png": "c.png", "d.png": "d.png"},
    )
    app = SimpleNamespace(outdir=str(out), srcdir=str(src), builder=builder)
    assert images.clear_replaced_images(app) == []
    assert sorted(p.name for p in (out / "_images").iterdir()) == ["b.png", "c.png"]


class _Writer:
    """What the math visitors use of Sphinx's HTML5Translator: its body and its encoding."""

    special_characters = mathml.HTML5Translator.special_characters
    encode = mathml.HTML5Translator.encode

    def __init__(self) -> None:
        self.body: list[str] = []

    def starttag(self, node, tagname, suffix="\n", **attributes):
        return f'<{tagname} class="{attributes["CLASS"]}">{suffix}'


def _visit(visitor, node) -> str:
    from docutils import nodes

    writer = _Writer()
    with pytest.raises(nodes.SkipNode):
        visitor(writer, node)
    return "".join(writer.body)


def test_tex_becomes_mathml_with_the_tex_kept_as_an_annotation():
    import xml.etree.ElementTree as ET

    from docutils import nodes

    m = "{http://www.w3.org/1998/Math/MathML}"
    span = ET.fromstring(_visit(mathml.visit_math, nodes.math(text="a < b^2 ")))
    assert span.tag == "span" and span.get("class") == "math notranslate nohighlight"
    (math,) = span
    assert math.tag == f"{m}math" and math.get("display") == "inline"
    (semantics,) = math
    drawn, annotation = semantics
    assert annotation.tag == f"{m}annotation" and annotation.text == "a < b^2"
    assert annotation.get("encoding") == "application/x-tex"
    assert [e.text for e in drawn.iter() if e.text] == ["a", "<", "b", "2"]
    assert drawn.find(f".//{m}msup") is not None
    div = ET.fromstring(_visit(mathml.visit_math_block, nodes.math_block(text=r"\frac{x}{y}")))
    assert div.tag == "div" and div[0].get("display") == "block"
    assert div[0].find(f".//{m}mfrac") is not None and div[0][0][1].text == r"\frac{x}{y}"


def test_tex_that_cannot_be_rendered_stays_as_code_with_a_warning(monkeypatch):
    from docutils import nodes

    warnings = []
    monkeypatch.setattr(
        mathml, "logger", SimpleNamespace(warning=lambda *a, **k: warnings.append((a, k)))
    )
    node = nodes.math(text="a < x^")
    assert _visit(mathml.visit_math, node) == (
        '<span class="math notranslate nohighlight"><code>a &lt; x^</code></span>'
    )
    ((message,), where) = warnings[0]
    assert "'a < x^'" in message and where == {"location": node}


def _site(tmp_path, baseurl: str, title: str = "JAX & <you>", favicon: str | None = None):
    config = SimpleNamespace(
        html_baseurl=baseurl, html_title=title, project="jaxguide", html_favicon=favicon
    )
    return SimpleNamespace(config=config, srcdir=str(tmp_path))


@pytest.mark.parametrize("baseurl", ["https://example.org/guide", "https://example.org/guide/"])
def test_the_404_page_links_resolve_from_any_missing_address(tmp_path, baseurl):
    import urllib.parse

    svg = '<svg xmlns="http://www.w3.org/2000/svg"><circle r="4" fill="#f80"/></svg>'
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "icon.svg").write_text(svg + "\n")
    notfound.write_not_found(_site(tmp_path, baseurl, favicon="_static/icon.svg"), tmp_path)
    soup = BeautifulSoup((tmp_path / "404.html").read_text(), "html.parser")
    assert soup.title.string == "Page not found — JAX & <you>"
    links = [a["href"] for a in soup.find_all("a")]
    assert set(links) == {"https://example.org/guide/", "https://example.org/guide/search.html"}
    for missing in (
        "https://example.org/x",
        "https://example.org/guide/gone.html",
        "https://example.org/guide/a/b/c/gone/",
    ):
        assert [urllib.parse.urljoin(missing, link) for link in links] == links
    icon = soup.find("link", rel="icon")["href"]
    assert icon.startswith("data:image/svg+xml,") and "#" not in icon
    assert urllib.parse.unquote(icon.removeprefix("data:image/svg+xml,")) == svg
    assert soup.find_all(src=True) == []  # nothing else to load


def test_the_404_page_without_a_base_url_or_svg_icon(tmp_path):
    (tmp_path / "icon.png").write_bytes(b"png")
    for favicon in (None, "icon.png", "missing.svg"):
        notfound.write_not_found(_site(tmp_path, "", title="", favicon=favicon), tmp_path)
        soup = BeautifulSoup((tmp_path / "404.html").read_text(), "html.parser")
        assert soup.find("link", rel="icon")["href"] == "data:,"  # no request at all
        assert soup.title.string == "Page not found — jaxguide"  # the project's name
        assert {a["href"] for a in soup.find_all("a")} == {"/", "/search.html"}
