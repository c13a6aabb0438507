"""The performance chapter: the trace it offers for download is a real trace of the
step it profiles, the numbers it prints agree with each other and with hand
calculations, and every equality it claims holds on the page."""

from __future__ import annotations

import base64
import gzip
import json
import math

import pytest

import bookcheck
from bookcheck import glued, images, page_text
from jaxguide.compiled import format_bytes

pytestmark = pytest.mark.book


def pct(text):
    """A glued percentage ('13%') as a fraction."""
    return float(text.rstrip("%")) / 100


CH = "performance"
SIZES = [256, 512, 512, 16]
WEIGHT_ELEMS = sum(m * n for m, n in zip(SIZES, SIZES[1:]))
BIAS_BYTES = sum(SIZES[1:]) * 4


def test_the_download_is_the_profiled_trace(book):
    soup = bookcheck.parsed_page(book, CH)
    links = soup.select("a[download]")
    assert len(links) == 1
    href = links[0]["href"]
    assert href.startswith("data:application/gzip;base64,")
    trace = json.loads(gzip.decompress(base64.b64decode(href.split(",", 1)[1])))
    events = trace["traceEvents"]
    steps = [e for e in events if e.get("name") == "train"]
    ops = [e for e in events if (e.get("args") or {}).get("hlo_module") == "jit_train_step"]
    assert len(steps) == 5
    assert ops and all("hlo_op" in e["args"] for e in ops)
    # The page's own count of operations per step comes from the same trace: every
    # step's mark holds the same operations, and none ran outside the five marks (the
    # warm-up step was waited on before the trace began).
    per_step = [sum(s["ts"] <= o["ts"] <= s["ts"] + s["dur"] for o in ops) for s in steps]
    assert len(set(per_step)) == 1 and sum(per_step) == len(ops), per_step
    g = glued(book, CH)
    assert g["trace_ops_per_step"] == per_step[0] == len(ops) // 5
    assert g["ops_named"] == len(ops)
    # An operation run lasts until the first "end: <op>" mark before its next run
    # (or its own end, where it has none); the plain dots' events cover a share.
    ops = sorted(ops, key=lambda o: o["ts"])
    marks = {}
    for e in events:
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("end: "):
            marks.setdefault(e["name"][5:], []).append(e["ts"])
    done, marked = [], 0
    for o in ops:
        nxt = min(
            [p["ts"] for p in ops if p["name"] == o["name"] and p["ts"] > o["ts"]], default=math.inf
        )
        mark = [t for t in marks.get(o["name"], []) if o["ts"] <= t < nxt]
        marked += bool(mark)
        done.append(max([o["ts"] + o["dur"], *mark[:1]]) - o["ts"])
    assert g["end_marks"] == f"{marked} of {len(ops)}"
    dots = [i for i, o in enumerate(ops) if o["name"].split(".")[0] == "dot"]
    share = sum(ops[i]["dur"] for i in dots) / sum(done[i] for i in dots)
    assert pct(g["dot_event_share"]) == pytest.approx(share, abs=0.006)
    wall = sum(s["dur"] for s in steps)
    assert float(g["op_over_wall"]) == pytest.approx(sum(done) / wall, abs=0.06)
    # The three files JAX 0.10.2 writes are listed.
    assert g["trace_files"] == sorted((".xplane.pb", ".trace.json.gz", "perfetto_trace.json.gz"))


