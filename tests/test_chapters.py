"""Chapter by chapter: the numbers a page shows agree with independent computations,
and the demonstrations the prose describes really happened."""

from __future__ import annotations

import ast
import json
import re

import numpy as np
from bookcheck import load, source
import pytest
from bs4 import BeautifulSoup

pytestmark = pytest.mark.book


def glued(book, chapter: str) -> dict:
    """The values a chapter glued into its prose, as Python values."""
    raw = json.loads((book.executed / f"{chapter}.glue.json").read_text())
    values = {}
    for key, output in raw.items():
        text = output["data"].get("text/plain", "")
        try:
            values[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[key] = text
    return values


def page_text(book, chapter: str) -> str:
    text = BeautifulSoup(book.page(chapter), "html.parser").get_text(" ")
    return " ".join(text.split())


VERDICT = r"(\d+\.\d× (?:faster|slower) than|as fast, within 10%, as)"


def test_transforms(book):
    g = glued(book, "transforms")
    assert g["f_1_3"] == pytest.approx(3 * np.sin(1.0) + 2, rel=1e-6)
    assert g["df_dx_1"] == pytest.approx(3 * np.cos(1.0), rel=1e-6)
    text = page_text(book, "transforms")
    # Trace-time print ran once, debug.print on both calls.
    assert text.count("Python print runs while tracing, x = JitTracer") == 1
    assert text.count("jax.debug.print runs on every call") >= 2
    assert "traced 2 times, for shapes [(3,), (4,)]" in text
    # The jaxprs the prose reads line by line.
    assert "jit[ name=f" in text and "f32[4,3] = sin" in text
    assert "TracerBoolConversionError" in text and "ConcretizationTypeError" in text
    assert "(8, 4, 3) -> (8, 4)" in text
    for key in ("step_speedup", "vmap_vs_loop", "jitvmap_vs_vmap"):
        assert re.fullmatch(VERDICT, g[key]), (key, g[key])
        assert g[key] in text


def test_autodiff(book):
    g = glued(book, "autodiff")
    assert g["df_at_2"] == 3 * 2.0**2 + 2
    assert g["newton_grad"] == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-5)
    text = page_text(book, "autodiff")
    assert "largest difference to finite differences" in text
    assert "100.0 nan" in text            # the naive softplus gradient
    assert "100.0 1.0 0.5" in text        # the custom_vjp one
    assert "check_grads passed" in text
    assert "[[ 6. 0.] [ 0. 12.]]" in text  # the Hessian block diag(6w)
    for key in ("tall_fwd_vs_rev", "wide_rev_vs_fwd"):
        assert re.fullmatch(VERDICT, g[key]) and g[key] in text


def test_random(book):
    g = glued(book, "random")
    expected = {"normal": 0.0, "uniform": 0.5, "gamma": 2.0, "beta": 2 / 7, "poisson": 3.0}
    for name, mean in expected.items():
        assert g["mean_" + name] == pytest.approx(mean, abs=0.03), name
    text = page_text(book, "random")
    assert "correlation: 1.0" in text      # the key-reuse bug, shown
    assert "key<fry>" in text and "uint32 (2,)" in text
    assert "is a typed key? True False" in text
    soup = BeautifulSoup(book.page("random"), "html.parser")
    assert len(soup.select("div.cell_output img")) >= 1


@pytest.mark.parametrize("chapter", ["numpy", "transforms", "autodiff", "random", "pmap", "sharding", "shard_map", "training", "multiprocess"])
def test_exercises_have_hidden_executed_solutions(book, chapter):
    soup = BeautifulSoup(book.page(chapter), "html.parser")
    exercises = soup.select("div.exercise")
    solutions = soup.select("div.solution")
    assert len(exercises) >= 2 and len(solutions) >= len(exercises)
    for sol in solutions:
        assert "dropdown" in sol.get("class", [])
        assert sol.select("div.cell_input"), "solution has no executed code"


def images(book, chapter):
    return BeautifulSoup(book.page(chapter), "html.parser").select("div.cell_output img")


