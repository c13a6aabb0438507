"""Published accelerator figures, in one table, each with its source.

Every prediction the book makes for a GPU or TPU (a roofline time, a critical batch, the
sequence length at which a transfer hides) starts from a count by hand and divides it by
a figure from this table: one place, one set of labels, one source per figure.

The figures are the vendors' *peak* numbers: dense (not the 2:4-sparse figures NVIDIA's
datasheets also print), per chip, and, for links, **one way** (bytes a chip can send in
one direction; a link carries as much again the other way). A program reaches a fraction
of them; the book uses them for bounds, never for predictions of measured times.

Example:
    >>> from jaxguide import hardware
    >>> h100 = hardware.chip("H100 SXM")
    >>> f"{h100.flops('bf16'):.3g} FLOP/s, {h100.hbm_bandwidth:.3g} bytes/s"
    '9.89e+14 FLOP/s, 3.35e+12 bytes/s'
    >>> round(h100.critical_intensity("bf16"))   # FLOPs per byte read to stay busy
    295
    >>> f"{hardware.chip('TPU v5e').chip_one_way:.2g}"   # 4 ICI links, one way
    '1.8e+11'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from jaxguide import _checks

__all__ = [
    "CHIPS",
    "MEASURED",
    "SCOPED_VMEM_REPORTS",
    "TPU_SCOPED_VMEM",
    "Chip",
    "Measured",
    "chip",
    "measured",
    "names",
]

#: Where the figures come from.
SCALING_BOOK_TPUS = "https://jax-ml.github.io/scaling-book/tpus/"
H100_DATASHEET = "https://www.nvidia.com/en-us/data-center/h100/"
#: nvidia-smi on an H100 80GB HBM3: "0MiB /  81559MiB" (a report in NVIDIA/nccl).
NVIDIA_SMI_H100 = "https://github.com/NVIDIA/nccl/issues/1264"
H200_DATASHEET = "https://www.nvidia.com/en-us/data-center/h200/"
HOPPER_TUNING = "https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html"
DGX_H100 = "https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html"
#: JAX's own table of TPU generations (VMEM per TensorCore), the one Pallas reads through
#: ``jax.experimental.pallas.tpu.get_tpu_info_for_chip``.
JAX_TPU_INFO = "https://github.com/jax-ml/jax/blob/main/jax/_src/pallas/mosaic/tpu_info.py"
#: The CUDA programming guide's table of limits per compute capability (registers per SM).
CUDA_LIMITS = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
    "#features-and-technical-specifications-technical-specifications-per-compute-capability"
)


@dataclass(frozen=True)
class Chip:
    """One accelerator's published peak figures (see the module docstring for units).

    Attributes:
        name: how the book names it (``"TPU v5e"``, ``"H100 SXM"``).
        peak_flops: dense peak operations per second by dtype (``"bf16"``, ``"int8"``,
            ``"fp8"`` ...), per chip.
        hbm_bytes: high-bandwidth memory per chip, bytes.
        hbm_bandwidth: HBM bandwidth per chip, bytes/s.
        link_one_way: one chip-to-chip link (a TPU ICI link, one NVLink), one way, bytes/s.
        links: how many such links a chip has.
        network_one_way: bytes/s one way out of the fast domain (the TPU slice, the
            NVLink node), per chip: TPU hosts share their data-centre network among the
            chips they hold; a DGX H100 gives each GPU one 400 Gb/s network card.
        onchip_bytes: the on-chip memory a kernel tiles into: VMEM per TensorCore on a
            TPU, shared memory per streaming multiprocessor (SM) on a GPU; None where
            the sources below publish no figure.
        onchip_name: what that memory is called.
        registers_bytes: the register file per SM on a GPU (where a kernel's
            accumulators live); None for a TPU, whose vector registers the sources
            do not size.
        cores: TensorCores (TPU) or SMs (GPU) per chip.
        sources: the page each group of figures comes from.
    """

    name: str
    peak_flops: MappingProxyType[str, float]
    hbm_bytes: float
    hbm_bandwidth: float
    link_one_way: float
    links: int
    network_one_way: float
    onchip_bytes: float | None
    onchip_name: str
    registers_bytes: float | None
    cores: int
    sources: MappingProxyType[str, str] = field(repr=False)

    def flops(self, dtype: str = "bf16") -> float:
        """Dense peak operations per second for ``dtype``.

        Args:
            dtype: ``"bf16"``, ``"int8"``, ``"fp8"`` ... (the ones this chip lists).

        Returns:
            Operations per second, per chip.

        Raises:
            TypeError: ``dtype`` is not a str.
            ValueError: this chip lists no figure for ``dtype``.

        Example:
            >>> f"{chip('TPU v5e').flops('int8'):.3g}"
            '3.94e+14'
        """
        _checks.string("Chip.flops", "dtype", dtype, example="'bf16'")
        _checks.one_of("Chip.flops", "dtype", dtype, tuple(self.peak_flops))
        return self.peak_flops[dtype]

    def critical_intensity(self, dtype: str = "bf16") -> float:
        """FLOPs per byte of HBM traffic above which a program can keep the arithmetic
        units busy: peak FLOP/s divided by HBM bytes/s.

        Args:
            dtype: the dtype of the arithmetic, as for :meth:`flops`.

        Returns:
            The ratio, in FLOPs per byte.

        Example:
            >>> round(chip("TPU v5e").critical_intensity("bf16"))
            243
        """
        return self.flops(dtype) / self.hbm_bandwidth

    @property
    def chip_one_way(self) -> float:
        """All of a chip's links together, one way, bytes/s (``link_one_way * links``)."""
        return self.link_one_way * self.links