def test_time_per_scope(book):
    g = glued(book, CH)
    per_phase = g["per_phase_us"]
    for layer in range(3):
        assert {f"layer{layer} forward", f"layer{layer} backward"} <= set(per_phase)
    assert "sgd" in per_phase and sorted(per_phase) == g["phases"]
    assert g["phase_top"] == max(per_phase, key=per_phase.get)
    layers = sum(v for k, v in per_phase.items() if k.startswith("layer"))
    share = layers / sum(per_phase.values())
    assert abs(share - pct(g["phase_layers_share"])) < 0.006
    # FLOPs by hand: a (512, m) @ (m, n) product is 2*512*m*n; a backward pass computes
    # the weight's gradient and, except for layer 0, the input's.
    flops = {}
    for i, (m, n) in enumerate(zip(SIZES, SIZES[1:])):
        flops[f"layer{i} forward"] = 2 * 512 * m * n
        flops[f"layer{i} backward"] = 2 * 512 * m * n * (1 if i == 0 else 2)
    assert g["phase_flops"] == flops
    # Every phase has a rate, from its operations' time until their end: marks.
    rate = {k: flops[k] / per_phase[k] / 1e3 for k in flops}
    assert set(g["phase_rates"]) == set(rate)
    for k, v in rate.items():
        assert g["phase_rates"][k] == pytest.approx(v, rel=0.01, abs=0.1)
    # Layer 2's weight gradient costs what its forward product does: 1/32 here.
    share = flops["layer1 forward"] // flops["layer2 forward"]
    assert g["l2_flop_share"] == f"1/{share}" == f"1/{(512 * 512) // (512 * 16)}"
    # The weight gradient of the 16-column layer is a plain dot, inside its phase.
    assert 0 < g["dw2_us"] <= per_phase["layer2 backward"]
    assert "ynn_fusion" in g["fused_matmuls"]
    assert g["dw_kinds"] == ["dot"]
    # The products alone: the range of their rates, the fastest the peak.
    low, high = g["alone_rate_range"].split(" to ")
    assert float(low) <= float(high) == pytest.approx(float(g["phase_peak"]), abs=1)
    assert float(g["step_over_products"]) > 0


def test_what_to_look_for(book):
    g = glued(book, CH)
    assert g["compile_events"] == (2, 1)
    # The ratio is of the two calls waited on; the second call's dispatch alone
    # returned before its step was done.
    assert float(g["second_return_ms"]) < float(g["second_wall_ms"])
    assert 0 < float(g["compile_ms"])
    # jax.monitoring (jax#5700): the three compile phases, XLA's the largest part.
    phases = {"jaxpr_trace_duration", "jaxpr_to_mlir_module_duration", "backend_compile_duration"}
    assert phases <= set(g["monitor_phases"])
    assert 0.5 * float(g["monitor_total_ms"]) <= float(g["monitor_xla_ms"])
    assert float(g["monitor_xla_ms"]) <= float(g["monitor_total_ms"]) + 1
    assert g["eager_ops"] > g["trace_ops_per_step"]


