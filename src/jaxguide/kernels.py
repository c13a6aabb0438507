"""Checking hand-written kernels, and the arithmetic of tiling them.

Two things a reader writing a Pallas kernel reuses:

* :func:`check_kernel` runs a kernel and its plain-JAX reference on random arguments of
  several shapes and reports the worst error against a stated tolerance, per shape.
* :func:`tiled_matmul_cost` counts, by hand, what a tiled matrix product
  ``(m, k) @ (k, n)`` with ``(bm, bk) x (bk, bn)`` tiles costs: its FLOPs, the bytes it
  moves between main memory (HBM) and the chip, the on-chip bytes its tiles hold, and
  the arithmetic intensity (FLOPs per byte moved) that results.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jaxguide import _checks

__all__ = ["CaseResult", "KernelCheck", "TileCost", "check_kernel", "tiled_matmul_cost"]


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

    import jax
    import jax.numpy as jnp
    import numpy as np

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
