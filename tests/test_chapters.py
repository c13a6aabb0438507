"""Chapter by chapter: the numbers a page shows agree with independent computations,
and the demonstrations the prose describes really happened."""

from __future__ import annotations

import ast
import json
import re

import numpy as np
import pytest
from bs4 import BeautifulSoup

pytestmark = pytest.mark.book


def glued(book, chapter: str) -> dict:
    """The values a chapter glued into its prose, as Python values."""
    raw = json.loads((book.executed / f"{chapter}.glue.json").read_text())
    values = {}
    for key, output in raw.items():
        text = output["data"].get("text/plain", "")
        try:
            values[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[key] = text
    return values


def page_text(book, chapter: str) -> str:
    text = BeautifulSoup(book.page(chapter), "html.parser").get_text(" ")
    return " ".join(text.split())


VERDICT = r"(\d+\.\d× (?:faster|slower)|about as fast \(within 10%\))"


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


def test_autodiff(book):
    g = glued(book, "autodiff")
    assert g["df_at_2"] == 3 * 2.0**2 + 2
    assert g["newton_grad"] == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-5)
    text = page_text(book, "autodiff")
    assert "largest difference to finite differences" in text
    assert "100.0 nan" in text            # the naive softplus gradient
    assert "100.0 1.0 0.5" in text        # the custom_vjp one
    assert "check_grads passed" in text
    assert "[[ 6. 0.] [ 0. 12.]]" in text  # the Hessian block diag(6w)
    for key in ("tall_fwd_vs_rev", "wide_rev_vs_fwd"):
        assert re.fullmatch(VERDICT, g[key]) and g[key] in text


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


@pytest.mark.parametrize("chapter", ["numpy", "transforms", "autodiff", "random"])
def test_exercises_have_hidden_executed_solutions(book, chapter):
    soup = BeautifulSoup(book.page(chapter), "html.parser")
    exercises = soup.select("div.exercise")
    solutions = soup.select("div.solution")
    assert len(exercises) >= 2 and len(solutions) >= len(exercises)
    for sol in solutions:
        assert "dropdown" in sol.get("class", [])
        assert sol.select("div.cell_input"), "solution has no executed code"