def test_mixed_precision(book):
    g = glued(book, CH)
    text = page_text(book, CH)
    f32, bf16, pure = (float(g[k]) for k in ("mp_final_f32", "mp_final_bf16", "mp_final_pure"))
    assert abs(f32 - bf16) < 0.05 * f32 and pct(g["mp_max_gap"]) >= 0
    assert pure > 1.5 * f32
    x_bytes = 4096 * 256 * 4
    # Memory of the training step itself: the same float32 arguments (weights, batch of
    # 4096 inputs and targets), more temporaries for the mixed step on XLA:CPU.
    args = WEIGHT_ELEMS * 4 + BIAS_BYTES + x_bytes + 4096 * 16 * 4
    assert g["train_args_same"] == format_bytes(args)
    assert pct(g["train_tmp_growth"]) > 0
    # JAX saves float32 values for tanh's derivative (tanh runs in float32 before
    # the cast): print_saved_residuals shows them, on every backend (the claim: two of
    # the four are tanh's outputs).
    # The mixed program's three matmul fusions (one per layer) take bfloat16 operands,
    # with no convert.
    assert g["mixed_fusions_bf16"] == len(SIZES) - 1
    # The converts: one per backward dot feeds it (as many as the backward dots), and
    # the rest are autodiff's own rounding of the cotangents.
    assert g["mp_bwd_dots"] == "5" == g["mp_converts_dot"]
    assert int(g["mp_converts_other"]) + int(g["mp_converts_dot"]) == int(g["mp_converts"])
    assert g["mp_f32_precision"] == {"DEFAULT": int(g["mp_bwd_dots"])}
    # Weight gradients hold bfloat16 numbers; biases (added in float32) do not.
    assert g["mp_grad_bf16"] == f"{len(SIZES) - 1} of {len(SIZES) - 1}"
    # The memory: the recipe's float32 tanh and JAX's converts, not XLA:CPU alone.
    f32_tmp, mp_tmp, out_tmp = (g[k] for k in ("train_tmp_f32", "train_tmp_mp", "train_tmp_out"))
    # The compiled steps' [4096, 512] arrays by dtype: the bfloat16-results step has as
    # many float32 ones as the float32 step (XLA:CPU widens its bf16 dots), and two bf16.
    wide = g["train_wide"]
    assert wide["float32 step"] == [g["train_wide_f32"], 0]
    assert wide["bfloat16 results"] == [g["train_wide_f32"], g["train_wide_bf16"]]
    assert g["train_wide_bf16"] == 2 and wide["mixed step"][0] >= g["train_wide_f32"]
    # JAX's residual list: bf16 copies of x, W0, W1, W2 and two activations (the
    # claim counts them); their bytes by hand.
    bf16_bytes = 2 * (512 * 256 + WEIGHT_ELEMS + 2 * 512 * 512)
    assert g["kept_mixed_bf16"] == format_bytes(bf16_bytes)
    assert len({f32_tmp, mp_tmp, out_tmp}) == 3
    assert g["kept_out_total"] != g["kept_f32_total"]
    text = page_text(book, CH)
    # GPU overlap needs the latency-hiding scheduler, off by default there.
    assert text.count("--xla_gpu_enable_latency_hiding_scheduler=true") >= 2
    assert "gpu_performance_tips" in book.page(CH)
    precs = g["precision_errs"]
    # jax#16349: one simulated bfloat16 pass, its error against float32's (glued).
    err_pass = float(g["precision_pass_err"])
    ratio = err_pass / float(precs["default"][1])
    assert float(g["precision_pass_ratio"].replace(",", "")) == pytest.approx(ratio, rel=0.1)
    # bfloat16 keeps 8 significant bits: 128x128 sums of products err near 1e-1.
    assert 1e-2 < err_pass < 1


def test_gradient_accumulation(book):
    g = glued(book, CH)
    # Automatic accumulation and the pcast version equal the full batch's gradients
    # (acc_err is the pcast version's, the one printed above the sentence glued
    # with it); the first try does not.
    # The naive error is larger than either accumulated one.
    assert float(g["acc_err_naive"]) > max(float(g["acc_err"]), float(g["acc_err_auto"]))
    assert g["n_micro_text"] == "4"
    # One all-reduce each: in the loop body when left to the compiler (and in the
    # first try), once after the loop with pcast. Its operands are all the parameters'
    # bytes, by hand: one all-reduce of every gradient array, once per microbatch or
    # once per step.
    assert g["auto_places"] == ["in the loop body"]
    assert g["manual_places"] == ["once"]
    assert "in the loop body" in g["naive_places"]
    param_bytes = (WEIGHT_ELEMS * 4) + BIAS_BYTES
    assert g["acc_bytes_manual"] == format_bytes(param_bytes)
    assert g["acc_bytes_auto"] == format_bytes(4 * param_bytes)
    # The exercise: any count of microbatches, the full batch's gradient and one
    # all-reduce after the loop.
    # (the claim); the counts it ran:
    assert sorted(int(k) for k in g["ex_accum"]) == [1, 8]


