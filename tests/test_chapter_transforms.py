"""The transforms chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import VERDICT, glued, page_text

pytestmark = pytest.mark.book


def test_transforms(book):
    g = glued(book, "transforms")
    assert g["f_1_3"] == pytest.approx(3 * np.sin(1.0) + 2, rel=1e-6)
    assert g["df_dx_1"] == pytest.approx(3 * np.cos(1.0), rel=1e-6)
    text = page_text(book, "transforms")
    # Trace-time print ran once, debug.print on both calls.
    assert text.count("Python print runs while tracing, x = JitTracer") == 1
    assert text.count("jax.debug.print runs on every call") >= 2
    assert "traced 2 times, for shapes [(3,), (4,)]" in text
    # The jaxprs the prose reads line by line.
    assert "jit[ name=f" in text and "f32[4,3] = sin" in text
    assert "TracerBoolConversionError" in text and "ConcretizationTypeError" in text
    assert "(8, 4, 3) -> (8, 4)" in text
    for key in ("step_speedup", "vmap_vs_loop", "jitvmap_vs_vmap"):
        assert re.fullmatch(VERDICT, g[key]), (key, g[key])
        assert g[key] in text
