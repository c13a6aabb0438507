"""The mixture-of-experts chapter: the expert-parallel layer equals the dense reference,
the counts it prints agree with an independent routing in NumPy, and the bytes, FLOPs
and roofline numbers agree with their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bookcheck import Raised, errors, glued, images

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
    g = glued(book, "moe")
    logits = (x @ router).reshape(N_DEV, LOCAL, E)
    for factor in (1.0, 1.25, 1.5, 2.0):
        capacity = cap(LOCAL, E, K, factor)
        n = sum(numpy_drops(group, K, capacity) for group in logits)
        assert g["drop_table"][factor] == [capacity, n], factor
    n125 = sum(numpy_drops(group, K, C) for group in logits)
    assert g["dropped_ep"] == n125
    assert g["drop_125"] == f"{n125 / (TOKENS * K):.1%}"
    # the first all-to-all's pieces: 2 experts x C slots each, for 8 x 8 device pairs
    slots = N_DEV * N_DEV * (E // N_DEV) * C
    kept = TOKENS * K - n125
    traffic = np.array(g["traffic"])
    assert traffic.shape == (N_DEV, N_DEV) and traffic.sum() == kept
    assert g["piece"] == (E // N_DEV) * C
    assert g["fill"] == f"{kept / slots:.0%}"


def test_small_routing_example(book):
    g = glued(book, "moe")
    table = g["small_routing"]
    logits = np.array(
        [
            [4.0, 1.0, 0.0],
            [3.0, 2.0, 0.0],
            [3.5, 0.0, 1.0],
            [0.0, 2.0, 1.0],
            [2.0, 0.0, 3.0],
            [1.0, 3.0, 0.0],
        ]
    )
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    order = np.argsort(-logits, axis=1, kind="stable")[:, :2]
    assert table["experts"] == order.tolist()
    assert np.allclose(table["gates"], np.take_along_axis(probs, order, 1), atol=0.006)
    assert table["dropped"] == numpy_drops(logits, 2, 2)
    # normalised gates: GShard's division, Mixtral's softmax over the top k
    plain, norm = g["gate_sums"]
    assert len(plain) == len(norm)
    assert g["gate_sum0"] == f"{probs[0, order[0]].sum():.2f}"
    assert g["same_choices"] is True


def raised(book) -> dict[str, str]:
    """The errors the chapter's raises-exception cells show: name -> their messages
    (the prose names each one too, so the page's text could not tell them apart)."""
    found: dict[str, str] = {}
    for e in errors(book, "moe"):
        found[e.name] = found.get(e.name, "") + "\n" + e.message
    return found


def raised_by(book, code: str) -> Raised:
    """The one error shown by the raises-exception cell whose source holds ``code``."""
    (found,) = [e for e in errors(book, "moe") if code in e.source]
    return found


def test_non_concrete_index_error_is_shown(book):
    assert "NonConcreteBooleanIndexError" in raised(book)


def test_expert_parallel_equals_the_reference(book):
    g = glued(book, "moe")
    diffs = g["ep_diffs"]
    assert set(diffs) == {"output", "d/dx", "d/drouter", "d/dw_in", "d/dw_out"}
    assert float(g["ep_worst"]) == pytest.approx(max(diffs.values()), rel=0.5)
    assert "ragged_dot_general" in g["ragged_prims"]
    axes = {"router": "(None, None)", "w_in": "('expert', None, None)"}
    assert {n: g["nnx_placed"][n] for n in axes} == {n: f"P{a}" for n, a in axes.items()}


def test_all_to_all_demonstration(book):
    g = glued(book, "moe")
    # Row s of the block holds 100 s + d for destination d: device d gets column d.
    assert g["a2a_received"] == {d: [100 * s + d for s in range(N_DEV)] for d in (0, 1)}
    # A local (8, 3, 5) block: tiled, the split axis shrinks 8-fold and the concat axis
    # grows 8-fold; untiled, the split axis goes and an axis of 8 appears at concat.
    assert g["a2a_shapes"] == {
        "0 0 True": [N_DEV, 3, 5],
        "0 1 True": [1, 3 * N_DEV, 5],
        "0 1 False": [3, N_DEV, 5],
        "0 2 False": [3, 5, N_DEV],
    }


def test_ragged_dot_lowering(book):
    g = glued(book, "moe")
    assert g["lowered_ops"] == {
        "cpu": ["stablehlo.dot_general"],
        "cuda": ["chlo.ragged_dot"],
        "tpu": ["chlo.ragged_dot"],
    }
    useful = 2 * 10 * 4 * 5
    flops, counted_useful = g["rd_flops"]
    assert counted_useful == useful
    assert flops >= 3 * useful  # every row times all 3 groups, plus the masking
    assert g["rd_waste"] == f"{flops / useful:.1f}"


def test_all_to_all_bytes_match_the_formula(book):
    g = glued(book, "moe")
    per_device = E * C * D * 4
    assert per_device == CF * K * LOCAL * D * 4
    assert g["a2a_bytes"] == f"{per_device:,}"
    assert g["a2a"] == [per_device] * 4
    # exercise: Switch routing, k = 1 and capacity factor 1
    switch = E * cap(LOCAL, E, 1, 1.0) * D * 4
    assert g["ex_switch"] == [8, switch, [switch] * 2]  # there and back


def test_flops_follow_the_six_n_t_rule(book):
    g = glued(book, "moe")
    rules = {
        "expert parallel (8 devices)": 6 * (D * E + CF * K * 2 * D * F) * TOKENS,
        "dense reference": 6 * (D * E + E * 2 * D * F) * TOKENS,
        "ragged_dot on CPU": 6 * (D * E + K * 2 * D * F) * TOKENS,
    }
    got = g["flop_rules"]
    for name, rule in rules.items():
        assert got[name][1] == pytest.approx(rule), name
    ep = got["expert parallel (8 devices)"]
    assert g["ep_ratio"] == f"{ep[0] / ep[1]:.2f}"
    rag = got["ragged_dot on CPU"]
    assert rag[0] / rag[1] > E / 2 and g["rag_ratio"] == f"{rag[0] / rag[1]:.0f}"


def test_load_balancing(book):
    g = glued(book, "moe")
    before, after = g["choices_per_expert"]
    assert sum(before) == sum(after) == TOKENS * K
    assert max(after) - min(after) < max(before) - min(before)
    assert g["busiest"] == f"{max(before) / (TOKENS * K / E):.1f}"
    aux_before, aux_after, drop_before, drop_after = g["balance"]
    assert aux_before > aux_after >= 0.999
    assert g["aux_before"] == f"{aux_before:.2f}"
    assert (g["drop_before"], g["drop_after"]) == (str(drop_before), str(drop_after))
    assert drop_before > drop_after
    over_before, over_after = g["over_capacity"]
    assert isinstance(over_before, int) and isinstance(over_after, int)
    # exercise: the smallest capacity that drops nothing
    need, (at_need, below) = g["ex_no_drops"]
    assert isinstance(at_need, int) and isinstance(below, int)
    assert need > TOKENS * K / E / N_DEV  # above the even share


def test_roofline(book):
    from jaxguide import hardware

    g = glued(book, "moe")
    h100 = hardware.chip("H100 SXM")
    flops, nvlink, network = h100.flops("bf16"), 18 * 2.5e10, 5e10
    bound = {w: 2 / 3 * (N_DEV - 1) / N_DEV * flops / w for w in (nvlink, network)}
    assert g["bound_nvlink"] == f"{bound[nvlink]:,.0f}"
    assert g["bound_network"] == f"{bound[network]:,.0f}"
    layers = {"Mixtral 8x7B": (4096, 14336, 8, 2), "DeepSeek-V3": (7168, 2048, 256, 8)}
    times, verdicts = g["moe_times"], g["verdicts"]
    for name, (d, f, n_experts, k) in layers.items():
        # bytes sent per device: four all-to-alls of the bf16 buffer, (N-1)/N of each
        buffer = n_experts * cap(4096, n_experts, k, CF) * d * 2
        hand = 4 * (N_DEV - 1) / N_DEV * buffer
        assert times[name]["NVLink"] == pytest.approx(hand / nvlink)
        assert times[name]["network"] == pytest.approx(hand / network)
        # compute: the experts' 6 x c k T x 2 D F, by hand
        experts_flops = 6 * CF * k * 4096 * 2 * d * f
        assert times[name]["compute"] == pytest.approx(experts_flops / flops)
        assert 1.0 <= g["over_rule"][name] < 1.05  # cost_analysis beside the count
        for link, key in ((nvlink, "NVLink"), (network, "network")):
            assert verdicts[name][key] == (f < bound[link]), (name, key)
    mx = times["Mixtral 8x7B"]
    assert g["mx_net_ratio"] == f"{mx['compute'] / mx['network']:.2f}"
    assert verdicts["DeepSeek-V3"] == {"NVLink": False, "network": True}
    assert verdicts["Mixtral 8x7B"] == {"NVLink": False, "network": False}
    # Gated (SwiGLU) experts: two thirds of the bound, the same verdicts.
    assert g["bound_gated"] == f"{2 / 3 * bound[network]:,.0f}"
    # How to Scale Your Model's many-node regime, F > 8 C / W_node with a node's 8
    # network cards: 7/8 (eight devices) x 2/3 (training) of it is the bound above.
    sb = 8 * flops / (8 * network)
    assert g["sb_bound"] == f"{sb:,.0f}" and sb == pytest.approx(19_800, rel=0.01)
    assert 2 / 3 * 7 / 8 * sb == pytest.approx(bound[network])


def test_figure_and_faq(book):
    imgs = images(book, "moe")
    assert len(imgs) >= 1
    assert all(len(img.get("alt", "")) > 30 for img in imgs)


def test_dropless_layer_lowers_for_gpu_and_tpu(book):
    """The dropless layer's gradient: counts, offsets, dispatch, offsets, return, then
    the runs sent back by two more ragged_all_to_alls; every routed row sent once."""
    g = glued(book, "moe")
    ops = g["dropless_ops"]
    assert sorted(ops) == ["cuda", "tpu"]
    forward = ["all_to_all", "all_to_all", "ragged_all_to_all", "all_to_all", "ragged_all_to_all"]
    assert ops["cuda"] == ops["tpu"]
    assert ops["cuda"][:5] == forward
    assert ops["cuda"].count("ragged_all_to_all") == 2 + g["dropless_grad_ragged"]
    assert g["dropless_buffer"] == 8
    tokens, k, d = 1024 // 8, 2, 64  # per device
    assert g["dropless_sent"] == f"{tokens * k * d * 4:,}"  # every routed row, float32
    assert tokens * k * d * 4 < int(g["a2a_bytes"].replace(",", ""))  # the capacity layer's
    # every ragged_dot takes the worst-case buffer: all 8 devices' routed rows
    _, rows = g["dropless_rd_rows"]  # the count is the build's claim
    assert rows == [str(8 * tokens * k)]
    assert g["dropless_rows"] == f"{8 * tokens * k:,}"
    slots = E * cap(LOCAL, E, K, CF)  # a device's experts' slots, from all 8
    assert g["capacity_rows"] == slots
    assert g["dropless_rows_ratio"] == f"{8 * tokens * k / slots:.1f}"
    # the CPU compile is shown failing: XLA:CPU has no ragged-all-to-all
    assert "`ragged-all-to-all` is not supported by XLA:CPU" in raised(book)["JaxRuntimeError"]


def test_top_k_order_smallest_and_axis(book):
    g = glued(book, "moe")
    scores = np.array([2.0, 7.0, 2.0, 5.0, 7.0, 2.0])
    order = np.argsort(-scores, kind="stable")[:5]
    values, indices = g["top_k_order"]
    assert indices == order.tolist()
    assert values == scores[order].tolist()
    # the two smallest of [3, MIN, 5, 1]: -x overflows (int32) or wraps (uint32)
    smallest = g["top_k_int_smallest"]
    for dt in (np.int32, np.uint32):
        counts = np.array([3, np.iinfo(dt).min, 5, 1], dt)
        truth = np.argsort(counts, kind="stable")[:2].tolist()
        with np.errstate(over="ignore"):
            wrapped = (-counts).astype(np.int64)  # wraps as JAX's does
        negated = np.argsort(-wrapped, kind="stable")[:2].tolist()
        neg, inv, err = smallest[dt.__name__]
        assert inv == truth and neg != truth and neg == negated
        assert "floating" in err


def test_pallas_triton_flag_error_is_shown(book):
    assert "No module named 'jax._src.lax.pallas_lowerings'" in raised(book)["ModuleNotFoundError"]
    # the flag is off again afterwards (the default GPU lowering: the claim's)
    flag_off, _ = glued(book, "moe")["pallas_flag_off"]
    assert flag_off is True


def test_all_to_all_under_vmap(book):
    g = glued(book, "moe")
    same, prims = g["vmap_a2a"]
    assert same is True and "all_to_all" not in prims
    devices, a2a, diff, dropped = g["vmap_layer"]
    assert isinstance(devices, int) and isinstance(a2a, int) and diff >= 0
    assert dropped == [g["dropped_ep"]] * N_DEV


def test_nonzero_with_a_size_is_a_capacity(book):
    """jnp.nonzero(size=C, fill_value=-1) under jit: the first C tokens of expert 3."""
    g = glued(book, "moe")
    chose, kept = g["nonzero_slots"]
    assert kept == min(chose, int(g["cap"])) and chose > 0
    assert "NonConcreteBooleanIndexError" in raised(book)


def test_nonzero_padding_and_the_three_argument_where(book):
    """jax-ml/jax#7129 and #4418: 0-padding hides an empty mask; where(c, x, 0) keeps
    the shape under jit, where the one-argument form needs a size."""
    g = glued(book, "moe")
    expected = {}
    for name, first_true in (("no token", []), ("token 0", [0])):
        expected[name] = [(first_true + [0])[:1], (first_true + [-1])[:1]]
    assert g["nonzero_fill"] == expected
    kept, chose = g["where_rows"]
    assert kept == chose == int(g["n_three"]) == g["nonzero_slots"][0] > 0
    message = raised(book)["ConcretizationTypeError"]
    assert "The size argument of jnp.nonzero must be statically specified" in message


def test_group_offset_is_refused_by_ragged_dot_and_taken_by_megablox(book):
    """jax-ml/jax#34168: ragged_dot refuses an array group_offset on this JAX (the
    claim gmm_group_offset: the TPU kernel megablox.gmm has the parameter)."""
    assert "unhashable type" in raised(book)["TypeError"]


def test_slots_by_hand_are_the_routers(book):
    """The four lines of the exclusive cumsum on the page give route's slots; the six
    tokens' table, worked out by hand from the page's logits (k = 2, capacity 2)."""
    g = glued(book, "moe")
    assert g["slots_by_hand"] == [[0, 2], [1, 3], [2, 1], [0, 2], [0, 3], [1, 4]]


def test_sending_once_per_device(book):
    """Expected distinct devices per token, computed here independently of the page, and
    the between-node ratio scaled by the share of bytes."""
    g = glued(book, "moe")
    per = 256 // 8
    ds = 8 * (1 - math.comb(256 - per, 8) / math.comb(256, 8))
    assert g["once_drawn"]["DeepSeek-V3"][0] == pytest.approx(ds)
    # The random tokens' agreement with the formula is the build's claim.
    assert g["mx_once"] == pytest.approx(2.0)
    ratio = float(g["ds_net_ratio"])
    assert float(g["ds_once_ratio"]) == pytest.approx(ratio * ds / 8, rel=0.02)


def test_balance_loss_in_the_training_step(book):
    """Task loss plus alpha times the per-group auxiliary loss, trained through moe_ep:
    both weights fit the task; the weighted one ends better balanced, with fewer drops."""
    g = glued(book, "moe")
    runs = g["alpha_runs"]
    task0, aux1, drop1 = runs["0.0"]
    task2, aux2, drop2 = runs["0.01"]
    assert aux2 < aux1 and drop2 < drop1 < int(g["alpha_start_drop"])
    assert max(task0, task2) < 0.1
    # the prose quotes the table's digits
    assert g["alpha_task0"] == f"{task0:.4f}"
    assert g["alpha_task1"] == f"{task2:.4f}"
    # the start's per-group mean differs from the global loss of the section above
    assert g["aux_global"] == f"{g['balance'][0]:.3f}"
    assert g["alpha_aux0"] != g["aux_global"]


def test_balance_loss_returned_by_the_layer_routes_once(book):
    """moe_local returns the per-group balance loss: the step's loss at the start is
    the per-group mean computed apart, and the compiled step holds one scores matmul
    and one router-gradient matmul."""
    g = glued(book, "moe")
    aux_step, aux_apart, dots = g["aux_once"]
    assert aux_step == pytest.approx(aux_apart, rel=1e-5)
    assert g["alpha_aux0"] == f"{aux_step:.3f}"
    tokens, experts, d = 1024 // 8, 16, 64  # per device
    assert [list(x) for x in dots] == [[tokens, experts], [d, experts]]


def test_dropless_gradients_and_skewed_tokens(book):
    """The dropless layer through its all_to_all stand-in: output and all four
    gradients equal the no-drop reference, on random tokens and on tokens leaning
    toward expert 0, where one device receives far more rows than it sends."""
    g = glued(book, "moe")
    diffs = g["dropless_diffs"]
    assert sorted(diffs) == ["leaning", "random"]
    for found in diffs.values():
        assert sorted(found) == ["d/drouter", "d/dw_in", "d/dw_out", "d/dx", "output"]
        assert max(found.values()) < 1e-5
    sent = 1024 // 8 * 2  # a device's routed rows, k T_d
    received = g["dropless_received"]
    assert received["leaning"] > 2 * sent >= received["random"]
    assert received["leaning"] <= 8 * sent  # the worst-case buffer holds it


def test_ring_of_experts_moves_tokens_not_choices(book):
    """All-gather of the tokens in, reduce-scatter out: N T_d D floats each."""
    g = glued(book, "moe")
    token_bytes = 8 * (1024 // 8) * 64 * 4
    assert g["ring_bytes"] == {
        "all-gather": [token_bytes // 8, token_bytes],
        "reduce-scatter": [token_bytes, token_bytes // 8],
    }
    assert g["ring_token_bytes"] == f"{token_bytes:,}"
    assert g["ring_choice_bytes"] == f"{2 * token_bytes:,}"


def test_an_empty_groups_weight_gradient_is_exactly_zero(book):
    """openxla/tokamax#887: ragged_dot's rhs gradient is each group's own rows times
    the upstream gradient, so the empty group's is exactly 0. Recomputed here in
    NumPy from the page's generator: lhs, rhs, then cot."""
    rng = np.random.default_rng(2)
    lhs = rng.normal(size=(10, 4)).astype(np.float32)
    rng.normal(size=(3, 4, 5))  # rhs
    cot = rng.normal(size=(10, 5)).astype(np.float32)
    biggest = [
        np.abs(lhs[a:b].T @ cot[a:b]).max() if b > a else 0.0 for a, b in [(0, 3), (3, 3), (3, 10)]
    ]
    assert glued(book, "moe")["rhs_grad_max"] == pytest.approx(biggest, rel=1e-5, abs=1e-6)
    assert biggest[1] == 0.0


def test_megablox_gmm_under_expert_parallel_shard_map(book):
    """AI-Hypercomputer/maxtext#1449: megablox's gmm (interpret mode) with
    group_offset inside shard_map over the expert axis equals ragged_dot, values
    and gradients; the check_vma error and the row-tile rule are shown."""
    g = glued(book, "moe")
    diffs = g["gmm_ep_diffs"]
    assert set(diffs) == {"output", "d rows", "d weights"}
    # the page's group sizes, from its generator: rows, weights, then the
    # experts; expert 5 gets no rows
    rng = np.random.default_rng(20)
    rng.normal(size=(64, 32))
    rng.normal(size=(E, 32, 64))
    experts = rng.integers(0, E, 64)
    experts[experts == 5] = 6
    sizes = np.bincount(experts, minlength=E)
    assert sizes[5] == 0 and sizes.sum() == 64
    # Every device holds every row and every group size, and its own experts' weights.
    assert g["gmm_layout"] == {
        "rows": [[64, 32], [64, 32]],
        "weights": [[E, 32, 64], [E // N_DEV, 32, 64]],
        "group sizes": [[E], [E]],
        "sizes": sizes.tolist(),
    }
    # The two error cells: check_vma's, and the row-tile rule.
    vma = raised_by(book, "gmm_ep(check_vma=True)(*placed_g)")
    assert vma.name == "ValueError"
    assert "manual_axis_type" in vma.message and "check_vma=False" in vma.message
    tile = raised_by(book, "megablox.gmm(rows_g[:60]")
    assert tile.name == "ValueError"
    assert "60 must be divisible by x-dimension tile size (8)" in tile.message


def test_group_offset_is_implemented_on_no_platform(book):
    """jax-ml/jax#34168: a hashable group_offset gets past the TypeError and then no
    platform's lowering implements it."""
    g = glued(book, "moe")
    assert set(g["offset_lowering"]) == {"cpu", "cuda", "tpu"}
    assert all(
        r.startswith("NotImplementedError: Unimplemented group_offset")
        for r in g["offset_lowering"].values()
    )


def test_gradient_of_untiled_all_to_all_raises(book):
    """jax-ml/jax#15982: the untiled exchange between two axes has no gradient on
    JAX 0.10.2; the tiled form plus a reshape differentiates, exactly as the dense
    transpose does."""
    assert "Expected cotangent type" in raised(book)["ValueError"]
    g = glued(book, "moe")
    forms = g["a2a_grad_forms"]
    # Exchanging two axes fails either way round; the same axis works either way.
    assert forms["1 0 False"] == forms["0 1 False"] != forms["0 0 False"]
    assert forms["0 0 False"] == forms["1 1 False"]
    assert g["a2a_tiled_grad"] == [True, 0.0]


def test_plain_jit_gshard_layer(book):
    """A GShard-style layer under plain jit: its communication depends on how the
    masks are built; both forms use two all-to-alls (there and back)."""
    g = glued(book, "moe")
    ops = g["gshard_ops"]
    assert ops["False"]["all-to-all"] == ops["True"]["all-to-all"] == 2
    assert ops["True"]["all-gather"] > ops["False"]["all-gather"]
    assert g["gshard_gathers"] == str(ops["True"]["all-gather"])


def test_ragged_difference_is_said_exactly(book):
    g = glued(book, "moe")
    said = g["ragged_diff_said"]
    assert (said == "exactly zero") == (float(g["ragged_diff"]) == 0.0)


def test_nonzero_of_a_constant(book):
    """jax-ml/jax#5280: jnp.nonzero of a constant raises under jit; np.nonzero of it
    runs at trace time."""
    g = glued(book, "moe")
    assert g["const_nonzero"] == np.nonzero(np.array([0, 1, 2]))[0].tolist()
    assert "ConcretizationTypeError" in raised(book)
    assert len([e for e in errors(book, "moe") if "jnp.nonzero(const)" in e.source]) == 1


def test_data_and_expert_mesh(book):
    """A (data=2, expert=4) mesh: the reference's values and drops, all-to-alls in
    groups of 4, and the experts' gradients all-reduced over data."""
    g = glued(book, "moe")
    assert g["dropped_2d"] == g["dropped_ep"] > 0
    experts, d, f = 16 // 4, 64, 128  # a device's experts, model and hidden widths
    assert g["expert_grad_reduce"] == f"{2 * experts * d * f * 4:,}"  # as glued
