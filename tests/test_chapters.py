"""Checks every chapter gets, derived from _toc.yml and the chapters' sources, so a new
chapter is covered by adding it to the toc. What one chapter demonstrates is checked in
its own file, tests/test_chapter_<name>.py."""

from __future__ import annotations

import re

import pytest

from bookcheck import ROOT, executed_chapters, parsed_page, toc_parts

pytestmark = pytest.mark.book


def teaching_chapters() -> list[str]:
    """Executed chapters outside the appendix: each ends with exercises."""
    appendix = set(toc_parts().get("Appendix", []))
    return [c for c in executed_chapters() if c not in appendix]


def devices_asked(chapter: str) -> int:
    """The device count the chapter asks jaxguide.setup_devices for."""
    match = re.search(r"setup_devices\((\d+)\)", (ROOT / "book" / f"{chapter}.md").read_text())
    assert match, f"{chapter} never calls jaxguide.setup_devices(n)"
    return int(match.group(1))


def test_toc_lists_chapters():
    assert len(executed_chapters()) >= 10
    assert set(teaching_chapters()) < set(executed_chapters())


@pytest.mark.parametrize("chapter", teaching_chapters())
def test_exercises_have_hidden_executed_solutions(book, chapter):
    soup = parsed_page(book, chapter)
    exercises = soup.select("div.exercise")
    solutions = soup.select("div.solution")
    assert len(exercises) >= 2 and len(solutions) >= len(exercises)
    for sol in solutions:
        assert "dropdown" in sol.get("class", [])
        assert sol.select("div.cell_input"), "solution has no executed code"


@pytest.mark.parametrize("chapter", executed_chapters())
def test_provenance_box_at_the_top(book, chapter):
    import jax
    import jaxlib

    soup = parsed_page(book, chapter)
    boxes = soup.select("div.jaxguide-provenance")
    assert len(boxes) == 1, "one provenance box per chapter"
    text = boxes[0].get_text(" ")
    n = devices_asked(chapter)
    assert f"JAX {jax.__version__}, jaxlib {jaxlib.__version__}, {n} CPU device" in text
    seconds = float(re.search(r"its cells running for ([\d.]+) s", text).group(1))
    assert 0 < seconds < 300
    # It sits above the first section, right under the title.
    page = book.page(chapter)
    first_section = soup.select("section section")[0]
    assert page.index('class="jaxguide-provenance"') < page.index(f'id="{first_section["id"]}"')


def test_execution_report_lists_every_chapter(book):
    soup = parsed_page(book, "report")
    rows = soup.select("table tbody tr")
    text = " ".join(soup.get_text(" ").split())
    for chapter in executed_chapters():
        assert chapter in text, chapter
    assert len(rows) >= len(executed_chapters())
    assert "✅" in text and "❌" not in text
