"""The pmap chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import pytest

from bookcheck import VERDICT, cell_output, glued, images, page_text

pytestmark = pytest.mark.book

VARIANTS = {"vmap", "jit(vmap)", "pmap", "jit(pmap)", "pmap(jit)", "pmap, input pre-split"}


def between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i + len(start))]


def test_pmap_rows_and_errors(book):
    text = page_text(book, "pmap")
    # At most one row per device: 4 rows run on 4 of the 8 devices.
    assert "4 rows ran on devices [0, 1, 2, 3]" in text
    # Today's error for too many rows, then the fix and jaxguide's own clear error.
    assert "cannot select an axis to squeeze out" in text
    assert "(16, 3) -> (8, 2, 3)" in text
    assert "a batch of 10 examples does not divide across 8 devices" in text
    assert "a jax.Array: True" in text and "ArrayImpl" not in text
    assert "CPU 0" in text  # visualize_array_sharding's text
    assert "8 cpu devices, ids [0, 1, 2, 3, 4, 5, 6, 7]" in text
    assert "CpuDevice(" not in text  # no raw device reprs
    # Nested pmap: today's error, shown rather than claimed.
    assert "should match the mesh passed to shard_map" in text


def test_pmap_collectives(book):
    text = page_text(book, "pmap")
    g = glued(book, "pmap")
    assert "axis_index: [0 1 2 3 4 5 6 7]" in text
    assert "pmean: [4.5 4.5 4.5 4.5 4.5 4.5 4.5 4.5]" in text
    assert "sum: 1.0000" in text  # the shares of the psum total add up to one
    # The gradient's all-reduce: w (3 float32) and b (1 float32), by hand.
    assert g["pmap_grad_bytes"] == 4 * (3 + 1)
    assert g["pmap_grad_collectives"] == [["all-reduce", 4 * (3 + 1), 8]]


def test_pmap_jaxprs_and_programs(book):
    text = page_text(book, "pmap")
    # pmap is built on jit + shard_map, visible in its jaxpr.
    assert "shard_map[" in text and "_internal_pmap_axis_name" in text
    # The trimmed jaxprs themselves are shown, one per variant.
    jv = between(text, "--- jit(vmap)", "--- pmap")
    assert "shard_map[" not in jv and "dot_general" in jv and "name=work" in jv
    pm = between(text, "--- pmap", "--- jit(pmap)")
    assert pm.count("jit[") == 1 and "shard_map[" in pm
    jp = between(text, "--- jit(pmap)", "--- pmap(jit)")
    assert jp.count("jit[") == 2 and jp.index("jit[") < jp.index("shard_map[")
    pj = between(text, "--- pmap(jit)", "Read the indentation")
    assert pj.count("jit[") == 2 and pj.index("shard_map[") < pj.rindex("jit[")
    # ... and the three pmap variants compile to the same work, with no collective.
    rows = re.findall(
        r"(pmap|jit\(pmap\)|pmap\(jit\)) +([\d.]+) MFLOP per device, fusions: (\d+), collectives: (\d+)",
        text,
    )
    assert [r[0] for r in rows] == ["pmap", "jit(pmap)", "pmap(jit)"], rows
    assert len({r[1:] for r in rows}) == 1 and rows[0][3] == "0", rows
    assert abs(float(rows[0][1]) - 2 * 256**3 / 1e6) < 0.2, rows  # one 256x256 matmul


def test_pmap_timings_glued(book):
    text = page_text(book, "pmap")
    g = glued(book, "pmap")
    for key in ("pmap_jit_vs_pmap", "pmap_jit_noise", "pmap_presplit", "pmap_vs_jitvmap"):
        assert re.fullmatch(VERDICT, g[key]), (key, g[key])
    assert g["pmap_iqr"] in {"overlap", "do not overlap"}
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
    assert "the input, stack, is on device [0]" in text
    assert g["pmap_cores"] >= 1 and re.search(rf"this machine.s {g['pmap_cores']} CPU cores", text)
    assert len(images(book, "pmap")) >= 2  # sharding picture + timing chart
    assert all(len(img.get("alt", "")) > 30 for img in images(book, "pmap")), (
        "every figure has a real alt text"
    )


def test_pmap_shard_map_rewrite(book):
    text = page_text(book, "pmap")
    g = glued(book, "pmap")
    assert "pmap (8, 8, 3) (8, 3) 1 × all-reduce" in text
    assert "shard_map (64, 3) (3,) 1 × all-reduce" in text
    # The word-for-word port is off by the device count, and the page shows why.
    assert g["pmap_literal_ratio"] == 8
    assert "literal / full-batch gradient: [8. 8. 8.]" in text
    assert "float32[8,3]{V:devices}" in text
    # The literal port's program: the two gradient sums and the pmean, packed in three.
    literal = between(text, "literal / full-batch gradient", "times too large")
    assert literal.count("all-reduce") == 3, literal


def test_pmap_in_axes_and_axis_size(book):
    text = page_text(book, "pmap")
    # Forgetting in_axes=None for an unsplit argument: the sharding error, explained.
    assert "implies that array axis 0 is partitioned 8 times, but the dimension size is 2" in text
    # psum of a constant is the axis size, with no collective in the program.
    assert "psum(1): [8 8 8 8 8 8 8 8] collectives: {}" in text


def test_pmap_out_axes(book):
    text = page_text(book, "pmap")
    assert "out_axes=None: (3,) P()" in text and "stacked: (8, 3) P('devices',)" in text
    # x[0] of a stacked result is a program with a collective; a local shard is not.
    assert "avg['w'][0]: P(), compiles to: {'all-reduce': 1}" in text
    assert "addressable_shards[0]: (3,) from device 0" in text
    # out_axes=None is not checked: device 0's value comes back silently.
    assert "2 * values, out_axes=None: 2.0 (device 0's value)" in text


def test_pmap_migration_errors_and_smap(book):
    text = page_text(book, "pmap")
    assert "Sharding passed to jit does not match the sharding on the respective arg" in text
    assert "argument: SingleDeviceSharding on device 0" in text
    assert "keep pmap top-level" in text  # the migration guide's advice, next to the timing
    # The shard_map-correct gradient under pmap: each device's local gradient, which differ.
    rows = re.findall(r"device (\d) / full-batch: \[([^\]]+)\]", text)
    assert [r[0] for r in rows] == ["0", "1"] and rows[0][1] != rows[1][1], rows
    assert "smap body sees (2,) float32[2]{V:devices}" in text
    assert "(16,) P('devices',)" in text


def test_pmap_fusions_explained(book):
    text = page_text(book, "pmap")
    # The CPU-specific YNNPACK fusion is named, and said to be CPU-specific.
    assert "the fusion: ynn_fusion (kCustom): bitcast, dot, tanh, reduce, bitcast" in text
    assert "YNNPACK" in text and "xla_cpu_experimental_ynn_fusion_type" not in text


def test_pmap_unbound_axis_name(book):
    """The raises-exception cell fails with the error the prose names."""
    out = cell_output(book, "pmap", 'jax.lax.psum(v, "batch")')
    assert "NameError" in out and "unbound axis name: batch" in out, out
