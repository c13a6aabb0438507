"""The performance chapter: the trace it offers for download is a real trace of the
step it profiles, the numbers it prints agree with each other and with hand
calculations, and every equality it claims holds on the page."""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest
from bs4 import BeautifulSoup

from bookcheck import cell_output, glued, images, page_text
from jaxguide.compiled import format_bytes

pytestmark = pytest.mark.book

CH = "performance"
SIZES = [256, 512, 512, 16]
WEIGHT_ELEMS = sum(m * n for m, n in zip(SIZES, SIZES[1:]))
BIAS_BYTES = sum(SIZES[1:]) * 4


def test_the_download_is_the_profiled_trace(book):
    soup = BeautifulSoup(book.page(CH), "html.parser")
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
    # The page's own count of operations per step comes from the same trace.
    g = glued(book, CH)
    assert g["trace_ops_per_step"] == len(ops) // 5
    text = page_text(book, CH)
    assert f"({len(ops) // 5} per step)" in text
    assert f"jitted: {len(ops) // 5} operations from 1 program" in text
    # The three files JAX 0.10.2 writes are listed.
    out = cell_output(book, CH, "with jax.profiler.trace(trace_dir")
    for suffix in (".xplane.pb", ".trace.json.gz", "perfetto_trace.json.gz"):
        assert suffix in out, suffix


def test_time_per_scope(book):
    g = glued(book, CH)
    out = cell_output(book, CH, "per_phase = time_by(")
    rows = re.findall(
        r"^(\w+ (?:forward|backward)|sgd) +([\d.]+) µs per step +([\d.]+)%", out, re.M
    )
    names = [r[0] for r in rows]
    for layer in range(3):
        assert f"layer{layer} forward" in names and f"layer{layer} backward" in names
    assert "sgd" in names and "loss forward" in names
    shares = [float(r[2]) for r in rows]
    assert abs(sum(shares) - 100) < 0.5, shares
    assert shares == sorted(shares, reverse=True)
    assert g["phase_top"] == names[0]
    layer_share = sum(float(r[2]) for r in rows if r[0].startswith("layer"))
    assert abs(layer_share - float(g["phase_layers_share"].rstrip("%"))) <= 1.0
    assert layer_share > 90


def test_what_to_look_for(book):
    g = glued(book, CH)
    out = cell_output(book, CH, "cev = read_events(")
    first, compiling = map(
        float,
        re.search(r"first call +([\d.]+) ms, of which XLA compiling ([\d.]+) ms", out).groups(),
    )
    second = float(re.search(r"second call +([\d.]+) ms", out).group(1))
    assert 0 < compiling < first and second < first / 3
    # The printed times are rounded to 0.1 ms; the glued ratio is from the unrounded ones.
    if second >= 0.5:
        low, high = (first - 0.05) / (second + 0.05), (first + 0.05) / (second - 0.05)
        assert low - 1 <= int(g["compile_ratio"]) <= high + 1, (g["compile_ratio"], low, high)
    eager = re.search(r"not jitted: (\d+) operations from (\d+) programs", page_text(book, CH))
    assert int(eager.group(2)) == g["eager_programs"] > 10
    assert int(eager.group(1)) > g["trace_ops_per_step"]
    idle, span, share = re.search(
        r"device idle between steps: ([\d.]+) ms of ([\d.]+) ms \((\d+)%\)", page_text(book, CH)
    ).groups()
    assert 0 < float(idle) < float(span)
    assert abs(100 * float(idle) / float(span) - int(share)) <= 1
    assert g["idle_share"] == f"{share}%"


