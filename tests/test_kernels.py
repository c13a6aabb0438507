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


def test_error_summary_is_the_first_sentence_or_the_named_line():
    from jaxguide.kernels import error_summary

    assert error_summary(ValueError("Tiles must divide. Pass 128.")) == (
        "ValueError: Tiles must divide"
    )
    # a callback's error: the original error's own line, found by its type's name
    wrapped = RuntimeError("callback failed\nTraceback ...\nIndexError: row 9 of 8")
    assert error_summary(wrapped, "IndexError") == "IndexError: row 9 of 8"
    # no such line: the first sentence, as without kind
    assert error_summary(wrapped, "KeyError") == "RuntimeError: callback failed"
    assert error_summary(AssertionError()) == "AssertionError"
    with pytest.raises(TypeError, match=r"error_summary\(error=...\): error must be an exception"):
        error_summary("x")


def test_attempt_returns_the_result_or_the_error():
    from jaxguide.kernels import attempt

    assert attempt(lambda: 2 + 2) == (True, 4)
    assert attempt(lambda: [][1]) == (False, "IndexError: list index out of range")
    with pytest.raises(TypeError, match=r"attempt\(f=...\): f must be a function"):
        attempt(3)


def _add_call(block=(8, 128), **params):
    import jax
    from jax.experimental import pallas as pl

    def add(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    spec = pl.BlockSpec(block, lambda i, j: (i, j))
    return pl.pallas_call(
        add,
        out_shape=jax.ShapeDtypeStruct((64, 512), jnp.float32),
        grid=(-(-64 // block[0]), -(-512 // block[1])),
        in_specs=[spec, spec],
        out_specs=spec,
        **params,
    )


def test_lower_for_a_tpu_reports_the_kernel_and_its_configuration():
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    from jaxguide.kernels import Lowering, lower_for

    x = jnp.ones((64, 512), jnp.float32)
    call = _add_call(
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=3 * 2**20),
        cost_estimate=pl.CostEstimate(flops=7, transcendentals=0, bytes_accessed=11),
    )
    low = lower_for("tpu", call, x, x)
    assert isinstance(low, Lowering) and low.lowered and low.error == ""
    assert low.custom_calls == ("tpu_custom_call",)
    assert str(low) == "custom call tpu_custom_call"
    (config,) = low.tpu_configs
    # the estimate and the scoped VMEM, as the lowering wrote them; the body left out
    assert config["custom_call_config"]["cost_estimate"] == {
        "flops": 7,
        "transcendentals": 0,
        "bytes_accessed": 11,
        "remote_bytes_transferred": 0,
    }
    assert "body" not in config["custom_call_config"]
    assert config["scoped_memory_configs"][0]["size"] == 3 * 2**20
    # no vmem_limit_bytes: nothing written
    (plain,) = lower_for("tpu", _add_call(), x, x).tpu_configs
    assert "scoped_memory_configs" not in plain


def test_lower_for_reports_a_refusal_and_warnings_without_raising():
    from jaxguide.kernels import lower_for

    x = jnp.ones((64, 512), jnp.float32)
    refused = lower_for("tpu", _add_call((7, 100)), x, x)
    assert not refused.lowered and refused.text == "" and refused.custom_calls == ()
    assert refused.error.startswith("ValueError: The Pallas TPU lowering")
    assert "divisible by 8 and 128" in str(refused)
    # a pallas_call lowered for a GPU warns that Mosaic GPU wants plgpu.kernel
    gpu = lower_for("cuda", _add_call(), x, x)
    assert gpu.lowered and gpu.custom_calls[0].startswith("mosaic_gpu")
    assert any("deprecated" in w for w in gpu.warnings)
    # plain XLA operations: no custom call at all
    assert str(lower_for("cuda", jnp.sin, x)) == "no custom call"


def test_lower_for_checks_its_arguments():
    from jaxguide.kernels import lower_for

    with pytest.raises(ValueError, match=r"lower_for\(platform='gpu'\)"):
        lower_for("gpu", jnp.sin, jnp.ones(3))
    with pytest.raises(TypeError, match=r"lower_for\(f=...\): f must be a function"):
        lower_for("tpu", 3, jnp.ones(3))
