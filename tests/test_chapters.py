"""Checks every chapter gets, derived from _toc.yml and the chapters' sources, so a new
chapter is covered by adding it to the toc. What one chapter demonstrates is checked in
its own file, tests/test_chapter_<name>.py."""

from __future__ import annotations

import re

import pytest

from bookcheck import ROOT, executed_chapters, glued, parsed_page, toc_parts
from jaxguide_build.staleness import code_of


def teaching_chapters() -> list[str]:
    """Executed chapters outside the appendix: each ends with exercises."""
    appendix = set(toc_parts().get("Appendix", []))
    return [c for c in executed_chapters() if c not in appendix]


def devices_asked(chapter: str) -> int:
    """The device count the chapter asks jaxguide.setup_devices for."""
    match = re.search(r"setup_devices\((\d+)\)", (ROOT / "book" / f"{chapter}.md").read_text())
    assert match, f"{chapter} never calls jaxguide.setup_devices(n)"
    return int(match.group(1))


#: A claim's key in a chapter's code (``jaxguide.claim("key", ...)``: every claim names its
#: key with a string literal).
CLAIM_KEY = re.compile(r"""jaxguide\.claim\(\s*["']([^"']+)["']""")


def claim_keys(chapter: str) -> list[str]:
    """The keys of the claims in the code cells of ``book/<chapter>.md``, in order."""
    code = "\n".join(code_of((ROOT / "book" / f"{chapter}.md").read_text()))
    return CLAIM_KEY.findall(code)


def test_toc_lists_chapters():
    assert len(executed_chapters()) >= 10
    assert set(teaching_chapters()) < set(executed_chapters())


@pytest.mark.book
@pytest.mark.parametrize("chapter", teaching_chapters())
def test_exercises_have_hidden_executed_solutions(book, chapter):
    soup = parsed_page(book, chapter)
    exercises = soup.select("div.exercise")
    solutions = soup.select("div.solution")
    assert len(exercises) >= 2 and len(solutions) >= len(exercises)
    for sol in solutions:
        assert "dropdown" in sol.get("class", [])
        assert sol.select("div.cell_input"), "solution has no executed code"


@pytest.mark.book
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


@pytest.mark.book
def test_execution_report_lists_every_chapter(book):
    soup = parsed_page(book, "report")
    rows = soup.select("table tbody tr")
    text = " ".join(soup.get_text(" ").split())
    for chapter in executed_chapters():
        assert chapter in text, chapter
    assert len(rows) >= len(executed_chapters())
    assert "✅" in text and "❌" not in text


@pytest.mark.book
@pytest.mark.parametrize("chapter", executed_chapters())
def test_every_claim_is_glued(book, chapter):
    """Each ``jaxguide.claim`` of the chapter glued its value: the strict build checked
    its condition, and the chapter's prose and tests read the glued value. (A chapter's
    own tests need not read a claim again to find it missing.)"""
    missing = [key for key in claim_keys(chapter) if key not in glued(book, chapter)]
    assert not missing, f"claims in book/{chapter}.md that the build did not glue: {missing}"


def test_claim_keys_are_read_from_code_cells():
    assert claim_keys("numpy")[:2] == ["sin_gap", "sin_values"]
    assert all(claim_keys(c) for c in executed_chapters())
