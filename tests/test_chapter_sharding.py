"""The sharding chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import pytest

from bookcheck import VERDICT, glued, images, page_text

pytestmark = pytest.mark.book


def test_sharding(book):
    text = page_text(book, "sharding")
    g = glued(book, "sharding")
    # Every layout the prose names is pictured, with the book's notation and JAX's text view.
    for name in ("A[I_x, J]", "A[I, J_y]", "A[I_x, J_y]", "A[I, J]", "s[J_y]", "B[I, J_y]"):
        assert name in text, name
    assert text.count("CPU 0,1,2,3,4,5,6,7") >= 1 and "CPU 0,2,4,6" in text
    assert len(images(book, "sharding")) >= 6
    assert "<Axes" not in text  # show() leaves no object repr behind
    assert "float32[8@x,8@y]" in text and "float32[8@x,8]" in text
    assert "ShardingTypeError" in text
    assert "pinned_host" in text and "fully replicated: True" in text
    assert re.fullmatch(VERDICT, g["shard_vs_single"]) and g["shard_vs_single"] in text
