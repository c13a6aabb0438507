"""The sharding chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import pytest

from bookcheck import VERDICT, glued, images, page_text

pytestmark = pytest.mark.book


def test_sharding_layouts(book):
    text = page_text(book, "sharding")
    # Every layout the prose names is printed, with the book's notation and JAX's text view.
    for name in (
        "A[I_x, J]",
        "A[I, J_y]",
        "A[I_x, J_y]",
        "A[I, J]",
        "s[J_y]",
        "B[I, J_y]",
        "B[I_x, J_y]",
    ):
        assert name in text, name
    assert "s[I_y]" not in text  # the output agrees with the prose's letters
    assert text.count("CPU 0,1,2,3,4,5,6,7") >= 1 and "CPU 0,2,4,6" in text
    assert len(images(book, "sharding")) >= 6
    assert all(len(img.get("alt", "")) > 30 for img in images(book, "sharding")), (
        "every figure has a real alt text"
    )
    assert "<Axes" not in text  # show() leaves no object repr behind
    assert "How to Scale Your Model" in text
    assert "default axis types: (Explicit, Explicit)" in text
    assert "fully replicated: True" in text
    assert "device 0: rows 0:2, columns 0:4, shape (2, 4)" in text
    assert "rows 0:4, columns 0:12 on devices (0, 2, 4, 6)" in text
    assert "CpuDevice(" not in text  # device ids, not raw reprs


def test_sharding_collectives(book):
    text = page_text(book, "sharding")
    g = glued(book, "sharding")
    # Elementwise: nothing sent (the elementwise function and the unconstrained one).
    assert text.count("collectives: {}") >= 2
    # Column sums of A[I_x, J_y] (2x4 blocks): an all-reduce of 4 float32 over the
    # 4 devices along x.
    assert (g["sum_kind"], g["sum_bytes"], g["sum_group"]) == ("all-reduce", 4 * 4, 4)
    # The constraint B[I, J_y]: all-gather of a 2x4 block into the 8x4 half.
    assert (g["con_kind"], g["con_in"], g["con_out"]) == ("all-gather", 2 * 4 * 4, 8 * 4 * 4)
    # in_shardings A[I_x, J] -> out_shardings A[I, J_y]: the same all-gather.
    assert text.count("all-gather f32[2,4] 32 B 4") == 2
    # cos on 2048x2048 float32: read + write; one eighth per device when sharded.
    assert re.search(
        r"1 device A\[I, J\] \(one device\) bytes accessed per device: 32\.0 MiB, collectives: 0",
        text,
    )
    assert re.search(
        r"8 devices A\[I_x, J_y\] bytes accessed per device: 4\.0 MiB, collectives: 0", text
    )


def test_sharding_matmul_cases(book):
    text = page_text(book, "sharding")
    g = glued(book, "sharding")
    # J whole on both: nothing; J split on both: all-reduce of the 8x8 partial sums
    # over x; J split on B only: all-gather of B's 2x8 row blocks over x.
    assert "A[I_x, J] @ B[J, K_y] -> C[I_x, K_y] nothing sent" in text
    assert (
        "A[I, J_x] @ B[J_x, K] -> C[I, K] all-reduce of f32[8,8] (256 B per device) over 4 devices"
        in text
    )
    assert (
        "A[I_x, J] @ B[J_x, K] -> C[I_x, K] all-gather of f32[2,8] (64 B per device) over 4 devices"
        in text
    )
    # Case 4: rows of A and columns of B on the same axis: B's column blocks gathered.
    assert (
        "4. A[I_x, J] @ B[J, K_x] -> C[I_x, K] all-gather of f32[8,2] (64 B per device) over 4 devices"
        in text
    )
    assert (g["mm_ar_bytes"], g["mm_ag_bytes"], g["mm_ag4_bytes"]) == (
        8 * 8 * 4,
        2 * 8 * 4,
        8 * 2 * 4,
    )
    # Case 2 with a split result: on XLA:CPU an all-reduce plus a slice, no reduce-scatter,
    # and the prose says that this is the backend's choice.
    split = text[text.index("c_split = matmul_split") :]
    split = split[: split.index("The result is")]
    assert "C[I_x, K]" in split and "all-reduce f32[8,8] 256 B 4" in split
    assert "reduce-scatter in the program: False" in split
    assert "reduce_scatter_creator" in text
    assert "Three cases" not in text and "8 imes 8" not in text
    # Explicit out_sharding: the price of C[I_x, K] (gather eb.T's blocks along x,
    # reduce the y halves along y).
    assert "all-gather f32[4,2] 32 B 4" in text and "all-reduce f32[2,8] 64 B 2" in text
    # The Gram exercise checks the predicted collective.
    assert "all-reduce of f32[8,8]: 256 B, groups of 4" in text


def test_sharding_explicit_and_memory(book):
    text = page_text(book, "sharding")
    assert "float32[8@x,8@y]" in text and "float32[8@x,8]" in text
    assert "ShardingTypeError" in text
    # Types printed while tracing, once (the second call does not trace).
    assert text.count("tracing: a is float32[8@x,8@y]") == 1
    assert "tracing: a.sum(axis=0) is float32[8@y]" in text and "result: float32[8@y]" in text
    # Memory kinds used: the stack in host memory, one layer at a time on the device.
    assert "'device', 'pinned_host', 'unpinned_host'" in text
    assert "w: device w[I_x, J]" in text and "on_host: pinned_host L[I, J_x, K]" in text
    # per device: 4 layers of 2x8 float32 on the host, 1 layer on the device
    assert f"all layers {4 * 2 * 8 * 4} bytes in host memory; one layer {2 * 8 * 4} bytes" in text
    assert "memory_space" in text
    # Computing on the host-resident stack: arithmetic runs here, indexing is refused,
    # and the page no longer claims that computing on it fails.
    for op in ("on_host + 1", "jnp.sin(on_host)", "on_host.sum()"):
        assert re.search(re.escape(op) + r" +ran; result in pinned_host", text), op
    assert re.search(
        r"on_host\[1\] +ValueError: memory_space of all inputs passed to `gather`", text
    )
    assert "computing on one outside such a move fails" not in text
    # The prose's memory spaces are the ones the error names: host for the stack.
    assert re.search(r"Got one operand with type: float32<host>\[4,8,8\] and another", text)


def test_sharding_binary_ops_and_surprises(book):
    text = page_text(book, "sharding")
    assert "rows + replicated: float32[8@x,8]" in text
    assert "produces an illegally sharded result: f32[8@x,8@x]" in text
    assert "auto_axes result: float32[8@x,8]" in text and "all-to-all 4 × f32[1,2,2] 64 B 4" in text
    assert "ShardingTypeError: select `which` must be scalar or have the same sharding" in text
    assert "after reshard: float32[16@x]" in text
    # A constraint that does not divide is dropped; device_put refuses the same layout.
    assert "constraint P('d', None) on 17 rows gave: P()" in text
    assert "shard shapes: {(17, 4)}" in text and "device_put: IndivisibleError" in text
    assert "v.at[0:3].set: {'all-gather': 1}" in text and "v.at[i].set: no collective" in text


def test_sharding_timing_glued(book):
    text = page_text(book, "sharding")
    g = glued(book, "sharding")
    assert re.fullmatch(VERDICT, g["shard_vs_single"]) and g["shard_vs_single"] in text
    assert g["shard_iqr"] in {"overlap", "do not overlap"}
    assert f"interquartile ranges that {g['shard_iqr']}" in text
    assert "cannot add compute" not in text
    assert re.search(rf"this machine.s {g['shard_cores']} CPU cores", text)
    assert "Do not read more into that" not in text  # the caveat is two sentences now
