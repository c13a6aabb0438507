"""The shard_map chapter: the values it glued agree with independent computations
(bytes, sums and types worked out here by hand), and the errors its prose names were
raised."""

from __future__ import annotations

import numpy as np
import pytest

from bookcheck import cell_output, glued, images, page_text

pytestmark = pytest.mark.book

CHAPTER = "shard_map"
P_DEV, F32 = 8, 4


@pytest.fixture(scope="module")
def g(book):
    return glued(book, CHAPTER)


@pytest.fixture(scope="module")
def text(book):
    return page_text(book, CHAPTER)


def test_explicit_and_auto_meshes(book, g, text):
    # Inferred in_specs on an Explicit mesh: a plain array is replicated, 8 copies of
    # the 16 numbers come back; a placed one is split.
    assert (g["inferred_plain"], g["inferred_placed"]) == (P_DEV * 16, 16)
    out = cell_output(book, CHAPTER, 'explicit_mesh = jax.make_mesh((8,), ("x",))')
    assert "does not match the specs of the input" in out, out
    # An input committed to one device is refused (the cell catches the ValueError).
    assert g["committed_refusal"] == "Received incompatible devices for jitted computation"
    assert "0x7f" not in text  # no object addresses in outputs


def test_local_and_global(book, g, text):
    assert g["block_type"] == f"float32[{16 // P_DEV}]{{V:x}}"
    # jax.debug.print's lines, the lesson's own printing (no glued value): what each held.
    for d in range(P_DEV):
        assert f"device {d} holds [{2 * d}. {2 * d + 1}.]" in text
    assert len(images(book, CHAPTER)) >= 1  # the ring picture (W is printed as text)
    assert all(len(img.get("alt", "")) > 30 for img in images(book, CHAPTER))


def test_psum_and_the_replication_check(book, g):
    blocks = np.arange(16.0).reshape(P_DEV, 2)
    assert g["partial_sums"] == blocks.sum(1).tolist()
    assert g["psum_total"] == blocks.sum()
    out = cell_output(book, CHAPTER, "def local_sum(b):")
    assert "could not infer replication" in out, out
    # The error names the reader's function, not an internal wrapper.
    assert "applied to the function 'local_sum'" in out and "_rem_singleton" not in out
    # Without the check: device 0's partial sum, 0 + 1, came back silently.
    assert g["unchecked"] == blocks[0].sum() == 1.0


