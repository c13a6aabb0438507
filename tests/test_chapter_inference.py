"""The inference chapter: the values its claims glued, checked against counts made here
independently of the chapter's code (KV-cache bytes, parameter counts, the decode step's
FLOPs and bytes by hand, the roofline), and the errors it shows."""

from __future__ import annotations

import codecs
import contextlib
import io
import re

import pytest

from bookcheck import errors, glued, images, page_text

pytestmark = pytest.mark.book

CHAPTER = "inference"

# The big model of the page: Llama 3 8B's shapes with a two-matrix MLP.
VOCAB, D, HEADS, KV, HD, MLP, MAX_LEN = 128_256, 4096, 32, 8, 128, 14_336, 4096
# jaxguide.hardware's published figures, typed here independently (dense bf16, HBM).
V5E = (1.97e14, 8.1e11)
H100 = (9.89e14, 3.35e12)
H100_INT8 = 1.979e15
H100_HBM = 81_559 * 2**20  # as nvidia-smi reports an H100 80GB's memory
# The toy model's attention: 4 key/value heads of 8.
KV_TOY, HD_TOY = 4, 8


def kv_bytes(layers, tokens, kv_heads, head_dim, nbytes, batch=1):
    return 2 * layers * tokens * kv_heads * head_dim * nbytes * batch


def mib(n):
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.3g} GiB"


def number(value):
    """A glued number: '1,234' reads back as the tuple (1, 234)."""
    if isinstance(value, tuple):
        return float(str(value[0]) + "".join(f"{x:03d}" for x in value[1:]))
    if isinstance(value, str):
        return float(value.replace(",", "").rstrip("%")) / (100 if "%" in value else 1)
    return float(value)


def sizes(layers):
    kernels = layers * (2 * D * D + 2 * D * KV * HD + 2 * D * MLP) + D * VOCAB
    norms = (2 * layers + 1) * D
    tables = VOCAB * D + MAX_LEN * D
    return kernels, norms, tables


def parts(layers, batch, cached, weight_bytes=2, value_bytes=2):
    """FLOPs and bytes of one decode step's weight matmuls and of its attention over
    the cache, by hand (as the page's prose describes)."""
    kernels, norms, _ = sizes(layers)
    matmuls = (
        batch * 2 * kernels,
        weight_bytes * (kernels + norms)
        + batch * 2 * D * value_bytes  # a row of each embedding table
        + batch * value_bytes * VOCAB  # logits
        # activations: each matmul's input and output, attention's queries and result
        + batch * value_bytes * layers * (10 * D + 2 * MLP),
    )
    attention = (
        batch * 4 * layers * HEADS * HD * cached,
        kv_bytes(layers, cached, KV, HD, value_bytes, batch)
        + batch * value_bytes * 2 * layers * KV * HD,  # the new keys and values
    )
    return matmuls, attention


def count(layers, batch, cached, weight_bytes=2, value_bytes=2):
    """The whole step: both kinds of kernel."""
    (f1, b1), (f2, b2) = parts(layers, batch, cached, weight_bytes, value_bytes)
    return f1 + f2, b1 + b2


def step_time(batch, cached, peak, hbm, weight_bytes=2):
    """Kernel by kernel: each takes the longer of compute and memory; summed."""
    return sum(max(f / peak, b / hbm) for f, b in parts(32, batch, cached, weight_bytes))


def critical(peak, hbm, weight_bytes=2, value_bytes=2):
    """The batch at which the weight matmuls' FLOPs per byte reach peak / hbm."""
    (f, one), _ = parts(32, 1, 1, weight_bytes, value_bytes)
    s = parts(32, 2, 1, weight_bytes, value_bytes)[0][1] - one
    w, r = one - s, peak / hbm
    return r * w / (f - r * s)


def test_training_and_generation(book):
    g = glued(book, CHAPTER)
    # The model learned the Zen: greedy decoding continues a real line of it
    # (its first 30 characters, prompt included, appear in the Zen itself).
    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints it
        import this
    zen = codecs.decode(this.s, "rot13")
    assert g["padded_text"].startswith("Although ")
    assert g["padded_text"][:30] in zen