def _tpu(
    name: str,
    bf16: float,
    int8: float,
    hbm: float,
    bw: float,
    link: float,
    links: int,
    vmem: float | None,
    cores: int,
) -> Chip:
    # Data-centre network: about 2.5e10 bytes/s per host, shared by the host's chips
    # (How to Scale Your Model); v5e and v6e hosts hold 8 chips, v4 and v5p hosts 4.
    per_host = 8 if name in ("TPU v5e", "TPU v6e") else 4
    return Chip(
        name=name,
        peak_flops=MappingProxyType({"bf16": bf16, "int8": int8}),
        hbm_bytes=hbm,
        hbm_bandwidth=bw,
        link_one_way=link,
        links=links,
        network_one_way=2.5e10 / per_host,
        onchip_bytes=vmem,
        onchip_name="VMEM per TensorCore",
        registers_bytes=None,
        cores=cores,
        sources=MappingProxyType(
            {
                "flops, HBM, ICI, network": SCALING_BOOK_TPUS,
                "TensorCores": SCALING_BOOK_TPUS,
                "VMEM per TensorCore": JAX_TPU_INFO,
            }
        ),
    )


def _hopper(name: str, hbm: float, bw: float, datasheet: str) -> Chip:
    return Chip(
        name=name,
        # The datasheet prints 2:4-sparse figures; dense is half of each.
        peak_flops=MappingProxyType({"bf16": 9.89e14, "fp8": 1.979e15, "int8": 1.979e15}),
        hbm_bytes=hbm,
        hbm_bandwidth=bw,
        # NVLink 4: 18 links of 25 GB/s each way, 900 GB/s both ways together.
        link_one_way=2.5e10,
        links=18,
        network_one_way=5e10,  # one 400 Gb/s ConnectX-7 card per GPU in a DGX H100
        onchip_bytes=228 * 1024,
        onchip_name="shared memory per SM",
        # 64K 32-bit registers per SM (compute capability 9.0)
        registers_bytes=65536 * 4,
        cores=132,
        sources=MappingProxyType(
            {
                "flops, HBM bandwidth, NVLink": datasheet,
                "HBM capacity": NVIDIA_SMI_H100 if name == "H100 SXM" else datasheet,
                "shared memory per SM, SMs": HOPPER_TUNING,
                "registers per SM": CUDA_LIMITS,
                "network": DGX_H100,
            }
        ),
    )


_MIB = 1024 * 1024
# HBM capacities: vendors print "GB", but HBM stacks hold binary gigabytes (a TPU v5e's
# "16 GB" is 16 GiB); an H100's is what nvidia-smi reports, 81,559 MiB (NVIDIA_SMI_H100).
_GIB = 1024 * _MIB

#: Every chip the book uses, by the name the book gives it.
CHIPS: MappingProxyType[str, Chip] = MappingProxyType(
    {
        c.name: c
        for c in (
            # name, bf16, int8, HBM, HBM bytes/s, ICI link one way, links (a 3D torus
            # gives 6, a 2D torus 4), VMEM per TensorCore (JAX's table), TensorCores
            _tpu("TPU v4", 2.75e14, 2.75e14, 32 * _GIB, 1.2e12, 4.5e10, 6, 16 * _MIB, 2),
            _tpu("TPU v5e", 1.97e14, 3.94e14, 16 * _GIB, 8.1e11, 4.5e10, 4, 128 * _MIB, 1),
            _tpu("TPU v5p", 4.59e14, 9.18e14, 96 * _GIB, 2.8e12, 9e10, 6, 64 * _MIB, 2),
            _tpu("TPU v6e", 9.2e14, 1.84e15, 32 * _GIB, 1.6e12, 9e10, 4, 128 * _MIB, 1),
            _hopper("H100 SXM", 81_559 * _MIB, 3.35e12, H100_DATASHEET),
            _hopper("H200", 141 * _GIB, 4.8e12, H200_DATASHEET),
        )
    }
)


