"""The transforms chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

import bookcheck
from bookcheck import VERDICT, errors, glued, page_text, seconds


def raised(book, chapter: str) -> dict[str, str]:
    """The errors the chapter's raises-exception cells raised: name -> message (the last
    cell's, where two raised the same error; :func:`messages` has them all)."""
    return {e.name: e.message for e in errors(book, chapter)}


def messages(book, chapter: str) -> list[str]:
    """The messages of every error the chapter's raises-exception cells raised, in order."""
    return [e.message for e in errors(book, chapter)]


pytestmark = pytest.mark.book


def test_transforms(book):
    g = glued(book, "transforms")
    assert g["f_1_3"] == pytest.approx(3 * np.sin(1.0) + 2, rel=1e-6)
    assert g["df_dx_1"] == pytest.approx(3 * np.cos(1.0), rel=1e-6)
    f = lambda x, y: np.sin(x) * y + 2.0  # noqa: E731  (the page's f, recomputed)
    np.testing.assert_allclose(g["batched_f"], [f(0.0, 3.0), f(1.0, 3.0)], rtol=1e-6)
    assert g["traces"] == [(3,), (4,)]
    # The jaxprs the prose reads line by line: under vmap the same operations, on the
    # batched shape (4, 3) (one jit equation named f: its claim).
    assert [op for op, _ in g["jaxpr_reading"]["vmap"]] == [
        "sin",
        "convert_element_type",
        "mul",
        "add",
    ]
    assert g["jaxpr_reading"]["vmap"][0][1] == "f32[4,3]"
    # The errors the prose names were raised.
    errors = raised(book, "transforms")
    assert {"TracerBoolConversionError", "ConcretizationTypeError"} <= set(errors)
    assert any(
        "Non-hashable static arguments are not supported" in m for m in messages(book, "transforms")
    )
    # The device composition is shard_map (not pmap) with vmap inside each block:
    # the rows split evenly over the devices, one sum per row.
    s = g["shard_map_shapes"]
    assert s["devices"] == 8 and s["rows"] == (8 * 4, 3)
    assert s["block"] == (s["rows"][0] // s["devices"], 3) and s["sums"] == (s["rows"][0],)


def test_what_each_transformation_refuses(book):
    """grad alone follows a Python if; jit(grad) and vmap refuse it."""
    g = glued(book, "transforms")
    assert g["relu_py_grad"] == {
        "grad": (1.0, 0.0),
        "refused": {
            name: "TracerBoolConversionError"
            for name in (
                "jit(grad(relu_py))",
                "vmap(relu_py)",
                "vmap(grad(relu_py))",  # jax-ml/jax#14245
                "vmap(grad(relu_py)), disable_jit",  # no jit, still traced
                "grad(checkpoint(relu_py))",
            )
        },
    }
    # relu's slope per example: 1 where x > 0, 0 elsewhere, for [3, -2]
    assert g["vmap_grad_fixes"] == [[1.0, 0.0], [1.0, 0.0]]
    errors = raised(book, "transforms")
    assert {"NonConcreteBooleanIndexError", "UnexpectedTracerError"} <= set(errors)
    assert g["sum_positive"] == (5.0, 5.0)  # 2 + 3, the positives of the signal
    assert g["decorator_forms"] == ([0.0, 1.0, 4.0, 9.0], [0.0, 1.0, 4.0, 9.0])
    gaps = g["per_example_gaps"]  # to a Python loop and to the closed form
    assert set(gaps) == {"loop", "closed"} and max(gaps.values()) < 1e-5


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
    first, last = g["fit_losses"]
    assert last < 0.1 * first
    assert g["package_linear_same"] is True and g["loop_equals_vmap"] is True
    assert g["predict_batch_shape"] == (6,)
    assert g["in_axes_out"] == ((4, 3), (3, 4))
    # vmap adds no operation: the batched program has predict_single's count.
    assert g["n_batch"] == g["n_single"] >= 2
    assert g["per_example_shape"][1:] == g["grad_shapes"]["w"]  # one w per example
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
    assert g["static_mask"] == {"np": [-1.0, 2.0], "jnp": "NonConcreteBooleanIndexError"}


def test_first_call_ratio_glued(book):
    g = glued(book, "transforms")
    ratio = float(str(g["jit_first_ratio"]).replace(",", ""))
    assert ratio > 1  # the first call includes tracing and compiling
    assert f"as much as {g['jit_first_ratio']} later ones" in page_text(book, "transforms")


def test_first_call_stages(book):
    """The stages JAX reports for the first call fit inside it."""
    g = glued(book, "transforms")
    stages = g["jit_stage_s"]
    assert set(stages) == {"trace to a jaxpr", "lower for XLA", "XLA compile"}
    total = sum(stages.values())
    assert 0 < total <= g["jit_first_s"]
    assert seconds(g["jit_stages"]) == pytest.approx(total, rel=0.01, abs=1e-6)
    assert f"took {g['jit_stages']} together" in page_text(book, "transforms")


def test_python_runs_eager_vs_jit(book):
    """Eager code runs its Python on every call; jitted code once, while tracing."""
    g = glued(book, "transforms")
    assert isinstance(g["jit_step_runs"], int) and isinstance(g["step_eager_runs"], int)
    assert g["jit_step_runs"] < g["step_eager_runs"]
    # The same under vmap: eager per call, jit(vmap) fewer times.
    vmap_eager, vmap_jit = g["vmap_runs"]
    assert vmap_jit < vmap_eager


def test_cross_references(book):

    soup = bookcheck.parsed_page(book, "transforms")
    hrefs = [a.get("href", "") for a in soup.select("a")]
    for chapter in ("pytrees", "control_flow", "debugging"):
        assert any(h.startswith(f"{chapter}.html") for h in hrefs), chapter


def test_retrace_exercise(book):
    """Weak and strong float32 scalars are different cache keys: four traces."""
    g = glued(book, "transforms")
    assert g["retrace_types"] == ["~float32[]", "float32[]", "float32[2]", "~int32[]"]


def test_jaxpr_source_lines(book):
    """pretty_print(source_info=True) ties every equation of grad's jaxpr, the backward
    ones too, to one of the two body lines of tanh_energy (0: the tanh, 1: the sum)."""
    s = glued(book, "transforms")["jaxpr_source_lines"]
    assert s["functions"] == ["tanh_energy"]
    assert s["forward lines"] == [0, 1] and s["backward lines"] == [0, 1]
    assert s["first at"] == {
        "tanh": 0,
        "sub": 0,
        "integer_pow": 1,
        "reduce_sum": 1,
        "add_any": 0,
    }


def test_nested_jit(book):
    """An inner jit is traced once and inlined: one program per function called."""
    n = glued(book, "transforms")["nested_jit"]
    assert n["inner traces"] == 1
    assert n["inner equations"] == ["inner", "inner"]  # outer_a is inner(inner(x))
    assert n["compiled"] == ["jit(inner)", "jit(outer_a)", "jit(outer_b)"]
    assert n["lowered calls to inner"] == 2  # JAX lowers calls; XLA inlines
    assert n["sines in outer_a"] == 2 and n["calls in outer_a"] == 0


def test_static_for_jit_only(book):
    """A flag static for jit is traced by checkpoint inside, unless static there too."""
    g = glued(book, "transforms")
    assert g["static_inner"] == {
        "checkpoint(scale_if)": "TracerBoolConversionError",
        "checkpoint(scale_if, static_argnums=1)": 2 * 3.0,
    }


def test_tracer_or_known(book):
    """grad's tracer carries its value; jit's and vmap's do not; concrete_or_error fails
    early with the caller's message."""
    g = glued(book, "transforms")
    assert g["tracer_vs_known"] == {
        "no transformation": (False, True),
        "grad": (True, True),
        "jit": (True, False),
        "vmap": (True, False),
    }
    assert g["tile_checked_static"] == [0.0, 1.0] * 3  # arange(2) tiled 3 times
    concrete = [
        e.message for e in errors(book, "transforms") if e.name == "ConcretizationTypeError"
    ]
    assert any("tile_checked: make n a static argument" in m for m in concrete)


def test_vmap_sizes(book):
    """The size error names each mapped argument; a keyword argument is mapped on
    axis 0 and named as kwargs['w']."""
    sizes = [m for m in messages(book, "transforms") if m.startswith("vmap got inconsistent sizes")]
    assert len(sizes) == 1
    assert "size 10: axis 0 of argument x of type float32[10,4]" in sizes[0]
    assert "size 4: axis 1 of argument w of type float32[10,4]" in sizes[0]
    assert "scale" not in sizes[0]  # the unmapped int is left out


def test_jaxpr_repeats_compiled_once(book):
    """The jaxpr keeps every div and exp the Python ran; XLA computes each once, as
    for the version that names the shared values."""
    r = glued(book, "transforms")["jaxpr_repeats"]
    # ratio_terms calls jnp.divide(x1, x2) three times and jnp.exp(x2) twice.
    assert r["ratio_terms"]["jaxpr"] == (3, 2)
    assert r["ratio_named"]["jaxpr"] == (1, 1)
    assert r["ratio_terms"]["compiled"] == r["ratio_named"]["compiled"] == (1, 1)


def test_slice_and_methods(book):
    """A slice is refused as a static argument on the book's Python 3.11. A method's
    self is refused as an array, goes stale when static and mutated, and works as a
    pytree; jit over staticmethod is refused, the other order works."""
    g = glued(book, "transforms")
    try:  # the book's Python (3.11) has no hash for a slice; 3.12 has one
        hash(slice(1, 3))
        no_hash = None
    except TypeError as err:
        no_hash = f"{type(err).__name__}: {err}"
    assert g["slice_refused"] == no_hash
    # The cache key: a new object whose equality is identity traces on every call,
    # an equal tuple once.
    assert g["static_key_traces"] == {"Bounds": 3, "tuple": 1}
    assert g["static_obj_traces"] == 3 and g["static_tuple_traces"] == 1
    m = g["method_self"]
    assert m["plain"].endswith("<class '__main__.Plain'>")
    # Flag(True) doubles 3.0; mutated to False it should return 3.0 but the
    # program cached for the same (identity-keyed) self still doubles.
    assert m["static self"] == (2 * 3.0, 3.0)
    assert m["pytree"] == (1.0 * 3.0, 1)  # scale 1 after the update, one trace
    assert m["staticmethod"] == ("staticmethod arguments are not supported", 6.0)


def test_staged_api_and_numerics(book):
    """jit(chain).trace(spec).lower().compile(): the jaxpr has chain's 4 operations per
    round, and XLA's cost_analysis counts the add and mul as flops, the sin and cos
    as transcendentals, per element. Compiled log(exp(x)) is x; eager overflows."""
    g = glued(book, "transforms")
    rounds, n = 10, 10_000  # chain's loop and the length of `big`
    assert g["staged_chain"] == {
        "equations": 4 * rounds,
        "flops": float(2 * rounds * n),
        "transcendentals": float(2 * rounds * n),
    }
    eager, jitted = g["log_exp_pair"]  # each value as str(float)
    with np.errstate(over="ignore"):  # exp(100) overflows float32
        expected = np.log(np.exp(np.float32([3.0, 100.0])))
    assert eager == [str(float(v)) for v in expected]
    assert jitted == ["3.0", "100.0"]  # log(exp(x)) == x, with no overflow
