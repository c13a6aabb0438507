"""jaxguide: the companion package of the jaxguide book.

Small, reusable pieces the chapters call for what repeats:

* :mod:`jaxguide.devices` - ``setup_devices(n)``: real accelerators or simulated CPU devices.
* :mod:`jaxguide.timing` - ``benchmark(fn, *args)``: warm-up, ``block_until_ready``,
  median of repeats; ``benchmark_interleaved`` for close races; ``compare``, ``table`` and ``plot_timings`` to report them.
* :mod:`jaxguide.compiled` - ``analyze(f, *args)``: what the compiled program does:
  its collectives with their bytes, its fusions, FLOPs and memory per device.
* :mod:`jaxguide.page` - ``claim`` (a checked value for the prose: glued, and the build
  stops where it does not hold), ``glue`` and ``provenance()`` (what produced a page:
  versions, devices, time): what only a page being built needs.
* :mod:`jaxguide.gradcheck` - finite-difference gradients of pytree functions.
* :mod:`jaxguide.hardware` - published accelerator figures (peak FLOP/s by dtype, HBM,
  links one way, on-chip memory), one table with a source for each.
* :mod:`jaxguide.rng` - ``KeyStream``: a fresh random key on every call.
* :mod:`jaxguide.data` - synthetic data sets made from a key (regression sets,
  spirals, step-indexed batches).
* :mod:`jaxguide.models` - small models as pure functions (linear and logistic
  regression, an MLP) and their losses.
* :mod:`jaxguide.train` - a jitted optax step and a training loop with progress lines
  and data parallelism; :mod:`jaxguide.plots` draws a run, and
  :mod:`jaxguide.checkpoints` saves and restores it with orbax (never overwriting).
* :mod:`jaxguide.distributed` - ``launch(program, n_processes)``: a multi-process JAX
  system on 127.0.0.1, with every process stopped on a failure or timeout.
* :mod:`jaxguide.sharding` - pictures of shardings drawn from ``addressable_shards``,
  the book's notation ``A[I_x, J_y]``, and checked mesh and batch helpers.

Importing ``jaxguide`` does not start JAX, so ``setup_devices`` can still choose
the device count. Every submodule is also reachable as an attribute
(``jaxguide.sharding.notation``): it is imported on first access.
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
    "models",
    "moe",
    "page",
    "pipeline",
    "plots",
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