def test_cache_equals_recomputation(book):
    g = glued(book, CHAPTER)
    assert g["cache_traces"] == {"prefill": 1, "decode": 1}
    # dynamic_update_slice clamps its start: one value at 6 of 4 lands at 4 - 1.
    assert g["clamp_slot"] == min(6, 4 - 1)
    # Flax's GQA module on the trained kernels: its cache is the page's shape (batch 1,
    # MAX_LEN 128 positions, 4 key/value heads of 8), one per layer; nnx.view set decode
    # in both layers and allocated no cache (Flax 0.12.8), so init_cache did.
    assert tuple(g["flax_cache_shape"]) == (1, 128, 4, 8)
    assert g["flax_view_uncached"] == 2
    # Fed one token per call: the 9-character prompt, then 23 of the 24 greedy tokens.
    assert g["flax_fed"] == len("Although ") + 24 - 1
    # With is_causal=True kept while decoding (flax#5591): right at position 0 only.
    assert number(g["flag_diff_first"]) < number(g["flag_diff_min"])
    from importlib.metadata import version

    assert g["flax_version"] == version("flax")


def test_errors_shown(book):
    raised = errors(book, CHAPTER)
    assert [e.name for e in raised] == ["ValueError"]
    # Flax's cache takes one token per call (flax#1317): a 9-token prompt is refused,
    # its keys (batch 1, 9 tokens, 4 key/value heads of 8) against one token's.
    assert "Autoregressive cache shape error" in raised[0].message
    assert "(1, 9, 4, 8)" in raised[0].message


def test_donation_aliases_the_whole_cache(book):
    g = glued(book, CHAPTER)
    # 2 layers x (keys, values) x (1, 128, 4, 8) float32 = 64 KiB
    assert g["cache_tiny_bytes"] == kv_bytes(2, 128, 4, 8, 4) == 64 * 1024
    assert g["alias_donated"] == g["cache_tiny_bytes"] and g["alias_kept"] == 0
    # In place only with donation (jax#9132): copies counted in the compiled text.
    # Counted by bytes, in any shape: each of the 4 arrays is transposed for the
    # einsums even when donated; without donation each is also copied as it is.
    assert g["cache_copies"] == {"donated": 4, "kept": 8}
    assert g["copies_donated"] == 4 and g["copies_kept"] == 8


def test_prefill_buckets(book):
    """jax-ml/jax#2521: a prefill per prompt length, or one per bucket."""
    g = glued(book, CHAPTER)
    lengths = (6, 11, 17, 21)
    assert g["prefill_exact_compiles"] == len(set(lengths))
    # Powers of two from 16: the smallest that holds each prompt.
    buckets = {max(16, 1 << (n - 1).bit_length()) for n in lengths}
    assert g["prefill_bucket_compiles"] == len(buckets)


def test_ragged_prompts_and_end_token(book):
    g = glued(book, CHAPTER)
    assert g["ragged_ended"] == 4
    # The four prompts' lengths: "Errors", "Readability", ...
    lines = ["Errors", "Readability", "Unless explicitly", "Although practicality"]
    assert g["ragged_lengths"] == ", ".join(str(n) for n in sorted({len(x) for x in lines}))
    assert 0 < g["ragged_steps"] < max(map(len, lines)) - min(map(len, lines)) + 60
    # Pads and finished rows hold -1, no token id, so never the end token (id 0).
    assert g["ragged_pad"] == -1
    # Flax's dot_product_attention with grouped heads and a mask (flax#5177).


def test_sampling(book):
    g = glued(book, CHAPTER)
    rows = g["distinct_rows"]
    assert list(rows) == ["greedy", "T = 1.5", "T = 1.5, top-5", "T = 1.5, top-p 0.9"]
    # Sampling more narrowly never gives more distinct rows than T = 1.5 over the whole vocabulary.
    assert rows["greedy"] <= min(rows.values())
    assert max(rows["T = 1.5, top-5"], rows["T = 1.5, top-p 0.9"]) <= 3  # 3 rows
    assert set(g["top5_drawn"]) <= set(g["top5"]) and len(g["top5"]) == 5
    drawn = g["without_replacement"]
    assert all(isinstance(t, int) for t in drawn)
    # replace defaults to True (jax#27268): five draws repeat a token.
    assert 1 <= g["default_repeats"] <= 4


def test_cache_size_against_formula(book):
    g = glued(book, CHAPTER)
    gqa = kv_bytes(2, 4096, 8, 128, 2, batch=8)
    mha = kv_bytes(2, 4096, 32, 128, 2, batch=8)
    assert g["cache_sizes"] == {"GQA": (gqa, gqa), "MHA": (mha, None)}
    assert g["mha_ratio"] == 4
    assert g["gqa_2l"] == mib(gqa)
    assert g["gqa_seq"] == mib(kv_bytes(32, 4096, 8, 128, 2))  # 512 MiB
    assert g["mha_seq"] == mib(kv_bytes(32, 4096, 32, 128, 2))  # 2 GiB


