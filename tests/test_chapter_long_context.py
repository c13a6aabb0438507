"""The long-context chapter: ring attention equals full attention, the work it measures
per device agrees with an independent count of the causal mask, and the bytes and
thresholds it shows agree with the formulas, computed here from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from bookcheck import errors, glued, images

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
def g(book):
    return glued(book, CHAPTER)


def test_reference_and_blockwise_equal_full_attention(g):
    # The plain formula and the blockwise version, causal and not, against
    # jax.nn.dot_product_attention.
    # (Their tolerance, 1e-5, is the claims'.)
    assert len(g["ref_diffs"] + g["blockwise_diffs"]) == 4
    # The scores' memory quadruples when T doubles (the claim); the growth the prose
    # shows is the glued temporaries' ratio. The NaN trap is shown.
    temps = {int(t): b for t, b in g["ref_temps"].items()}
    assert float(g["temp_growth"]) == pytest.approx(temps[8192] / temps[4096], abs=0.05)
    assert g["scores_128k"] == "64 GiB"  # 131072^2 float32
    c = T // 4
    assert g["masked_block_nans"] == [B * c * N * H] * 2


def test_ring_equals_full_attention_values_and_gradients(g):
    # The tolerance, 1e-5, is the claims' (equal_results, layout_diffs, zigzag_grad).
    assert g["equal_results"].keys() == {"False", "True"}
    assert float(g["worst_equal"]) == pytest.approx(
        max(d for pair in g["equal_results"].values() for d in pair), rel=0.05
    )
    diffs = g["layout_diffs"]
    assert diffs.keys() == {"contiguous", "zigzag"}
    # The contiguous output of report's forward program and the one beside the
    # loss in the gradient's program: the same ring, both at float32 rounding
    # of each other.
    assert diffs["contiguous"] == pytest.approx(g["equal_results"]["True"][0], abs=1e-6)
    assert g["tol"] == "1e-05"


def test_one_ring_program_for_every_layout(g):
    # The chunk table and the causal flag are arguments of the ring's program:
    # the three gradient checks (contiguous causal and not, zig-zag causal) ran
    # one compiled gradient, and the two layouts' forward runs one program (the
    # claims count one each): fewer programs than the runs that used them.
    grad_checks = len(g["equal_results"]) + 1  # and the zig-zag gradient
    assert g["ring_grad_programs"] < grad_checks == 3
    assert g["ring_fwd_programs"] < len(g["layout_diffs"]) == 2


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_measured_work_matches_an_independent_count(g, layout):
    assert g["work"][layout] == work(layout).tolist()


def test_balance_numbers(g):
    cont, zz = work("contiguous"), work("zigzag")
    assert g["cp_contiguous"] == cont.max(axis=0).sum() == 4 * P_DEV - 1
    assert g["cp_zigzag"] == zz.max(axis=0).sum() == 2 * P_DEV + 1
    assert g["ideal"] == zz.sum() // P_DEV == 2 * P_DEV + 1
    assert g["total_blocks"] == cont.sum() == zz.sum() == 2 * P_DEV * (2 * P_DEV + 1) // 2
    assert g["zigzag_speedup"] == f"{(4 * P_DEV - 1) / (2 * P_DEV + 1):.2f}"
    # device-steps with nothing to compute: device d is idle at the steps s > d
    idle = P_DEV * (P_DEV - 1) // 2
    assert g["idle_steps"] == (cont == 0).sum() == idle
    assert g["device_steps"] == P_DEV * P_DEV
    assert g["idle_share"] == f"{idle / P_DEV**2:.0%}" == "44%"


def test_ring_bytes_against_formula_and_all_gather(g):
    block = B * (T // P_DEV) * N * H * F32  # one device's K (or V)
    per_step = 2 * block
    assert g["ring_per_step"] == per_step
    assert g["ring_step_bytes"] == f"{per_step:,}"
    assert g["ring_call_bytes"] == f"{(P_DEV - 1) * per_step:,}"
    assert g["ring_kinds"] == [["collective-permute", True]] * 2
    # Same bytes sent; the all-gather holds the whole sequence, p times one block.
    assert g["gather_bytes"] == [(P_DEV - 1) * per_step, P_DEV * per_step, per_step]
    assert g["gather_ratio"] == P_DEV


def test_overlap_inequality_numbers(g):
    # The block's two matmuls (4 B c^2 N H FLOPs, counted by hand in the chapter) are
    # most of what XLA's cost analysis counts for it; the rest is the softmax.
    share = g["matmul_share"]  # glued as the prose shows it, a percentage
    assert share.endswith("%") and 87 <= int(share[:-1]) <= 100, share
    # published figures: one ICI link of a v5e; all 18 NVLinks of an H100, one way
    chips = {"TPU v5e": (1.97e14, 4.5e10), "H100 (NVLink)": (9.89e14, 18 * 2.5e10)}
    v5e, h100 = (f / w for f, w in chips.values())
    assert g["thresholds"] == pytest.approx({"TPU v5e": v5e, "H100 (NVLink)": h100})
    assert g["v5e_threshold"] == f"{v5e:,.0f}" and g["h100_threshold"] == f"{h100:,.0f}"
    assert g["v5e_seq"] == f"{8 * v5e:,.0f}" and g["v5e_seq_causal"] == f"{16 * v5e:,.0f}"
    # the custom_vjp backward step: 5 matmuls of 2 c^2 against 4 blocks sent, so
    # 10 c^2 / C >= 4 c b / W, that is c >= (2 b / 5) C / W, b = 2 in bf16
    assert g["bwd_scale"] == "0.8"
    assert g["bwd_v5e_threshold"] == f"{4 / 5 * v5e:,.0f}"
    assert g["bwd_h100_threshold"] == f"{4 / 5 * h100:,.0f}"
    # The 131,072-token program: two f32 blocks (widened on CPU) of 16,384 tokens.
    c_big = 131072 // 8
    assert g["big_elements"] == 2 * c_big * 8 * 128
    for name, (f, w) in chips.items():
        compute, comm = g["big_times"][name]
        assert compute == pytest.approx(4 * c_big**2 * 8 * 128 / f)
        assert comm == pytest.approx(2 * c_big * 8 * 128 * 2 / w)
        assert comm <= compute
    assert g["big_tokens"] == f"{c_big:,}"


def test_faq_demonstrations(book, g):
    # The branch-type error the prose explains, with its fix named.
    raised = errors(book, CHAPTER)
    assert [e.name for e in raised] == ["TypeError", "ValueError", "ValueError"], raised
    assert "cond branches must have equal output types" in raised[0].message
    assert "so the manual axis types do not match" in raised[0].message
    assert "jax.lax.pcast" in raised[0].message
    # The fix, run: devices 4 to 7 keep the replicated zero, the others add their value.
    assert g["pcast_fixed"] == [float(d) if d < 4 else 0.0 for d in range(8)]
    # The wrong gradient without pcast, the right one with it.
    with_pcast, without = g["pcast_grads"]
    assert isinstance(with_pcast, float) and isinstance(without, float)
    assert g["wrong_grad"] == f"{without:.0f}"
    # Padded keys: five differences against an explicit mask (each 0, its claim).
    assert len(g["lengths_checks"]) == 5


def test_exercises_and_figure(book, g):
    assert g["crit_paths"] == {
        p: {"contiguous": 4 * p - 1, "zigzag": 2 * p + 1} for p in (2, 4, 8, 16, 32)
    }
    c_tok = 65536 // 8
    n_elems, tokens, need = g["gqa"]
    assert n_elems == 2 * c_tok * 2 * 128 and tokens == c_tok
    assert need == pytest.approx(2 / 16 * 1.97e14 / 4.5e10)
    assert g["gqa_threshold"] == f"{need:,.0f}"
    imgs = images(book, CHAPTER)
    assert len(imgs) >= 2  # the ring schedule and the overlap crossing
    assert all(len(img.get("alt", "")) > 30 for img in imgs)


def test_backward_pass_is_a_reversed_ring(g):
    spelled = "f32[1,4096,2,64]"  # 32768 positions over 8 devices, 2 heads of 64
    pairs = sorted(map(tuple, g["bwd_pairs"]))
    assert pairs == [(spelled, "{0,1},{1,2}")] * 2 + [(spelled, "{1,0},{2,1}")] * 2
    assert g["bwd_collectives"] == ["collective-permute"] * 4
    fwd, bwd, remat = g["temps_mid"]
    assert remat < bwd and bwd > 4 * fwd
    assert g["bwd_factor"] == f"{bwd / fwd:.0f}"
    assert g["remat_cut"] == f"{bwd / remat:.1f}"


def test_checkpointed_ring_saves_each_updates_inputs(g):
    """The count the prose states is the one the table of saved arrays (glued row by
    row) has for one chunk's shape, stacked over the loop's steps: the shape built here
    from the cell's sizes (T = 4096 on 8 devices, B = 1, N = 2, H = 64)."""
    t, steps = 4096, P_DEV - 1
    chunk = f"f32[{steps * P_DEV},1,{t // P_DEV // 2},2,64]"
    rows = g["remat_saved_rows"]
    counts = {shape: n for n, shape, source in rows if source == "computed"}
    assert counts[chunk] == g["remat_chunk_arrays"] > 0, (chunk, counts)


