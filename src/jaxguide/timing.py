"""Honest benchmarking: the one timing helper the book uses.

JAX dispatches work asynchronously and compiles on the first call, so a bare
``time.time()`` around a call measures the wrong thing twice. :func:`benchmark`

1. times the first call on its own (tracing + compilation + one run),
2. waits for every output with ``jax.block_until_ready`` (any pytree),
3. repeats the steady-state call and reports the median and the spread.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxguide import benchmark
    >>> t = benchmark(jnp.sin, jnp.ones(1000), repeats=5)
    >>> len(t.times_s), t.min_s <= t.median_s <= max(t.times_s)
    (5, True)
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes

from jaxguide import _checks

__all__ = [
    "Timing",
    "benchmark",
    "benchmark_interleaved",
    "compare",
    "format_seconds",
    "plot_timings",
    "table",
]


def format_seconds(seconds: float) -> str:
    """Format a duration with a unit that keeps 3 significant digits: ``'1.23 ms'``.

    Args:
        seconds: a duration in seconds, ``>= 0``.

    Returns:
        The duration in s, ms, µs or ns.

    Raises:
        TypeError: ``seconds`` is not a real number.
        ValueError: ``seconds`` is negative, NaN or infinite.

    Example:
        >>> format_seconds(0.00123), format_seconds(2.5), format_seconds(4e-8)
        ('1.23 ms', '2.5 s', '40 ns')
    """
    seconds = _checks.real("format_seconds", "seconds", seconds, minimum=0)
    # Round to 3 significant digits before choosing the unit: 0.9996 s is "1 s",
    # not "1e+03 ms".
    seconds = float(f"{seconds:.3g}")
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            value = round(seconds / scale, 9)  # 1.23e-3 / 1e-3 is 1.2300000000000002
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


@dataclass(frozen=True)
class Timing:
    """The result of :func:`benchmark`. Times are per call, in seconds.

    Attributes:
        name: what was timed.
        first_call_s: the first call alone: tracing, compilation (for jitted code)
            and one run.
        times_s: steady-state time per call, one entry per repeat.
        number: calls averaged inside each repeat.
    """

    name: str
    first_call_s: float
    times_s: tuple[float, ...]
    number: int

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def spread_s(self) -> tuple[float, float]:
        """The interquartile range (25th and 75th percentile) of the repeats."""
        if len(self.times_s) < 2:
            return (self.times_s[0], self.times_s[0])
        q = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return (q[0], q[2])

    @property
    def median_text(self) -> str:
        """The median as text, e.g. ``'1.23 ms'`` (for prose and tables)."""
        return format_seconds(self.median_s)

    def __repr__(self) -> str:
        lo, hi = self.spread_s
        return (
            f"{self.name}: {format_seconds(self.median_s)} per call "
            f"(median of {len(self.times_s)}, IQR {format_seconds(lo)}–{format_seconds(hi)}), "
            f"first call {format_seconds(self.first_call_s)}"
        )


def _calls_per_repeat(warm_s: float, min_repeat_s: float) -> int:
    """How many calls of ``warm_s`` each fill a repeat of ``min_repeat_s`` (1 to 10,000)."""
    return max(1, min(10_000, math.ceil(min_repeat_s / max(warm_s, 1e-9))))


def benchmark(
    fn: Callable[..., Any],
    *args: Any,
    repeats: int = 7,
    number: int | None = None,
    min_repeat_s: float = 0.02,
    name: str | None = None,
    block: bool = True,
    **kwargs: Any,
) -> Timing:
    """Time ``fn(*args, **kwargs)`` the way JAX code must be timed.

    The first call is timed alone (for a jitted function it includes compilation).
    Then each of ``repeats`` repeats runs ``number`` calls, waiting for every output
    with ``jax.block_until_ready``, and records the time per call.

    Args:
        fn: the function to time. Its outputs may be any pytree (JAX arrays, NumPy
            arrays, tuples, dicts ...); all of them are waited for.
        *args, **kwargs: passed to ``fn``.
        repeats: number of timed repeats (the median and spread are over these).
        number: calls per repeat. ``None`` picks it so that one repeat lasts at
            least ``min_repeat_s`` (short functions are averaged over many calls).
        min_repeat_s: target duration of one repeat when ``number`` is ``None``.
        name: label for the result (default: the function's name).
        block: wait for the outputs (the default). ``block=False`` times only the
            dispatch, to show what asynchronous dispatch hides; never report such a
            number as a speed.

    Returns:
        A :class:`Timing`.

    Raises:
        TypeError: ``fn`` is not callable, a count is not an int, ``min_repeat_s``
            not a number, ``name`` not a str or ``block`` not a bool.
        ValueError: a count below 1, or ``min_repeat_s`` not a positive finite
            number.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> f = jax.jit(lambda x: (x * 2).sum())
        >>> t = benchmark(f, jnp.arange(100.0), repeats=3)
        >>> t.first_call_s > t.median_s   # the first call compiled
        True
    """
    import jax

    _checks.function("benchmark", "fn", fn, what="the function to time")
    repeats = _checks.positive_int("benchmark", "repeats", repeats)
    if number is not None:
        number = _checks.positive_int("benchmark", "number", number, example=10)
    min_repeat_s = _checks.real(
        "benchmark",
        "min_repeat_s",
        min_repeat_s,
        minimum=0,
        exclusive=True,
        hint=" Pass a duration in seconds such as 0.02.",
    )
    block = _checks.boolean("benchmark", "block", block)
    if name is not None:
        name = _checks.string("benchmark", "name", name, example="'jit'")
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    wait = jax.block_until_ready if block else (lambda out: out)

    def run_once() -> float:
        start = time.perf_counter()
        jax.block_until_ready(fn(*args, **kwargs))
        return time.perf_counter() - start

    first = run_once()
    if number is None:
        # One more (now warm) call to calibrate how many calls fill a repeat.
        warm = run_once()
        number = _calls_per_repeat(warm, min_repeat_s)

    times = []
    out = None
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            out = wait(fn(*args, **kwargs))
        times.append((time.perf_counter() - start) / number)
        # Unblocked dispatches must not spill their work into the next repeat.
        jax.block_until_ready(out)
    return Timing(label, first, tuple(times), number)


def benchmark_interleaved(
    cases: Mapping[str, Callable[[], Any]],
    *,
    repeats: int = 7,
    min_repeat_s: float = 0.02,
) -> list[Timing]:
    """Time several functions with their repeats interleaved, for a fair comparison.

    :func:`benchmark` times one function after another, so on a busy machine a burst of
    other work can land on one contestant's repeats and not on the others'. Here each
    round runs one repeat of every case in turn, so all of them see the same load; use it
    when the times being compared are close, or the machine is shared.

    Args:
        cases: a name for each case and a function of no arguments that runs it (close
            over the inputs: ``{"numpy": lambda: np.sin(x_np)}``). Outputs are waited
            for with ``jax.block_until_ready``.
        repeats: rounds; each case gets one repeat per round.
        min_repeat_s: target duration of one repeat (each case's calls per repeat are
            calibrated separately, as in :func:`benchmark`).

    Returns:
        One :class:`Timing` per case, in the order of ``cases``.

    Raises:
        TypeError: ``cases`` is not a mapping of str to functions, or a count is not
            an int.
        ValueError: ``cases`` is empty, a count is below 1, or ``min_repeat_s`` is not a
            positive finite number.

    Example:
        >>> import jax, jax.numpy as jnp, numpy as np
        >>> x = np.ones(1000, np.float32)
        >>> t = benchmark_interleaved(
        ...     {"numpy": lambda: np.sin(x), "jit": lambda: jax.jit(jnp.sin)(x)},
        ...     repeats=3,
        ... )
        >>> [(r.name, len(r.times_s)) for r in t]
        [('numpy', 3), ('jit', 3)]
    """
    import jax

    fn = "benchmark_interleaved"
    _checks.instance(
        fn,
        "cases",
        cases,
        Mapping,
        what="a dict of names to functions of no arguments",
        fix="pass e.g. {'numpy': lambda: np.sin(x)}",
    )
    if not cases:
        raise ValueError(f"{fn}(cases={{}}): give at least one case to time.")
    for name, case in cases.items():
        if not isinstance(name, str) or not name:
            raise TypeError(
                f"{fn}(cases=...): every key of cases must be a non-empty str, the "
                f"case's name, got {name!r}."
            )
        _checks.function(fn, f"cases[{name!r}]", case, what="a function of no arguments")
    repeats = _checks.positive_int(fn, "repeats", repeats)
    min_repeat_s = _checks.real(
        fn,
        "min_repeat_s",
        min_repeat_s,
        minimum=0,
        exclusive=True,
        hint=" Pass a duration in seconds such as 0.02.",
    )

    def run_once(case: Callable[[], Any]) -> float:
        start = time.perf_counter()
        jax.block_until_ready(case())
        return time.perf_counter() - start

    first = {name: run_once(case) for name, case in cases.items()}
    number = {name: _calls_per_repeat(run_once(case), min_repeat_s) for name, case in cases.items()}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            start = time.perf_counter()
            for _ in range(number[name]):
                out = jax.block_until_ready(case())
            times[name].append((time.perf_counter() - start) / number[name])
            del out
    return [Timing(name, first[name], tuple(times[name]), number[name]) for name in cases]


def _factor(x: float) -> str:
    """A ratio of two noisy timings, with no more digits than it can carry:
    ``'4.2'``, ``'37'``, ``'6100'``."""
    if round(x, 1) < 10:  # 9.97 would print as '10.0': it goes to the two-figure form
        return f"{x:.1f}"
    digits = len(str(int(x))) - 2  # keep two significant figures
    return f"{round(x, -digits):.0f}"


def compare(baseline: Timing, other: Timing, *, tolerance: float = 0.1, prose: bool = False) -> str:
    """Describe ``other`` relative to ``baseline`` in words, from the measured medians.

    Short form (tables): ``'4.2× faster'``, ``'1.8× slower'``, ``'about the same (±10%)'``.
    ``prose=True`` gives a phrase that reads in a sentence before the baseline's name,
    whichever way the measurement came out: ``'4.2× faster than'``, ``'1.8× slower than'``,
    ``'as fast, within 10%, as'`` — "jit was {phrase} NumPy".

    Args:
        baseline: what ``other`` is compared with.
        other: the measurement to describe.
        tolerance: ratios within ``1 ± tolerance`` read "about the same".
        prose: the phrase for a sentence instead of the short form.

    Returns:
        The comparison in words, with the factor rounded to what two noisy timings
        can carry.

    Raises:
        TypeError: an argument is not a :class:`Timing`, or ``prose`` is not a bool.
        ValueError: ``tolerance`` is negative or not finite, or a median is not > 0.

    Example:
        >>> slow, fast = Timing("numpy", 0.1, (0.004,), 1), Timing("jit", 0.2, (0.001,), 1)
        >>> compare(slow, fast), compare(fast, slow, prose=True)
        ('4.0× faster', '4.0× slower than')
    """
    for name, timing in (("baseline", baseline), ("other", other)):
        _checks.instance(
            "compare", name, timing, Timing, what="a Timing", fix="pass a result of benchmark()"
        )
    tolerance = _checks.real(
        "compare",
        "tolerance",
        tolerance,
        minimum=0,
        hint=" Pass a fraction such as 0.1 (for ±10%).",
    )
    prose = _checks.boolean("compare", "prose", prose)
    for which, t in (("baseline", baseline), ("other", other)):
        if not t.median_s > 0:
            raise ValueError(
                f"compare: the {which} timing {t.name!r} has a median of {t.median_s!r} s, so no ratio "
                "can be formed; time more calls per repeat (benchmark(number=...)) to measure it."
            )
    ratio = baseline.median_s / other.median_s
    if abs(ratio - 1) <= tolerance:
        return (
            f"as fast, within {tolerance:.0%}, as"
            if prose
            else f"about the same (±{tolerance:.0%})"
        )
    factor = ratio if ratio > 1 else 1 / ratio
    text = f"{_factor(factor)}× faster" if ratio > 1 else f"{_factor(factor)}× slower"
    return text + " than" if prose else text


def table(timings: Sequence[Timing], baseline: Timing | None = None) -> str:
    """A plain-text table of several timings, optionally with a speed-up column.

    Args:
        timings: results of :func:`benchmark`, one row each.
        baseline: if given, a last column compares each row with it (:func:`compare`).

    Returns:
        The table as text: median, interquartile range, first call (and comparison).

    Raises:
        TypeError: ``timings`` holds something other than ``Timing`` results, or
            ``baseline`` is neither ``None`` nor a ``Timing``.

    Example:
        >>> t = Timing("f", 0.5, (0.001, 0.002, 0.003), 10)
        >>> print(table([t, Timing("g", 0.5, (0.004,), 10)], baseline=t))
           median  IQR              first call  vs f
        -  ------  ---------------  ----------  -----------
        f  2 ms    1.5 ms – 2.5 ms  500 ms      baseline
        g  4 ms    4 ms – 4 ms      500 ms      2.0× slower
    """
    timings = list(timings)
    for t in timings:
        _checks.instance(
            "table", "timings", t, Timing, what="Timing results", fix="pass results of benchmark()"
        )
    if baseline is not None:
        _checks.instance("table", "baseline", baseline, Timing, what="a Timing or None")
    rows = [("", "median", "IQR", "first call", "vs " + baseline.name if baseline else "")]
    for t in timings:
        lo, hi = t.spread_s
        rows.append(
            (
                t.name,
                format_seconds(t.median_s),
                f"{format_seconds(lo)} – {format_seconds(hi)}",
                format_seconds(t.first_call_s),
                ("baseline" if t is baseline else compare(baseline, t)) if baseline else "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths if w).rstrip())
    return "\n".join(lines)


def plot_timings(
    timings: Sequence[Timing],
    *,
    ax: Axes | None = None,
    title: str | None = None,
    log: bool | None = None,
) -> Axes:
    """Horizontal bars of the median time per call, with the interquartile range as
    error bars and the median written on each bar.

    Args:
        timings: results of :func:`benchmark`, drawn top to bottom.
        ax: the matplotlib ``Axes`` to draw on (default: a new figure).
        title: a title over the plot.
        log: a logarithmic time axis; ``None`` uses one when the medians differ by
            more than 30×, so that short bars stay visible.

    Returns:
        The ``Axes``.

    Raises:
        TypeError: ``timings`` is empty or holds something other than ``Timing``
            results, or ``log`` is neither ``None`` nor a bool.

    Example:
        >>> import jax.numpy as jnp
        >>> t = benchmark(jnp.cos, jnp.ones(10), repeats=3)
        >>> ax = plot_timings([t], title="cos")
    """
    import matplotlib.pyplot as plt

    timings = list(timings)
    if not timings or not all(isinstance(t, Timing) for t in timings):
        raise TypeError(
            "plot_timings(timings=...): timings must be a non-empty list of Timing results of benchmark()."
        )
    if log is not None:
        log = _checks.boolean("plot_timings", "log", log)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 0.5 + 0.45 * len(timings)), layout="constrained")
    scale, unit = next(
        (
            (s, u)
            for s, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"))
            if max(t.median_s for t in timings) >= s
        ),
        (1e-9, "ns"),
    )
    names = [t.name for t in timings][::-1]
    medians = [t.median_s / scale for t in timings][::-1]
    lows = [(t.median_s - t.spread_s[0]) / scale for t in timings][::-1]
    highs = [(t.spread_s[1] - t.median_s) / scale for t in timings][::-1]
    colors = [plt.cm.tab10(i % 10) for i in range(len(timings))][::-1]
    ax.barh(names, medians, xerr=[lows, highs], color=colors, capsize=3)
    for y, (value, high, t) in enumerate(zip(medians, highs, timings[::-1])):
        ax.text(value + high, y, "  " + t.median_text, va="center", ha="left", fontsize=9)
    top = max(m + h for m, h in zip(medians, highs))
    if log is None:
        log = max(medians) > 30 * min(medians)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(min(medians) / 2, top * 6)
    else:
        ax.set_xlim(0, top * 1.3)
    scale_note = ", log scale" if log else ""
    ax.set_xlabel(f"median time per call ({unit}{scale_note}); bars: interquartile range")
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(title, fontsize=10)
    return ax
