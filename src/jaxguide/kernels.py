"""Checking hand-written kernels, lowering them for hardware, and tiling arithmetic.

What a reader writing a Pallas kernel reuses:

* :func:`check_kernel` runs a kernel and its plain-JAX reference on random arguments of
  several shapes and reports the worst error against a stated tolerance, per shape.
* :func:`tiled_matmul_cost` counts, by hand, what a tiled matrix product
  ``(m, k) @ (k, n)`` with ``(bm, bk) x (bk, bn)`` tiles costs: its FLOPs, the bytes it
  moves between main memory (HBM) and the chip, the on-chip bytes its tiles hold, and
  the arithmetic intensity (FLOPs per byte moved) that results.
* :func:`lower_for` lowers a function for a TPU or GPU on any machine (a CPU included)
  and reports what came out: the kernels' custom calls and their configuration, or the
  compiler's refusal in one line, and the warnings raised on the way.
* :func:`error_summary` and :func:`attempt` turn an error into one readable line.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxguide.kernels import check_kernel, tiled_matmul_cost
    >>> report = check_kernel(
    ...     lambda x: x * 2.0, lambda x: x + x, [((8, 128),), ((16, 256),)], atol=0.0
    ... )
    >>> report.passed, report.worst_error
    (True, 0.0)
    >>> cost = tiled_matmul_cost(1024, 1024, 1024, 256, 256, 512)
    >>> round(cost.intensity)                 # FLOPs per byte of HBM traffic (bf16)
    114
    >>> cost.onchip_bytes / 2**20             # MiB of tiles held on chip
    1.5
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide import _checks

__all__ = [
    "CaseResult",
    "KernelCheck",
    "Lowering",
    "TileCost",
    "attempt",
    "check_kernel",
    "error_summary",
    "lower_for",
    "tiled_matmul_cost",
]


@dataclass(frozen=True)
class CaseResult:
    """One case of :func:`check_kernel`.

    Attributes:
        shapes: the shapes of the arguments the kernel and the reference were given.
        max_abs_error: the largest ``|kernel - reference|`` over every output element.
        max_excess: the largest ``|kernel - reference| - (atol + rtol * |reference|)``:
            at most 0 when every element is within the tolerance.
        passed: whether every element was within ``atol + rtol * |reference|``, and
            the outputs had the reference's shapes and dtypes.
    """

    shapes: tuple[tuple[int, ...], ...]
    max_abs_error: float
    max_excess: float
    passed: bool


@dataclass(frozen=True)
class KernelCheck:
    """What :func:`check_kernel` found: one :class:`CaseResult` per case of shapes.

    Attributes:
        cases: the results, in the order the shapes were given.
        atol, rtol: the tolerance every element was held to:
            ``|kernel - reference| <= atol + rtol * |reference|``.
    """

    cases: tuple[CaseResult, ...]
    atol: float
    rtol: float

    @property
    def passed(self) -> bool:
        """Whether every case passed."""
        return all(c.passed for c in self.cases)

    @property
    def worst_error(self) -> float:
        """The largest absolute error over every case."""
        return max(c.max_abs_error for c in self.cases)

    def __str__(self) -> str:
        rows = [("shapes", "max |error|", "within tolerance")]
        rows += [
            (
                " ".join("x".join(map(str, s)) or "()" for s in c.shapes),
                f"{c.max_abs_error:.1e}",
                "yes" if c.passed else "NO",
            )
            for c in self.cases
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]}" for r in rows]
        lines.append(
            f"tolerance: |error| <= {self.atol:g} + {self.rtol:g} * |reference|; "
            + ("all cases pass" if self.passed else "FAILED")
        )
        return "\n".join(lines)


def _shape_cases(fn: str, shapes: object) -> tuple[tuple[tuple[int, ...], ...], ...]:
    example = "[((64, 32), (32, 16))]"
    if isinstance(shapes, (str, bytes)) or not isinstance(shapes, Sequence) or not shapes:
        raise _checks.wrong_type(
            fn,
            "shapes",
            shapes,
            "a non-empty list of cases, each a tuple of argument shapes",
            f"pass e.g. {example} for one case of two arguments",
        )
    cases = []
    for case in shapes:
        if not isinstance(case, tuple) or not case or not all(isinstance(s, tuple) for s in case):
            raise TypeError(
                f"{fn}(shapes=...): each case must be a tuple of shapes (tuples of ints), "
                f"got {case!r}; write a one-argument case as ((8, 128),), with the comma."
            )
        cases.append(
            tuple(_checks.positive_ints(fn, "shapes", s, example="(8, 128)") for s in case)
        )
    return tuple(cases)


def check_kernel(
    kernel: Callable[..., Any],
    reference: Callable[..., Any],
    shapes: Sequence[tuple[tuple[int, ...], ...]],
    *,
    atol: float = 1e-5,
    rtol: float = 1e-5,
    seed: int = 0,
) -> KernelCheck:
    """Run ``kernel`` and ``reference`` on the same random arguments, case by case.

    Each case is a tuple of argument shapes; every argument is drawn from a standard
    normal distribution in float32, by NumPy's generator seeded with ``seed`` (drawing
    on the host compiles nothing, so a new shape costs only the kernel's compilation).
    The outputs (any pytree of arrays) must match the reference's structure, shapes and
    dtypes, and every element must satisfy
    ``|kernel - reference| <= atol + rtol * |reference|``. Shapes that the kernel cannot
    take (a tile that does not divide them) raise the kernel's own error.

    Args:
        kernel: the function under test, e.g. a ``pl.pallas_call`` wrapped in a
            function of arrays.
        reference: the plain-JAX function it must equal.
        shapes: a non-empty list of cases, each a tuple of argument shapes:
            ``[((64, 32), (32, 16)), ((128, 64), (64, 32))]`` for a two-argument
            kernel; ``[((8, 128),)]`` for one argument.
        atol: absolute tolerance, ``>= 0``.
        rtol: relative tolerance, ``>= 0``.
        seed: the seed of the random arguments, an int ``>= 0``.

    Returns:
        A :class:`KernelCheck`: ``passed``, ``worst_error``, the cases, and a table
        when printed.

    Raises:
        TypeError: ``kernel`` or ``reference`` is not callable, or ``shapes`` is not a
            list of tuples of shapes.
        ValueError: a shape has a dimension below 1, a tolerance is negative or not
            finite, or ``seed`` is negative.

    Example:
        >>> wrong = check_kernel(lambda x: x * 2.001, lambda x: 2 * x, [((4, 4),)])
        >>> wrong.passed
        False
    """
    fn = "check_kernel"
    _checks.function(fn, "kernel", kernel, what="a function of arrays")
    _checks.function(fn, "reference", reference, what="a function of arrays")
    cases = _shape_cases(fn, shapes)
    hint = " Pass a non-negative tolerance such as 1e-5."
    atol = _checks.real(fn, "atol", atol, minimum=0.0, hint=hint)
    rtol = _checks.real(fn, "rtol", rtol, minimum=0.0, hint=hint)
    seed = _checks.count(fn, "seed", seed, example=0)

    rng = np.random.default_rng(seed)
    results = []
    for case in cases:
        args = [jnp.asarray(rng.standard_normal(s, dtype=np.float32)) for s in case]
        got, want = kernel(*args), reference(*args)
        got_leaves, got_tree = jax.tree.flatten(got)
        want_leaves, want_tree = jax.tree.flatten(want)
        if str(got_tree) != str(want_tree):
            raise ValueError(
                f"{fn}: for shapes {case} the kernel returned {got_tree}, the reference "
                f"{want_tree}; make both return the same structure of arrays."
            )
        err, excess, same = 0.0, -np.inf, True
        for g, w in zip(got_leaves, want_leaves, strict=True):
            g_np, w_np = np.asarray(g), np.asarray(w)
            if g_np.shape != w_np.shape or g_np.dtype != w_np.dtype:
                same = False
                continue
            diff = np.abs(g_np.astype(np.float64) - w_np.astype(np.float64))
            bound = atol + rtol * np.abs(w_np.astype(np.float64))
            if diff.size:
                err = max(err, float(np.nanmax(diff)) if not np.isnan(diff).any() else np.inf)
                excess = max(excess, float(np.max(np.where(np.isnan(diff), np.inf, diff - bound))))
        results.append(
            CaseResult(
                shapes=case,
                max_abs_error=err,
                max_excess=float(excess),
                passed=same and excess <= 0,
            )
        )
    return KernelCheck(cases=tuple(results), atol=atol, rtol=rtol)


@dataclass(frozen=True)
class TileCost:
    """What a tiled matrix product costs, counted by hand (:func:`tiled_matmul_cost`).

    Attributes:
        flops: ``2 * m * n * k``.
        hbm_bytes: bytes moved between main memory and the chip: the left operand read
            once per column of tiles (``n / bn`` times), the right operand once per row
            of tiles (``m / bm`` times), the output written once.
        input_tiles: bytes of one ``(bm, bk)`` tile and one ``(bk, bn)`` tile.
        output_tile: bytes of one ``(bm, bn)`` output tile.
        accumulator: bytes of the ``(bm, bn)`` accumulator.
        onchip_bytes: bytes the tiles hold on chip at once, as a TPU kernel holds them
            in VMEM: ``buffers * (input_tiles + output_tile) + accumulator``. (A GPU
            kernel keeps its input tiles in shared memory, ``stages * input_tiles``, and
            its accumulator in registers.)
        intensity: ``flops / hbm_bytes``, FLOPs per byte moved.
    """

    flops: int
    hbm_bytes: int
    input_tiles: int
    output_tile: int
    accumulator: int
    onchip_bytes: int
    intensity: float


def tiled_matmul_cost(
    m: int,
    n: int,
    k: int,
    bm: int,
    bn: int,
    bk: int,
    *,
    in_bytes: int = 2,
    out_bytes: int = 2,
    acc_bytes: int = 4,
    buffers: int = 2,
) -> TileCost:
    """FLOPs, HBM traffic, on-chip bytes and intensity of a tiled ``(m, k) @ (k, n)``.

    The schedule counted is the usual one (the Pallas TPU matmul guide's): a grid of
    ``(m / bm, n / bn, k / bk)`` steps with ``k`` innermost, each step reading an
    ``(bm, bk)`` tile of the left operand and a ``(bk, bn)`` tile of the right one,
    adding their product into an accumulator of ``(bm, bn)`` that stays on chip, and
    writing the output tile once after the last ``k`` step. Input and output tiles are
    held in ``buffers`` copies (2: one being computed on while the next is copied in).
    The left operand is counted once per column of tiles, which holds for ``bk < k``:
    at ``bk == k`` its block is the same at consecutive steps, and Pallas copies it
    once, so the count is high by ``n / bn`` for it.

    Args:
        m, n, k: the problem's sizes, each a positive int divisible by its tile.
        bm, bn, bk: the tile sizes, positive ints.
        in_bytes: bytes per input element (2 for bf16, 4 for float32).
        out_bytes: bytes per output element.
        acc_bytes: bytes per accumulator element (4: float32); 0 for a kernel that
            accumulates into its output tile.
        buffers: copies of each input and output tile, ``>= 1``.

    Returns:
        A :class:`TileCost`.

    Raises:
        TypeError: an argument is not an int.
        ValueError: a size is below 1, a tile does not divide its size, or a byte count
            is out of range.

    Example:
        >>> c = tiled_matmul_cost(512, 512, 512, 128, 128, 128, in_bytes=4, out_bytes=4)
        >>> c.flops, c.hbm_bytes
        (268435456, 9437184)
    """
    fn = "tiled_matmul_cost"
    sizes = {}
    for name, value, example in (("m", m, 1024), ("n", n, 1024), ("k", k, 1024)):
        sizes[name] = _checks.positive_int(fn, name, value, example=example)
    tiles = {}
    for name, value in (("bm", bm), ("bn", bn), ("bk", bk)):
        tiles[name] = _checks.positive_int(fn, name, value, example=128)
    for size, tile in (("m", "bm"), ("n", "bn"), ("k", "bk")):
        if sizes[size] % tiles[tile]:
            raise ValueError(
                f"{fn}({tile}={tiles[tile]}): {tile} must divide {size}={sizes[size]}; "
                f"pass a divisor of {sizes[size]} such as "
                f"{next(d for d in range(min(tiles[tile], sizes[size]), 0, -1) if sizes[size] % d == 0)}."
            )
    in_b = _checks.positive_int(fn, "in_bytes", in_bytes, example=2)
    out_b = _checks.positive_int(fn, "out_bytes", out_bytes, example=2)
    acc_b = _checks.count(fn, "acc_bytes", acc_bytes, example=4)
    bufs = _checks.positive_int(fn, "buffers", buffers, example=2)
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    bm, bn, bk = tiles["bm"], tiles["bn"], tiles["bk"]
    flops = 2 * m * n * k
    hbm = m * k * in_b * (n // bn) + k * n * in_b * (m // bm) + m * n * out_b
    inputs, output, acc = (bm * bk + bk * bn) * in_b, bm * bn * out_b, bm * bn * acc_b
    return TileCost(
        flops=flops,
        hbm_bytes=hbm,
        input_tiles=inputs,
        output_tile=output,
        accumulator=acc,
        onchip_bytes=bufs * (inputs + output) + acc,
        intensity=flops / hbm,
    )


def error_summary(error: BaseException, kind: str | None = None) -> str:
    """An error in one line: ``"TypeName: the first sentence of its message"``.

    An error raised inside a TPU interpreter callback carries the original error's own
    line (``"IndexError: Out-of-bounds read ..."``) deep inside a longer message: with
    ``kind``, the first line of the message that starts with ``kind`` is returned
    instead, when there is one.

    Args:
        error: the exception.
        kind: an exception's name (``"IndexError"``) to look for among the message's
            lines, or None.

    Returns:
        The one line, as a str.

    Raises:
        TypeError: ``error`` is not an exception.

    Example:
        >>> error_summary(ValueError("Tiles must divide. Pass 128."))
        'ValueError: Tiles must divide'
        >>> error_summary(RuntimeError("callback failed\\nIndexError: row 9 of 8"), "IndexError")
        'IndexError: row 9 of 8'
    """
    _checks.instance("error_summary", "error", error, BaseException, what="an exception")
    text = str(error)
    if kind is not None:
        line = next((ln for ln in text.splitlines() if ln.startswith(kind)), None)
        if line is not None:
            return line
    first = (text.splitlines() or [""])[0].split(". ")[0]
    return f"{type(error).__name__}: {first}".rstrip(": ")


def attempt(f: Callable[[], Any]) -> tuple[bool, Any]:
    """Call ``f()``: ``(True, its result)``, or ``(False, error_summary(the error))``.

    Args:
        f: a function of no arguments.

    Returns:
        ``(True, f())``, or ``(False, "TypeName: first sentence")`` if it raised.

    Raises:
        TypeError: ``f`` is not callable.

    Example:
        >>> attempt(lambda: 1 + 1)
        (True, 2)
        >>> attempt(lambda: 1 / 0)
        (False, 'ZeroDivisionError: division by zero')
    """
    _checks.function("attempt", "f", f, what="a function of no arguments")
    try:
        return True, f()
    except Exception as e:  # noqa: BLE001 - reported, not swallowed
        return False, error_summary(e)


def _mlir_string(escaped: str) -> str:
    """An MLIR string attribute's text: ``\\22`` is a quote, ``\\0A`` a newline."""
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m[1], 16)), escaped)