def test_mixed_precision(book):
    g = glued(book, CH)
    text = page_text(book, CH)
    finals = dict(
        re.findall(
            r"(float32|bfloat16 compute) +weights kept in float32, loss [\d.]+ -> ([\d.]+)", text
        )
    )
    assert finals == {"float32": g["mp_final_f32"], "bfloat16 compute": g["mp_final_bf16"]}
    assert abs(float(finals["float32"]) - float(finals["bfloat16 compute"])) < 0.05 * float(
        finals["float32"]
    )
    assert float(g["mp_max_gap"].rstrip("%")) < 5
    pure = re.search(r"bfloat16 weights +weights kept in bfloat16, loss [\d.]+ -> ([\d.]+)", text)
    assert pure and pure.group(1) == g["mp_final_pure"]
    assert float(pure.group(1)) > 1.5 * float(finals["float32"])
    lost = re.search(
        r"first update with bfloat16 weights: (\d+)% of layer 1's weights did not change", text
    )
    assert lost and f"{lost.group(1)}%" == g["mp_lost"] and int(lost.group(1)) > 5
    # Memory: the weights halve, by hand; the arguments are weights + input + biases.
    x_bytes = 4096 * 256 * 4
    for dtype, size in (("float32", 4), ("bfloat16", 2)):
        row = re.search(
            rf"^{dtype} +(\S+ \S+) +(\S+ \S+) +(\S+ \S+)$", cell_output(book, CH, "mem = {"), re.M
        )
        assert row, dtype
        assert row.group(1) == format_bytes(WEIGHT_ELEMS * size)
        assert row.group(2) == format_bytes(WEIGHT_ELEMS * size + x_bytes + BIAS_BYTES)
    assert g["mem_w_f32"] == format_bytes(WEIGHT_ELEMS * 4)
    assert g["mem_w_bf16"] == format_bytes(WEIGHT_ELEMS * 2)
    # XLA:CPU widens: bfloat16 in and out, float32 convert, dot and tanh inside.
    out = cell_output(book, CH, "def layer_bf16")
    assert "inputs and output: bfloat16" in out
    assert "float16 inputs, matmul run in float32: True" in out
    for op in ("convert(", "dot(", "tanh("):
        assert re.search(r"= f32\[64,64\]\S* " + re.escape(op), out), op
    assert "precision in the program: [DEFAULT, DEFAULT]" in text
    assert "precision in the program: [HIGHEST, HIGHEST]" in text
    errs = re.findall(
        r"precision in the program: \[\w+, \w+\], max \|result - float64\| = (\d[-+\d.e]*)", text
    )
    assert (
        len(errs) == 2 and errs[0] == errs[1] and float(errs[0]) < 1e-3
    )  # CPU: float32 either way


def test_gradient_accumulation(book):
    g = glued(book, CH)
    text = page_text(book, CH)
    assert (
        float(
            re.search(
                r"accumulated over 4 microbatches vs the full batch: max \|diff\| = (\d[-+\d.e]*)",
                text,
            ).group(1)
        )
        < 1e-5
    )
    assert (
        float(
            re.search(r"first try vs the full batch: max \|diff\| = (\d[-+\d.e]*)", text).group(1)
        )
        > 1e-2
    )
    assert (
        float(
            re.search(r"with pcast vs the full batch: max \|diff\| = (\d[-+\d.e]*)", text).group(1)
        )
        < 1e-5
    )
    auto = cell_output(book, CH, "for kind, arrays, where in collectives_by_place(accumulate,")
    assert "all-reduce of 6 gradient arrays: in the loop body" in auto and "once" not in auto
    fixed = cell_output(book, CH, "def accumulate_then_reduce")
    assert fixed.count("all-reduce of 6 gradient arrays: once") == 1 and "loop body" not in fixed
    param_bytes = (WEIGHT_ELEMS * 4) + BIAS_BYTES
    assert g["acc_bytes_manual"] == format_bytes(param_bytes)
    assert g["acc_bytes_auto"] == format_bytes(4 * param_bytes)
    assert float(g["acc_err"]) < 1e-5
    for k in (1, 2, 8):
        m = re.search(
            rf"{k} microbatches: max \|diff\| = (\d[-+\d.e]*), 1 all-reduces, all outside the loop: True",
            text,
        )
        assert m and float(m.group(1)) < 1e-5, k


