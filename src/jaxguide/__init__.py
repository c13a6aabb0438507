"""jaxguide: the companion package of the jaxguide book.

Small, reusable pieces the chapters call for what repeats, one concern per submodule.

Setting up and measuring:

* :mod:`jaxguide.devices` - ``setup_devices(n)``: real accelerators or simulated CPU devices.
* :mod:`jaxguide.timing` - ``benchmark(fn, *args)``: warm-up, ``block_until_ready``,
  median of repeats; ``benchmark_interleaved`` for close races; ``compare``, ``table``
  and ``plot_timings`` to report them.
* :mod:`jaxguide.page` - ``claim`` (a checked value for the prose: glued, and the build
  stops where it does not hold), ``glue`` and ``provenance()`` (what produced a page:
  versions, devices, time): what only a page being built needs.
* :mod:`jaxguide.hardware` - published accelerator figures (peak FLOP/s by dtype, HBM,
  links one way, on-chip memory), one table with a source for each.

Reading what JAX and XLA did:

* :mod:`jaxguide.compiled` - ``analyze(f, *args)``: what the compiled program does:
  its collectives with their bytes, its fusions, FLOPs and memory per device; and where
  a collective comes from (``op_name``, ``pass_of``, ``scopes_of``, ``parameter_of``).
* :mod:`jaxguide.jaxlogs` - JAX's log records (compilations, cache misses) captured as
  text a page can print.
* :mod:`jaxguide.profile` - a ``jax.profiler`` trace read into events and time per
  named scope.
* :mod:`jaxguide.gradcheck` - finite-difference gradients of pytree functions.

Data, models and training:

* :mod:`jaxguide.rng` - ``KeyStream``: a fresh random key on every call.
* :mod:`jaxguide.data` - synthetic data sets made from a key (regression sets,
  spirals, step-indexed batches).
* :mod:`jaxguide.models` - small models as pure functions (linear and logistic
  regression, an MLP) and their losses.
* :mod:`jaxguide.train` - a jitted optax step, a training loop with progress lines
  and data parallelism, and pictures of a run (loss curve, decision regions).
* :mod:`jaxguide.checkpoints` - orbax checkpoints of any pytree under a step number,
  never overwriting.

Many devices and processes:

* :mod:`jaxguide.sharding` - pictures of shardings drawn from ``addressable_shards``,
  the book's notation ``A[I_x, J_y]``, and checked mesh and batch helpers.
* :mod:`jaxguide.distributed` - ``launch(program, n_processes)``: a multi-process JAX
  system on 127.0.0.1, with every process stopped on a failure or timeout.
* :mod:`jaxguide.pipeline` - pipeline schedules as stage x step tables, their bubble,
  and the chart.
* :mod:`jaxguide.moe` - mixture-of-experts routing: top-k choice with capacity, the
  load-balancing loss.
* :mod:`jaxguide.attention` - reference attention, contiguous and zig-zag sequence
  layouts for ring attention, causal work per device.
* :mod:`jaxguide.decode` - autoregressive decoding apart from the model: sampling with
  explicit keys, KV-cache bytes, a decode step's roofline time.

Writing kernels:

* :mod:`jaxguide.kernels` - ``check_kernel``: a kernel against its reference on random
  arguments of several shapes, worst error against a stated tolerance;
  ``tiled_matmul_cost``: a tiled matmul's FLOPs, HBM and on-chip bytes, by hand.

Importing ``jaxguide`` does not start JAX, so ``setup_devices`` can still choose
the device count. Every submodule is also reachable as an attribute
(``jaxguide.sharding.notation``): it is imported on first access.

**Where the modules import JAX.** ``import jaxguide`` loads ``devices``, ``page`` and
``timing``, so they import JAX (about 1 s) and Matplotlib (over 1 s) inside the
functions that use them: a program that reads only ``jaxguide.page`` (the book's build,
the accelerator check) or calls only ``setup_devices`` pays about 0.2 s
(tests/test_package.py checks that ``import jaxguide`` imports no JAX). The modules
loaded on first access import JAX, NumPy and optax at their top, like any library;
``compiled`` and ``hardware`` do not (their text readers and tables need no JAX), and
Matplotlib and orbax stay inside the functions that draw or save, so that
``sharding.notation`` or ``train.fit`` loads neither.
"""

import importlib
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version
from types import ModuleType

from jaxguide.devices import DeviceSetup, DeviceSetupError, describe_devices, setup_devices
from jaxguide.page import ClaimError, claim, glue, provenance
from jaxguide.timing import (
    Timing,
    benchmark,
    benchmark_interleaved,
    compare,
    format_seconds,
    plot_timings,
)

try:
    __version__ = _version("jaxguide")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

_SUBMODULES = (
    "attention",
    "checkpoints",
    "compiled",
    "data",
    "decode",
    "devices",
    "distributed",
    "gradcheck",
    "hardware",
    "jaxlogs",
    "kernels",
    "models",
    "moe",
    "page",
    "pipeline",
    "profile",
    "rng",
    "sharding",
    "timing",
    "train",
)


def __getattr__(name: str) -> ModuleType:
    """Import a submodule on first access, so ``import jaxguide`` stays light."""
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES))


__all__ = [
    "ClaimError",
    "DeviceSetup",
    "DeviceSetupError",
    "Timing",
    "benchmark",
    "benchmark_interleaved",
    "claim",
    "compare",
    "describe_devices",
    "format_seconds",
    "glue",
    "plot_timings",
    "provenance",
    "setup_devices",
]