#: The TPU compiler's default *scoped* VMEM limit: what one kernel may use unless it asks
#: for more (``vmem_limit_bytes``). JAX's sources do not state it; each figure is the
#: limit a compiler refusal on that chip quotes, with the report that quotes it. None
#: where no public report was found (the v5p).
SCOPED_VMEM_REPORTS = {
    # "Used 59.79M of 16.00M vmem" on a v4-64
    "TPU v4": "https://github.com/haoliuhl/ringattention/issues/11",
    # "Scoped allocation with size 31.07M and limit 16.00M" on a v5litepod-8
    "TPU v5e": "https://github.com/pytorch/xla/issues/6611",
    # "Scoped allocation with size 37.22M and limit 32.00M" on tpu6e and tpu7x
    "TPU v6e": "https://github.com/vllm-project/tpu-inference/pull/3407",
}
TPU_SCOPED_VMEM: MappingProxyType[str, int | None] = MappingProxyType(
    {"TPU v4": 16 * _MIB, "TPU v5e": 16 * _MIB, "TPU v5p": None, "TPU v6e": 32 * _MIB}
)


def names() -> tuple[str, ...]:
    """The names :func:`chip` accepts, in the table's order.

    Returns:
        A tuple of chip names.

    Example:
        >>> names()[:2]
        ('TPU v4', 'TPU v5e')
    """
    return tuple(CHIPS)


def chip(name: str) -> Chip:
    """One chip's published figures.

    Args:
        name: one of :func:`names` (``"TPU v5e"``, ``"H100 SXM"`` ...).

    Returns:
        The :class:`Chip`.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: the table has no chip of that name (the message lists them).

    Example:
        >>> chip("H200").hbm_bandwidth
        4800000000000.0
    """
    _checks.string("chip", "name", name, example="'TPU v5e'")
    return CHIPS[_checks.one_of("chip", "name", name, tuple(CHIPS))]


@dataclass(frozen=True)
class Measured:
    """Rates one run of ``bench/accelerator_check.py`` measured on a real accelerator:
    what a program reached, beside :class:`Chip`'s published peaks.

    Attributes:
        chip: the :data:`CHIPS` entry the device is (its peaks divide these rates).
        device: the device as JAX named it.
        jax: the JAX version of the run.
        matmul: the timed matmul.
        copy: the timed copy.
        chapters: the chapter each run came with (one timing per chapter run).
        matmul_flops: the matmul's FLOP/s, one per run, three significant digits.
        copy_bandwidth: the copy's bytes/s (read + written), one per run.
        report: the run's report, in the repository.

    Example:
        >>> run = measured("H100 SXM")
        >>> peak = chip(run.chip).flops("bf16")
        >>> f"{min(run.matmul_flops) / peak:.0%} to {max(run.matmul_flops) / peak:.0%}"
        '70% to 78%'
    """

    chip: str
    device: str
    jax: str
    matmul: str
    copy: str
    chapters: tuple[str, ...]
    matmul_flops: tuple[float, ...]
    copy_bandwidth: tuple[float, ...]
    report: str


#: Accelerator runs, by the :data:`CHIPS` name of their device. Stored here, in the
#: package, so that a chapter reads them in Colab too and the build re-executes what
#: reads them when they change.
MEASURED: MappingProxyType[str, Measured] = MappingProxyType(
    {
        "H100 SXM": Measured(
            chip="H100 SXM",
            device="NVIDIA H100 80GB HBM3",
            jax="0.11.2",
            matmul="8192×8192 bfloat16",
            copy="1024 MiB read + written",
            chapters=(
                "inference",
                "scaling",
                "long_context",
                "moe",
                "pipeline",
                "accelerators",
                "training",
                "sharding",
                "shard_map",
                "pmap",
                "autodiff",
                "random",
                "control_flow",
                "migration",
                "multiprocess",
            ),
            matmul_flops=(
                6.95e14,
                7.23e14,
                7.31e14,
                7.15e14,
                7.35e14,
                7.33e14,
                7.33e14,
                7.69e14,
                7.66e14,
                7.55e14,
                7.4e14,
                7.46e14,
                7.73e14,
                7.65e14,
                7.46e14,
            ),
            copy_bandwidth=(
                2.11e12,
                2.22e12,
                2.31e12,
                2.25e12,
                2.39e12,
                2.35e12,
                2.42e12,
                2.42e12,
                2.46e12,
                2.48e12,
                2.34e12,
                2.45e12,
                2.49e12,
                2.36e12,
                2.42e12,
            ),
            report="bench/reports/h100-2026-11-26.md",
        ),
    }
)


def measured(name: str) -> Measured:
    """The rates an accelerator run measured on the chip ``name``.

    Args:
        name: a key of :data:`MEASURED` (``"H100 SXM"``).

    Returns:
        The :class:`Measured` run.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: no run is stored for that chip (the message lists those there are).

    Example:
        >>> measured("H100 SXM").jax
        '0.11.2'
    """
    _checks.string("measured", "name", name, example="'H100 SXM'")
    return MEASURED[_checks.one_of("measured", "name", name, tuple(MEASURED))]
