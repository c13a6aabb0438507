"""Two clean builds of the same commit produce identical cell outputs, apart from the
cells tagged `measured` (timings and the provenance box)."""

from __future__ import annotations

import pytest

from bookcheck import comparable_outputs, jupyter_book
from conftest import chapters

pytestmark = pytest.mark.book


def test_two_clean_builds_have_identical_outputs(book, tmp_path):
    proc = jupyter_book("build", "book/", "--path-output", str(tmp_path))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    second = tmp_path / "_build" / "html"
    differences = []
    for chapter in chapters():
        a = comparable_outputs(book.page(chapter))
        b = comparable_outputs((second / f"{chapter}.html").read_text())
        assert [i for i, _ in a] == [i for i, _ in b], chapter
        for (i, out_a), (_, out_b) in zip(a, b):
            if out_a != out_b:
                differences.append(f"{chapter} cell {i}: {str(out_a)[:300]!r} != {str(out_b)[:300]!r}")
    assert differences == []


def test_comparison_ignores_only_measured_cells():
    def page(value, classes="cell"):
        return f'<div class="{classes}"><div class="cell_output"><div class="output"><pre>{value}</pre></div></div></div>'

    assert comparable_outputs(page("1.2 ms", "cell tag_measured")) == []
    assert comparable_outputs(page("a")) != comparable_outputs(page("b"))
    assert comparable_outputs(page("at /tmp/ipykernel_12/345.py:1")) == comparable_outputs(page("at /tmp/ipykernel_99/345.py:1"))
    img = '<div class="cell"><div class="cell_output"><div class="output"><img src="_images/{}.png"></div></div></div>'
    assert comparable_outputs(img.format("aa")) != comparable_outputs(img.format("bb"))
