"""The control_flow chapter: the numbers it shows agree with independent computations,
and the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import glued, images, page_text

pytestmark = pytest.mark.book


def test_control_flow_compile_times(book):
    g = glued(book, "control_flow")
    # Three equations (sin, mul, add) per unrolled step.
    assert g["eqns_1000"] == 3 * 1000
    py, fl = g["compile_py_s"], g["compile_fl_s"]
    py_t, fl_t = g["trace_py_s"], g["trace_fl_s"]
    assert len(py) == len(fl) == len(py_t) == len(fl_t) == 4
    assert all(t > 0 for t in py + fl + py_t + fl_t)
    assert g["max_length"] == 300
    # XLA's time on the unrolled loop grows with n; at n = 300 it exceeds fori_loop's.
    assert py[-1] > py[0] and py[-1] > fl[-1]
    # The prose says whether tracing grew, from the measurement itself.
    assert g["py_trace_change"] == ("grew" if py_t[-1] > py_t[0] else "did not grow here")
    assert abs(int(g["py_over_fl_max"]) - py[-1] / fl[-1]) <= 1
    larger = "compilation" if py[-1] > py_t[-1] else "tracing"
    assert g["py_larger_stage"] == larger
    text = page_text(book, "control_flow")
    for key in (
        "py_compile_10",
        "py_compile_max",
        "fl_compile_min",
        "fl_compile_maxn",
        "fl_compile_max",
        "py_trace_10",
        "py_trace_max",
        "fl_trace_max",
        "py_larger_stage",
        "py_trace_change",
    ):
        assert g[key] in text
    # The table prints both stages for both loops.
    assert "Python loop lax.fori_loop n trace compile trace compile" in text
    figures = images(book, "control_flow")
    assert len(figures) == 1 and "fori_loop" in figures[0].get("alt", "")


def test_control_flow_numbers(book):
    g = glued(book, "control_flow")
    assert float(g["newton_fixed_grad"]) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-5)
    assert len(g["newton_fixed_grad"]) == len("0.353553")  # no 17-digit float

    def collatz(n):
        steps = 0
        while n != 1:
            n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
        return steps

    assert g["collatz_steps"] == [collatz(n) for n in range(1, 31)]
    assert g["collatz_max"] == max(collatz(n) for n in range(1, 31))
    assert g["collatz_cond"] == "bool[30]"
    assert g["loops_agree"] is True
    assert g["rnn_shapes"] == ((10, 4), (4, 4))


def test_control_flow_demonstrations(book):
    text = page_text(book, "control_flow")
    g = glued(book, "control_flow")
    # fori_loop with static bounds is a scan; with a traced bound, a while.
    assert "length=1000" in text and "scan[" in text and "while[" in text
    assert "called for n = 3 and n = 7, traced 1 time(s)" in text
    assert "TracerIntegerConversionError" in text
    # scan: carry and stacked outputs; Euler against its closed form.
    assert g["cumsum_scan"] == (15.0, [1.0, 3.0, 6.0, 10.0, 15.0])
    assert float(g["euler_end"]) == pytest.approx((1 - 0.1 * 0.7) ** 20, rel=1e-5)
    assert float(g["euler_dk"]) == pytest.approx(-20 * 0.1 * (1 - 0.07) ** 19, rel=1e-5)
    # switch clamps its index; cond under vmap becomes select_n.
    assert "clamp 0:i32[] c 2:i32[]" in text
    # cond's branches must agree on output types.
    assert "cond branches must have equal output types" in text
    # Logical operators: `and` on a tracer fails, `&` works elementwise.
    assert "TracerBoolConversionError" in text
    assert "True [False True False]" in text
    # grad through cond differentiates the chosen branch: 1 for relu, cos 2 for sin.
    assert g["cond_grads"] == pytest.approx((1.0, np.cos(2.0)), rel=1e-5)
    # cond under vmap, explained here once (transforms links to it).
    assert g["cond_jaxprs"] == {"scalar": (True, False), "batched": (False, True)}
    assert g["branches_ran"] == {
        "no vmap": ["relu"],
        "vmap, one predicate": ["relu"],
        "vmap, predicate per example": ["relu", "sin"],
    }
    # Differentiability, shown and tabulated.
    assert "Reverse-mode differentiation does not work for lax.while_loop" in text
    assert "while_loop no (ValueError) while" in text
    assert "fori_loop, static n yes scan" in text
    assert "fori_loop, traced n no (ValueError) while" in text
    assert "forward mode through while_loop: 0.353553" in text
    # The where-gradient trap and its fix.
    assert "value at 0: 0.0, gradient at 0: nan" in text
    assert "safe version, gradient at 0: 0.0" in text
    # Dynamic shapes.
    assert "NonConcreteBooleanIndexError" in text
    assert g["mask_fixes"] == {
        "sum": 5.0,
        "indices": [0, 2, -1],
        "clipped": [3.0, 0.0, 2.0, 0.0],
    }
    # An update through a mask fails under jit too; where is its fixed-shape form.
    assert ".at[x < 0].set(0.0) under jit: NonConcreteBooleanIndexError" in text
    # jaxprs and prose carry no 17-digit float constants.
    assert not re.search(r"\d\.\d{12,}", text)


def test_control_flow_carry_rule_and_map(book):
    import json

    text = page_text(book, "control_flow")
    nb = json.loads(book.notebook("control_flow").read_text())
    errors = [
        o
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]
    # The growing carry raises the TypeError the prose names, with both shapes.
    carry = [o for o in errors if "carry input and carry output" in o["evalue"]]
    assert len(carry) == 1 and carry[0]["ename"] == "TypeError"
    assert "float32[0]" in carry[0]["evalue"] and "float32[1]" in carry[0]["evalue"]
    # Both fixes give the history; an int carry with a float update is refused.
    assert "preallocated: [1. 2. 3.] stacked outputs: [1. 2. 3.]" in text
    assert "The input carry total has type int32[] but the corresponding output" in text
    assert "float32 init: 3.0" in text and "Python 0 as init: 3.0" in text
    # lax.map gives vmap's answer, one batch at a time inside a scan.
    norms = re.findall(r"(vmap|lax\.map|lax\.map, batch_size=4) (\[[^]]*\])", text)
    assert len({v for _, v in norms[-3:]}) == 1
    assert "scan -> float32[1,4]" in text and "concatenate -> float32[6]" in text
    # The wording fixes of the review.
    assert "compiles once, for all values of n" in text


def test_control_flow_run_time_is_measured(book):
    from bookcheck import VERDICT

    g = glued(book, "control_flow")
    text = page_text(book, "control_flow")
    for key in ("run_10", "run_300"):
        assert re.fullmatch(VERDICT, g[key]), g[key]
        assert g[key] in text
    for name in ("Python loop, n = 300", "lax.fori_loop, n = 10"):
        assert name in text


def test_lax_map_memory(book):
    """lax.map saves memory only where the batched intermediate is not fused away."""
    g = glued(book, "control_flow")
    sort = g["map_temps"]["top_products"]
    outer = 256 * 256 * 4  # one row's outer product, float32, counted by hand
    assert sort["vmap"] >= 64 * outer  # all 64 at once
    assert outer <= sort["lax.map"] < 2 * outer  # one at a time
    assert 8 * outer <= sort["batch_size=8"] < 9 * outer
    assert g["map_temps"]["row_norm"]["vmap"] == 0  # fused: nothing to save
    assert float(g["vmap_over_map"]) > 8
