"""jaxguide.hardware: one table of published figures, consistent with itself and with
the sources' own statements (checked here by independent arithmetic)."""

from __future__ import annotations

import pytest

from bookcheck import ROOT
from jaxguide import hardware


def test_every_chip_has_sources_and_sane_figures():
    assert hardware.names() == tuple(hardware.CHIPS)
    for c in hardware.CHIPS.values():
        assert c.sources and all(url.startswith("https://") for url in c.sources.values())
        assert c.flops("bf16") > 1e14 and c.hbm_bandwidth > 1e11 and c.hbm_bytes > 1e10
        # int8 at least as fast as bf16 on every chip listed (twice, from v5 and Hopper on)
        assert c.flops("int8") >= c.flops("bf16")
        assert c.network_one_way < c.link_one_way * c.links  # off the fast domain is slower


def test_published_statements_hold():
    h100 = hardware.chip("H100 SXM")
    # NVIDIA: NVLink 900 GB/s, both directions together, per GPU.
    assert 2 * h100.chip_one_way == pytest.approx(9e11)
    # NVIDIA prints 1,979 TFLOP/s bf16 *with sparsity*: dense is half.
    assert 2 * h100.flops("bf16") == pytest.approx(1.979e15, rel=1e-3)
    assert hardware.chip("H200").flops("bf16") == h100.flops("bf16")
    v5e = hardware.chip("TPU v5e")
    # How to Scale Your Model: 9e10 bytes/s per link both ways; int8 twice bf16.
    assert 2 * v5e.link_one_way == pytest.approx(9e10)
    assert v5e.flops("int8") == 2 * v5e.flops("bf16")
    assert v5e.critical_intensity() == pytest.approx(1.97e14 / 8.1e11)
    assert v5e.onchip_bytes == 128 * 1024 * 1024 and v5e.onchip_name.startswith("VMEM")


def test_bad_names_say_what_exists():
    with pytest.raises(ValueError, match=r"chip\(name='H100'\): name must be one of .*'H100 SXM'"):
        hardware.chip("H100")
    with pytest.raises(TypeError, match=r"chip\(name=5\)"):
        hardware.chip(5)
    with pytest.raises(ValueError, match=r"Chip.flops\(dtype='fp8'\): dtype must be one of"):
        hardware.chip("TPU v5e").flops("fp8")


def test_onchip_memory_matches_jax_own_table():
    """VMEM per TensorCore is JAX's own figure (what Pallas reads on a TPU), and the
    GPU's register file is 64K 32-bit registers per SM."""
    from jax.experimental.pallas import tpu as pltpu

    versions = {"TPU v4": "v4", "TPU v5e": "v5e", "TPU v5p": "v5p", "TPU v6e": "v6e"}
    for name, version in versions.items():
        info = pltpu.get_tpu_info_for_chip(pltpu.ChipVersion(version), 1)
        c = hardware.chip(name)
        assert c.onchip_bytes == info.vmem_capacity_bytes, name
        assert c.registers_bytes is None
        assert c.sources["VMEM per TensorCore"] == hardware.JAX_TPU_INFO
    for name in ("H100 SXM", "H200"):
        c = hardware.chip(name)
        assert c.registers_bytes == 256 * 1024
        assert c.onchip_bytes == 228 * 1024 and c.onchip_name == "shared memory per SM"
        assert c.sources["registers per SM"] == hardware.CUDA_LIMITS
        # the register file is larger than the shared memory beside it
        assert c.registers_bytes > c.onchip_bytes


def test_measured_runs_are_below_their_chips_peaks():
    """Each stored accelerator run: one rate of each kind per chapter run, every one
    a fraction of the published peak it is divided by (a rate above it is a typo)."""
    for name, run in hardware.MEASURED.items():
        assert run.chip == name and name in hardware.CHIPS
        assert len(run.chapters) == len(run.matmul_flops) == len(run.copy_bandwidth) > 0
        peak = hardware.chip(name)
        assert all(0.3 < r / peak.flops("bf16") < 1 for r in run.matmul_flops)
        assert all(0.3 < r / peak.hbm_bandwidth < 1 for r in run.copy_bandwidth)
        assert (ROOT / run.report).is_file()


def test_measured_names_the_chips_it_has():
    with pytest.raises(ValueError, match="H100 SXM"):
        hardware.measured("TPU v5e")
    with pytest.raises(TypeError):
        hardware.measured(5)  # type: ignore[arg-type]


def test_scoped_vmem_limits_are_sourced_and_below_vmem():
    # every TPU has an entry; each known limit has its report and fits in VMEM
    tpus = [n for n in hardware.names() if n.startswith("TPU")]
    assert set(hardware.TPU_SCOPED_VMEM) == set(tpus)
    for name, limit in hardware.TPU_SCOPED_VMEM.items():
        if limit is None:
            assert name not in hardware.SCOPED_VMEM_REPORTS
            continue
        assert hardware.SCOPED_VMEM_REPORTS[name].startswith("https://github.com/")
        assert 0 < limit <= hardware.chip(name).onchip_bytes
