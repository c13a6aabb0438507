"""The pmap chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import VERDICT, cell_output, glued, images, page_text, parsed_page
from jaxguide.compiled import format_bytes

pytestmark = pytest.mark.book

VARIANTS = {"vmap", "jit(vmap)", "pmap", "jit(pmap)", "pmap(jit)", "pmap, input pre-split"}


def between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i + len(start))]


def test_pmap_rows_and_errors(book):
    g = glued(book, "pmap")
    assert g["pmap_devices"] == (8, "cpu", list(range(8)))
    assert g["pmap_doubled"] == ("ArrayImpl", True, "P('_internal_pmap_axis_name',)")
    # At most one row per device: 4 rows run on 4 of the 8 devices.
    assert g["pmap_rows4_devices"] == [0, 1, 2, 3]
    assert g["pmap_split_shapes"] == ((16, 3), (8, 2, 3), (8, 2, 3))
    text = page_text(book, "pmap")
    assert "ArrayImpl" not in text and "CpuDevice(" not in text  # no raw reprs shown
    # What the sharding picture shows: row i of the result on device i, one row each.
    assert g["pmap_row_devices"] == list(range(8))
    # Error cells: today's errors, shown rather than claimed.
    assert "cannot select an axis to squeeze out" in cell_output(
        book, "pmap", "jax.pmap(lambda row: 2 * row)(many)"
    )
    assert "a batch of 10 examples does not divide across 8 devices" in cell_output(
        book, "pmap", 'split_batch(np.zeros((10, 3), "f4"))'
    )
    assert "should match the mesh passed to shard_map" in cell_output(
        book, "pmap", "jax.pmap(jax.pmap(lambda row: 2 * row))(grid)"
    )


def test_pmap_collectives(book):
    g = glued(book, "pmap")
    assert g["pmap_axis_index"] == list(range(8))
    assert g["pmap_pmean"] == [4.5] * 8  # the mean of 1..8
    # The shares of the psum total: v / 36, adding up to one.
    assert g["pmap_shares"] == pytest.approx([v / 36 for v in range(1, 9)], rel=1e-6)
    assert sum(g["pmap_shares"]) == pytest.approx(1.0, rel=1e-6)
    # The gradient's all-reduce: w (3 float32) and b (1 float32), by hand.
    assert g["pmap_grad_bytes"] == g["pmap_grad_collectives"][0][1]
    assert g["pmap_grad_collectives"] == [["all-reduce", 4 * (3 + 1), 8]]


def test_pmap_jaxprs_and_programs(book):
    g = glued(book, "pmap")
    # pmap is built on jit + shard_map, visible in its jaxpr.
    assert "shard_map[" in g["pmap_jaxpr"] and "_internal_pmap_axis_name" in g["pmap_jaxpr"]
    assert "check_vma=False" in g["pmap_jaxpr"]
    outlines = g["pmap_outlines"]
    jv = outlines["jit(vmap)"]
    assert "shard_map[" not in jv and "dot_general" in jv and "name=work" in jv
    pm = outlines["pmap"]
    assert pm.count("jit[") == 1 and "shard_map[" in pm
    jp = outlines["jit(pmap)"]
    assert jp.count("jit[") == 2 and jp.index("jit[") < jp.index("shard_map[")
    pj = outlines["pmap(jit)"]
    assert pj.count("jit[") == 2 and pj.index("shard_map[") < pj.rindex("jit[")
    # ... and the three pmap variants compile to the same work, with no collective.
    compiled = g["pmap_compiled"]
    assert list(compiled) == ["pmap", "jit(pmap)", "pmap(jit)"]
    flops, fusions, collectives = compiled["pmap"]
    assert collectives == 0 and fusions >= 1
    assert abs(flops - 2 * 256**3) < 0.2e6  # one 256x256 matmul, + tanh and sum
    # The five variants run on one device (vmap) or on the 8 (pmap), from device 0.
    assert g["pmap_variant_devices"] == {
        "vmap": 1,
        "jit(vmap)": 1,
        "pmap": 8,
        "jit(pmap)": 8,
        "pmap(jit)": 8,
    }
    assert g["pmap_stack_devices"] == [0]


def test_pmap_timings_glued(book):
    text = page_text(book, "pmap")
    g = glued(book, "pmap")
    assert re.fullmatch(VERDICT, g["pmap_presplit"]), g["pmap_presplit"]
    # Spreads, not bare ratios: a ratio only where the interquartile ranges part.
    spread_keys = (
        "pmap_iqr",
        "pmap_jit_noise",
        "pmap_vs_jitvmap",
        "pmap_walk_ratio",
        "pmap_walk_placed",
    )
    for key in spread_keys:
        value = g[key]
        assert value == "overlap" or re.fullmatch(
            rf"do not overlap \(.+ was {VERDICT} .+\)", value
        ), (
            key,
            value,
        )
    # The walk's pmap runs on one device per entry of its two-number input.
    assert g["pmap_walk_devices"] == len([0.0, 1.0])
    # The copy verdict follows the pre-split measurement, whichever way it went.
    verdict = g["pmap_copy_verdict"]
    if verdict.startswith("so copying the input"):
        assert "faster" in g["pmap_presplit"]
    elif verdict.startswith("although it has no copy"):
        assert "slower" in g["pmap_presplit"]
    else:
        assert verdict.startswith("but the spreads of the two timings")
    assert verdict in text
    assert g["pmap_fastest"] in VARIANTS
    assert f"their interquartile ranges {g['pmap_iqr']}" in text
    # The default (Explicit) mesh refuses the unsharded batch, naming its spec.
    axis_types, refused = g["pmap_explicit_refused"]
    assert "Explicit" in axis_types and "P(None, None)" in refused
    # Donation: only the inputs already on the devices were consumed.
    assert sorted(k for k, v in g["pmap_donated"].items() if not v) == ["pmap, copied"]
    # 12 rows cannot be split 8 ways: the sharding error, not the squeeze.
    assert 12 % 8 and g["pmap_rows12"].endswith("Error")
    assert g["pmap_rows12"] != "ValueError"
    # lax control flow under pmap + disable_jit, row 1 = [3, 4, 5], by NumPy.
    row = np.arange(24.0).reshape(8, 3)[1]
    steps = int(np.ceil((99 - row.sum()) / row.size))
    lax_rows = g["pmap_disable_jit_lax"]
    np.testing.assert_allclose(lax_rows["cond"], row)
    np.testing.assert_allclose(lax_rows["while_loop"], row + steps)
    np.testing.assert_allclose(lax_rows["fori_loop"], row * 2**3)
    assert g["pmap_cores"] >= 1
    assert len(images(book, "pmap")) >= 2  # sharding picture + timing chart
    assert all(len(img.get("alt", "")) > 30 for img in images(book, "pmap")), (
        "every figure has a real alt text"
    )


def test_pmap_shard_map_rewrite(book):
    g = glued(book, "pmap")
    assert g["pmap_rewrite"] == {
        "pmap": ((8, 8, 3), (8, 3), {"all-reduce": 1}),
        "shard_map": ((64, 3), (3,), {"all-reduce": 1}),
    }
    # The word-for-word port is off by the device count, and the page shows why.
    assert g["pmap_literal_ratio"] == 8
    assert g["pmap_literal_ratios"] == pytest.approx([8.0] * 3, rel=1e-4)
    assert g["pmap_literal_types"] == {
        "params": "float32[3]",
        "x": "float32[8,3]{V:devices}",
        "grad": "float32[3]",
    }
    # The two gradient sums and the pmean, packed in three.
    assert g["pmap_literal_collectives"] == ["all-reduce"] * 3


def test_pmap_in_axes_and_axis_size(book):
    # Forgetting in_axes=None for an unsplit argument: the sharding error, explained.
    assert "implies that array axis 0 is partitioned 8 times, but the dimension size is 2" in (
        cell_output(book, "pmap", "jax.pmap(lambda a, b, c: a + b + c)(a, b, c)")
    )
    # psum of a constant is the axis size, with no collective in the program.
    assert glued(book, "pmap")["pmap_psum1"] == ([8] * 8, {})


def test_pmap_out_axes(book):
    g = glued(book, "pmap")
    assert g["pmap_out_axes"] == {
        "out_axes=None": ((3,), "P()"),
        "stacked": ((8, 3), "P('devices',)"),
        # x[0] of a stacked result is a program with a collective; a local shard is not.
        "[0]": ("P()", {"all-reduce": 1}),
        "shard": ((3,), 0),
    }
    # out_axes=None is not checked: device 0's value (2 x 1) comes back silently.
    assert g["pmap_unchecked"] == 2.0


def test_pmap_migration_errors_and_smap(book):
    g = glued(book, "pmap")
    kind, refused = g["pmap_committed"]
    assert kind == "SingleDeviceSharding"
    assert "Sharding passed to jit does not match the sharding on the respective arg" in refused
    text = page_text(book, "pmap")
    assert "keep pmap top-level" in text  # the migration guide's advice, next to the timing
    # The shard_map-correct gradient under pmap: each device's local gradient, which differ.
    rows = g["pmap_global_under_pmap"]
    assert len(rows) == 8 and rows[0] != rows[1]
    assert g["pmap_smap"] == (((2,), "float32[2]{V:devices}"), (16,), "P('devices',)")


def test_pmap_fusions_explained(book):
    # The CPU-specific YNNPACK fusion is named, and said to be CPU-specific.
    fusion = glued(book, "pmap")["pmap_fusion"]
    assert fusion == "ynn_fusion (kCustom): bitcast, dot, tanh, reduce, bitcast"
    text = page_text(book, "pmap")
    assert "YNNPACK" in text and "xla_cpu_experimental_ynn_fusion_type" not in text


def test_pmap_unbound_axis_name(book):
    """The raises-exception cell fails with the error the prose names."""
    out = cell_output(book, "pmap", 'jax.lax.psum(v, "batch")')
    assert "NameError" in out and "unbound axis name: batch" in out, out


def test_pmap_mismatched_leading_sizes(book):
    # The first argument's rows set the device count: 4 rows do not split 8 ways, and
    # 8 rows split 4 ways are blocks of 2 that the body cannot squeeze to one row.
    n_dev, fewer = 8, 4
    assert glued(book, "pmap")["pmap_size_mismatch"] == {
        f"{n_dev} rows + {fewer} rows": (
            "IndivisibleError",
            f"array axis 0 is partitioned {n_dev} times, but the dimension size is {fewer}",
        ),
        f"{fewer} rows + {n_dev} rows": ("ValueError", "cannot select an axis to squeeze out"),
    }


def test_pmap_static_broadcasted_argnums(book):
    g = glued(book, "pmap")
    row1 = [3.0, 4.0, 5.0]  # rows[1] of arange(24).reshape(8, 3)
    # in_axes=None traces the int; static_broadcasted_argnums runs the loop 3 times.
    assert g["pmap_static_int"] == ("TracerIntegerConversionError", [v * 2**3 for v in row1])
    # One in_axes entry per argument, the static one included, and its value unused.
    shifted = [v * 0.5 * 2**3 + 1 for v in row1]  # shift 1 on device 1
    axes = g["pmap_static_in_axes"]
    assert axes[0, None, None, 0] == axes[0, None, 0, 0] == shifted
    assert axes[0, None, 0] == "IndexError: tuple index out of range"
    # The raises-exception cell: the int alone cannot be split over the devices.
    out = cell_output(book, "pmap", "jax.pmap(double_times)(rows, 3)")
    assert "ValueError" in out and "only valid for values of rank at least 1" in out, out


def test_pmap_and_jit_in_one_program(book):
    g = glued(book, "pmap")
    # A closed-over array enters pmap's shard_map replicated, and nothing is sent.
    assert g["pmap_closed_over"] == ("in_specs=(P(), P('_internal_pmap_axis_name',))", {})
    # A plain jit on pmap results keeps them split over the 8 devices, with no collective.
    assert g["pmap_ema"] == ("P('_internal_pmap_axis_name',)", 8, {})
    # Two pmaps of 5 and 3 rows in one jit: refused (apart, each runs on its own
    # devices: the claim's).
    (message, id_lists), _ = g["pmap_two_sizes"]
    assert message == "Received incompatible devices for jitted computation"
    assert id_lists == [f"device ids {list(range(5))}", f"device ids {list(range(3))}"]
    # disable_jit: both bodies run eagerly, pmap's with one value per device, so the
    # Python if has 8 booleans to turn into one and fails.
    assert g["pmap_disable_jit"] == (8, "TracerBoolConversionError")


def test_pmap_while_loop_trip_counts(book):
    g = glued(book, "pmap")
    n_dev, short, long = 8, 1, 20  # 7 examples need 1 halving, the last 2**20 needs 20
    own = (n_dev - 1) * short + long
    runs, sent = g["pmap_loop_runs"]
    assert runs == {"pmap": own, "jit, sharded batch": n_dev * long, "shard_map": own}
    # That collective is the loop's condition: one pred, 1 byte, all-reduced.
    assert g["pmap_loop_cond"] == ("all-reduce", ("pred",), ((),), 1)
    assert g["pmap_loop_own"] == own and g["pmap_loop_jit"] == n_dev * long
    text = page_text(book, "pmap")
    assert f"{own} runs of the body" in text
    assert f"ran the body {n_dev * long} times" in text


def test_pmap_memory_per_device(book):
    g = glued(book, "pmap")
    # Arguments per device, by hand: one float32 example is 256 + 1 numbers (x and y),
    # and so is one copy of w and b. Split, a device holds 128 / devices examples;
    # whole (in_axes=None), all 128, on 4 devices as on 8.
    row = 4 * (256 + 1)
    assert g["pmap_memory_args"] == {
        f"{n} devices": [format_bytes(row * (1 + 128 // n)), format_bytes(row * 129)]
        for n in (4, 8)
    }
    # The ridge regressions: the whole 256 x 256 Gram matrix and one device's (256, 4)
    # targets and regularisation per device, and about two Gram matrices of temporaries.
    args, outs, temps, gram, target = g["pmap_ridge_bytes"]
    assert gram == 4 * 256 * 256 and target == 4 * 256 * 4
    assert args == gram + target + 4 and outs == target
    assert float(g["pmap_ridge_temps"]) == pytest.approx(temps / gram, abs=0.05)
    assert 1.5 < temps / gram < 2.5
    # The jaxpr's inputs: the Gram matrix, every device's targets, one lambda each.
    n_dev = 8
    assert g["pmap_ridge_inputs"] == [
        "float32[256,256]",
        f"float32[{n_dev},256,4]",
        f"float32[{n_dev}]",
    ]


def test_pmap_second_input_signature(book):
    # jax-ml/jax#21225: the thread's x * x, called with a second shape, then the first.
    assert glued(book, "pmap")["pmap_signatures"] == [(), (2,)]
    # Each output has its input's shape.
    assert glued(book, "pmap")["pmap_square_shapes"] == [((8,), (8,)), ((8, 2), (8, 2))]


def test_pmap_flax_replicate(book):
    g = glued(book, "pmap")
    # flax's replicate stacks one copy per device (the step counter too); device_put
    # with P() keeps the shapes: the Dense kernel is 3 inputs x 2 features.
    n_dev = 8
    assert g["pmap_replicate_shapes"] == [(n_dev, 3, 2), (3, 2), (n_dev,)]
    # The same outputs, one row of 2 features per device (the claim checks the shape).
    assert g["pmap_replicate_same"] is True
    # The GPU-only part names the NCCL variables and links its sources.
    text = page_text(book, "pmap")
    assert "NCCL_P2P_DISABLE=1" in text and "NCCL_DEBUG=INFO" in text
    page = parsed_page(book, "pmap")
    links = {a.get("href", "") for a in page.find_all("a")}
    assert "https://github.com/NVIDIA/nccl-tests/issues/117" in links
    assert any("docs.nvidia.com/deeplearning/nccl" in href for href in links)


def test_pmap_compiles_with_llvm_optimisation_off(book):
    # The page says how its programs are compiled, and that its timings compare
    # programs compiled alike.
    text = page_text(book, "pmap")
    assert "optimisation off ( --xla_backend_optimization_level=0 , set in a hidden" in text
    assert "compare programs compiled at this level with each other" in text
    # What the page reads from compiled programs does not depend on LLVM's level:
    # the one YNNPACK fusion of the matmul, tanh and sum is still there.
    assert glued(book, "pmap")["pmap_fusion"].startswith("ynn_fusion (kCustom)")
