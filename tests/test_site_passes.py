"""The site's passes over the built pages (tools/jaxguide_build/site/), on small
synthetic pages: stylesheets purged and bundled, plain token spans unwrapped, output
text kept readable, and the page memo. Their result on the built book is
tests/test_site.py's."""

from __future__ import annotations

from bs4 import BeautifulSoup

from jaxguide._wcag import contrast
from jaxguide_build.site import bundle, memo, pages, stylesheets


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
