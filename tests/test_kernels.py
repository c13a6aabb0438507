"""jaxguide.kernels: the kernel checker catches a wrong kernel, and the tiled-matmul
count agrees with an independent count of the tiles a grid visits."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import pytest

from jaxguide.kernels import KernelCheck, check_kernel, tiled_matmul_cost


def test_a_correct_kernel_passes_on_every_shape():
    report = check_kernel(
        lambda a, b: a @ b,
        lambda a, b: jnp.dot(a, b, precision="highest"),
        [((8, 16), (16, 4)), ((32, 8), (8, 8))],
        atol=1e-4,
        rtol=1e-4,
    )
    assert isinstance(report, KernelCheck)
    assert report.passed and len(report.cases) == 2
    assert report.cases[0].shapes == ((8, 16), (16, 4))
    assert report.worst_error < 1e-4
    assert "all cases pass" in str(report) and "8x16 16x4" in str(report)


def test_a_wrong_kernel_is_caught():
    # right on most elements, wrong on the last row only: a classic tiling bug
    def off_by_one(x):
        return (2 * x).at[-1].set(0.0)

    report = check_kernel(off_by_one, lambda x: 2 * x, [((8, 128),), ((16, 128),)])
    assert not report.passed
    assert all(not c.passed and c.max_excess > 0 for c in report.cases)
    assert report.worst_error > 0.1
    assert "FAILED" in str(report) and "NO" in str(report)


def test_tolerance_is_applied_as_stated():
    # a relative error of 1e-3 passes at rtol=2e-3 and fails at rtol=5e-4
    def scaled(x):
        return x * 1.001

    assert check_kernel(scaled, lambda x: x, [((64,),)], atol=0.0, rtol=2e-3).passed
    assert not check_kernel(scaled, lambda x: x, [((64,),)], atol=0.0, rtol=5e-4).passed


def test_wrong_shape_or_dtype_fails_and_structure_raises():
    assert not check_kernel(lambda x: x[:-1], lambda x: x, [((8,),)]).passed
    assert not check_kernel(lambda x: x.astype(jnp.bfloat16), lambda x: x, [((8,),)]).passed
    with pytest.raises(ValueError, match=r"check_kernel: for shapes \(\(8,\),\) the kernel"):
        check_kernel(lambda x: (x, x), lambda x: x, [((8,),)])


def test_nan_output_fails():
    assert not check_kernel(lambda x: x * jnp.nan, lambda x: x, [((8,),)]).passed


def test_bad_arguments_name_the_argument_and_the_fix():
    ok = lambda x: x  # noqa: E731
    with pytest.raises(TypeError, match=r"check_kernel\(kernel=...\): kernel must be a function"):
        check_kernel(3, ok, [((8,),)])
    with pytest.raises(TypeError, match=r"shapes must be a non-empty list of cases.*pass e\.g\."):
        check_kernel(ok, ok, [])
    with pytest.raises(TypeError, match=r"write a one-argument case as \(\(8, 128\),\)"):
        check_kernel(ok, ok, [(8, 128)])
    with pytest.raises(ValueError, match=r"check_kernel\(shapes=\(8, 0\)\)"):
        check_kernel(ok, ok, [((8, 0),)])
    with pytest.raises(ValueError, match=r"check_kernel\(atol=-1.0\): atol must be >= 0"):
        check_kernel(ok, ok, [((8,),)], atol=-1)
    with pytest.raises(ValueError, match=r"check_kernel\(seed=-1\)"):
        check_kernel(ok, ok, [((8,),)], seed=-1)


def test_tiled_matmul_cost_counts_the_tiles_a_grid_visits():
    m, n, k, bm, bn, bk = 256, 384, 512, 64, 128, 256
    cost = tiled_matmul_cost(m, n, k, bm, bn, bk, in_bytes=2, out_bytes=4, acc_bytes=4)
    # walk the grid (k innermost) and add up the bytes of every tile copied in
    read = 0
    for _i, _j, _l in itertools.product(range(m // bm), range(n // bn), range(k // bk)):
        read += (bm * bk + bk * bn) * 2
    assert cost.hbm_bytes == read + m * n * 4
    assert cost.flops == 2 * m * n * k
    assert cost.intensity == pytest.approx(cost.flops / cost.hbm_bytes)
    assert cost.onchip_bytes == 2 * ((bm * bk + bk * bn) * 2 + bm * bn * 4) + bm * bn * 4
    assert (cost.input_tiles, cost.output_tile, cost.accumulator) == (
        (bm * bk + bk * bn) * 2,
        bm * bn * 4,
        bm * bn * 4,
    )
    # bigger tiles: more reuse, higher intensity, more on-chip bytes
    bigger = tiled_matmul_cost(m, n, k, 2 * bm, 3 * bn, bk, in_bytes=2, out_bytes=4)
    assert bigger.intensity > cost.intensity and bigger.onchip_bytes > cost.onchip_bytes
    # one buffer and no accumulator: just the tiles
    bare = tiled_matmul_cost(m, n, k, bm, bn, bk, buffers=1, acc_bytes=0, out_bytes=4)
    assert bare.onchip_bytes == (bm * bk + bk * bn) * 2 + bm * bn * 4


def test_tiled_matmul_cost_refuses_tiles_that_do_not_divide():
    with pytest.raises(
        ValueError,
        match=r"tiled_matmul_cost\(bn=96\): bn must divide n=256; pass a divisor of 256 such as 64",
    ):
        tiled_matmul_cost(256, 256, 256, 128, 96, 128)
    with pytest.raises(TypeError, match=r"tiled_matmul_cost\(m=2.5\)"):
        tiled_matmul_cost(2.5, 256, 256, 128, 128, 128)
    with pytest.raises(ValueError, match=r"tiled_matmul_cost\(buffers=0\)"):
        tiled_matmul_cost(256, 256, 256, 128, 128, 128, buffers=0)
