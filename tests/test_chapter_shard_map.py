"""The shard_map chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import pytest

from bookcheck import glued, images, page_text

pytestmark = pytest.mark.book


def test_shard_map_basics(book):
    text = page_text(book, "shard_map")
    assert (
        "inside, while tracing: block shape (2,)" in text
        and "block type float32[2]{V:x}" in text
        and "outside: global shape (16,)" in text
    )
    for d in range(8):
        assert f"device {d} holds [{2 * d}. {2 * d + 1}.]" in text
    assert "while tracing: float32[]{V:x} -> float32[]" in text  # psum removes the variance
    assert "psum: 120.0" in text  # sum(range(16)), replicated
    assert "does not match the specs of the input" in text  # Explicit-mesh trap
    assert "could not infer replication" in text  # check_vma
    # The error names the reader's function, not an internal wrapper.
    assert "applied to the function 'local_sum'" in text and "_rem_singleton" not in text
    # ... and without the check, one device's partial sum (0 + 1) comes back silently.
    assert "check_vma=False returns 1.0; the total is 120.0" in text
    assert len(images(book, "shard_map")) >= 2  # W's sharding + the ring picture
    assert all(len(img.get("alt", "")) > 30 for img in images(book, "shard_map")), (
        "every figure has a real alt text"
    )


def test_shard_map_three_ways(book):
    text = page_text(book, "shard_map")
    g = glued(book, "shard_map")
    results = re.findall(
        r"(automatic|semi-automatic|manual) +equal to the reference: max \|diff\| = (\S+)", text
    )
    assert [r[0] for r in results] == ["automatic", "semi-automatic", "manual"], results
    assert all(float(r[1]) < 1e-5 for r in results), results
    # Notation with the prose's letters.
    assert "W[K_x, N]" in text and "X[B, K_x]" in text and "W[I_x, J]" not in text
    # The manual program: one all-reduce of the 32x16 float32 partial products.
    assert g["layer_psum_bytes"] == 32 * 16 * 4
    # All three compiled programs: exactly that one all-reduce.
    for name in ("automatic", "semi-automatic", "manual"):
        row = rf"--- {name}: 2048 bytes per device collective operands \(per device\) bytes group all-reduce f32\[32,16\] 2 KiB 8 "
        assert re.search(row, text), name


def test_shard_map_ring(book):
    text = page_text(book, "shard_map")
    g = glued(book, "shard_map")
    p, n = 8, 64
    chunked, naive = 2 * (p - 1) * (n // p) * 4, (p - 1) * n * 4
    assert f"ring_allreduce {2 * (p - 1)} × collective-permute {chunked}" in text
    assert f"naive_ring {p - 1} × collective-permute {naive}" in text
    assert f"with_psum 1 × all-reduce {n * 4}" in text
    # The prose's numbers are the measured ones, and agree with the hand count.
    assert (g["ring_chunked"], g["ring_naive"], g["ring_psum"]) == (chunked, naive, n * 4)
    assert g["ring_factor"] == naive // chunked == 4
    assert g["ring_per_vec"] == f"{2 * (p - 1) / p:.2f}"
    assert "448 bytes" not in open_source("shard_map")  # no typed byte counts


def open_source(name):
    from pathlib import Path

    return (Path(__file__).parents[1] / "book" / f"{name}.md").read_text()


def test_shard_map_primitives(book):
    text = page_text(book, "shard_map")
    # Each jax.lax collective becomes one HLO collective; 8 float32 per device go in.
    rows = {
        "psum": ("all-reduce", 32, 32),
        "all_gather": ("all-gather", 32, 256),
        "psum_scatter": ("reduce-scatter", 32, 4),
        "ppermute": ("collective-permute", 32, 32),
        "all_to_all": ("all-to-all", 32, 32),
    }
    for name, (kind, inb, outb) in rows.items():
        assert re.search(rf"{name} +{kind} +{inb} B +{outb} B", text), name
    g = glued(book, "shard_map")
    assert (g["prim_in"], g["prim_gather"], g["prim_scatter"]) == (8 * 4, 64 * 4, 4)


def test_shard_map_meshes(book):
    text = page_text(book, "shard_map")
    # Inferred in_specs on an Explicit mesh: a plain array is replicated, 8 copies come back.
    assert "plain input: float32[16] -> (128,)" in text
    assert "placed input: float32[16@x] -> (16,)" in text
    assert "ValueError: Received incompatible devices for jitted computation" in text
    assert "0x7f" not in text  # no object addresses in outputs


def test_shard_map_two_axes(book):
    text = page_text(book, "shard_map")
    assert "block (2, 2) float32[2,2]{V:(x,y)}" in text
    assert "psum y (2, 2) float32[2,2]{V:x}" in text
    assert "psum (x,y) (2, 2) float32[2,2]" in text
    # One all-reduce within rows of the mesh (groups of 2), one over all 8 devices.
    assert re.search(r"all-reduce f32\[2,2\] 16 B 2 all-reduce f32\[2,2\] 16 B 8", text)
    # The nested-pmap replacement: one block per device, both mesh axes kept.
    assert "block shape while tracing: (1, 1, 3)" in text
    assert "(4, 2, 3) sums to 1.0000" in text


def test_shard_map_partial_manual(book):
    """Manual over `data` only: the block keeps the column axis, and what the compiler
    made of the sum depends on `model`'s axis type (an independent sum of each row)."""
    text = page_text(book, "shard_map")
    sums = " ".join(f"{float(v):g}." for v in range(6, 119, 16))  # rows of arange(32)
    assert "block inside: float32[2,4@model]{V:data}" in text  # model Explicit
    assert "block inside: float32[2,4]{V:data}" in text  # model Auto
    assert text.count(f"result: float32[8@data] [ {sums}]") == 2, sums
    assert "all-gather f32[2,2] 16 B 2" in text  # Explicit: gather the halves
    assert "all-reduce f32[2] 8 B 2" in text  # Auto: partial sums, then add
    assert "NameError: Found an unbound axis name: model" in text
    # The shape of program (an unused mesh axis, lax.map inside) runs.
    assert "block inside: float32[1,5,4]{V:data}" in text
    assert "result: float32[4@data]" in text