def test_custom_vjp_ring(g):
    diffs = g["custom_diffs"]
    assert len(diffs) == 4  # output, dq, dk, dv: below 1e-5, the claim
    assert float(g["custom_worst"]) == pytest.approx(max(diffs), rel=0.05)
    kept = g["kept"]
    assert sorted(kept) == [2048, 4096]
    for t, (kv_all, remat, custom) in kept.items():
        c = t // 8  # positions per device
        assert kv_all == 2 * t * 2 * 64 * F32  # K and V, all T positions, by hand
        assert remat >= kv_all  # O(T) per device
        # q, k, v, out of this device and its log-sum-exp: O(T / p)
        assert custom == 4 * c * 2 * 64 * F32 + c * 2 * F32
    assert kept[4096][1] == pytest.approx(2 * kept[2048][1], rel=0.1)
    block = 4096 * 2 * 64 * F32  # one device's K at 32,768 positions
    # loop: K, V forward, K, V, dK, dV backward; after it dK, dV before the
    # last block (they travel one step behind K, V) and again home
    assert g["custom_bytes"] == [(2 + 4) * block, (2 + 2) * block]
    # one flag per permute in a loop body: the six blocks of the loop bytes
    assert len(g["waits"]["custom_vjp"]) == g["custom_bytes"][0] // block
    # the forward passes alone: the custom ring's (T/p)^2 tile against the
    # autodiff ring's (T/2p)^2 half-chunk pairs, a quarter of the area
    custom_fwd, ring_fwd = g["fwd_temps"]
    assert ring_fwd == g["temps_mid"][0]
    assert custom_fwd / ring_fwd == pytest.approx((4096 / 2048) ** 2, rel=0.25)
    # at 4,096 positions per device the custom rule's whole-block scores cost more
    # temporary memory than the checkpointed ring; one block's scores and their
    # gradient alone are 2 x 4096^2 float32 = 128 MiB
    custom_temp, remat_temp = g["custom_temp"]
    assert custom_temp > remat_temp > 2 * 4096**2 * F32
    # the checkpointed gradient compared here is the backward-pass section's
    # program, at the same 32,768 positions
    assert remat_temp == g["temps_mid"][2]
    assert g["block_scores_long"] == "128 MiB"