def test_collective_matmul(book):
    g = glued(book, CH)
    # All four versions equal X @ W (cm_err is the largest difference).
    assert float(g["cm_err"]) >= 0 and g["cm_bf16_permutes"] == ["f32"]
    assert set(g["cm_errs"]) == {
        "allgather_matmul",
        "collective_matmul",
        "matmul_scatter",
        "collective_matmul_scatter",
    }
    assert max(float(e) for e in g["cm_errs"].values()) == pytest.approx(float(g["cm_err"]))
    block = (512 // 8) * 256 * 4  # one device's rows of X, float32
    assert g["cm_blk"] == format_bytes(block) and g["cm_sent"] == format_bytes(7 * block)
    ring = {"collective-permute": 7}
    assert g["cm_counts"] == {
        "allgather_matmul": {"all-gather": 1},
        "collective_matmul": ring,
        "matmul_scatter": {"reduce-scatter": 1},
        "collective_matmul_scatter": ring,
    }
    # The reduce-scatter's operand is the whole [512, 512] float32 partial product; its
    # ring sends seven of the eight [64, 512] row blocks.
    assert g["cm_rs_operand"] == format_bytes(512 * 512 * 4)
    assert g["cm_rs_sent"] == format_bytes(7 * 64 * 512 * 4)
    # The schedule: seven synchronous permutes among at least eight block matmuls.
    kinds = g["sched_kinds"]
    assert kinds.count("permute") == 7 and kinds.count("matmul") >= 8
    assert set(kinds) == {"permute", "matmul"} and g["sched_async"] is False
    # The trace: on every device eight matmuls and seven permutes.
    assert g["cm_trace_counts"] == [(8, 7)]
    assert float(g["cm_permute_us"]) > 0 and float(g["cm_matmul_us"]) > 0
    # The listing is a dependency order; the page claims no execution order.
    text = page_text(book, CH)
    assert "shard_map.html" in book.page(CH) and "XLA Ops" in text


def test_weight_gradient_remedy(book):
    """The slow 16-column weight gradient, computed as (dy.T @ h).T behind optimization
    barriers: no plain dot left in what XLA:CPU compiled, the same product; the most the
    step gains is the dot's share of it."""
    g = glued(book, CH)
    before, after = g["dw_fix_ops"]
    assert any(op.startswith("dot") and op.endswith("[512,16]") for op in before)
    assert not any(op.startswith("dot") for op in after)
    assert "ynn_fusion" in " ".join(after) and any("[16,512]" in op for op in after)
    assert g["dw_fix_after"] in after and g["dw_fix_after"].startswith("ynn_fusion")
    # Without the barriers, the transposes fold back into one plain dot.
    assert any(op.startswith("dot") for op in g["dw_fix_folded"])
    # The timing is shown, not ranked (it moves with the load); it agrees with itself.
    dot_us, fast_us, step_us = g["dw_fix_us"]
    assert float(g["dw_fix_speedup"]) == pytest.approx(dot_us / fast_us, rel=0.05, abs=0.05)
    # The page's step time is that fastest repeat of train_step, and its GFLOP/s
    # are the matmuls' FLOPs counted by hand (the phase table's) over it.
    assert float(g["step_ms_best"]) == pytest.approx(step_us / 1e3, abs=0.006)
    step_flops = sum(g["phase_flops"].values())
    gflops = step_flops / (float(g["step_ms_best"]) / 1e3) / 1e9
    assert float(g["step_gflops"]) == pytest.approx(gflops, rel=0.01, abs=1)
    # The dot's share of the step: both timed alone, in the same interleaved runs.
    assert pct(g["dw2_step_share"]) == pytest.approx(dot_us / step_us, abs=0.006)


def test_figures_have_alt_text(book):
    imgs = images(book, CH)
    assert len(imgs) >= 3  # time per scope, the loss curves, the ring trace
    assert all(len(img.get("alt", "")) > 30 for img in imgs)


def test_collective_matmul_roofline(book):
    """The prediction for published hardware: the permute of one bf16 [64, 256] block
    over one link against the block matmul, and the F/n at which the permute hides."""
    g = glued(book, CH)
    block_bf16 = (512 // 8) * 256 * 2
    # One ring step by hand, bf16: read a [64, 256] block of X and a [256, 64] block
    # of W, write a [64, 64] block; send one [64, 256] block.
    hbm = 2 * (64 * 256 + 256 * 64 + 64 * 64)
    assert g["cm_step_hbm"] == f"{hbm:,}" and g["cm_step_link"] == f"{block_bf16:,}"
    # Bytes/s to the next device: one ICI link (v5e); 18 NVLink links of 2.5e10 (H100);
    # HBM 8.1e11 and 3.35e12 B/s.
    chips = {"TPU v5e": (1.97e14, 4.5e10, 8.1e11), "H100 SXM": (9.89e14, 18 * 2.5e10, 3.35e12)}
    for chip, (flops, link, bw) in chips.items():
        matmul_us, permute_us = g["cm_roof"][chip]
        assert permute_us == pytest.approx(block_bf16 / link * 1e6, abs=1e-3)
        expected = max(2 * 64 * 256 * 64 / flops, hbm / bw) * 1e6
        assert matmul_us == pytest.approx(expected, abs=1e-3)
        assert matmul_us < permute_us  # F/n = 64 is far below the bar
    need = {"cm_need_tpu": 1.97e14 / 4.5e10, "cm_need_h100": 9.89e14 / (18 * 2.5e10)}
    for key, value in need.items():
        shown = g[key]
        assert shown == f"{value:,.0f}", key
        # A float32 running sum (the reduce-scatter ring's acc): 4 bytes, twice the bar.
        assert g[f"{key}_f32"] == f"{2 * value:,.0f}", key
    assert g["cm_fn"] == 64 and g["cm_n_dev"] == "8"


def test_bf16_weights_float32_gradients(book):
    """jax#30337: differentiating at a float32 copy of bfloat16 weights gives float32
    gradients; at the weights themselves, bfloat16."""
    g = glued(book, CH)
    assert g["bf16w_dtypes"] == ["bfloat16", "float32"]
    assert "grads_in_f32" in page_text(book, CH)


def test_nnx_linear_mixed_precision(book):
    """nnx.Linear(dtype=bfloat16, param_dtype=float32) is the bfloat16-results recipe:
    the same dots lowered and compiled, the same bytes kept and temporaries."""
    g = glued(book, CH)
    dots = g["nnx_mp_dots"]
    assert dots["nnx.Linear"] == dots["bfloat16 results"]
    # Eight bf16 dots handed to XLA (three forward, five backward), compiled as f32.
    assert dots["nnx.Linear"]["lowered"] == {"bf16 x bf16 -> bf16": 8}
    assert set(dots["nnx.Linear"]["compiled"]) == {"f32"}
    assert g["nnx_mp_same"] == g["train_tmp_out"]
    kept = g["kept_by"]
    assert kept["nnx.Linear"] == kept["bfloat16 results"]
    assert format_bytes(sum(kept["float32 step"].values())) == g["kept_f32_total"]
    assert format_bytes(sum(kept["mixed step"].values())) == g["kept_mixed_total"]
    assert "bf16" not in kept["float32 step"]


def test_multisteps(book):
    """optax#320: MultiSteps updates on the k-th call only, equals one step on the
    whole batch, and a call's memory follows the batch it is given."""
    g = glued(book, CH)
    assert g["ms_changed"] == [False, False, False, True]
    assert g["ms_acc_bytes"] == format_bytes(WEIGHT_ELEMS * 4 + BIAS_BYTES)
    # The whole footprint, by part: the arguments grow by the extra rows of x and y
    # (float32), the outputs (parameters and optimizer state) not at all, and every
    # output is aliased to a donated argument.
    mem = {int(k): v for k, v in g["ms_mem"].items()}
    assert mem[1024][0] - mem[256][0] == (1024 - 256) * (256 + 16) * 4
    assert mem[1024][1] == mem[256][1] and mem[1024][3] == mem[256][3]
    assert g["ms_unaliased"] == mem[256][1] - mem[256][3] < 1024
    # The outputs hold at least the new parameters and MultiSteps' gradient buffer.
    assert mem[256][1] >= 2 * (WEIGHT_ELEMS * 4 + BIAS_BYTES)
    assert g["ms_alias"] == format_bytes(mem[256][3])
    totals = {rows: a + o + t - al for rows, (a, o, t, al) in mem.items()}
    assert float(g["ms_total_ratio"]) == pytest.approx(totals[1024] / totals[256], abs=0.05)
    assert g["ms_total_whole"] == format_bytes(totals[1024])
    assert g["ms_deleted"] == [True] * 4
    # The total grows less than the batch; a temporaries-only ratio is not the headline.
    assert totals[1024] < 4 * totals[256]
    assert "times the\ntemporaries of a call" not in book.page(CH)


def test_names_inside_loops(book):
    """jax#11930 and jax#7029: an annotation in a compiled loop's body marks its one
    trace, not the iterations; a named_call function's operations carry its name, once
    per iteration."""
    g = glued(book, CH)
    assert g["loop_fact"] == math.factorial(10)
    named = g["loop_block_ops"]
    assert len(named) >= 2 and set(named.values()) == {5}, named
    assert all("/block/" in name for name in named)


def test_level0_and_no_reviewer_hedges(book):
    """Level 0 compiles to the default's HLO; the page speaks to a learner (no hedges
    addressed to a reviewer) and states the two corrected facts."""
    g = glued(book, CH)
    text = page_text(book, CH)
    assert g["level0_same"][0] is True  # level 0: the default's HLO too
    # A Python for under jit is unrolled, not run once.
    assert "any loop under" not in text and "unrolling the loop" in text
    # The hiding condition is the matmul's time, whichever roofline bounds it.
    assert "whichever roofline" in text


def test_nnx_overhead(book):
    """flax#4045: one NNX step called two ways computes the same thing; nnx.jit is
    the slower and makes more calls into Flax, jax.jit on the split state none into
    its graph code."""
    g = glued(book, CH)
    assert g["nnx_same_steps"] is True
    # Counted by hand: three Linear layers (kernel and bias each), Adam's two moments
    # for each of those 6, Adam's step count and the optimizer's own.
    assert g["nnx_arrays"] == 3 * 2 + 2 * 3 * 2 + 2
    losses = g["nnx_losses"]
    ways = ["nnx.jit", "nnx.jit, graph=False", "jax.jit on nnx.split"]
    assert list(losses) == ways
    assert len({tuple(values) for values in losses.values()}) == 1
    first = [float(v) for v in losses["nnx.jit"]]
    assert len(first) == 3 and first[0] > first[1] > first[2]
    # The timings: the ratio and the overhead agree with each other.
    ratio, fast = float(g["nnx_jit_ratio"]), float(g["nnx_fast_us"])
    assert ratio > 1.5
    assert float(g["nnx_overhead_us"]) == pytest.approx((ratio - 1) * fast, rel=0.1, abs=2)
    # The calls into flax/nnx per step, each way, agree with the counts the prose shows.
    counted = {name: tuple(c) for name, c in g["nnx_calls"].items()}
    assert list(counted) == ways
    assert counted["nnx.jit"] == (
        int(g["nnx_flax_calls"].replace(",", "")),
        int(g["nnx_graph_calls"].replace(",", "")),
    )
    split = counted["jax.jit on nnx.split"]
    assert split == (int(g["nnx_split_calls"].replace(",", "")), 0)
    assert counted["nnx.jit"] > split
    # Tree mode (graph=False): the counts the prose shows are the table's.
    tree = counted["nnx.jit, graph=False"]
    assert tree == (
        int(g["nnx_tree_calls"].replace(",", "")),
        int(g["nnx_tree_graph_calls"].replace(",", "")),
    )


def test_recoverable_time_and_cprofile(book):
    """Review r48: products ranked by time x (1 - rate / peak), time and rate both
    alone, recomputed from the glued times and FLOPs; the remedy's largest possible
    gain; jax#13407's wrapper, entered by an un-jitted grad without compiling."""
    g = glued(book, CH)
    alone_us, rates = g["alone_us"], g["alone_rates"]
    peak = float(g["phase_peak"])
    assert peak == pytest.approx(max(rates.values()), abs=0.06)
    rec = {k: alone_us[k] * (1 - rates[k] / max(rates.values())) for k in rates}
    assert g["recover_top"] == max(rec, key=rec.get)
    assert float(g["recover_l2_us"]) == pytest.approx(
        rec["layer2 weight gradient"], rel=0.05, abs=5
    )
    # The rates are each product's FLOPs over its time alone: 2 * B * M * N.
    batch = 512
    for name, us in alone_us.items():
        i = int(name[5])
        m, n = SIZES[i], SIZES[i + 1]
        assert rates[name] == pytest.approx(2 * batch * m * n / us / 1e3, rel=0.01)
    assert float(g["rr_grad_ms"]) > 0  # the wrapper held the second call
    dot_us, fast_us, step_us = g["dw_fix_us"]
    gain = max(0.0, dot_us - fast_us) / step_us
    assert float(g["dw_fix_max_gain"].rstrip("%")) / 100 == pytest.approx(gain, abs=0.002)
    assert float(g["rr_own_ms"]) < 1  # microseconds: the wrapper's own work


def test_the_cures_run(book):
    """The gap loop re-run with deferred reads and prefetch: the host queues steps
    ahead; the Newton solver converges."""
    g = glued(book, CH)
    # The idle shares move with the load: shown, never ranked. The count of steps
    # begun early is what the cure changes, out of the four steps after the first
    # (none when each loss is read back: the claim).
    assert 0 <= int(g["ahead_cured"]) <= 4
    # The loader waits 10 ms on "I/O": the cure overlaps that wait with the step, so
    # untraced, the fastest cured loop beats the fastest read-back loop.
    ms = g["loop_ms"]
    assert float(g["span_readback"]) == pytest.approx(ms["read back"], abs=0.06)
    assert float(g["span_cured"]) == pytest.approx(ms["cured"], abs=0.06)
    assert ms["read back"] > ms["cured"]
    assert float(g["cure_speedup"]) == pytest.approx(ms["read back"] / ms["cured"], abs=0.06)
    assert 0 <= pct(g["idle_cured"]) < 100
    assert 0 <= pct(g["idle_share"]) < 100


def test_review34_fixes(book):
    """The page's step time; the review-39 cuts leave their sections' answers."""
    g = glued(book, CH)
    assert float(g["step_ms_best"]) > 0


def test_profile_reading_tightened(book):
    """The timed-alone products' HLO kinds, the naive accumulation's ratio (the device
    count), the profiler's options and memory."""
    g = glued(book, CH)
    assert list(g["alone_kinds"]) == [
        "layer0 forward",
        "layer0 weight gradient",
        "layer1 forward",
        "layer1 weight gradient",
        "layer1 input gradient",
        "layer2 forward",
        "layer2 weight gradient",
        "layer2 input gradient",
    ]
    assert g["alone_fwd_kind"] == g["alone_kinds"]["layer2 forward"]
    # What XLA:CPU compiled them to, as the page reads each program's entry
    # computation: plain dots for the weight gradients, a YNNPACK fusion forward.
    kinds = {k: v for k, v in g["alone_kinds"].items()}
    assert kinds["layer2 forward"] == "ynn_fusion"
    assert {v for k, v in kinds.items() if "weight gradient" in k} == {"dot"}
    assert float(g["naive_ratio"]) == pytest.approx(int(g["cm_n_dev"]), abs=0.01)
    assert g["memory_top"] == format_bytes(512 * 512 * 4)
    text = page_text(book, CH)
    assert "1 microbatches" not in text and "1 iterations" not in text


def test_persistent_cache_default(book):
    """The persistent cache's default minimum compile time."""
    import jax

    g = glued(book, CH)
    assert float(g["cache_min_default"]) == jax.config.jax_persistent_cache_min_compile_time_secs


def test_remedy_in_the_step_and_review_r41(book):
    """Review r48: mixed precision cast before tanh keeps less than float32 (autodiff's
    list, counted by dtype); the unnamed scan events counted."""
    g = glued(book, CH)
    kept = g["kept_by"]
    first, f32 = kept["cast before tanh"], kept["float32 step"]
    assert sum(first.values()) < sum(f32.values())
    assert format_bytes(sum(first.values())) == g["kept_first_total"]
    assert first["bf16"] > kept["mixed step"]["bf16"]
    assert g["loop_unnamed"] > 0


def test_runtime_overlap_and_review_fixes(book):
    """Review r33: the CPU overlap is the runtime's (larger blocks overlap with the same
    schedule), the memory table's units, the retired sentences."""
    g = glued(book, CH)
    assert int(g["cm_n_dev"]) == 8
    assert "thunk_executor.cc" in bookcheck.parsed_page(book, CH).decode()
    # The float32 step's temporaries, by hand: that many f32 [4096, 512] buffers.
    bufs = int(g["train_tmp_f32_bufs"])
    assert g["train_tmp_f32"] == format_bytes(bufs * 4096 * 512 * 4)


def test_review_r43_fixes(book):
    """Review r43: the preset run on CPU, the mixed step's own wide count, the step
    inside the cured loop beside the step alone, #7550 off the chapter's list."""
    g = glued(book, CH)
    assert g["train_wide_mp"] == g["train_wide"]["mixed step"][0]
    assert float(g["cure_busy_ms"]) > 0


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "the profiler's own": "review r48: the traced/untraced ratio was the load's (interleaved: 1.00)",
    "on every step, it means recompiling": "review r48: un-jitted grad/vmap/scan enter the wrapper with no compile",
    "goes most of the way": "review r48: tree mode recovered under half the overhead",
    "far below the": "cut in 9689f69: performance: MultiSteps totals, bf16 activations recipe, GPU...",
    "where the wide matmuls are YNNPACK fusions": "cut in c911cf6: performance: the cold review's FALSE sentences fixed (compile...",
    "one operation below the rate of its neighbours": "a sentence a review found wrong or unbacked",
    "for the forward and backward passes": "cut in cb71172: performance: mixed-precision backward dtypes shown from JAX's...",
    "bfloat16 compute, float32": "cut in cb71172: performance: mixed-precision backward dtypes shown from JAX's...",
    "XLA:CPU's own doing": "The memory: the recipe's float32 tanh and JAX's converts, not XLA:CPU alone.",
    "need not repeat": "The memory: the recipe's float32 tanh and JAX's converts, not XLA:CPU alone.",
    "widening happens inside the matmul fusions": "a sentence a review found wrong or unbacked",
    "its fastest": "cut in c911cf6: performance: the cold review's FALSE sentences fixed (compile...",
    "errors near 1e-3": "cut in c911cf6: performance: the cold review's FALSE sentences fixed (compile...",
    "in the order they will run": "cut in cb71172: performance: mixed-precision backward dtypes shown from JAX's...",
    "LLVM optimising the machine code. Its": "cut in cb71172: performance: mixed-precision backward dtypes shown from JAX's...",
    "not a claim": "cut in 13402b0: performance: takeaway states the matmul-time hiding condition; lax...",
    "rank nothing": "a sentence a review found wrong or unbacked",
    "output, not": "cut in 13402b0: performance: takeaway states the matmul-time hiding condition; lax...",
    "not ranked": "cut in a0ad27e: performance: r34 remaining items: dW2 remedy and LLVM-level...",
    "rough guide": "cut in 13402b0: performance: takeaway states the matmul-time hiding condition; lax...",
    "only when each device": "The hiding condition is the matmul's time, whichever roofline bounds it.",
    "copied it and printed": "a sentence a review found wrong or unbacked",
    "lists `0` as the": "cut in 907ece3: performance: review r39, 20% shorter (3257 -> 2605 lines)",
    "need not cover all of its work": "cut in 2445018: performance: backward cotangents rounded to bf16 (grads checked),...",
    "the schedule has no window": "cut in afd43e6: performance: review r33 fixes",
    "arrays are back": "cut in afd43e6: performance: review r33 fixes",
    "stores what the list says": "cut in afd43e6: performance: review r33 fixes",
    "choose other kernels for a transposed operand": "a sentence a review found wrong or unbacked",
    "pins it across backends": "cut in 2b0ef9d: performance: dot-algorithm preset run on CPU (BF16_BF16_F32...",
    "7550": "cut in 2b0ef9d: performance: dot-algorithm preset run on CPU (BF16_BF16_F32...",
    "only compiles quicker": "cut in 2b0ef9d: performance: dot-algorithm preset run on CPU (BF16_BF16_F32...",
}