@dataclass(frozen=True)
class Lowering:
    """What :func:`lower_for` got: a lowered program's text, or the refusal.

    Attributes:
        platform: the platform lowered for (``"tpu"``, ``"cuda"``, ...).
        text: the lowered program (StableHLO) as text; ``""`` when it was refused.
        error: the refusal in one line (:func:`error_summary`); ``""`` when it lowered.
        warnings: the first sentence of each warning raised while tracing and lowering.
    """

    platform: str
    text: str
    error: str
    warnings: tuple[str, ...]

    @property
    def lowered(self) -> bool:
        """Whether the function lowered for the platform."""
        return not self.error

    @property
    def custom_calls(self) -> tuple[str, ...]:
        """The targets of the program's custom calls (its compiled kernels), sorted."""
        return tuple(sorted(set(re.findall(r"custom_call @([\w$.]+)", self.text))))

    @property
    def tpu_configs(self) -> tuple[dict[str, Any], ...]:
        """The backend configuration of each ``tpu_custom_call``, as a dict.

        The kernel's serialised Mosaic module (``custom_call_config["body"]``) is left
        out; what remains is what the lowering wrote beside it, e.g. the kernel's
        ``cost_estimate`` and, when ``vmem_limit_bytes`` is set, its
        ``scoped_memory_configs``.
        """
        configs = []
        for call in re.finditer(r"custom_call @tpu_custom_call\(.*", self.text):
            found = re.search(r'backend_config = "((?:[^"\\]|\\.)*)"', call[0])
            if found:
                config = json.loads(_mlir_string(found[1]))
                config.get("custom_call_config", {}).pop("body", None)
                configs.append(config)
        return tuple(configs)

    def __str__(self) -> str:
        if self.error:
            return self.error
        calls = self.custom_calls
        return "custom call " + ", ".join(calls) if calls else "no custom call"


