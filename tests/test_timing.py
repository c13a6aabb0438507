"""jaxguide.timing: waits for results, separates compilation, reports honestly."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import pytest

from jaxguide import (
    Timing,
    benchmark,
    benchmark_interleaved,
    compare,
    format_seconds,
    plot_timings,
)
from jaxguide.timing import table


class Pending:
    """Stands for an array whose computation finishes only when waited for."""

    def __init__(self, seconds):
        self.seconds = seconds

    def block_until_ready(self):
        time.sleep(self.seconds)
        return self


def test_waits_for_every_leaf_of_a_pytree():
    def fn():
        return {"a": jnp.ones(2), "b": (1.0, Pending(0.02))}

    t = benchmark(fn, repeats=3, number=1)
    assert t.median_s >= 0.02
    assert t.min_s >= 0.02


def test_block_false_times_only_the_dispatch():
    t = benchmark(lambda: Pending(0.05), repeats=3, number=1, block=False)
    assert t.median_s < 0.01


def test_first_call_is_timed_apart_from_steady_state():
    calls = []

    def slow_first(x):
        if not calls:
            time.sleep(0.2)  # stands for tracing + compilation
        calls.append(1)
        return x

    t = benchmark(slow_first, 1.0, repeats=5, number=2)
    assert t.first_call_s >= 0.2
    assert t.median_s < 0.05
    assert len(t.times_s) == 5 and t.number == 2
    assert len(calls) == 1 + 5 * 2 + 0  # first call, then repeats x number (no calibration)


def test_jit_compile_shows_in_first_call():
    f = jax.jit(lambda x: jnp.sin(x) @ jnp.cos(x).T + 1.0)
    t = benchmark(f, jnp.ones((37, 41)), repeats=5)
    assert t.first_call_s > 3 * t.median_s


def test_calibrates_calls_per_repeat_for_fast_functions():
    t = benchmark(lambda: None, repeats=2, min_repeat_s=0.005)
    assert t.number > 10


def test_interleaved_runs_one_repeat_of_each_case_per_round():
    order = []

    def case(name, seconds):
        def run():
            order.append(name)
            return Pending(seconds)

        return run

    a, b = benchmark_interleaved(
        {"a": case("a", 0.02), "b": case("b", 0.002)}, repeats=3, min_repeat_s=0.04
    )
    assert (a.name, b.name) == ("a", "b")
    assert len(a.times_s) == len(b.times_s) == 3
    # Calibrated per case: calls that fill 40 ms, from each case's own measured call (a
    # sleep overshoots on a loaded machine: 2 and 20 on an idle one, fewer under load;
    # b's stays above a's unless its 2 ms sleep overshoots by 11 ms).
    assert 1 <= a.number <= 2 and a.number < b.number <= 20, (a.number, b.number)
    # first call and calibration of each, then the rounds: a's repeat, then b's, 3 times.
    rounds = order[4:]
    assert rounds == (["a"] * a.number + ["b"] * b.number) * 3
    assert a.median_s >= 0.02 and 0.002 <= b.median_s < a.median_s  # waited for


def test_interleaved_shares_the_load_between_cases():
    # A burst of "other work" that lasts two repeats. Back to back it could fall on one
    # contestant; interleaved, each case gets one busy repeat and every median stays
    # clean. Every call
    # outlasts min_repeat_s, so each repeat is one call whatever the machine's load: calls
    # 1-4 are the first calls and calibrations, then x, y, x, y, ... one per repeat.
    clock = {"calls": 0}

    # The burst is 30 times an idle call, so that a loaded machine's late wake-ups from
    # a 4 ms sleep (tens of ms at a load of 12) cannot reach it.
    busy = 0.12

    def busy_then_idle():
        clock["calls"] += 1
        return Pending(busy if clock["calls"] in (7, 8) else 0.004)

    x, y = benchmark_interleaved(
        {"x": busy_then_idle, "y": busy_then_idle}, repeats=5, min_repeat_s=0.001
    )
    assert x.number == y.number == 1
    assert sum(t >= busy for t in x.times_s) >= 1 <= sum(t >= busy for t in y.times_s)
    assert x.median_s < busy and y.median_s < busy, (x, y)  # the burst is not a median


@pytest.mark.parametrize(
    ("cases", "kwargs", "error", "message"),
    [
        ([lambda: 1], {}, TypeError, "cases must be a dict of names to functions"),
        ({}, {}, ValueError, "give at least one case"),
        ({1: lambda: 1}, {}, TypeError, "every key of cases must be a non-empty str"),
        ({"a": 1}, {}, TypeError, "cases\\['a'\\] must be a function of no arguments"),
        ({"a": lambda: 1}, {"repeats": 0}, ValueError, "repeats"),
        ({"a": lambda: 1}, {"min_repeat_s": -1}, ValueError, "min_repeat_s"),
    ],
)
def test_interleaved_bad_arguments_name_themselves(cases, kwargs, error, message):
    with pytest.raises(error, match=message):
        benchmark_interleaved(cases, **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"repeats": 0},
            ValueError,
            r"benchmark\(repeats=0\): repeats must be an int >= 1; pass a positive count",
        ),
        ({"number": -1}, ValueError, r"benchmark\(number=-1\): number must be an int >= 1"),
        (
            {"repeats": 2.5},
            TypeError,
            r"benchmark\(repeats=2\.5\): repeats must be an int, got float",
        ),
        ({"repeats": True}, TypeError, r"repeats must be an int, got bool"),
        (
            {"min_repeat_s": 0},
            ValueError,
            r"benchmark\(min_repeat_s=0\.0\): min_repeat_s must be > 0",
        ),
        (
            {"min_repeat_s": float("inf")},
            ValueError,
            r"min_repeat_s=inf\): min_repeat_s must be a finite number",
        ),
        ({"min_repeat_s": float("nan")}, ValueError, r"min_repeat_s must be a finite number"),
        ({"min_repeat_s": "0.1"}, TypeError, r"min_repeat_s must be a real number, got str"),
        ({"name": 3}, TypeError, r"benchmark\(name=3\): name must be a str"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, error, message):
    with pytest.raises(error, match=message):
        benchmark(lambda: 1, **kwargs)


def test_fn_must_be_callable_and_block_a_bool():
    with pytest.raises(
        TypeError, match=r"benchmark\(fn=...\): fn must be the function to time, got int"
    ):
        benchmark(42)
    with pytest.raises(TypeError, match=r"benchmark\(block='no'\): block must be True or False"):
        benchmark(lambda: 1, block="no")
    with pytest.raises(TypeError, match=r"benchmark\(name=3\): name must be a str"):
        benchmark(lambda: 1, name=3)


def fake(name, median, first=1.0):
    return Timing(name, first, (median * 0.9, median, median * 1.1), 1)


def test_repr_and_median_text():
    t = fake("f", 0.00123)
    assert t.median_text == "1.23 ms"
    assert repr(t) == "f: 1.23 ms per call (median of 3, IQR 1.17 ms–1.29 ms), first call 1 s"


@pytest.mark.parametrize(
    "seconds, text",
    [
        (2.5, "2.5 s"),
        (0.0123, "12.3 ms"),
        (4.56e-5, "45.6 µs"),
        (7e-9, "7 ns"),
        (0, "0 ns"),
        # Rounding that reaches the next unit moves to it, never "1e+03 ms".
        (0.9996, "1 s"),
        (0.0009996, "1 ms"),
        (9.996e-7, "1 µs"),
        (1234.5, "1,230 s"),
    ],
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


def test_format_seconds_rejects_nonsense():
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"format_seconds\(seconds="):
            format_seconds(bad)
    with pytest.raises(TypeError, match=r"seconds must be a real number, got str"):
        format_seconds("1 s")


def test_compare_says_what_was_measured():
    base = fake("numpy", 0.010)
    assert compare(base, fake("jit", 0.0025)) == "4.0× faster"
    assert compare(base, fake("jnp", 0.018)) == "1.8× slower"
    assert compare(base, fake("same", 0.0105)) == "about the same (±10%)"
    assert compare(base, fake("jit", 0.0025), prose=True) == "4.0× faster than"
    assert compare(base, fake("jnp", 0.018), prose=True) == "1.8× slower than"
    assert compare(base, fake("same", 0.0105), prose=True) == "as fast, within 10%, as"
    with pytest.raises(TypeError, match=r"compare\(other=...\): other must be a Timing, got float"):
        compare(base, 0.1)
    with pytest.raises(TypeError, match=r"table\(timings=...\): timings must be Timing results"):
        table([base, 0.1])
    with pytest.raises(TypeError, match=r"table\(baseline=...\): baseline must be a Timing or"):
        table([base], baseline="f")
    # Large ratios keep two significant figures: a noisy 6092.8 is "6100".
    assert compare(base, fake("loop", 60.928)) == "6100× slower"
    assert compare(base, fake("fast", 0.010 / 37.4)) == "37× faster"
    assert compare(base, fake("fast", 0.010 / 9.96)) == "10× faster"  # not "10.0×"
    assert compare(base, fake("fast", 0.010 / 9.94)) == "9.9× faster"


@pytest.mark.parametrize(
    "tolerance, error, message",
    [
        (-1, ValueError, r"compare\(tolerance=-1\.0\): tolerance must be >= 0"),
        (float("nan"), ValueError, r"tolerance must be a finite number"),
        ("10%", TypeError, r"tolerance must be a real number"),
    ],
)
def test_compare_refuses_a_tolerance_that_makes_no_sense(tolerance, error, message):
    # tolerance=-1 used to call equal timings "1.0× slower".
    with pytest.raises(error, match=message):
        compare(fake("a", 0.01), fake("b", 0.01), tolerance=tolerance)


def test_compare_refuses_a_zero_median_instead_of_dividing_by_it():
    with pytest.raises(
        ValueError, match=r"the other timing 'b' has a median of 0\.0 s, so no ratio"
    ):
        compare(fake("a", 0.01), fake("b", 0.0))
    with pytest.raises(ValueError, match=r"the baseline timing 'a'"):
        compare(fake("a", 0.0), fake("b", 0.01))
    with pytest.raises(TypeError, match=r"prose must be True or False"):
        compare(fake("a", 0.01), fake("b", 0.01), prose="yes")


def test_table_lists_every_timing_against_the_baseline():
    rows = table([fake("numpy", 0.01), fake("jit", 0.005)], fake("numpy", 0.01)).splitlines()
    assert rows[0].split() == ["median", "IQR", "first", "call", "vs", "numpy"]
    assert rows[3].startswith("jit") and rows[3].endswith("2.0× faster")


def test_plot_timings_draws_one_bar_per_timing():
    ax = plot_timings([fake("a", 0.002), fake("b", 0.004)], title="t")
    assert len(ax.patches) == 2
    assert "ms" in ax.get_xlabel()
    assert ax.get_xscale() == "linear"
    with pytest.raises(TypeError):
        plot_timings([])


def test_plot_timings_uses_log_scale_for_wide_ranges():
    ax = plot_timings([fake("loop", 0.05), fake("jit", 0.00002)])
    assert ax.get_xscale() == "log" and "log scale" in ax.get_xlabel()