def test_primitives(g):
    per_dev = 8 * F32  # 64 float32 over 8 devices
    assert g["prim_table"] == {
        "psum": ["all-reduce", per_dev, per_dev],
        "all_gather": ["all-gather", per_dev, P_DEV * per_dev],
        "psum_scatter": ["reduce-scatter", per_dev, per_dev // P_DEV],
        "ppermute": ["collective-permute", per_dev, per_dev],
        "all_to_all": ["all-to-all", per_dev, per_dev],
    }
    assert (g["prim_in"], g["prim_gather"], g["prim_scatter"]) == (
        per_dev,
        P_DEV * per_dev,
        per_dev // P_DEV,
    )


def test_two_axes(g):
    block = 2 * 2 * F32  # an (8, 4) grid on a 4 x 2 mesh
    assert g["groups_2d"] == [["all-reduce", block, 2], ["all-reduce", block, 8]]
    ids = np.arange(8).reshape(4, 2)
    assert g["groups"] == {"y": ids.tolist(), "x": ids.T.tolist()}
    # The nested-pmap replacement: one row of 3 per device, both mesh axes kept.
    assert g["nested_sum"] == "1.0000"


def test_partial_manual(book, g):
    """Manual over `data` only: the block keeps the column axis, and what the compiler
    made of the sum depends on `model`'s axis type."""
    rows = np.arange(32.0).reshape(8, 4).sum(1).tolist()
    assert g["partial_results"] == {
        "explicit": ["float32[8@data]", rows],
        "auto": ["float32[8@data]", rows],
    }
    half, row_pair = 2 * 2 * F32, 2 * F32
    assert g["partial_collectives"] == {
        "explicit": [["all-gather", half, 2]],
        "auto": [["all-reduce", row_pair, 2]],
        "identity": [["all-gather", half, 2]],
    }
    out = cell_output(book, CHAPTER, 'in_specs=P("data", "model"),')
    assert "ValueError" in out and "manual" in out, out
    out = cell_output(book, CHAPTER, "(rows @ weights).sum(), block),")
    assert "NotImplementedError" in out and "Closing over inputs to shard_map" in out, out
    # The shape of program (an unused mesh axis, lax.map inside) runs.
    assert g["mapped"] == ["float32[1,5,4]{V:data}", "float32[4@data]", [30.0] * 4]


def test_vma(book, g):
    out = cell_output(book, CHAPTER, "def swap_three_times(mine, shared):")
    assert "scan body function carry input and carry output must have equal types" in out
    assert g["swap"] == [(np.arange(16.0) + 1).tolist(), {}]
    # A second psum adds the 8 copies, whatever check_vma says.
    assert g["psum_twice"] == {"True": [8.0, 64.0], "False": [8.0, 64.0]}


def test_random(book, g):
    out = cell_output(book, CHAPTER, "def draw(key, a):")
    assert "jax.random.beta requires all arguments to have matching type" in out, out
    assert "jax.lax.pcast" in out
    # pcast copies one key to every device: one pair of draws, 8 times; fold_in: 8 pairs.
    assert g["distinct_pairs"] == {
        "draw_same_key": 1,
        "draw_own_key": P_DEV,
        "uniform_shared_key": 1,
    }


def test_gradients(g):
    """Each collective's transpose, and FSDP's two collectives with their bytes."""
    assert g["transposes"] == {
        "psum": [["all-reduce"], ["none"]],
        "pcast": [["none"], ["all-reduce"]],
        "all_gather": [["all-gather"], ["reduce-scatter"]],
        "psum_scatter": [["reduce-scatter"], ["all-gather"]],
        "ppermute": [["collective-permute"], ["collective-permute"]],
        "all_to_all": [["all-to-all"], ["all-to-all"]],
    }
    k, n = 64, 16  # W, rows split over the 8 devices
    assert g["fsdp_collectives"] == [
        ["all-gather", [[k // P_DEV, n]], k // P_DEV * n * F32, P_DEV],
        ["reduce-scatter", [[k, n]], k * n * F32, P_DEV],
    ]
    assert (g["fsdp_gather_bytes"], g["fsdp_scatter_bytes"]) == (
        k // P_DEV * n * F32,
        k * n * F32,
    )
    assert g["fsdp_spec"] == "P('x', None)"
    # The same gradient by jit with the same layouts: an all-reduce, not a scatter.
    assert g["fsdp_jit_kinds"] == "all-gather and all-reduce"
    # check_vma=False's extra all-reduce backward (1 against 2) is the build's claim.


def test_three_ways(g, text):
    assert list(g["layer_diffs"]) == ["automatic", "semi-automatic", "manual"]
    # Notation with the prose's letters.
    assert "W[K_x, N]" in text and "X[B, K_x]" in text and "W[I_x, J]" not in text
    # All three: one all-reduce of the 32 x 16 float32 partial products, over 8.
    one = [["all-reduce", [[32, 16]], 32 * 16 * F32, P_DEV]]
    assert g["layer_collectives"] == {
        "automatic": one,
        "semi-automatic": one,
        "manual": one,
    }
    assert g["layer_psum_bytes"] == 32 * 16 * F32


def test_collective_matmul(g):
    block = 64 // P_DEV * 32 * F32  # a device's rows of X
    assert g["cm_programs"] == {
        "jit (automatic)": [{"all-gather": 1}, block],
        "gather_then_multiply": [{"all-gather": 1}, block],
        "collective_matmul": [{"collective-permute": P_DEV - 1}, (P_DEV - 1) * block],
    }
    assert g["cm_block"] == block
    assert "1024 bytes" not in open_source(CHAPTER)


def test_ring(g):
    p, n = P_DEV, 64
    chunked, naive = 2 * (p - 1) * (n // p) * F32, (p - 1) * n * F32
    assert (g["ring_chunked"], g["ring_naive"], g["ring_psum"]) == (chunked, naive, n * F32)
    assert g["ring_factor"] == naive // chunked == 4
    assert g["ring_per_vec"] == f"{2 * (p - 1) / p:.2f}"
    assert g["ring_counts"] == {
        "ring_allreduce": {"collective-permute": 2 * (p - 1)},
        "naive_ring": {"collective-permute": p - 1},
        "with_psum": {"all-reduce": 1},
    }
    assert "448 bytes" not in open_source(CHAPTER)  # no typed byte counts


def open_source(name):
    from pathlib import Path

    return (Path(__file__).parents[1] / "book" / f"{name}.md").read_text()


def test_old_errors_non_arrays_and_vmap(book):
    g = glued(book, "shard_map")
    specs = g["vmap_specs"]
    totals = [sum(range(16 * r, 16 * r + 16)) for r in range(4)]
    assert specs["{}"] == ("P()", totals)
    assert specs["{'spmd_axis_name': 'b'}"] == ("P('b',)", totals)


def test_inspect_inside(g):
    # Inside the body the block is one array on every device; the split shows outside.
    assert g["inspect_inside"] == "P()"
    assert g["inspect_outside"] == "P('x',)"


def test_mesh_cache(g):
    # Two meshes of 4 devices each, called left, right, left, right: one compilation
    # per device set either way; the abstract mesh traces the body once.
    device_sets = 2
    # [traces, compilations, lowerings]: the abstract mesh lowers once too.
    assert g["mesh_cache"] == {
        "mesh as static argument": [device_sets, device_sets, device_sets],
        "abstract mesh": [1, device_sets, 1],
    }
    assert (g["mesh_abstract_traces"], g["mesh_compiles"]) == (1, device_sets)


def test_choice_and_closure(g):
    # 8 numbers vmapped over the 8-device axis; a closure under spmd_axis_name gets
    # P_DEV times too many back.
    n = P_DEV
    assert g["closure_shapes"] == {
        "as_argument {'spmd_axis_name': 'x'}": [n],
        "closed_over {}": [n],
        "closed_over {'spmd_axis_name': 'x'}": [n * P_DEV],
    }
    assert g["closure_wrong"] == n * P_DEV


def test_pmax_and_nested_vmap(g):
    # pmax under the check (jax-ml/jax#20335): the largest of 0..15, replicated.
    assert int(g["pmax_top"]) == max(range(16)) == 15
    # jax-ml/jax#23476: row r of a 2 x 4 block of ones gets r added.
    rows = [[1.0 + r] * 4 for r in range(2)]
    nested = g["nested_vmap"]
    assert nested["{}"] == rows
    assert nested["{'spmd_axis_name': 'b'}"].startswith("ValueError: ")
    # The workaround: one shard_map over both axes, the same rows, split over both.
    assert g["both_axes"] == [rows, "P('b', 'x')"]


def test_collectives_need_shard_map(book, g):
    # psum under a plain jit, with in_shardings and out_shardings on the mesh: the
    # axis name is unbound, and a current mesh (jax.set_mesh) does not bind it.
    out = cell_output(book, CHAPTER, "def psum_jit(v):")
    assert "NameError" in out and "unbound axis name: x" in out, out
    # The whole-array sum under jit and the psum under shard_map: sum(range(8)) both
    # ways, each through one all-reduce.
    total = float(np.arange(8.0).sum())
    assert g["jit_or_shard_map"] == {
        "jit, v.sum()": [total, {"all-reduce": 1}],
        "shard_map, psum": [total, {"all-reduce": 1}],
    }
    assert g["jit_sum_allreduces"] == 1
    # vmap with axis_name binds a name psum can use: 0 + 1 + 2 + 3 per entry.
    assert g["vmap_psum"] == [float(sum(range(4)))] * 4


def test_collective_sharp_edges(g):
    # Negative axes: all_gather normalises; psum_scatter and all_to_all fail in
    # lowering.
    assert g["negative_axes"] == {
        "all_gather(axis=-1)": "runs, as axis=1",
        "psum_scatter(scatter_dimension=-1)": "ValueError",
        "all_to_all(split_axis=-1)": "MLIRError",
    }
    # (the claim also checks that psum_scatter's error asks for a "non-negative" one)


def test_ppermute_cases_once_broken(g):
    # jax#1703 (a zip as perm), #3757 (the identity) and #4348 (under vmap, round
    # the ring of the eight devices) and #8688 (vmap of grad of a swap).
    x = [float(i) for i in range(1, 9)]
    rows = [[2.0 * i, 2.0 * i + 1] for i in range(8)]
    assert g["permuted"] == {
        "#1703, a zip": [x[1], x[0], *x[2:]],  # pairs (0, 1), (1, 0), (i, i)
        "#3757, the identity": x,
        "#4348, under vmap": [rows[(i - 1) % 8] for i in range(8)],  # from the left
        "#8688, vmap(grad)": [1.0, 1.0],  # d(swap)/da: each value lands once
    }


def test_debug_print_gathers_under_jit(g, text):
    """jax-ml/jax#25842: a jax.debug.print of a split array makes the jitted program
    gather it onto one device; inside shard_map it prints blocks, with no collective."""
    assert g["print_cost"] == {
        "no print": {},
        "jax.debug.print": {"all-gather": 1},
        "print in shard_map": {},
    }
    # XLA's warning: the 8-device split moved to one device.
    assert g["print_moved_line"].startswith("[SPMD] Involuntary full remat")
    assert g["print_moved_line"].endswith(
        f"{{devices=[{P_DEV}]<=[{P_DEV}]}} to {{maximal device=0}}"
    )
    # The print ran once, with the whole array.
    assert "printed sees [0. 1. 2. 3. 4. 5. 6. 7.]" in text


def test_remat_tp_and_two_axis_all_to_all(g):
    # Two FSDP layers: one forward gather each; the remat policy re-gathers only
    # the second layer's W (the first layer's weight gradient needs its input only).
    layers = 2
    assert g["remat_jaxpr"] == [layers, layers + 1]
    assert g["remat_jaxpr_on"] == layers + 1
    # Without the policy each layer's gathered W is a residual; with it none is.
    assert g["remat_saved_gathered"] == layers
    assert g["remat_compiled_words"].startswith(
        f"{layers} all-gathers and {layers} reduce-scatters, "
    )
    # Column-then-row TP: one all-reduce of the (batch 32, width 64) output.
    batch, width = 32, 64  # x_in's rows, W2's columns
    assert g["tp_collectives"] == [["all-reduce", [[batch, width]]]]
    # jax#19663: all_to_all over ("x", "y") is one all-to-all over every device.
    assert g["a2a_2d"] == [True, [["all-to-all", P_DEV]]]
    # jax#27673: a list of two halves, each device's (1, 10) rows stacked.
    assert g["split_list"] == [[P_DEV, 10]] * 2
    assert g["split_rows"] == P_DEV
