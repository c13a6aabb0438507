"""The transforms chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import VERDICT, cell_output, glued, page_text, seconds

pytestmark = pytest.mark.book


def test_transforms(book):
    g = glued(book, "transforms")
    assert g["f_1_3"] == pytest.approx(3 * np.sin(1.0) + 2, rel=1e-6)
    assert g["df_dx_1"] == pytest.approx(3 * np.cos(1.0), rel=1e-6)
    f = lambda x, y: np.sin(x) * y + 2.0  # noqa: E731  (the page's f, recomputed)
    np.testing.assert_allclose(g["batched_f"], [f(0.0, 3.0), f(1.0, 3.0)], rtol=1e-6)
    text = page_text(book, "transforms")
    # Trace-time print ran once, debug.print on both calls.
    assert text.count("Python print runs while tracing, x = JitTracer") == 1
    assert text.count("jax.debug.print runs on every call") >= 2
    assert "results: 2.0, 4.0" in text
    assert g["traces"] == [(3,), (4,)]
    # The jaxprs the prose reads line by line.
    assert "jit[ name=f" in text and "f32[4,3] = sin" in text
    assert "TracerBoolConversionError" in text and "ConcretizationTypeError" in text
    assert "Non-hashable static arguments are not supported" in text
    # The device composition is shard_map (not pmap) with vmap inside each block.
    out = cell_output(book, "transforms", "jax.shard_map(")
    assert "one device's block: (4, 3)" in out and "(32, 3) -> (32,) on 8 devices" in out


def test_what_each_transformation_refuses(book):
    """grad alone follows a Python if; jit(grad) and vmap refuse it."""
    g = glued(book, "transforms")
    assert g["relu_py_grad"] == {
        "grad": (1.0, 0.0),
        "refused": {
            "jit(grad(relu_py))": "TracerBoolConversionError",
            "vmap(relu_py)": "TracerBoolConversionError",
        },
    }
    out = cell_output(book, "transforms", "jax.jit(lambda x: x[x > 0].sum())")
    assert "NonConcreteBooleanIndexError" in out
    assert g["sum_positive"] == (5.0, 5.0)
    out = cell_output(book, "transforms", "kept.append(y)")
    assert "UnexpectedTracerError" in out
    assert g["decorator_forms"] == ([0.0, 1.0, 4.0, 9.0], [0.0, 1.0, 4.0, 9.0])
    out = cell_output(book, "transforms", "largest difference to {label")
    diffs = [float(x) for x in re.findall(r"largest difference to .*: +(\S+)", out)]
    assert len(diffs) == 2 and max(diffs) < 1e-5


def test_no_raw_reprs(book):
    """Outputs are formatted: no Array(...) reprs or internal type names."""
    text = page_text(book, "transforms")
    for raw in ("Array(", "PjitFunction", "ArrayImpl", "weak_type=True)"):
        assert raw not in text, raw
    assert "seed" not in text.lower()


def test_model_in_the_open_and_counts(book):
    g = glued(book, "transforms")
    text = page_text(book, "transforms")
    # The loss being differentiated is defined on the page, not imported.
    # The page's code spans vary (unstyled tokens are merged): compare without spaces.
    code = "".join(text.split())
    assert "defmse_loss(params,x,y):" in code
    assert "defexample_loss(params,x,y):" in code
    assert "jax.grad(mse_loss)" in code
    assert f"{g['step_n_ops']} operations:" in text
    assert g["step_n_ops"] > 5
    first, last = g["fit_losses"]
    assert last < 0.1 * first
    assert g["package_linear_same"] is True and g["loop_equals_vmap"] is True
    assert g["predict_batch_shape"] == (6,)
    assert g["in_axes_out"] == ((4, 3), (3, 4))
    assert f"one example: {g['n_single']} operations" in text
    assert f"vmap over 1000: {g['n_batch']} operations, each on" in text
    assert g["per_example_shape"] == (8, 5)  # per example
    assert max(g["per_example_gaps"].values()) < 1e-5
    assert g["grad_shapes"] == {"w": (5,), "b": ()}


def test_verdicts(book):
    g = glued(book, "transforms")
    text = page_text(book, "transforms")
    for key in ("step_speedup", "vmap_vs_loop", "jitvmap_vs_vmap"):
        assert re.fullmatch(VERDICT, g[key]), (key, g[key])
        assert g[key] in text


def test_figure_has_alt_text(book):
    from bookcheck import images

    imgs = images(book, "transforms")
    assert imgs and all("vmap" in i.get("alt", "") for i in imgs)


def test_trace_time_globals_and_cache(book):
    g = glued(book, "transforms")
    assert g["stale_global"] == (2.0, 2.0, [101.0, 101.0])  # 1 + offset, old then new
    assert g["lambda_traces"] == (3, 1)


def test_first_call_ratio_glued(book):
    g = glued(book, "transforms")
    ratio = float(str(g["jit_first_ratio"]).replace(",", ""))
    assert ratio > 1  # the first call includes tracing and compiling
    assert f"as much as {g['jit_first_ratio']} later ones" in page_text(book, "transforms")


def test_first_call_stages(book):
    """The stages JAX reports for the first call are printed, and fit inside it."""
    out = cell_output(book, "transforms", "def record_stage")
    first = re.search(r"first call (\S+ \S+)", out).group(1)
    stages = dict(re.findall(r"^  (\S.*?) +(\S+ \S+)$", out, flags=re.M))
    assert set(stages) == {"trace to a jaxpr", "lower for XLA", "XLA compile"}
    total = sum(seconds(v) for v in stages.values())
    assert total <= seconds(first)
    g = glued(book, "transforms")
    assert seconds(g["jit_stages"]) == pytest.approx(total, rel=0.02, abs=2e-4)
    assert f"took {g['jit_stages']} together" in page_text(book, "transforms")


def test_python_runs_eager_vs_jit(book):
    """Eager code runs its Python on every call; jitted code once, while tracing."""
    g = glued(book, "transforms")
    assert g["jit_step_runs"] == 1 and g["step_eager_runs"] > 1
    assert g["vmap_runs"] == (3, 1)


def test_cross_references(book):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(book.page("transforms"), "html.parser")
    hrefs = [a.get("href", "") for a in soup.select("a")]
    for chapter in ("pytrees", "control_flow", "debugging"):
        assert any(h.startswith(f"{chapter}.html") for h in hrefs), chapter


def test_retrace_exercise(book):
    """Weak and strong float32 scalars are different cache keys: four traces."""
    g = glued(book, "transforms")
    assert g["retrace_types"] == ["~float32[]", "float32[]", "float32[2]", "~int32[]"]
    assert g["normalize_traces"] == ["l1", "l2"]
    assert g["pairwise"] == (4, 6)