def test_pmap(book):
    g = glued(book, "pmap")
    text = page_text(book, "pmap")
    # Today's error for too many rows, then the fix and jaxguide's own clear error.
    assert "cannot select an axis to squeeze out" in text
    assert "(16, 3) -> (8, 2, 3)" in text
    assert "a batch of 10 examples does not divide across 8 devices" in text
    # Collectives: psum shares and pmean agree with an independent computation.
    assert "axis_index: [0 1 2 3 4 5 6 7]" in text
    assert "pmean: [4.5 4.5 4.5 4.5 4.5 4.5 4.5 4.5]" in text
    # pmap is built on jit + shard_map, visible in its jaxpr.
    assert "shard_map[" in text and "_internal_pmap_axis_name" in text
    assert "jit(pmap) shard_map: True jit levels: 2" in text
    assert "jit(vmap) shard_map: False" in text
    assert re.fullmatch(VERDICT, g["pmap_vs_jitvmap"]) and g["pmap_fastest"] in {"vmap", "jit(vmap)", "pmap", "jit(pmap)", "pmap(jit)"}
    assert "CPU 0" in text  # visualize_array_sharding's text
    assert len(images(book, "pmap")) >= 2  # sharding picture + timing chart


def test_sharding(book):
    text = page_text(book, "sharding")
    g = glued(book, "sharding")
    # Every layout the prose names is pictured, with the book's notation and JAX's text view.
    for name in ("A[I_x, J]", "A[I, J_y]", "A[I_x, J_y]", "A[I, J]", "s[J_y]", "B[I, J_y]"):
        assert name in text, name
    assert text.count("CPU 0,1,2,3,4,5,6,7") >= 1 and "CPU 0,2,4,6" in text
    assert len(images(book, "sharding")) >= 6
    assert "<Axes" not in text  # show() leaves no object repr behind
    assert "float32[8@x,8@y]" in text and "float32[8@x,8]" in text
    assert "ShardingTypeError" in text
    assert "pinned_host" in text and "fully replicated: True" in text
    assert re.fullmatch(VERDICT, g["shard_vs_single"]) and g["shard_vs_single"] in text


def test_shard_map(book):
    text = page_text(book, "shard_map")
    assert "inside, while tracing: block shape (2,)" in text and "outside: global shape (16,)" in text
    for d in range(8):
        assert f"device {d} holds [{2 * d}. {2 * d + 1}.]" in text
    assert "psum: 120.0" in text                         # sum(range(16)), replicated
    assert "does not match the specs of the input" in text  # Explicit-mesh trap
    assert "could not infer replication" in text          # check_vma
    # The three-way layer: all equal to the reference, and what each program contains.
    results = re.findall(r"(automatic|semi-automatic|manual) +equal to the reference: max \|diff\| = (\S+)", text)
    assert [r[0] for r in results] == ["automatic", "semi-automatic", "manual"], results
    assert all(float(r[1]) < 1e-5 for r in results), results
    assert "manual: {'all-reduce': 1}" in text
    assert len(images(book, "shard_map")) >= 2            # W's sharding + the ring picture


def test_training(book):
    g = glued(book, "training")
    text = page_text(book, "training")
    # Training converged: the glued accuracies are above the bar and appear in the prose.
    for key, bar in (("acc_adamw", 0.95), ("acc_nnx", 0.95), ("acc_sgd", 0.85)):
        value = float(g[key].rstrip("%")) / 100
        assert value > bar, (key, g[key])
        assert g[key] in text
    assert g["n_params"] == f"{2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3:,}"
    # Progress lines were printed while training ran.
    assert len(re.findall(r"step +\d+/1500 +loss \d\.\d+ +test accuracy \d\.\d+ +test loss", text)) == 5
    # NNX modes: dropout random in train mode, fixed in eval; BatchNorm statistics.
    assert "train mode, two calls: False" in text and "eval mode, two calls: True" in text
    assert "running mean unchanged by an eval call: True" in text
    assert "running mean moved by a train call: True" in text
    # Data parallel: three methods, each compared with one device, agreement asserted.
    diffs = re.findall(r"(pmap \+ pmean|jit \+ sharded batch|shard_map \+ psum) +largest difference to one device over 200 steps: (\S+)", text)
    assert [d[0] for d in diffs] == ["pmap + pmean", "jit + sharded batch", "shard_map + psum"], diffs
    assert all(float(d[1]) <= 1e-4 for d in diffs)
    assert "all three agree with single-device training within 0.0001" in text
    assert "8.0 times too large" in text                    # the pmean trap under shard_map
    rates = dict(re.findall(r"(one device|pmap \+ pmean|jit \+ sharded batch|shard_map \+ psum) +(\d+) steps/s", text))
    assert len(rates) == 4 and all(int(v) > 0 for v in rates.values()), rates
    assert re.fullmatch(VERDICT, g["dp_vs_single"]) and g["dp_vs_single"] in text
    # Checkpoint: restored, continued, identical; the bad inputs raised what the prose says.
    assert "resumed at step 300: after step 600 the parameters are bit-for-bit equal: True" in text
    assert "a batch of 100 examples does not divide across 8 devices" in text
    assert "the data has 2 features" in text and "expects 3" in text
    assert "CheckpointError" in text and "holds something other than checkpoints (results.csv)" in text
    assert "['results.csv'] 'step,loss\\n'" in text
    # Figures: data, curves, two boundaries (one figure), NNX boundary, data-parallel losses.
    assert len(images(book, "training")) >= 5


