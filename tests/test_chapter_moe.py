"""The mixture-of-experts chapter: the expert-parallel layer equals the dense reference,
the counts it prints agree with an independent routing in NumPy, and the bytes, FLOPs
and roofline numbers agree with their formulas."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from bookcheck import glued, images, page_text

pytestmark = pytest.mark.book

E, K, D, F = 16, 2, 64, 128
N_DEV, TOKENS = 8, 1024
LOCAL = TOKENS // N_DEV
CF = 1.25


def cap(tokens, experts, k, factor):
    return math.ceil(factor * k * tokens / experts - 1e-9)


C = cap(LOCAL, E, K, CF)


def numpy_drops(logits: np.ndarray, k: int, capacity: int) -> int:
    """Dropped choices of one group, by loops: top-k, then queues filled rank by rank."""
    order = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    filled = np.zeros(logits.shape[1], dtype=int)
    dropped = 0
    for c in range(k):
        for t in range(logits.shape[0]):
            e = order[t, c]
            dropped += filled[e] >= capacity
            filled[e] += 1
    return int(dropped)


@pytest.fixture(scope="module")
def data():
    """The chapter's router and tokens, made from the same keys."""
    import jax

    k_router, _, _ = jax.random.split(jax.random.key(0), 3)
    router = np.asarray(jax.random.normal(k_router, (D, E))) / np.sqrt(D)
    x = np.asarray(jax.random.normal(jax.random.key(1), (TOKENS, D)))
    return router, x


def test_parameters_and_capacity(book):
    g = glued(book, "moe")
    total = D * E + E * 2 * D * F
    active = D * E + K * 2 * D * F
    assert (g["total"], g["active"]) == (f"{total:,}", f"{active:,}")
    assert g["ratio"] == f"{total / active:.1f}"
    assert g["cap"] == str(C) == "20" and g["local"] == str(LOCAL)