def test_fused_call_per_ring_step(g):
    # dot_product_attention(return_residual=True) per block, merged by lse: its
    # difference from full attention and its blocks are the claims' (fused_diff,
    # fused_work), and so is the residual's zero gradient (lse_no_grad).
    # The residual carries no gradient (stop_gradient in the installed source):
    # the fused ring is a forward pass, and the page says so.
    import inspect

    from jax._src.nn import functions

    source = inspect.getsource(functions._dot_product_attention_core)
    assert "stop_gradient(lse_residual)" in source
    # the merge itself, in numpy: two blocks' normalised outputs and lse give
    # the softmax over both
    rng = np.random.default_rng(0)
    s, v = rng.normal(size=(2, 8)), rng.normal(size=(2, 8, 3))
    lse = np.log(np.exp(s).sum(axis=1))
    o = np.einsum("bk,bkh->bh", np.exp(s - lse[:, None]), v)
    m = lse.max()
    merged = (o * np.exp(lse - m)[:, None]).sum(0) / np.exp(lse - m).sum()
    whole = np.exp(s.ravel()) / np.exp(s.ravel()).sum()
    assert merged == pytest.approx(whole @ v.reshape(16, 3))


def test_softmax_infinities_and_where_gradient(g):
    # d softmax(x)_0 / dx with x = [1, 1, 100], the 100 masked: s0 (delta - s)
    assert g["where_grad"] == pytest.approx([0.25, -0.25, 0.0])


def test_mask_faq_demonstrations(g):
    # local_window_size alone: changes the output, equals a band mask, width 1 gives V
    diffs = list(g["window_diffs"].values())
    assert len(diffs) == 3 and all(isinstance(d, float) for d in diffs)
    # softmax / log_softmax with where=, the thread's case, computed here in numpy
    x = np.linspace(-1.0, 1.0, 4)
    keep = np.array([True, False, True, True])
    logp = np.where(keep, x - np.log(np.exp(x[keep]).sum()), -np.inf)
    # glued as text: its -inf and nan are not Python literals
    masked = g["masked_softmax"]
    if isinstance(masked, str):
        masked = eval(masked, {"__builtins__": {}}, {"nan": np.nan, "inf": np.inf})
    assert masked["logp"] == pytest.approx(logp.tolist(), rel=1e-5)
    assert g["softmax_initial"] is False
    # entropy of the masked softmax: dH/dx_i = -p_i (log2 p_i + H) on kept entries
    logits = np.array([1.0, 2.0, 3.0, 4.0])
    prob = np.where(keep, np.exp(logits), 0.0)
    prob /= prob.sum()
    ent = -(prob[keep] * np.log2(prob[keep])).sum()
    expected = np.where(keep, -prob * (np.log2(np.where(keep, prob, 1.0)) + ent), 0.0)
    grads = masked["grads"]
    assert grads["False, False"] == pytest.approx(expected.tolist(), abs=1e-5)
    assert grads["True, True"] == pytest.approx(expected.tolist(), abs=1e-5)
    assert any(np.isnan(grads["True, False"]))