def lower_for(platform: str, f: Callable[..., Any], *args: Any) -> Lowering:
    """Lower ``jax.jit(f)(*args)`` for ``platform`` on this machine; never raises.

    Lowering runs Pallas's lowering for the target (to Mosaic for ``"tpu"``, to Mosaic
    GPU or Triton for ``"cuda"``), which checks many of the hardware's rules, without a
    TPU or GPU at hand. It neither compiles nor runs the program: what the device's
    compiler would refuse later (a kernel that overflows on-chip memory) is not seen.

    Args:
        platform: ``"tpu"``, ``"cuda"``, ``"rocm"`` or ``"cpu"``.
        f: a function of arrays (a ``pallas_call``, or a function calling one).
        *args: its arguments: arrays or ``jax.ShapeDtypeStruct``.

    Returns:
        A :class:`Lowering`: its ``text`` and ``custom_calls``, or its ``error``, and
        the ``warnings``; printed, the custom calls or the error in one line.

    Raises:
        TypeError: ``f`` is not callable.
        ValueError: ``platform`` is not one of the four.

    Example:
        >>> import jax.numpy as jnp
        >>> str(lower_for("tpu", jnp.sin, jnp.ones(3)))
        'no custom call'
    """
    fn = "lower_for"
    _checks.one_of(fn, "platform", platform, ("tpu", "cuda", "rocm", "cpu"))
    _checks.function(fn, "f", f, what="a function of arrays")

    text, error = "", ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            traced = jax.jit(f).trace(*args)
            text = traced.lower(lowering_platforms=(platform,)).as_text()
        except Exception as e:  # noqa: BLE001 - the refusal is the result
            error = error_summary(e)
    said = tuple(dict.fromkeys(str(w.message).split(". ")[0] for w in caught))
    return Lowering(platform=platform, text=text, error=error, warnings=said)
