"""The built book: every page present, every chapter executed cleanly, key outputs there."""

from __future__ import annotations

import pytest

from bookcheck import chapters, load, parsed_page, problems

pytestmark = pytest.mark.book

CHAPTERS = [c for c in chapters() if c not in ("index", "questions", "report")]


def test_every_toc_page_is_built(book):
    for page in chapters():
        assert (book.html / f"{page}.html").is_file(), f"{page}.html missing"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_executed_cleanly(book, chapter):
    nb = load(book.notebook(chapter))
    assert any(c["cell_type"] == "code" for c in nb["cells"]), "no code cells executed"
    assert problems(nb) == []


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_outputs_and_figures_in_html(book, chapter):
    soup = parsed_page(book, chapter)
    outputs = soup.select("div.cell_output")
    assert outputs, "no cell outputs rendered"
    for img in soup.select("div.cell_output img"):
        assert (book.html / img["src"]).is_file(), f"figure {img['src']} not written"
    # No glue reference left unresolved, no raw role syntax leaked into the page.
    assert "{glue" not in soup.get_text()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figures_have_real_alt_text(book, chapter):
    """Every figure says what it shows: no empty alt, no file name standing in for one."""
    soup = parsed_page(book, chapter)
    for img in soup.select("div.cell_output img"):
        alt = (img.get("alt") or "").strip()
        assert len(alt.split()) >= 4, f"{chapter}: {img.get('src')} has alt text {alt!r}"
        assert not alt.endswith((".png", ".svg")) and "_images/" not in alt, alt


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_raises_exception_cells_show_their_error_in_html(book, chapter):
    """Each raises-exception cell's error is on the page, in that cell's output (the
    prose after it names the error too, so the page's whole text would not do)."""
    nb = load(book.notebook(chapter))
    expected = [
        o["ename"]
        for c in nb["cells"]
        if "raises-exception" in c.get("metadata", {}).get("tags", [])
        for o in c["outputs"]
        if o["output_type"] == "error"
    ]
    shown = [
        traceback.get_text()
        for cell in parsed_page(book, chapter).select("div.cell.tag_raises-exception")
        for traceback in cell.select("div.cell_output div.traceback")
    ]
    assert len(shown) == len(expected), (expected, shown)
    for ename, text in zip(expected, shown):
        assert ename in text, f"{ename} not shown in {chapter}.html"


@pytest.mark.parametrize("page", chapters())
def test_every_cross_reference_resolves(book, page):
    """A `{ref}` whose label is missing, or sits on no heading, renders as plain text in
    a `span.xref` with no link (Sphinx only warns): every one must be a link."""
    soup = parsed_page(book, page)
    broken = [s.get_text() for s in soup.select("span.xref") if s.parent.name != "a"]
    assert not broken, f"{page}: references that did not resolve: {broken}"