def test_drop_table_agrees_with_a_numpy_router(book, data):
    router, x = data
    text = page_text(book, "moe")
    logits = (x @ router).reshape(N_DEV, LOCAL, E)
    for factor in (1.0, 1.25, 1.5, 2.0):
        capacity = cap(LOCAL, E, K, factor)
        n = sum(numpy_drops(group, K, capacity) for group in logits)
        row = f"{factor:.2f} {capacity} {n} ({n / (TOKENS * K):.1%})"
        assert row in text, row
    n125 = sum(numpy_drops(group, K, C) for group in logits)
    assert f"dropped choices: {n125} (psum over devices), {n125} in the reference" in text
    assert glued(book, "moe")["dropped_ep"] == str(n125)
    # the first all-to-all's pieces: 2 experts x C slots each, for 8 x 8 device pairs
    slots = N_DEV * N_DEV * (E // N_DEV) * C
    kept = TOKENS * K - n125
    assert f"{kept:,} tokens in {slots:,} slots sent: {kept / slots:.0%} full" in text
    assert glued(book, "moe")["fill"] == f"{kept / slots:.0%}"


def test_small_routing_example(book):
    text = page_text(book, "moe")
    # token 2's first choice (expert 0) comes third in a queue of two slots
    assert "2 0 0 0.90 2 False" in text
    assert "dropped: 6" in text
    assert "d(experts)/d(logits) is zero: True" in text
    assert "NonConcreteBooleanIndexError" in text


def test_expert_parallel_equals_the_reference(book):
    text = page_text(book, "moe")
    g = glued(book, "moe")
    diffs = dict(re.findall(r"(output|d/dx|d/drouter|d/dw_in|d/dw_out) +(\d\.\de-\d\d)", text))
    assert set(diffs) == {"output", "d/dx", "d/drouter", "d/dw_in", "d/dw_out"}
    assert all(float(v) < 1e-5 for v in diffs.values()), diffs
    assert float(g["ep_worst"]) == pytest.approx(max(map(float, diffs.values())), rel=0.5)
    assert float(g["ragged_diff"]) < 1e-5
    assert "max |ragged - reference without drops|" in text
    m = re.search(r"gradients \(weights and input\): max relative difference (\d\.\de-\d\d)", text)
    assert m and float(m.group(1)) < 1e-5
    m = re.search(r"\['ragged_dot_general'(?:, '[a-z_]+')*\]", text)
    assert m and m.group(0).count("'ragged_dot_general'") == 3
    # the NNX wrapper computes the same
    num = r"(\d\.\de[-+]\d\d)"
    m = re.search(rf"output: max \|diff\| {num}; gradients: max relative {num}", text)
    assert m and float(m.group(1)) < 1e-5 and float(m.group(2)) < 1e-5


def test_all_to_all_demonstration(book):
    text = page_text(book, "moe")
    assert f"receives {[100 * s for s in range(N_DEV)]}" in text
    assert f"receives {[100 * s + 1 for s in range(N_DEV)]}" in text
    assert "concat_axis=1 tiled=False -> (3, 8, 5)" in text
    assert "concat_axis=2 tiled=False -> (3, 5, 8)" in text


def test_ragged_dot_lowering(book):
    text = page_text(book, "moe")
    assert "cpu stablehlo.dot_general" in text
    assert "cuda chlo.ragged_dot" in text and "tpu chlo.ragged_dot" in text
    useful = 2 * 10 * 4 * 5
    m = re.search(r"CPU program: ([\d,]+) FLOPs for ([\d,]+) useful ones", text)
    assert m and int(m.group(2).replace(",", "")) == useful
    # every row times all 3 groups, plus the masking
    assert int(m.group(1).replace(",", "")) >= 3 * useful


def test_all_to_all_bytes_match_the_formula(book):
    text = page_text(book, "moe")
    g = glued(book, "moe")
    per_device = E * C * D * 4
    assert per_device == CF * K * LOCAL * D * 4
    assert g["a2a_bytes"] == f"{per_device:,}"
    assert f"compiled: 4 all-to-alls of {', '.join([f'{per_device:,}'] * 4)} B" in text
    row = f"all-to-all 8 × f32[{E // N_DEV},{C},{D}] 80 KiB 8"
    assert text.count(row) == 4
    # the router's gradient: one all-reduce of D x E floats and the dropped count
    assert f"all-reduce f32[], f32[{D},{E}] 4 KiB 8" in text
    # exercise: Switch routing, k = 1 and capacity factor 1
    switch = E * cap(LOCAL, E, 1, 1.0) * D * 4
    assert f"capacity 8; predicted {switch:,} B; compiled {[switch] * 4}" in text


def test_flops_follow_the_six_n_t_rule(book):
    text = page_text(book, "moe")
    g = glued(book, "moe")
    rule_ep = 6 * (D * E + CF * K * 2 * D * F) * TOKENS
    rule_ref = 6 * (D * E + E * 2 * D * F) * TOKENS
    rule_active = 6 * (D * E + K * 2 * D * F) * TOKENS
    rows = {}
    for name in ("expert parallel (8 devices)", "dense reference", "ragged_dot on CPU"):
        m = re.search(re.escape(name) + r" (\d+)M (\d+)M (\d+\.\d\d)", text)
        assert m, name
        rows[name] = tuple(float(v) for v in m.groups())
    assert rows["expert parallel (8 devices)"][1] == round(rule_ep / 1e6)
    assert rows["dense reference"][1] == round(rule_ref / 1e6)
    assert rows["ragged_dot on CPU"][1] == round(rule_active / 1e6)
    for name in ("expert parallel (8 devices)", "dense reference"):
        measured, rule, ratio = rows[name]
        assert 1.0 <= ratio < 1.1 and ratio == pytest.approx(measured / rule, abs=0.02)
    assert float(g["ep_ratio"]) == rows["expert parallel (8 devices)"][2]
    assert float(g["rag_ratio"]) > E / 2


def test_load_balancing(book):
    text = page_text(book, "moe")
    g = glued(book, "moe")
    before, after = re.findall(r"choices per expert: \[([\d, ]+)\]", text)
    before = [int(v) for v in before.split(",")]
    after = [int(v) for v in after.split(",")]
    assert sum(before) == sum(after) == TOKENS * K
    assert max(after) - min(after) < max(before) - min(before)
    assert g["busiest"] == f"{max(before) / (TOKENS * K / E):.1f}"
    m = re.search(r"auxiliary loss: (\d\.\d+) -> (\d\.\d+) \(1 is uniform\)", text)
    assert float(m.group(1)) > float(m.group(2)) >= 0.999
    assert g["aux_before"] == f"{float(m.group(1)):.2f}"
    m = re.search(r"dropped at capacity factor 1.25: (\d+) -> (\d+)", text)
    assert (g["drop_before"], g["drop_after"]) == m.groups()
    assert int(m.group(1)) > int(m.group(2))
    # exercise: the smallest capacity that drops nothing, as a factor
    m = re.search(r"busiest expert on one device: (\d+) choices -> capacity factor (\S+)", text)
    assert m and m.group(2) == f"{int(m.group(1)) * E / (K * LOCAL):.3f}"
    assert int(m.group(1)) > TOKENS * K / E / N_DEV  # above the even share


def test_roofline(book):
    text = page_text(book, "moe")
    g = glued(book, "moe")
    flops, nvlink, network = 9.9e14, 4.5e11, 5e10
    bound = {w: 2 / 3 * (N_DEV - 1) / N_DEV * flops / w for w in (nvlink, network)}
    assert g["bound_nvlink"] == f"{bound[nvlink]:,.0f}" == "1,283"
    assert g["bound_network"] == f"{bound[network]:,.0f}" == "11,550"
    layers = {"Mixtral 8x7B": (4096, 14336, 8, 2), "DeepSeek-V3": (7168, 2048, 256, 8)}
    for name, (d, f, n_experts, k) in layers.items():
        m = re.search(
            re.escape(name) + r" ([\d.]+) ([\d.]+) ([\d.]+ [KMG]iB) \| ([\d.]+) ([\d.]+) ([\d.]+)",
            text,
        )
        assert m, name
        tflop, over_rule, sent, compute, t_nv, t_net = m.groups()
        # bytes sent per device: four all-to-alls of the bf16 buffer, (N-1)/N of each
        buffer = n_experts * cap(4096, n_experts, k, CF) * d * 2
        hand = 4 * (N_DEV - 1) / N_DEV * buffer
        assert float(t_nv) == pytest.approx(hand / nvlink * 1e3, abs=0.01)
        assert float(t_net) == pytest.approx(hand / network * 1e3, abs=0.01)
        # FLOPs: the experts' 6 x c k T x 2 D F, plus a little for the router and the rest
        experts_flops = 6 * CF * k * 4096 * 2 * d * f
        assert 1.0 <= float(tflop) * 1e12 / experts_flops < 1.05
        assert float(over_rule) == pytest.approx(float(tflop) * 1e12 / experts_flops, abs=2e-3)
        assert float(over_rule) < float(glued(book, "moe")["ep_ratio"])  # the prose says so
        for t in (t_nv, t_net):
            link = nvlink if t == t_nv else network
            assert (float(t) > float(compute)) == (f < bound[link]), (name, t)
        if name == "Mixtral 8x7B":  # the ratio the prose quotes
            assert g["mx_net_ratio"] == f"{float(compute) / float(t_net):.2f}"
    # Gated (SwiGLU) experts: two thirds of the bound, the same verdicts.
    assert g["bound_gated"] == f"{2 / 3 * bound[network]:,.0f}" == "7,700"
    for _, f, _, _ in layers.values():
        assert all((f < 2 / 3 * b) == (f < b) for b in bound.values())


def test_figure_and_faq(book):
    imgs = images(book, "moe")
    assert len(imgs) >= 1
    assert all(len(img.get("alt", "")) > 30 for img in imgs)
