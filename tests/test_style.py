"""House style that a reader sees: code in a chapter fits its box on the page."""

from __future__ import annotations

import re

import pytest

from bookcheck import ROOT

# The code box of a chapter page shows about 76 characters at desktop width; black's
# 79 keeps every line within a character or two of it and wraps nothing by hand.
MAX_COLUMNS = 79
CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.md"))


def long_code_lines(text: str) -> list[str]:
    found, in_code = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```{code-cell}"):
            in_code = True
        elif line.startswith("```"):
            in_code = False
        elif in_code and len(line) > MAX_COLUMNS and not re.match(r"^:tags:", line):
            found.append(f"line {number} ({len(line)} columns): {line.strip()[:60]}")
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_code_fits_the_page(chapter):
    assert long_code_lines(chapter.read_text()) == []


def test_long_line_check_can_fail():
    page = "```{code-cell} ipython3\n" + "x = " + "1 + " * 30 + "1\n```\n" + "prose " * 40 + "\n"
    assert len(long_code_lines(page)) == 1