def test_multiprocess(book):
    text = page_text(book, "multiprocess")
    g = glued(book, "multiprocess")
    # Both processes' outputs are on the page, each with its own local devices.
    for p, devices in ((0, "[0, 1, 2, 3]"), (1, "[2048, 2049, 2050, 2051]")):
        assert f"── process {p} (exit 0) ── process {p} of 2 local devices: {devices}" in text
    expected = np.arange(8.0).sum() + (np.arange(8.0) + 100).sum()
    assert g["global_sum"] == f"{expected:g}"
    assert text.count(f"shard_map psum: {expected}") >= 2 and text.count(f"jit sum: {expected}") >= 2
    assert text.count("process_allgather: [[0, 0], [1, 10]]") >= 2
    # The training run across processes matched the single-process one, asserted on the page.
    assert re.search(r"two processes x 4 devices vs one process: largest loss difference over 100 steps (\S+) \(tolerance 1e-05\)", text)
    assert float(g["mp_worst"]) <= 1e-5
    for p in (0, 1):
        assert f"process {p}: step 100, loss" in text
    # The launcher's three failure paths, each a LaunchError the prose names.
    assert "process 1 of 2 exited with code 1" in text and "FileNotFoundError: data/shard-1.npz" in text
    assert "timed out after 3 s" in text
    assert "is already in use" in text
    assert "all 4 processes: global sum 4912.0" in text


def test_migration(book):
    text = page_text(book, "migration")
    for new in ("jax.Array", "NamedSharding", "jax.shard_map", "jax.tree.map", "jax.set_mesh", "jax.random.key"):
        assert new in text
    # Every replacement was executed: one code cell per table row plus set-up, all with output.
    nb = load(book.notebook("migration"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "remove-cell" not in c["metadata"].get("tags", [])]
    assert len(code) >= 13 and all(c["outputs"] for c in code[2:])
    # No old API is executed.
    for old in ("tree_map(", "device_put_sharded", "device_put_replicated", "PositionalSharding", "pjit(", "colab_tpu", "xla_bridge", "check_rep"):
        assert not any(old in source(c) for c in code), old


DEVICES = {"autodiff": 1, "multiprocess": 1}  # every other chapter runs on 8 devices


@pytest.mark.parametrize("chapter", ["numpy", "transforms", "autodiff", "random", "pmap", "sharding", "shard_map", "training", "multiprocess", "migration"])
def test_provenance_box_at_the_top(book, chapter):
    import jax
    import jaxlib

    soup = BeautifulSoup(book.page(chapter), "html.parser")
    boxes = soup.select("div.jaxguide-provenance")
    assert len(boxes) == 1, "one provenance box per chapter"
    text = boxes[0].get_text(" ")
    n = DEVICES.get(chapter, 8)
    assert f"JAX {jax.__version__}, jaxlib {jaxlib.__version__}, {n} CPU device" in text
    seconds = float(re.search(r"its cells running for ([\d.]+) s", text).group(1))
    assert 0 < seconds < 300
    # It sits above the first section, right under the title.
    page = book.page(chapter)
    first_section = soup.select("section section")[0]
    assert page.index('class="jaxguide-provenance"') < page.index(f'id="{first_section["id"]}"')


def test_execution_report_lists_every_chapter(book):
    soup = BeautifulSoup(book.page("report"), "html.parser")
    rows = soup.select("table tbody tr")
    text = " ".join(soup.get_text(" ").split())
    for chapter in ["numpy", "transforms", "autodiff", "random", "pmap", "sharding", "shard_map", "training", "multiprocess", "migration"]:
        assert chapter in text, chapter
    assert len(rows) >= 8
    assert "✅" in text and "❌" not in text