def test_intensity_and_the_compiled_check(book):
    g = glued(book, CHAPTER)
    assert g["bf16_widened"] > 2 * sizes(2)[0]  # temporaries above the bf16 weights
    # cost_analysis against the hand count: FLOPs within 1%, bytes at batch 1 too;
    # at batch 512 the whole float32 token table more, and the copies listed below.
    table = 4 * VOCAB * D / 2**30
    assert number(g["table_gb"]) == pytest.approx(table, abs=0.005)
    # A gather of 16 rows is charged as the table (2 GB), not its 256 KiB.
    assert g["gather_16"].endswith("GiB")
    # Beyond the table at batch 512: the rest of cost_analysis's excess.
    assert number(g["beyond_512"]) == pytest.approx(number(g["excess_512"]) - table, abs=0.011)
    # The toy decode (MAX_LEN 128, 2 layers, 4 kv heads of 8, float32) at positions 3
    # and 120: the same bytes, more than its whole cache of 2 x 2 x 128 x 4 x 8 x 4 B.
    assert g["pos_same_cost"].endswith("KiB")
    assert float(g["pos_same_cost"].split()[0]) * 2**10 > 2 * 2 * 128 * KV_TOY * HD_TOY * 4


def test_head_major_cache(book):
    """Either layout's step at batch 4 reads its donated keys and values (2 x 4 x 4 x
    128 x 8 float32 numbers) at least once; a copy count is a count."""
    g = glued(book, CHAPTER)
    for key in ("hm_bytes_4", "bs_bytes_4"):
        value, unit = g[key].split()
        assert unit == "KiB" and float(value) >= 2 * 4 * 4 * 128 * 8 * 4 / 2**10
    assert isinstance(g["bs_copies_1"], int) and g["bs_copies_1"] >= 0


def test_critical_batch_by_hand(book):
    g = glued(book, CHAPTER)
    assert number(g["ratio_v5e"]) == round(V5E[0] / V5E[1])
    assert number(g["ratio_h100"]) == round(H100[0] / H100[1])
    v5e, h100 = critical(*V5E), critical(*H100)
    assert number(g["crit_v5e"]) == pytest.approx(v5e, abs=1)
    assert number(g["crit_h100"]) == pytest.approx(h100, abs=1)
    assert V5E[0] / V5E[1] < v5e < h100 < 1.5 * H100[0] / H100[1]
    # Attention: each cached bf16 number serves the 4 query heads of its group with a
    # multiply and an add, 8 FLOPs for 2 bytes, at any batch and cache length.
    for cached in (32, 1024, 4096):
        f, b = parts(32, 1, cached)[1]
        assert f / b <= HEADS // KV
    assert number(g["att_intensity"]) == HEADS // KV
    assert g["att_group"] == HEADS // KV
    # Without the activations (10 d + 2 mlp bf16 values per sequence and layer), lower.
    act = 2 * 32 * (10 * D + 2 * MLP)
    (f, one), _ = parts(32, 1, 1)
    s = parts(32, 2, 1)[0][1] - one
    r = H100[0] / H100[1]
    assert number(g["crit_h100_no_act"]) == pytest.approx(
        r * (one - s) / (f - r * (s - act)), abs=1
    )
    assert number(g["act_share"]) == pytest.approx(act / s, abs=0.005)
    # The int8 exercise: weight-only int8 halves the critical batch; int8 arithmetic
    # raises it above bf16's (the per-sequence bytes weigh twice as much).
    assert number(g["crit_w8"]) == pytest.approx(critical(*H100, weight_bytes=1), abs=1)
    assert number(g["crit_a8"]) == pytest.approx(
        critical(H100_INT8, H100[1], weight_bytes=1), abs=1
    )
    # With int8 activations too, every byte halves with the time per FLOP: bf16's.
    assert number(g["crit_all8"]) == pytest.approx(critical(*H100), abs=1)
    assert number(g["crit_all8"]) == pytest.approx(
        critical(H100_INT8, H100[1], weight_bytes=1, value_bytes=1), abs=1
    )
    assert number(g["crit_bf16_h100"]) == pytest.approx(critical(*H100), abs=1)