def test_shard_map_faq_demonstrations(book, g):
    # cond on a per-device flag with constant branches: each device its branch
    assert g["cond_flags"] == [0, 1] * 4
    raised = errors(book, CHAPTER)
    # psum inside custom_vjp: the pass-through backward rule is refused, the
    # pcast one gives the gradient of a sum, 1 for every input
    assert "Custom VJP bwd rule must produce an output with the same type" in raised[1].message
    assert g["psum_grads"] == {"custom_vjp": [1.0] * 8, "autodiff": [1.0] * 8}
    # grouped-query attention: nnx and jax.nn equal repeated key-value heads
    assert g["gqa_diffs"] == [0.0, 0.0]
    # the Pallas GPU kernel refuses a length that is not a multiple of its block
    assert "q_seq_len=192 must be a multiple of block_q=128" in raised[2].message


def test_tpu_flash_attention_layout_and_blocks(g):
    """jax-ml/jax#18590: lowered for TPU on the CPU, the Pallas TPU flash_attention
    refuses 1000 positions (not a multiple of its 128 block), reads (B, S, H, D) as 8
    positions, and lowers (B, H, S, D) with 1024 positions to a Mosaic call."""
    shapes = g["tpu_flash_shapes"]
    assert shapes["(B, H, S, D), S = 1000"] == (
        "ValueError: kv_seq_len=1000 should be divisible by block_k_major=128"
    )
    assert shapes["(B, S, H, D), S = 1000"] == (
        "ValueError: block_q=128 should be smaller or equal to q_seq_len=8"
    )


def test_checkpointed_ring_mask_built_inside(g):
    """Masks passed into jax.checkpoint are saved at every step: (T/2p)^2 bools per
    block. Built inside from the chunk numbers, they are not; what remains is the
    updates' inputs, K and V half of it."""
    passed, inside = g["long_saved"]
    t, steps = 32768, P_DEV  # 7 loop steps and the last one
    half = t // P_DEV // 2
    # 4 blocks a step, each a (c/2)^2 bool mask (the triangle or all true)
    masks = 4 * steps * half * half
    assert passed - inside >= 0.9 * masks
    kv = 2 * 4 * steps * half * 2 * 64 * F32  # K and V chunk of each update
    assert g["kv_saved_share"] == f"{kv / inside:.0%}"
    assert 0.45 < kv / inside < 0.55


def test_custom_vjp_ring_sends_bf16(g):
    # forward K, V; backward K, V, dK, dV; dK, dV before the last block and
    # home: 2 + 4 + 2 + 2 ppermutes
    assert g["custom_sent_dtypes"] == ["bf16"] * (2 + 4 + 2 + 2)


def test_autodiff_through_fused_ring_is_wrong(g):
    # the prose's two numbers are the printed dq and dk differences
    d = g["fused_grad_diffs"]
    assert sorted(d) == ["dk", "dq", "dv"]
    assert g["fused_dq_diff"] == f"{d['dq']:.2f}"
    assert g["fused_dk_diff"] == f"{d['dk']:.2f}"


def test_softmax_precision_and_flax_flag(g):
    # bf16 keeps 8 bits of mantissa: relative error near 2^-8 of the largest
    # probability; float32 near 2^-24
    err = g["softmax_err"]
    assert 2**-12 < err["bfloat16"][0] < 2**-5
    assert err["float32"][0] < 2**-18
    ratio = err["bfloat16"][0] / err["float32"][0]
    assert g["softmax_err_ratio"] == f"{round(ratio, -3):,.0f}"
    assert g["softmax_err_bf16"] == f"{err['bfloat16'][0]:.1e}"
    assert g["mha_fp32_softmax"] == {
        "False": ["bfloat16", "bfloat16"],
        "True": ["float32", "bfloat16"],
    }
    import flax

    assert g["flax_version"] == flax.__version__


# Sentences taken out of the page (review r48), with why.
RETIRED = {
    "The backward ring hides its transfer at slightly fewer tokens per device than "
    "the forward ring": "false for the old ring_backward, whose dK, dV ppermute "
    "waited on the step's block_grads (r48); the thresholds now describe the reordered ring",
    "a size at which the roofline below says the transfer hides": "true only for "
    "an H100 in bf16; the program is float32 (r48)",
    "float32 is a thousand times closer": "the printed errors differ by ~57,000x (r48)",
    "their unstacked twins are the last step's": "18 arrays against 16 stacked (r48)",
    "8 bits of mantissa": "bfloat16 stores 7 (r48)",
}
