"""Site-wide parts of the built book: page descriptions for search results and link
previews, the licence in the footer, and a 404 page for the web host."""

from __future__ import annotations

import html

import pytest
import yaml
from bs4 import BeautifulSoup

from bookcheck import ROOT
from conftest import chapters

pytestmark = pytest.mark.book

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


@pytest.mark.parametrize("page", chapters())
def test_every_page_has_a_description_from_its_own_prose(book, page):
    soup = BeautifulSoup(book.page(page), "html.parser")
    (meta,) = soup.select('meta[name="description"]')
    description = meta["content"]
    assert 40 <= len(description) <= 205, description
    # The page's first paragraph (compared without spaces: inline code splits the text).
    squeeze = lambda text: "".join(text.split())  # noqa: E731
    assert squeeze(description.removesuffix(" …"))[:60] in squeeze(soup.select_one("article").get_text(" "))
    assert soup.select_one('meta[property="og:description"]')["content"] == description


def test_footer_names_the_licence(book):
    footers = BeautifulSoup(book.page("numpy"), "html.parser").select("footer")
    assert "Apache License 2.0" in " ".join(" ".join(f.get_text(" ") for f in footers).split())


def test_not_found_page_links_home_absolutely(book):
    page = (book.html / "404.html").read_text()
    base = CONFIG["html"]["baseurl"]
    soup = BeautifulSoup(page, "html.parser")
    links = [a["href"] for a in soup.select("a[href]")]
    assert links and all(h.startswith(base) for h in links), links
    assert base in links and f"{base}search.html" in links
    assert soup.title.get_text() == f"Page not found — {html.unescape(CONFIG['title'])}"
