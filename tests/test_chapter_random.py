"""The random chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations


import pytest
from bs4 import BeautifulSoup

from bookcheck import glued, page_text

pytestmark = pytest.mark.book


def test_random(book):
    g = glued(book, "random")
    expected = {"normal": 0.0, "uniform": 0.5, "gamma": 2.0, "beta": 2 / 7, "poisson": 3.0}
    for name, mean in expected.items():
        assert g["mean_" + name] == pytest.approx(mean, abs=0.03), name
    text = page_text(book, "random")
    assert "correlation: 1.0" in text      # the key-reuse bug, shown
    assert "key<fry>" in text and "uint32 (2,)" in text
    assert "is a typed key? True False" in text
    soup = BeautifulSoup(book.page("random"), "html.parser")
    assert len(soup.select("div.cell_output img")) >= 1
