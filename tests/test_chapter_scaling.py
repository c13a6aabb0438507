"""The scaling chapter: every strategy matches one device, the communication the
compiler emitted agrees with a hand calculation, and the glued numbers agree with the
tables they summarise."""

from __future__ import annotations

import re

import pytest

from bookcheck import glued, images, page_text
from jaxguide import hardware

V5E = hardware.chip("TPU v5e")  # the book's one table of published figures
LINK = V5E.link_one_way

pytestmark = pytest.mark.book

STRATEGIES = ("data parallel", "FSDP", "tensor parallel", "FSDP + TP")


def _table(text: str) -> dict[str, list[str]]:
    """The cost table's rows: strategy -> [state bytes, operand bytes, sent
    bytes, GFLOP, kinds]. (The page text has its whitespace collapsed to single
    spaces.)"""
    rows = {}
    for name in ("single device", *STRATEGIES):
        m = re.search(
            re.escape(name)
            + r" ([\d.]+ [KMG]?i?B) ([\d.]+ [KMG]?i?B) ([\d.]+ [KMG]?i?B)"
            + r" ([\d.]+) "
            + r"(none|\d+ [a-z-]+(?:, \d+ [a-z-]+)*)",
            text,
        )
        assert m, f"no cost-table row for {name}"
        rows[name] = list(m.groups())
    return rows


def _kib(s: str) -> float:
    value, unit = s.split()
    return float(value) * {"B": 1 / 1024, "KiB": 1, "MiB": 1024, "GiB": 2**20}[unit]


