"""The long-context chapter: ring attention equals full attention, the work it measures
per device agrees with an independent count of the causal mask, and the bytes and
thresholds it shows agree with the formulas, computed here from scratch."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import glued, images, page_text

pytestmark = pytest.mark.book

CHAPTER = "long_context"
# The page's problem: batch, sequence, heads, head size; 8 devices on the ring.
B, T, N, H, P_DEV = 2, 256, 2, 16, 8
F32 = 4


def positions(layout: str) -> np.ndarray:
    """Token positions each device holds, (p, 2, T / 2p), built from the layouts'
    definitions (not from jaxguide)."""
    c = T // (2 * P_DEV)
    chunks = np.arange(T).reshape(2 * P_DEV, c)
    if layout == "contiguous":
        return np.stack([chunks[[2 * i, 2 * i + 1]] for i in range(P_DEV)])
    return np.stack([chunks[[i, 2 * P_DEV - 1 - i]] for i in range(P_DEV)])


def work(layout: str) -> np.ndarray:
    """[device, step] -> blocks with at least one visible (query, key) pair."""
    pos = positions(layout)
    out = np.zeros((P_DEV, P_DEV), int)
    for i in range(P_DEV):
        for s in range(P_DEV):
            j = (i - s) % P_DEV
            out[i, s] = sum(
                bool((pos[j, b][None, :] <= pos[i, a][:, None]).any())
                for a in range(2)
                for b in range(2)
            )
    return out


@pytest.fixture(scope="module")
def text(book):
    return page_text(book, CHAPTER)


@pytest.fixture(scope="module")
def g(book):
    return glued(book, CHAPTER)


def test_reference_and_blockwise_equal_full_attention(text, g):
    diffs = re.findall(r"vs the plain formula, max \|diff\| = (\d\.\de-\d\d)", text)
    diffs += re.findall(r"blockwise vs full attention, max \|diff\| = (\d\.\de-\d\d)", text)
    assert len(diffs) == 4 and all(float(d) < 1e-5 for d in diffs), diffs
    # The scores' memory quadruples when T doubles; the NaN trap is shown.
    assert 3.5 < float(g["temp_growth"]) < 4.5
    assert g["scores_128k"] == "64 GiB"  # 131072^2 float32
    c = T // 4
    assert f"a fully masked first block: {B * c * N * H} NaNs in {B * c * N * H} outputs" in text
    assert "jax.nn.softmax of all -inf: [nan nan]" in text


def test_ring_equals_full_attention_values_and_gradients(text, g):
    rows = re.findall(
        r"causal=(True|False) *: max \|diff\| output (\d\.\de-\d\d), gradients (\d\.\de-\d\d)", text
    )
    assert [r[0] for r in rows] == ["False", "True"], rows
    assert all(float(r[1]) < 1e-5 and float(r[2]) < 1e-5 for r in rows), rows
    for layout in ("contiguous", "zigzag"):
        (d,) = re.findall(
            rf"{layout}: equal to full attention, max \|diff\| = (\d\.\de-\d\d)", text
        )
        assert float(d) < 1e-5
    (zg,) = re.findall(
        r"zigzag: gradients equal to full attention's, max \|diff\| = (\d\.\de-\d\d)", text
    )
    assert float(zg) < 1e-5
    assert g["tol"] == "1e-05" and float(g["worst_equal"]) < 1e-5
    # The all-gather alternative is checked too.
    (d,) = re.findall(r"all-gather version vs full attention: max \|diff\| = (\d\.\de-\d\d)", text)
    assert float(d) < 1e-5


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_measured_work_matches_an_independent_count(text, layout):
    expected = work(layout)
    table = text.split(f"{layout}: blocks of 16 x 16 scores, per device and ring step", 1)[1]
    for d in range(P_DEV):
        row = " ".join(str(w) for w in expected[d]) + f" {expected[d].sum()}"
        assert f"device {d}: {row}" in table, (layout, d, row)
    critical = expected.max(axis=0).sum()
    assert f"critical path {critical} blocks; ideal (total / 8) {expected.sum() / P_DEV:g}" in table


def test_balance_numbers(g):
    cont, zz = work("contiguous"), work("zigzag")
    assert g["cp_contiguous"] == cont.max(axis=0).sum() == 4 * P_DEV - 1
    assert g["cp_zigzag"] == zz.max(axis=0).sum() == 2 * P_DEV + 1
    assert g["ideal"] == zz.sum() // P_DEV == 2 * P_DEV + 1
    assert g["total_blocks"] == cont.sum() == zz.sum() == 2 * P_DEV * (2 * P_DEV + 1) // 2
    assert g["zigzag_speedup"] == f"{(4 * P_DEV - 1) / (2 * P_DEV + 1):.2f}"


def test_ring_bytes_against_formula_and_all_gather(text, g):
    block = B * (T // P_DEV) * N * H * F32  # one device's K (or V)
    per_step = 2 * block
    assert g["ring_step_bytes"] == f"{per_step:,}"
    assert g["ring_call_bytes"] == f"{(P_DEV - 1) * per_step:,}"
    spelled = f"f32[{B},{T // P_DEV},{N},{H}]"
    assert text.count(f"collective-permute {spelled} 8 KiB 8") >= 2
    assert "in the loop body: [True, True]" in text
    assert text.count(f"all-gather {spelled} 8 KiB 8") == 2
    assert f"ring, per step: {per_step:,} B measured, {per_step:,} B by the formula" in text
    # Same bytes sent; the all-gather holds the whole sequence, p times one block.
    assert f"ring {(P_DEV - 1) * per_step:,} B {per_step:,} B" in text
    assert f"all-gather {(P_DEV - 1) * per_step:,} B {P_DEV * per_step:,} B" in text
    assert g["gather_ratio"] == P_DEV


def test_overlap_inequality_numbers(text, g):
    c = T // P_DEV
    matmuls = 4 * B * c * c * N * H
    (flops,) = re.findall(r"cost analysis: ([\d,]+) FLOPs; the two matmuls: ([\d,]+)", text)
    assert int(flops[1].replace(",", "")) == matmuls
    assert matmuls <= int(flops[0].replace(",", "")) < 1.15 * matmuls
    v5e, h100 = 1.97e14 / 4.5e10, 9.9e14 / 4.5e11
    assert g["v5e_threshold"] == f"{v5e:,.0f}" and g["h100_threshold"] == f"{h100:,.0f}"
    assert g["v5e_seq"] == f"{8 * v5e:,.0f}" and g["v5e_seq_causal"] == f"{16 * v5e:,.0f}"
    assert f"TPU v5e {v5e:,.0f} {v5e:,.0f} {2 * v5e:,.0f}" in text
    # The 131,072-token program: two f32 blocks (widened on CPU) of 16,384 tokens.
    assert text.count("collective-permute f32[1,16384,8,128] 64 MiB 8") == 2
    assert "collective dtype on this CPU: f32" in text
    c_big = 131072 // 8
    compute = 4 * c_big**2 * 8 * 128 / 1.97e14 * 1e3
    comm = 2 * c_big * 8 * 128 * 2 / 4.5e10 * 1e3
    assert f"compute {compute:.2f} ms, transfer {comm:.2f} ms -> hidden" in text
    assert g["big_tokens"] == f"{c_big:,}"


def test_faq_demonstrations(text, g):
    # The branch-type error the prose explains, with its fix named.
    assert "cond branches must have equal output types" in text
    assert "so the manual axis types do not match" in text
    assert "jax.lax.pcast" in text
    # The fix, run: devices 4 to 7 keep the replicated zero, the others add their value.
    assert "[0. 1. 2. 3. 0. 0. 0. 0.]" in text
    # The wrong gradient without pcast, the right one with it.
    assert "pcast first: True value 46, gradient 23" in text
    assert int(g["wrong_grad"]) != 23
    assert f"pcast first: False value 46, gradient {g['wrong_grad']}" in text
    # Padded keys: the lengths equal an explicit mask; padding gets no weight or
    # gradient, but a NaN in it reaches the output; padded query rows are zeros.
    for line in (
        "lengths vs an explicit mask, max |diff| 0.0e+00",
        "padded values set to 1e6, max |change| 0.0e+00",
        "gradient reaching padded values, max 0.0e+00",
        "padded values set to NaN, output finite False",
        "padded query rows of sequence 0, max |value|: 0.0",
    ):
        assert line in text, line
    assert "async collective-permute (start/done pairs): False" in text
    assert "synchronous collective-permute: True" in text


def test_exercises_and_figure(book, text):
    for p in (2, 4, 8, 16, 32):
        cont, zz = 4 * p - 1, 2 * p + 1
        assert re.search(rf"\b{p} +{cont} +{zz} +{cont / zz:.2f}\b", text), p
    assert "hidden above c = (N_kv / N) C / W = 547 tokens per device" in text
    imgs = images(book, CHAPTER)
    assert len(imgs) >= 2  # the ring schedule and the overlap crossing
    assert all(len(img.get("alt", "")) > 30 for img in imgs)


def test_backward_pass_is_a_reversed_ring(text, g):
    spelled = "f32[1,512,2,64]"  # 4096 positions over 8 devices, 2 heads of 64
    assert text.count(f"collective-permute of {spelled}: pairs {{0,1}},{{1,2}}...") == 2
    assert text.count(f"collective-permute of {spelled}: pairs {{1,0}},{{2,1}}...") == 2
    sizes = dict(
        re.findall(
            r"(forward only|forward \+ backward|\.\.\. with jax\.checkpoint) +([\d.]+ [KMG]iB)",
            text,
        )
    )
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}

    def nbytes(s):
        value, unit = s.split()
        return float(value) * units[unit]

    fwd = nbytes(sizes["forward only"])
    bwd = nbytes(sizes["forward + backward"])
    remat = nbytes(sizes["... with jax.checkpoint"])
    assert remat < bwd and bwd > 4 * fwd
    assert g["bwd_factor"] == f"{bwd / fwd:.0f}"
    assert abs(float(g["remat_cut"]) - bwd / remat) < 0.1
