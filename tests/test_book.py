"""The built book: every page present, every chapter executed cleanly, key outputs there."""

from __future__ import annotations

import re

import numpy as np
import pytest
from bs4 import BeautifulSoup

from bookcheck import load, problems, source
from conftest import chapters

pytestmark = pytest.mark.book

CHAPTERS = [c for c in chapters() if c not in ("index", "report")]


def text_of(html: str) -> str:
    return BeautifulSoup(html, "html.parser").get_text(" ")


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
    soup = BeautifulSoup(book.page(chapter), "html.parser")
    outputs = soup.select("div.cell_output")
    assert outputs, "no cell outputs rendered"
    for img in soup.select("div.cell_output img"):
        assert (book.html / img["src"]).is_file(), f"figure {img['src']} not written"
    # No glue reference left unresolved, no raw role syntax leaked into the page.
    assert "{glue" not in soup.get_text()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_raises_exception_cells_show_their_error_in_html(book, chapter):
    nb = load(book.notebook(chapter))
    expected = [
        o["ename"]
        for c in nb["cells"]
        if "raises-exception" in c.get("metadata", {}).get("tags", [])
        for o in c["outputs"]
        if o["output_type"] == "error"
    ]
    html = text_of(book.page(chapter))
    for ename in expected:
        assert ename in html, f"{ename} not shown in {chapter}.html"


def test_numpy_chapter(book):
    soup = BeautifulSoup(book.page("numpy"), "html.parser")
    text = soup.get_text(" ")
    assert "DeviceSetup(platform='cpu', count=8" in text
    # The printed sines agree with an independent NumPy computation.
    expected = np.array2string(np.sin(np.linspace(0.0, np.pi, 5)).astype(np.float32))
    assert expected.split()[1] in text
    # The two raises-exception cells show the errors the prose explains.
    assert "JAX arrays are immutable" in text
    assert "incompatible devices" in text
    # The histogram exercise's answer is np.bincount's.
    counts = np.bincount([0, 2, 2, 4, 2, 1, 0], minlength=5)
    assert np.array2string(counts) in text
    # The timing comparison: a figure, and measured verdicts glued into the prose.
    assert len(soup.select("div.cell_output img")) >= 1
    flat = " ".join(text.split())
    verdicts = re.findall(r"(\d+\.\d× (?:faster|slower) than|as fast, within 10%, as) (NumPy|jnp)", flat)
    assert [v[1] for v in verdicts] == ["jnp", "NumPy", "NumPy"], verdicts
    assert "per call afterwards" in flat
    # Exercise solutions are in the page but hidden (a dropdown).
    solutions = soup.select("div.solution")
    assert len(solutions) >= 2 and all("dropdown" in s.get("class", []) for s in solutions)


def test_numpy_exercise_solutions_assert(book):
    nb = load(book.notebook("numpy"))
    asserting = [c for c in nb["cells"] if c["cell_type"] == "code" and "assert " in source(c)]
    assert len(asserting) >= 2