def test_scaling(book):
    g = glued(book, "scaling")
    text = page_text(book, "scaling")
    n_params = int(g["n_params"].replace(",", ""))

    # Equality with the reference: each strategy's line, within the stated tolerance,
    # and the assertion's message printed.
    diffs = dict(
        re.findall(
            r"(data parallel|FSDP|tensor parallel|FSDP \+ TP) +\d\.\d{4} +(\S+e-?\d+)",
            text,
        )
    )
    assert set(diffs) == set(STRATEGIES), diffs
    assert all(float(v) <= 1e-4 for v in diffs.values()), diffs
    assert "every strategy matches one device within 0.0001" in text
    assert "step: 0 10 20 30 39 loss: " in text
    assert float(g["worst_diff"]) <= 1e-4 and float(g["explicit_diff"]) <= 1e-4

    # Data parallel: exactly one all-reduce, of 4 bytes per parameter (hand calculation).
    hand = 4 * n_params + 4  # every gradient in float32, and the loss
    assert g["dp_bytes"] == f"{hand:,}"
    assert f"data parallel: 1 all-reduce; operand {hand:,} B" in text
    # ...and what it sends by the ring model: twice 7/8 of the array.
    assert g["dp_sent"] == f"{2 * 7 / 8 * hand:,.0f}"

    # The cost table: one device communicates nothing; data parallel stores what one
    # device stores; FSDP stores an eighth (up to Adam's replicated step count);
    # tensor parallel splits the matrices; FLOPs per device fall with sharding.
    rows = _table(text)
    assert rows["single device"][4] == "none" and rows["single device"][1] == "0 B"
    assert rows["single device"][2] == "0 B"
    assert rows["data parallel"][0] == rows["single device"][0]
    single_kib = _kib(rows["single device"][0])
    assert _kib(rows["FSDP"][0]) == pytest.approx(single_kib / 8, rel=0.01)
    assert _kib(rows["FSDP + TP"][0]) < _kib(rows["tensor parallel"][0]) < single_kib
    assert all("all-reduce" in rows[n][4] for n in STRATEGIES)
    assert "all-gather" in rows["FSDP"][4]
    # Sent vs operands: an all-gather sends 7/8 of what it gathers, an all-reduce
    # twice 7/8 of its operand. Data parallel: 1.75 x; FSDP: its gathers' operands
    # are eighths, so it sends far more than its operands.
    ratio = {n: _kib(rows[n][2]) / _kib(rows[n][1]) for n in STRATEGIES}
    assert ratio["data parallel"] == pytest.approx(1.75, rel=0.01), ratio
    assert ratio["FSDP"] > 2, ratio
    # FSDP: one all-gather per weight over all 8 devices; gradients in one all-reduce.
    assert re.search(r"\d+ x all-gather over all 8 operands", text)
    assert re.search(r"1 x all-reduce over all 8 operands", text)

    # Tensor parallel, Megatron style: no weight gathered at all (so none along
    # `model`); per block, two activation all-reduces forward (after `out` and
    # `down`) and four operands backward (into `up`, `q`, `k`, `v`), each the
    # per-device batch x sequence x width in float32 (hand calculation).
    assert "all-gather" not in rows["tensor parallel"][4]
    assert "collective-permute" not in rows["tensor parallel"][4]
    layers, batch, seq, width, devices_data = 2, 16, 32, 64, 2
    per = batch // devices_data * seq * width * 4
    assert g["tp_block_bytes"] == f"{per:,}"
    assert g["tp_act_bytes"] == f"{6 * layers * per:,}"
    listing = text[text.index("kind over pass in operands bytes") :]
    listing = listing[: listing.index("No weight moves")]
    fwd = re.findall(r"all-reduce model forward (\w+) (\d+) x 8x32x64", listing)
    bwd = re.findall(r"all-reduce model backward (\w+) (\d+) x 8x32x64", listing)
    # Forward: one after attention's `out`, one after the MLP's `down`, per block.
    assert sorted(fwd) == sorted([("attention", "1"), ("mlp", "1")] * layers)
    # Backward: the MLP's input gradient; attention's three (q, k, v), unsummed.
    assert sorted(bwd) == sorted([("attention", "3"), ("mlp", "1")] * layers)
    assert "all-gather" not in listing
    n_arrays = int(re.search(r"parameters in (\d+) arrays", text).group(1))
    # Over `data`: every weight array's gradient and the loss, in one all-reduce.
    assert f"all-reduce data backward attention/mlp {n_arrays + 1} arrays" in listing
    assert (
        f"by hand: ({2 * layers} forward + {4 * layers} backward) x {per:,} B"
        f" = {6 * layers * per:,} B, as compiled" in text
    )
    # The trace-cache pitfall the page shows: a shared jit reuses the DP trace.
    assert (
        "tensor parallel shared jit: P(('data', 'model'), None, None) "
        "new function: P('data', None, 'model')" in text
    )
    # FSDP + TP: TP's activation all-reduces, FSDP's gathers over `data`; the only
    # collectives over `model` besides the activations touch the embedding and head.
    assert "activation all-reduces over model: as in tensor parallel" in text
    assert f"8 x all-reduce over model operands {6 * layers * per // 1024} KiB" in text
    assert re.search(r"\d+ x all-gather over data", text)
    # jaxguide.compiled.parameter_of traced each gather back to its argument.
    sources = re.findall(r"all-gather over model, forward, \(\d+, \d+\): (\S+)", text)
    assert sorted(sources) == ["params['head']['kernel']", "params['tok']"], sources
    permutes = re.findall(
        r"collective-permute over pairs, (forward|backward), \((\d+), (\d+)\): (\S+)", text
    )
    assert "4 x collective-permute over pairs" in text
    assert sorted(permutes) == [
        ("backward", "32", "64", "a"),
        ("backward", "64", "32", "a"),
        ("forward", "16", "64", "params['head']['kernel']"),
        ("forward", "64", "16", "params['tok']"),
    ], permutes
    # FSDP: 25 all-gathers = each matrix once (forward), each norm scale twice.
    assert "15 all-gathers of a matrix, in the forward pass" in text
    assert "5 all-gathers of a norm scale, in the backward pass" in text
    assert "5 all-gathers of a norm scale, in the forward pass" in text
    assert (g["fsdp_gathers"], g["fsdp_matrices"], g["fsdp_norms"]) == ("25", "15", "5")
    assert g["n_arrays"] == str(n_arrays) == "20"
    # The exercise: the same formula on the 4 x 2 mesh.
    per42 = batch // 4 * seq * width * 4
    assert (
        f"hand: 6 x {layers} blocks x {per42:,} B = {6 * layers * per42:,} B; "
        f"compiled: {6 * layers * per42:,} B" in text
    )
    flops = {n: float(r[3]) for n, r in rows.items()}
    assert all(flops[n] < flops["single device"] / 3 for n in STRATEGIES), flops

    # Explicit mode: the types were printed while tracing; the error really happened.
    assert "W_up float32[64@(data,model),256]" in text
    assert "ShardingTypeError" in text
    # The contracting case: refused, then resolved with out_sharding (a sum of 16 ones).
    assert (
        "ShardingTypeError: Contracting dimensions are sharded and it is ambiguous how the "
        "output should be sharded" in text
    )
    assert "a.T @ a with out_sharding=P(): float32[4,4] | entry [0, 0] = 16.0" in text
    # ...and the gathers written with jax.reshard are in the compiled program.
    assert f"collectives in the compiled step: {n_arrays} all-gather, 1 all-reduce" in text

    # Roofline: a prediction per strategy, and the glued winners are strategies.
    assert text.count("predicted µs per step on a TPU v5e per device") == 2
    # The chip's figures come from jaxguide.hardware, glued, never typed in the prose.
    assert (g["chip_flops"], g["chip_hbm"], g["chip_link"]) == (
        f"{V5E.flops('bf16'):.3g}",
        f"{V5E.hbm_bandwidth:.2g}",
        f"{LINK:.2g}",
    )
    assert "compute" not in g["bounds_now"].values()
    assert g["win_now"] in ("single device", *STRATEGIES)
    assert g["win_now"] == "data parallel"
    assert int(g["grow"]) > 50

    # The 100x model, compiled from abstract arrays (not extrapolated): its
    # parameter count by hand (2 blocks of 12 d^2 + 2 norms, tables, head, norm).
    d, vocab = 640, 64
    n_big = 2 * (12 * d * d + 2 * d) + vocab * d + seq * d + d * vocab + d
    assert g["n_big"] == f"{n_big:,}"
    assert f"{n_big:,} parameters, {n_big / n_params:.1f} times as many" in text
    grew = dict(
        (m.group(1), (float(m.group(2)), float(m.group(3))))
        for m in re.finditer(
            r"(single device|data parallel|FSDP|tensor parallel|FSDP \+ TP) +(\d+) +(\d+) +"
            r"(?:\d+|-) +[\d.]+ [KMG]?i?B",
            text[text.index("grew by FLOPs") :],
        )
    )
    assert set(grew) == {"single device", *STRATEGIES}, grew
    for name, (flops_x, bytes_x) in grew.items():
        assert flops_x > 50, name  # the matmuls grow with the parameters
        assert bytes_x < n_big / n_params / 2, name  # the bytes do not
    # The 100x roofline: read from the compiled program; every multi-device step
    # is bound by communication, and tensor parallelism is fastest.
    big = text[text.index("100x: predicted") :]
    big = big[: big.index("fastest predicted")]
    steps = {}
    for name in ("single device", *STRATEGIES):
        m = re.search(re.escape(name) + r" ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) (\w+)", big)
        assert m, name
        steps[name] = float(m.group(4))
        assert m.group(5) == ("memory" if name == "single device" else "comm"), name
    assert min(steps, key=steps.get) == g["win_big"] == "tensor parallel"
    assert steps["data parallel"] > steps["single device"]  # as the prose says
    # Data parallel at 100x by hand: one all-reduce of every gradient + the loss.
    m = re.search(r"data parallel ([\d.]+) ([\d.]+) ([\d.]+)", big)
    assert float(m.group(3)) == pytest.approx(2 * 7 / 8 * (4 * n_big + 4) / LINK * 1e6, abs=0.06)
    assert float(g["tp_vs_dp"]) == pytest.approx(
        steps["data parallel"] / steps["tensor parallel"], abs=0.06
    )
    tp_sent = re.search(r"tensor parallel sends over data: (\S+ \S+), over model: (\S+ \S+)", text)
    dp_sent = re.search(r"data parallel sends over all 8: (\S+ \S+)", text)
    assert tp_sent and dp_sent
    assert _kib(tp_sent.group(1)) + _kib(tp_sent.group(2)) < _kib(dp_sent.group(1)) / 2
    assert _kib(dp_sent.group(1)) * 1024 == pytest.approx(2 * 7 / 8 * (4 * n_big + 4), rel=0.01)
    # FSDP keeps whole weights and the whole gradient sum: about twice the params.
    assert 1.5 <= float(g["fsdp_temp_x"]) <= 2.5
    # Memory in all at 100x: data parallelism's temporaries sit in its output buffers
    # (almost none reported), and its total is the state twice (in and out, nothing
    # donated): params + Adam's two moments, float32, 24 bytes per parameter.
    assert _kib(g["dp_temp_big"]) < 1024
    assert _kib(g["dp_all_big"]) * 1024 == pytest.approx(2 * 3 * 4 * n_big, rel=0.01)
    assert _kib(g["dp_all_big"]) / 8 < _kib(g["fsdp_all_big"]) < _kib(g["dp_all_big"])
    memory = dict(
        (m.group(1), (m.group(2), m.group(3)))
        for m in re.finditer(
            r"(single device|data parallel|FSDP|tensor parallel|FSDP \+ TP) +\d+ +\d+ +"
            r"(?:\d+|-) +([\d.]+ [KMG]?i?B) +([\d.]+ [KMG]?i?B)",
            text[text.index("grew by FLOPs") :],
        )
    )
    assert memory["data parallel"] == (g["dp_temp_big"], g["dp_all_big"])
    assert memory["FSDP"] == (g["fsdp_temp"], g["fsdp_all_big"])
    # The roofline's communication time is the table's `sent` bytes over one
    # link's one-way bandwidth (LINK B/s, from jaxguide.hardware), strategy by strategy.
    now = text[text.index("this size: predicted") : text.index("100x: predicted")]
    for name in STRATEGIES:
        m = re.search(
            re.escape(name) + r" ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) (memory|comm)",
            now,
        )
        assert m, name
        comm_us = float(m.group(3))
        assert comm_us == pytest.approx(
            _kib(rows[name][2]) * 1024 / LINK * 1e6, rel=0.01, abs=0.06
        ), name
    # The data-parallel line by hand: 2 x 7/8 x bytes / LINK.
    m = re.search(r"data parallel ([\d.]+) ([\d.]+) ([\d.]+)", now)
    assert float(m.group(3)) == pytest.approx(2 * 7 / 8 * hand / LINK * 1e6, abs=0.06)
    # The memory term falls with sharding, but not by the device count.
    low, high = (float(x) for x in g["mem_div"].split(" to "))
    assert 1 < low <= high < 8
    assert (g["tokens"], g["tokens_chip"]) == (f"{16 * 32:,}", f"{16 * 32 // 8}")
    assert (g["f_now"], g["f_big"]) == ("256", "2,560")

    # Remat: less temporary memory, more FLOPs.
    assert g["flops_more"].endswith("%") and int(g["flops_more"].rstrip("%")) > 0
    # What JAX saves for the backward pass shrinks; the compiler's temporary
    # memory is reported as it is (the prose glues the verdict).
    assert _kib(g["res_after"]) < _kib(g["res_before"]) / 2
    before, after = _kib(g["temp_before"]), _kib(g["temp_after"])
    verdict = g["remat_verdict"]
    if verdict == "stays the same size":
        assert abs(after / before - 1) <= 0.005
    else:
        assert verdict.startswith("shrinks by" if after < before else "grows by")
    # ...and for a deep stack of large layers: the CPU compiler's verdict on memory and
    # FLOPs, as the page reports it.
    deep = dict(
        (m[0], (m[1], float(m[2])))
        for m in re.findall(
            r"8 layers, (no remat|jax.checkpoint) +([\d.]+ [KMG]?i?B) temporary, +([\d.]+) GFLOP",
            text,
        )
    )
    assert set(deep) == {"no remat", "jax.checkpoint"}, deep
    f0, f1 = deep["no remat"][1], deep["jax.checkpoint"][1]
    assert f1 >= f0
    assert g["deep_flops"] == (
        f"grow by {f1 / f0 - 1:.0%}"
        if f1 > f0 * 1.005
        else "stay the same (the compiled program recomputes nothing)"
    )
    t0, t1 = _kib(deep["no remat"][0]), _kib(deep["jax.checkpoint"][0])
    verdict = g["remat_verdict_big"]
    assert verdict.startswith("shrinks" if t1 < t0 else "grows" if t1 > t0 else "stays")
    assert not verdict.startswith("shrinks")  # the prose says XLA:CPU does not lower it

    # Offload: the policy types residuals for host memory; the CPU program has none.
    assert int(g["n_offloaded"]) > 0
    assert re.search(r"\d+ residuals typed for host memory, such as f32<host>\[", text)
    assert "compiled for CPU: 0 B of host memory" in text

    # Roofline, communication alone: TP's (activations) grows with the width, FSDP's
    # (weights) with the parameters; the textbook's TP threshold with these numbers.
    assert int(g["comm_grow_tp"]) < int(g["comm_grow_fsdp"])
    assert 10 <= int(g["comm_grow_tp"]) < int(g["comm_grow_fsdp"]) / 2
    assert int(g["comm_grow_fsdp"]) > 50
    assert g["tp_min_f"] == f"{4 * V5E.flops('bf16') / LINK:,.0f}"

    # Checkpoint across meshes: every array equal, resumed losses agree.
    assert re.search(r"all \d+ arrays equal after the restore", text)
    assert "saved: W_up[I_data, J_model] on a 2 x 4 mesh" in text
    assert "restored: W_up[I_data, J_model] on a 4 x 2 mesh" in text
    # ...and onto fewer devices: 4 of the 8, every array equal.
    m = re.search(r"all (\d+) arrays equal after the restore", text)
    assert "W_up[I_data, J_model] on 4 devices" in text
    assert f"all {m.group(1)} arrays equal to the saved ones: True" in text
    assert float(g["resume_gap"]) <= 1e-4
    assert g["all_steps"] == "50"

    # Sampling printed text that starts with the prompt; the glued losses agree.
    assert re.search(r"Beautiful is better\S*\s*\S", text)
    assert float(g["last_loss"]) < float(g["uniform_loss"]) == pytest.approx(4.16, abs=0.01)

    # Figures: the weight under each strategy, loss curves, bytes.
    assert len(images(book, "scaling")) >= 3