def test_step_time_kernel_by_kernel(book):
    """A step at the largest batch whose caches of 1,024 tokens fit in an H100's HBM
    beside the bf16 weights: the matmuls are compute-bound, attention is not, and the
    sum exceeds one roofline over the step."""
    g = glued(book, CHAPTER)
    kernels, norms, tables = sizes(32)
    fit = int((H100_HBM - 2 * (kernels + norms + tables)) // kv_bytes(32, 1024, 8, 128, 2))
    assert g["fit_1024"] == fit == 545
    (mm_f, mm_b), (att_f, att_b) = parts(32, fit, 1024)
    assert number(g["mm_compute_big_ms"]) == pytest.approx(1e3 * mm_f / H100[0], abs=0.05)
    assert number(g["mm_memory_big_ms"]) == pytest.approx(1e3 * mm_b / H100[1], abs=0.05)
    assert mm_f / H100[0] > mm_b / H100[1]
    step = 1e3 * step_time(fit, 1024, *H100)
    assert number(g["step_big_ms"]) == pytest.approx(step, abs=0.05)
    pooled = 1e3 * max((mm_f + att_f) / H100[0], (mm_b + att_b) / H100[1])
    assert number(g["pooled_big_ms"]) == pytest.approx(pooled, abs=0.05)
    assert number(g["att_share_big"]) == pytest.approx(att_b / H100[1] * 1e3 / step, abs=0.005)
    # The prose says so, not "1,024 sequences".
    assert "at 1,024 sequences" not in page_text(book, CHAPTER)


def test_tokens_per_second_from_bytes(book):
    g = glued(book, CHAPTER)
    kernels, norms, tables = sizes(32)
    assert number(g["n_full"]) == pytest.approx((kernels + norms + tables) / 1e9, abs=0.01)
    assert number(g["n_read"]) == pytest.approx((kernels + norms) / 1e9, abs=0.01)
    for batch, key in ((1, "tps_1"), (64, "tps_64")):
        expected = batch / step_time(batch, 4096, *H100)
        assert number(g[key]) == pytest.approx(expected, rel=0.005), key
    # 64 sequences' caches make a step's bytes about four times the weights'.
    assert number(g["bytes_64"]) == pytest.approx(
        count(32, 64, 4096)[1] / (2 * (kernels + norms)), abs=0.05
    )
    int8 = 1 / step_time(1, 4096, *H100, weight_bytes=1)
    # Sequences of 4,096 tokens that fit in an H100's HBM beside every bf16 parameter.
    fit = (H100_HBM - 2 * (kernels + norms + tables)) // kv_bytes(32, 4096, 8, 128, 2)
    assert g["hbm_fit"] == fit
    assert number(g["tps_int8"]) == pytest.approx(int8, rel=0.005)
    assert number(g["int8_speedup"]) == pytest.approx(int8 / number(g["tps_1"]), rel=0.01)
    # At the critical batch with 4,096 cached tokens, attention's bytes dominate the
    # step and the arithmetic units are busy a small share of it.
    crit = round(critical(*H100))
    (mm_f, _), (att_f, att_b) = parts(32, crit, 4096)
    step = step_time(crit, 4096, *H100)
    assert number(g["busy_4096"]) == pytest.approx((mm_f + att_f) / H100[0] / step, abs=0.005)
    assert number(g["att_share_4096"]) == pytest.approx(att_b / H100[1] / step, abs=0.005)
    # An int8 cache with a bf16 scale per (layer, K or V, position, kv head).
    per_seq = kv_bytes(32, 4096, 8, 128, 1) + 2 * 2 * 32 * 4096 * 8
    assert g["kv_fit_int8"] == (H100_HBM - 2 * (kernels + norms + tables)) // per_seq


def test_int8_weights(book):
    from jaxguide.compiled import format_bytes

    g = glued(book, CHAPTER)
    # The parameter bytes, counted here from the toy model's shapes (d 64, 8 query and
    # 4 key/value heads of 8, MLP 256, 2 layers, 45 characters, 128 positions): each
    # kernel's elements at one byte plus a float32 scale per output column; the
    # embeddings and norms stay float32.
    d, kv, mlp, vocab, layers, max_len = 64, 32, 256, 45, 2, 128
    kernels = [(d, d), (d, kv), (d, kv), (d, d), (d, mlp), (mlp, d)] * layers + [(d, vocab)]
    kernel_elems = sum(a * b for a, b in kernels)
    columns = sum(b for _, b in kernels)
    others = vocab * d + max_len * d + (2 * layers + 1) * d  # embeddings, positions, norms
    assert g["kernel_count"] == len(kernels)
    assert g["kernel_share"] == pytest.approx(kernel_elems / (kernel_elems + others))
    assert g["kernel_share"] > 0.5  # "most of the parameters"
    assert g["f32_param_bytes"] == format_bytes(4 * (kernel_elems + others))
    assert g["int8_param_bytes"] == format_bytes(kernel_elems + 4 * columns + 4 * others)
    same, of = (int(x) for x in g["int8_same"].split(" of "))
    assert of == 24 and 0 <= same <= 24
    # The compiled steps: one conversion per kernel, only in the int8 step.
    assert g["int8_converts"] == len(kernels)


def test_sharded_serving(book):
    g = glued(book, CHAPTER)
    assert g["batch_collectives"] == 0
    assert g["ar_count"] == 4  # 2 per layer, 2 layers
    assert g["ar_bytes"] == 4 * 64 * 4  # (batch 8 / 2, 1, 64) float32
    assert g["ar_groups"] == [4]
    # scaling-book's latency condition for 4 shards: 4 x 4.5e10 B/s x 1 us.
    assert number(g["ici_threshold_kb"]) == round(4 * 4.5e10 * 1e-6 / 1e3)
    assert g["ici_link"] == "4.5"  # x 10^10 bytes/s, one way
    assert number(g["ici_threshold_ratio"]) == round(4 * 4.5e10 * 1e-6 / (4 * 64 * 4))


def test_units_and_kernels_named(book):
    # One unit for bytes: binary prefixes (format_bytes), no decimal GB.
    assert not re.search(r"\d GB\b", page_text(book, CHAPTER))


def test_cpu_timing_and_figure(book):
    g = glued(book, CHAPTER)
    text = page_text(book, CHAPTER)
    # The generators are timed at the default LLVM level, interleaved; the prose shows
    # the measured ratios.
    assert "benchmark_interleaved" in text
    assert f"The cached one was {g['cpu_cache_ratio']} times faster" in text
    imgs = images(book, CHAPTER)
    assert len(imgs) >= 1
    assert all(len(img.get("alt", "")) > 30 for img in imgs)


def test_row_positions(book):
    g = glued(book, CHAPTER)
    # vmap of a one-row decode: each cache write is a scatter (jax#21367), one per
    # array: keys and values, in each of the toy model's 2 layers.
    assert g["row_vmap_scatter"] == 2 * 2


def test_sharded_latency(book):
    """The 32-layer model split over heads on 1, 4 and 8 TPU v5e chips, batch 1 with
    1,024 cached tokens: each chip's share of the step, by hand, plus two ring
    all-reduces per layer of one token's bf16 activations at 1 us per hop."""
    g = glued(book, CHAPTER)
    peak, hbm, link = 1.97e14, 8.1e11, 4.5e10  # TPU v5e, typed here
    ms = {}
    for n in (1, 4, 8):
        compute = step_time(1, 1024, peak, hbm) / n
        comm = 2 * 32 * 2 * (n - 1) * (1e-6 + 2 * D / n / link)
        ms[n] = 1e3 * (compute + comm)
    assert g["tp_ms"] == {n: round(v, 2) for n, v in ms.items()}
    assert number(g["tp_ms_1"]) == pytest.approx(ms[1], abs=0.05)
    assert number(g["tp_ms_8"]) == pytest.approx(ms[8], abs=0.05)
    assert number(g["tp_speedup"]) == pytest.approx(ms[1] / ms[8], abs=0.05)
    comm8 = 1e3 * 2 * 32 * 14 * (1e-6 + 2 * D / 8 / link)
    assert g["tp_comm_ms_8"] == f"{comm8:.2f}"
    assert number(g["tp_comm_share"]) == pytest.approx(comm8 / ms[8], abs=0.005)
    assert g["tp_hops_8"] == 14 and g["tp_allreduces"] == 64
    from jaxguide.compiled import format_bytes

    assert g["tp_message"] == format_bytes(2 * D)  # one token's bf16 activations


def test_full_model_weights_cover_its_matrices(book):
    """The 32-layer model's bf16 weights hold at least its matrices, counted by hand
    (embedding, and per layer q, o, k, v and the MLP's two), and no more than twice
    that (a separate head, norms and biases)."""
    value, unit = glued(book, "inference")["full_weights"].split()
    assert unit == "GiB"
    d, kv, mlp, vocab, layers = 4096, 1024, 14_336, 128_256, 32
    matrices = vocab * d + layers * (2 * d * d + 2 * d * kv + 2 * d * mlp)
    assert 2 * matrices <= float(value) * 2**30 * 1.005 < 4 * matrices


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "that would keep the H100's arithmetic busy": "false (r48): at 4,096 cached tokens "
    "attention dominates; the critical batch only makes the weight matmuls compute-bound",
    "traced (so compiled)": "unclear (r48): the cell only lowers it",
}