def test_collective_matmul(book):
    g = glued(book, CH)
    text = page_text(book, CH)
    for name in ("allgather_matmul", "collective_matmul"):
        d = float(re.search(rf"{name} max \|diff\| to X @ W = (\d[-+\d.e]*)", text).group(1))
        assert d < 1e-3, name
    block = (512 // 8) * 256 * 4  # one device's rows of X, float32
    assert f"allgather_matmul 1 × all-gather {format_bytes(block)} of operands per device" in text
    assert (
        f"collective_matmul 7 × collective-permute {format_bytes(7 * block)} of operands per device"
        in text
    )
    assert g["cm_blk"] == format_bytes(block) and g["cm_sent"] == format_bytes(7 * block)
    sched = cell_output(book, CH, "sched_text = ")
    order = sched.splitlines()[0].split(" → ")
    assert order.count("permute") == 7 and order.count("matmul") >= 8
    assert "collective-permute-start in the program: False" in sched
    assert "scheduled: True" in sched
    shares = re.findall(r"(allgather_matmul|collective_matmul) +collectives +(\d+)% of", text)
    assert {n for n, _ in shares} == {"allgather_matmul", "collective_matmul"}
    assert dict(shares)["allgather_matmul"] + "%" == g["cm_share_ag"]


def test_figures_have_alt_text(book):
    imgs = images(book, CH)
    assert len(imgs) >= 3  # time per scope, the gaps timeline, the loss curves
    assert all(len(img.get("alt", "")) > 30 for img in imgs)


def test_collective_matmul_roofline(book):
    """The prediction for published hardware: the permute of one bf16 [64, 256] block
    over one link against the block matmul, and the F/n at which the permute hides."""
    g = glued(book, CH)
    text = page_text(book, CH)
    block_bf16 = (512 // 8) * 256 * 2
    chips = {"TPU v5e": (1.97e14, 4.5e10), "H100 SXM": (9.89e14, 4.5e11)}
    for chip, (flops, link) in chips.items():
        m = re.search(
            rf"{chip} +per step: matmul +([\d.]+) µs, permute +([\d.]+) µs; "
            rf"hidden once F/n ≥ ([\d,]+) \(here F/n = 64\)",
            text,
        )
        assert m, chip
        matmul_us, permute_us = float(m.group(1)), float(m.group(2))
        assert permute_us == pytest.approx(block_bf16 / link * 1e6, abs=1e-3)
        assert matmul_us < permute_us  # F/n = 64 is far below the bar
        assert matmul_us >= 2 * 64 * 256 * 64 / flops * 1e6 - 1e-3  # at least the FLOP time
        assert m.group(3) == f"{flops / link:,.0f}"
    assert g["cm_need_tpu"] == f"{1.97e14 / 4.5e10:,.0f}"
    assert g["cm_need_h100"] == f"{9.89e14 / 4.5e11:,.0f}"
    assert g["cm_fn"] == "64" and g["cm_n_dev"] == "8"


def test_mixed_precision_buffers(book):
    """The temporaries are not halved: the float32 matmul results (from
    preferred_element_type) are stored beside the bfloat16 activations."""
    out = cell_output(book, CH, "bf16_text = ")
    shapes = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert shapes.count("f32[4096,512]") == 2 and shapes.count("bf16[4096,512]") == 2, out


def test_roofline_exercise(book):
    """The exercise: at F/n = 1024 the permutes are exposed on both chips, at 8192 hidden."""
    text = page_text(book, CH)
    rows = re.findall(r"F/n = +(\d+) (TPU v5e|H100 SXM) +matmul .*?: (hidden|exposed)", text)
    assert sorted(rows) == sorted(
        [
            ("1024", "TPU v5e", "exposed"),
            ("1024", "H100 SXM", "exposed"),
            ("8192", "TPU v5e", "hidden"),
            ("8192", "H100 SXM", "hidden"),
        ]
    ), rows