def test_shard_map_vma(book):
    text = page_text(book, "shard_map")
    assert "scan body function carry input and carry output must have equal types" in text
    assert "after pcast: float32[2]{V:x}" in text
    assert "[ 1. 2. 3. 4. 5. 6. 7. 8. 9. 10. 11. 12. 13. 14. 15. 16.] collectives: {}" in text
    assert "psum: 8, psum of that: 64" in text


def test_shard_map_collective_matmul(book):
    text = page_text(book, "shard_map")
    block = 8 * 32 * 4  # a device's rows of X, float32
    assert re.search(rf"jit \(automatic\) +1 × all-gather +operands: +{block} B", text)
    assert re.search(rf"gather_then_multiply +1 × all-gather +operands: +{block} B", text)
    assert re.search(rf"collective_matmul +7 × collective-permute +operands: +{7 * block} B", text)
    # The block size in the prose is the measured one.
    assert glued(book, "shard_map")["cm_block"] == block
    assert "1024 bytes" not in open_source("shard_map")


def test_shard_map_groups(book):
    text = page_text(book, "shard_map")
    # A collective over one axis of the 4 x 2 mesh sums within lines of its device grid.
    assert "psum over 'y' sums within [[0, 1], [2, 3], [4, 5], [6, 7]]" in text
    assert "psum over 'x' sums within [[0, 2, 4, 6], [1, 3, 5, 7]]" in text
    assert "psum(..., axis_index_groups=...) under shard_map: NotImplementedError" in text


def test_shard_map_random(book):
    text = page_text(book, "shard_map")
    # A replicated key with a varying parameter is refused, and the error names pcast.
    assert "jax.random.beta requires all arguments to have matching type" in text
    assert "jax.lax.pcast" in text
    assert "key after fold_in: key<fry>[]{V:x}" in text

    def draws(name):
        m = re.search(rf"{name} \[([^\]]+)\]", text)
        assert m, name
        return [float(v) for v in m.group(1).split()]

    same, own = draws("draw_same_key"), draws("draw_own_key")
    silent = draws("uniform_shared_key")
    assert len(same) == len(own) == len(silent) == 16
    assert all(0 < v < 1 for v in same + own)  # Beta draws
    # pcast copies one key to every device: the 8 pairs of draws repeat; fold_in does not.
    assert all(same[2 * d : 2 * d + 2] == same[:2] for d in range(8))
    # uniform with the replicated key: no error, and the same draws on every device.
    assert all(silent[2 * d : 2 * d + 2] == silent[:2] for d in range(8))
    assert len({tuple(own[2 * d : 2 * d + 2]) for d in range(8)}) == 8
