"""Device set-up: real accelerators when there are enough, simulated CPU devices otherwise.

Every multi-device chapter starts with ``setup_devices(n)``, before any other JAX
operation. JAX fixes its device list the first time it runs anything, so the number
of simulated CPU devices can only be chosen before that moment.

Example:
    >>> import jaxguide
    >>> setup = jaxguide.setup_devices(8)
    >>> setup
    DeviceSetup(platform='cpu', count=8, kinds=('cpu',), simulated=True)
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jaxguide import _checks

if TYPE_CHECKING:
    import jax

__all__ = ["DeviceSetup", "DeviceSetupError", "setup_devices", "describe_devices"]

# Distributions that give JAX a non-CPU backend. If none is installed, JAX can only
# run on the CPU and no probe is needed.
_ACCELERATOR_DISTS = ("jax-cuda", "jax_cuda", "jax-rocm", "jax_rocm", "libtpu", "jax-tpu")


class DeviceSetupError(RuntimeError):
    """JAX has already started with devices that do not match the request."""


@dataclass(frozen=True)
class DeviceSetup:
    """What ``setup_devices`` found or made.

    Attributes:
        platform: the backend the book's code runs on (``'cpu'``, ``'gpu'``, ``'tpu'``).
        count: number of devices JAX sees on that platform.
        kinds: the distinct ``device_kind`` strings of those devices.
        simulated: True when several CPU devices are simulated on one host's cores
            (they show how code is partitioned, not a speed-up).
        note: a sentence for the reader when the set-up had to fall back.
    """

    platform: str
    count: int
    kinds: tuple[str, ...]
    simulated: bool
    note: str = field(default="", compare=False)

    def __repr__(self) -> str:
        text = (
            f"DeviceSetup(platform={self.platform!r}, count={self.count}, "
            f"kinds={self.kinds!r}, simulated={self.simulated})"
        )
        return f"{text}\n  note: {self.note}" if self.note else text

    def __str__(self) -> str:
        """What a notebook shows for the set-up: ``8 simulated CPU devices (kind: cpu)``,
        and the note, if any, on a line of its own."""
        text = f"{self.summary()} (kind: {', '.join(self.kinds) or 'unknown'})"
        return f"{text}\nnote: {self.note}" if self.note else text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython shows a cell's last value with this: the readable form, not the repr.
        printer.text(str(self))

    def summary(self) -> str:
        """One line for prose, e.g. ``'8 simulated CPU devices'``."""
        kind = "simulated " if self.simulated else ""
        plural = "s" if self.count > 1 else ""
        return f"{self.count} {kind}{self.platform.upper()} device{plural}"

    @property
    def devices(self) -> list[jax.Device]:
        """The devices themselves (``jax.devices(platform)``)."""
        import jax

        return jax.devices(self.platform)


# What the last successful setup_devices call found, so that a second call with the
# same request returns it with its note (the note says why the devices are simulated).
_LAST: DeviceSetup | None = None


def _backends_started() -> bool:
    """True once JAX has initialised its backends (its device list is then fixed)."""
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # pragma: no cover - older/newer private API
        import jax

        try:
            jax.config.update("jax_num_cpu_devices", jax.config.jax_num_cpu_devices)  # type: ignore[attr-defined]
        except RuntimeError:
            return True
        return False


def _accelerator_plugin_installed() -> bool:
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name.startswith(_ACCELERATOR_DISTS):
            return True
    return False


def _probe_accelerators(timeout: float = 180.0) -> tuple[str, int, str]:
    """Ask a separate Python process which backend JAX picks and how many devices it has.

    Done in a child process so that this process can still choose simulated CPU
    devices afterwards. Returns ``(platform, count, problem)``; ``problem`` says why the
    probe failed (``("cpu", 0, "...")``), and is empty when it worked.
    """
    code = "import jax; print(jax.default_backend(), jax.device_count())"
    try:
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
    except subprocess.TimeoutExpired:
        return "cpu", 0, f"it did not answer within {timeout:g} s"
    except OSError as err:
        return "cpu", 0, f"it could not start ({err})"
    try:
        platform, count = out.stdout.split()[-2:]
        return platform, int(count), ""
    except ValueError:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return "cpu", 0, f"it exited with code {out.returncode}: {last[:200]}"


def describe_devices() -> DeviceSetup:
    """Describe the devices of JAX's default backend (starts JAX if it has not started).

    Returns:
        A :class:`DeviceSetup` for ``jax.devices()``; ``simulated`` is true for
        several CPU devices.

    Example:
        >>> describe_devices().count == __import__("jax").device_count()
        True
    """
    import jax

    platform = jax.default_backend()
    devs = jax.devices()
    kinds = tuple(sorted({d.device_kind for d in devs}))
    return DeviceSetup(platform, len(devs), kinds, simulated=platform == "cpu" and len(devs) > 1)


def setup_devices(n: int = 8, *, force_cpu: bool = False, verbose: bool = True) -> DeviceSetup:
    """Make sure JAX runs on ``n`` devices; call it first, before any other JAX operation.

    * With at least ``n`` accelerators (GPUs or TPU cores) it uses them as they are.
    * Otherwise (a laptop, a CPU runtime, a single GPU) it makes ``n`` simulated CPU
      devices, so that multi-device code runs unchanged. They share the host's cores:
      they show how work is partitioned, not how fast it would be.
    * Called again with the same ``n`` it just describes the devices.

    Args:
        n: number of devices wanted, a positive int.
        force_cpu: use ``n`` simulated CPU devices even when accelerators exist.
        verbose: print the fall-back note, when there is one.

    Returns:
        A :class:`DeviceSetup` with platform, count, device kinds and whether the
        devices are simulated.

    Raises:
        TypeError: ``n`` is not an int, or ``force_cpu``/``verbose`` is not a bool.
        ValueError: ``n`` is less than 1.
        DeviceSetupError: JAX already started with a different number of devices.

    Example:
        >>> import jaxguide
        >>> jaxguide.setup_devices(8).count
        8
    """
    global _LAST
    n = _checks.positive_int("setup_devices", "n", n, example=8)
    force_cpu = _checks.boolean("setup_devices", "force_cpu", force_cpu)
    verbose = _checks.boolean("setup_devices", "verbose", verbose)
    import jax

    if _backends_started():
        current = describe_devices()
        usable = current.count == n or (current.platform != "cpu" and current.count >= n)
        if force_cpu and current.platform != "cpu":
            usable = False
        if not usable:
            raise DeviceSetupError(
                f"JAX has already started with {current.count} {current.platform} device(s), "
                f"so setup_devices({n}) cannot give it {n}: the device list is fixed the first "
                "time JAX runs anything. Restart the kernel (in Colab: Runtime > Restart "
                f"session) and call jaxguide.setup_devices({n}) in the first cell, right after "
                "the imports and before any other JAX operation."
            )
        if _LAST is not None and (_LAST.platform, _LAST.count) == (current.platform, current.count):
            return _LAST  # the same request again: keep what the first call found, note included
        return current

    note = ""
    use_cpu = True
    if not force_cpu and _accelerator_plugin_installed():
        platform, count, problem = _probe_accelerators()
        if problem:
            note = (
                f"An accelerator plugin is installed, but asking JAX for its devices failed "
                f"({problem}): using {n} simulated CPU devices instead. Check the accelerator "
                "set-up (drivers, `python -c 'import jax; print(jax.devices())'`)."
            )
        elif platform != "cpu" and count >= n:
            use_cpu = False
        elif platform != "cpu":
            note = (
                f"Found {count} {platform.upper()} device(s), fewer than the {n} this page needs: "
                f"using {n} simulated CPU devices instead, so the code runs as written. They "
                "share the CPU's cores, so they show how work is split, not a speed-up."
            )
    if use_cpu:
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_num_cpu_devices", n)

    described = describe_devices()
    result = DeviceSetup(
        described.platform, described.count, described.kinds, described.simulated, note
    )
    if note and verbose:
        print(note)
    _LAST = result
    return result
