"""The pmap chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import pytest

from bookcheck import VERDICT, glued, images, page_text

pytestmark = pytest.mark.book


def test_pmap(book):
    g = glued(book, "pmap")
    text = page_text(book, "pmap")
    # Today's error for too many rows, then the fix and jaxguide's own clear error.
    assert "cannot select an axis to squeeze out" in text
    assert "(16, 3) -> (8, 2, 3)" in text
    assert "a batch of 10 examples does not divide across 8 devices" in text
    # Collectives: psum shares and pmean agree with an independent computation.
    assert "axis_index: [0 1 2 3 4 5 6 7]" in text
    assert "pmean: [4.5 4.5 4.5 4.5 4.5 4.5 4.5 4.5]" in text
    # pmap is built on jit + shard_map, visible in its jaxpr.
    assert "shard_map[" in text and "_internal_pmap_axis_name" in text
    assert "jit(pmap) shard_map: True jit levels: 2" in text
    assert "jit(vmap) shard_map: False" in text
    assert re.fullmatch(VERDICT, g["pmap_vs_jitvmap"]) and g["pmap_fastest"] in {"vmap", "jit(vmap)", "pmap", "jit(pmap)", "pmap(jit)"}
    assert "CPU 0" in text  # visualize_array_sharding's text
    assert len(images(book, "pmap")) >= 2  # sharding picture + timing chart
