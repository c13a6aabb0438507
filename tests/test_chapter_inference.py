"""The inference chapter: the equalities it states held, the byte counts agree with the
KV-cache formula computed here, and the glued numbers agree with independent
computations."""

from __future__ import annotations

import ast
import re

import pytest

from bookcheck import VERDICT, cell_output, glued, images, page_text

pytestmark = pytest.mark.book

CHAPTER = "inference"


def kv_bytes(layers, tokens, kv_heads, head_dim, nbytes, batch=1):
    return 2 * layers * tokens * kv_heads * head_dim * nbytes * batch


def mib(n):
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.3g} GiB"


def test_training_and_generation(book):
    text = page_text(book, CHAPTER)
    g = glued(book, CHAPTER)
    assert float(g["loss_last"]) < 0.6 * float(g["loss_first"])
    assert "6 tokens, 6 compilations" in text and g["naive_traces"] == 6
    assert "24 tokens, 1 compilation" in text
    assert "compilations: {'prefill': 1, 'decode': 1}" in text
    # The model learned the Zen: greedy decoding continues a real line of it.
    assert "'Although practicality beats purit" in text


def test_cache_equals_recomputation(book):
    out = cell_output(book, CHAPTER, "diff = np.abs(recomputed - cached_logits[0]).max()")
    assert "same tokens: True" in out
    diff = float(re.search(r"over 24 steps: (\S+)", out).group(1))
    assert diff < 1e-4
    assert float(glued(book, CHAPTER)["cache_diff"]) == diff


def test_donation_aliases_the_whole_cache(book):
    out = cell_output(book, CHAPTER, "donated = analyze(decode, *args)")
    # 2 layers x (keys, values) x (1, 128, 4, 8) float32 = 64 KiB
    assert kv_bytes(2, 128, 4, 8, 4) == 64 * 1024
    assert "cache: 64 KiB; aliased with donation: 64 KiB, without: 0 B" in out, out


def test_sampling(book):
    out = cell_output(book, CHAPTER, "styles = {")
    rows = {}
    name = None
    for line in out.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            name = line[:-1]
            rows[name] = []
        elif line.startswith("    ") and name:
            rows[name].append(line.strip())
    assert list(rows) == ["greedy", "T = 1.0", "T = 1.5", "T = 1.5, top-5"]
    assert len(set(rows["greedy"])) == 1 and len(set(rows["T = 1.5"])) >= 2
    assert "same key, same text: True" in out
    assert "decode compilations for all of this: 1" in out
    top = cell_output(book, CHAPTER, "top5 = set(")
    drawn = re.search(r"distinct tokens drawn: (\[.*\])", top).group(1)
    largest = re.search(r"the 5 largest logits: +(\[.*\])", top).group(1)
    assert set(ast.literal_eval(drawn)) <= set(ast.literal_eval(largest))
    # Without replacement: five distinct tokens from one categorical draw.
    wo = cell_output(book, CHAPTER, "distinct = jax.random.categorical(")
    tokens = ast.literal_eval(re.search(r"without replacement: (\[.*\])", wo).group(1))
    assert len(tokens) == len(set(tokens)) == 5


def test_cache_size_against_formula(book):
    out = cell_output(book, CHAPTER, "cache_size = {}")
    gqa = kv_bytes(2, 4096, 8, 128, 2, batch=8)
    mha = kv_bytes(2, 4096, 32, 128, 2, batch=8)
    assert re.search(rf"GQA +8 +{mib(gqa)} +{mib(gqa)}", out), out
    assert re.search(rf"MHA +32 +{mib(mha)} +{mib(mha)}", out), out
    g = glued(book, CHAPTER)
    assert g["mha_ratio"] == 4
    assert g["gqa_seq"] == mib(kv_bytes(32, 4096, 8, 128, 2))  # 512 MiB
    assert g["mha_seq"] == mib(kv_bytes(32, 4096, 32, 128, 2))  # 2 GiB


def test_intensity_and_critical_batch(book):
    g = glued(book, CHAPTER)
    assert float(g["i_decode"]) < 1 and float(g["i_prefill"]) > 100
    assert g["ratio_v5e"] == f"{1.97e14 / 8.1e11:.0f}"
    assert g["ratio_h100"] == f"{9.89e14 / 3.35e12:.0f}"
    v5e, h100 = int(g["crit_v5e"]), int(g["crit_h100"])
    assert 100 < v5e < h100 < 2048
    # The printed bf16 intensities, read back: the crossing lies between two of them.
    out = cell_output(book, CHAPTER, "sweep = [abstract_step(")
    points = [(int(b), float(i)) for b, i in re.findall(r"batch +(\d+): +([\d.]+) FLOP/byte", out)]
    assert [b for b, _ in points] == [1, 16, 128, 512, 2048]
    below = [b for b, i in points if i < 243]
    above = [b for b, i in points if i >= 243]
    assert max(below) < v5e < min(above)
    # The bytes beyond the weights that keep the measured intensity below the batch.
    assert float(g["moved_512"]) > 1.5 * float(g["weights_f32"])


