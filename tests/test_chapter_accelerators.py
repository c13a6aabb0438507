"""The accelerators chapter: each setting it shows taking effect (or not) did so in the
build, and its numbers agree with independent computations."""

from __future__ import annotations

import pytest

from bookcheck import ROOT, cell_output, glued, page_text
from jaxguide import hardware

pytestmark = pytest.mark.book


def test_install_and_what_jax_runs_on(book):
    g = glued(book, "accelerators")
    assert {"cuda12", "cuda13", "tpu"} <= set(g["install_extras"].split(", "))
    assert g["install_plugins"] == 0
    assert g["which_first"] == "CpuDevice(id=0)"
    # The backend the page names is the first device's kind.
    assert g["which_first"].lower().startswith(g["which_backend"])
    assert "jaxlib: " in cell_output(book, "accelerators", "jax.print_environment_info()")


def test_settings_read_at_the_start(book):
    g = glued(book, "accelerators")
    # Too late: ignored silently, refused loudly, or accepted and without effect.
    assert g["late_xla_flags"] == 1
    assert g["late_num_cpu"] == "RuntimeError"
    # JAX_PLATFORMS set too late: the backend stays the one already running.
    assert g["late_platforms"] == g["which_backend"]
    # After import, before the first device use: XLA_FLAGS counts (read at backend
    # start), JAX_PLATFORMS does not (a JAX_* variable, read at import).
    assert g["early_devices"] == 4
    assert g["early_platforms"] == g["which_backend"]
    assert g["export_seen"] is False
    # The typo stops the process: its claim (typo_exit).


def test_memory(book):
    g = glued(book, "accelerators")
    assert g["cpu_memory_stats"] == "None"
    assert g["live_made"] == f"{2048 * 2048 * 4 // 2**20} MiB"  # float32, by hand
    assert g["live_after_delete"] == "0 B"
    # Both names of the memory fraction set at once: jaxlib refuses at GPU start.
    from jaxlib import xla_client

    both = {"XLA_CLIENT_MEM_FRACTION": ".4", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in both.items():
            mp.setenv(name, value)
        with pytest.raises(ValueError) as err:
            xla_client.generate_pjrt_gpu_plugin_options()
    assert g["memfrac_clash"] == err.type.__name__


def test_slurm_and_fallback(book):
    g = glued(book, "accelerators")
    # SLURM_LOCALID -> one GPU per task (the claim also checks that both tasks saw
    # 4 local devices of 8 and exited cleanly).
    assert g["slurm_visible"] == "0, 1"
    # Ids are the system's, hardware ids the process's own: task 1's 4 devices come
    # after task 0's in the system, and are 0-3 on their own (counted by hand).
    assert g["slurm_hw1"] == "0-3"
    first, last = (int(i) for i in g["slurm_ids1"].split("-"))
    assert last - first == 3 and first > 3
    # JAX_LOCAL_DEVICE_IDS=0 overrides SLURM_LOCALID: both tasks on GPU 0 (the claim
    # also checks they still formed one 8-device system).
    assert g["slurm_pinned"] == "0, 0"
    # Unnamed, a missing CUDA backend falls back to the CPU (the claim checks JAX's
    # warning); named in JAX_PLATFORMS, it is an error.
    assert g["fallback_named"] == "RuntimeError"
    # A plugin whose library does not load: the same fall-back (its claim, broken_backend,
    # also checks the log: the plugin's error first, the loader's "file too short" in
    # its traceback, the "not installed" warning last).
    assert g["broken_backend"] == g["fallback_backend"]


def test_cpu_specific_outputs_and_predictions(book):
    g = glued(book, "accelerators")
    # The ynn_fusion holding only the dot, and the converts: their claims.
    # The CPU ignores the matmul precision setting: no difference at all.
    assert float(g["cpu_precision_nil"]) == 0.0
    nbytes = 2**18 * 4
    assert g["ar_bytes"] == f"{nbytes // 2**20} MiB"
    sent = 2 * 7 / 8 * nbytes  # a ring all-reduce over 8 devices
    h100, v5e = hardware.chip("H100 SXM"), hardware.chip("TPU v5e")
    # NVLink: every link reaches the switch; a TPU ring: one link to each neighbour.
    for key, rate in (
        ("ar_h100_us", h100.link_one_way * h100.links),
        ("ar_v5e_us", 2 * v5e.link_one_way),
    ):
        assert float(g[key]) == pytest.approx(sent / rate * 1e6, abs=0.06)
    assert g["v5e_links"] == v5e.links
    assert g["h100_bf16"] == f"{hardware.chip('H100 SXM').flops('bf16') / 1e12:.0f} TFLOP/s"
    text = page_text(book, "accelerators")
    assert "GPU only" in text and "75%" in text
    assert (ROOT / "bench" / "accelerator_check.py").is_file()


def test_precision_and_fit(book):
    import ml_dtypes
    import numpy as np

    g = glued(book, "accelerators")
    # Operands rounded to bfloat16 (a TPU's one pass), multiplied exactly: the median
    # relative difference from float32, on a matrix of the page's kind (numpy, float64).
    m = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    exact = m.astype(np.float64) @ m.astype(np.float64)
    r = m.astype(ml_dtypes.bfloat16).astype(np.float64)
    median = float(np.median(np.abs(r @ r - exact) / np.abs(exact)))
    assert float(g["rel_bf16"]) == pytest.approx(median, rel=0.3)
    assert float(g["rel_tf32"]) < float(g["rel_bf16"]) / 4  # 3 more mantissa bits
    # The step's arguments (w and x) and its output (the new w), counted by hand.
    value, unit = g["fit_need"].split()
    scale = {"MiB": 2**20, "GiB": 2**30}[unit]
    floor = ((16384 + 4096) * 16384 + 16384**2) * 4
    assert float(value) * scale >= floor * 0.99
    assert float(value) * scale < 0.75 * hardware.chip("H100 SXM").hbm_bytes


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "and nothing chooses them again": "review r49 FALSE: clear_backends() makes JAX choose the backends again",
}