def test_tokens_per_second_from_bytes(book):
    g = glued(book, CHAPTER)
    n = float(g["n_full"]) * 1e9
    weights = 2 * n
    for batch, key in ((1, "tps_1"), (64, "tps_64")):
        step = max(
            2 * n * batch / 9.89e14, (weights + kv_bytes(32, 4096, 8, 128, 2, batch)) / 3.35e12
        )
        expected = batch / step
        got = float(g[key].replace(",", ""))
        assert abs(got - expected) / expected < 0.01, (key, got, expected)
    # The prose: 64 sequences' caches make a step's bytes nearly four times the weights'.
    step64 = weights + kv_bytes(32, 4096, 8, 128, 2, 64)
    assert 3.5 < step64 / weights < 4


def test_int8_weights(book):
    from jaxguide.compiled import format_bytes

    g = glued(book, CHAPTER)
    text = page_text(book, CHAPTER)
    # The parameter bytes, counted here from the model's shapes (d 64, 8 query and 4
    # key/value heads of 8, MLP 256, 2 layers, 45 characters, 128 positions): each
    # kernel's elements at one byte plus a float32 scale per output column; the
    # embeddings and norms stay float32.
    d, kv, mlp, vocab, layers, max_len = 64, 32, 256, 45, 2, 128
    kernels = [(d, d), (d, kv), (d, kv), (d, d), (d, mlp), (mlp, d)] * layers + [(d, vocab)]
    kernel_elems = sum(a * b for a, b in kernels)
    columns = sum(b for _, b in kernels)
    others = vocab * d + max_len * d + (2 * layers + 1) * d  # embeddings, positions, norms
    share = kernel_elems / (kernel_elems + others)
    assert f"{len(kernels)} kernels, {share:.0%} of the parameters" in text
    assert share > 0.5  # "most of the parameters"
    assert g["f32_param_bytes"] == format_bytes(4 * (kernel_elems + others))
    assert g["int8_param_bytes"] == format_bytes(kernel_elems + 4 * columns + 4 * others)
    assert (
        f"parameters: {g['f32_param_bytes']} in float32, {g['int8_param_bytes']} with int8 kernels"
    ) in text
    # Generation with int8 weights: the glued agreement is the printed one.
    same, of = (int(x) for x in g["int8_same"].split(" of "))
    assert of == 24 and 0 <= same <= 24
    assert f"{same} of 24 greedy tokens as with float32 weights" in text
    assert float(g["int8_logit_diff"]) < 1.0
    # The compiled steps: arguments fall, temporaries grow, one conversion per kernel.
    out = cell_output(book, CHAPTER, '"int8 kernels": analyze(decode_int8')
    assert f"fusions with a convert: {{'float32': 0, 'int8 kernels': {len(kernels)}}}" in out
    assert g["int8_converts"] == len(kernels)
    for name, args, temps in (
        ("float32", "f32_args", "f32_temps"),
        ("int8 kernels", "int8_args", "int8_temps"),
    ):
        assert re.search(rf"{name} +{re.escape(g[args])} +{re.escape(g[temps])} ", out), name
    # The H100 bound with one-byte weights: between 1x and 2x the bf16 bound, and the
    # printed step times stay far above the arithmetic's (memory-bound).
    assert 1 < float(g["int8_speedup"]) < 2
    out = cell_output(book, CHAPTER, 'for name, per_weight in (("bf16", 2), ("int8", 1)):')
    times = re.findall(r"(bf16|int8) weights: ([\d.]+) ms per step \(arithmetic ([\d.]+) ms\)", out)
    assert [t[0] for t in times] == ["bf16", "int8"]
    for _, step_ms, compute_ms in times:
        assert float(step_ms) > 10 * float(compute_ms)
    assert float(times[0][1]) / float(times[1][1]) == pytest.approx(
        float(g["int8_speedup"]), rel=0.01
    )
    # Coarser scales, larger rounding error: per kernel > per column > per 16 rows.
    out = cell_output(book, CHAPTER, "scheme_error = {")
    errors = [float(x) for x in re.findall(r"relative error ([\d.e+-]+)", out)]
    assert len(errors) == 3 and errors[0] > errors[1] > errors[2] > 0


def test_sharded_serving(book):
    text = page_text(book, CHAPTER)
    g = glued(book, CHAPTER)
    assert "--- over batch: same tokens as one device: True" in text
    assert "--- over heads: same tokens as one device: True" in text
    # The cache keeps its layout through prefill and 16 decode steps.
    assert "cache after 16 steps P(('data', 'model'),)" in text
    assert "cache after 16 steps P('data', None, 'model', None)" in text
    out = cell_output(book, CHAPTER, 'for how in ("batch", "heads"):')
    batch_part, heads_part = out.split("--- over heads")
    assert "no collectives" in batch_part
    rows = re.findall(r"all-reduce +f32\[4,1,64\] +1 KiB +4", heads_part)
    assert len(rows) == 4 == g["ar_count"]  # 2 per layer, 2 layers
    assert g["ar_bytes"] == 4 * 64 * 4


def test_cpu_timing_and_figure(book):
    text = page_text(book, CHAPTER)
    assert re.search(rf"The cached generator was {VERDICT} the padded, uncached one", text)
    assert re.search(rf"the single program was {VERDICT} the cached Python loop", text)
    out = cell_output(book, CHAPTER, "for name, fn in (")
    assert [line.split()[0:2] for line in out.splitlines()] == [
        ["no", "cache"],
        ["KV", "cache"],
        ["one", "program"],
    ]
    # The whole generation as one compiled program draws the Python loop's tokens.
    assert "same tokens as the Python loop: True" in text
    imgs = images(book, CHAPTER)
    assert len(imgs) >= 1
    assert all(len(img.get("alt", "")) > 30 for img in imgs)
