"""jaxguide.devices. JAX fixes its devices once per process, so each scenario runs in
a fresh Python process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import jaxguide
from jaxguide.devices import DeviceSetup


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("bad", ["8", 2.0, None, True])
def test_non_int_count_is_a_type_error_naming_n(bad):
    with pytest.raises(
        TypeError, match=r"setup_devices\(n=.*\): n must be an int, got \w+; pass a whole number"
    ):
        jaxguide.setup_devices(bad)


@pytest.mark.parametrize("bad", [0, -3])
def test_non_positive_count_is_a_value_error_naming_n(bad):
    with pytest.raises(ValueError, match=rf"setup_devices\(n={bad}\): n must be an int >= 1"):
        jaxguide.setup_devices(bad)


def test_force_cpu_and_verbose_must_be_bool():
    with pytest.raises(
        TypeError, match=r"setup_devices\(force_cpu='yes'\): force_cpu must be True or False"
    ):
        jaxguide.setup_devices(2, force_cpu="yes")
    with pytest.raises(TypeError, match=r"verbose must be True or False"):
        jaxguide.setup_devices(2, verbose=1)


def test_makes_simulated_cpu_devices_and_is_idempotent():
    proc = run(
        """
        import jaxguide, jax
        s = jaxguide.setup_devices(4)
        assert jax.device_count() == 4, jax.devices()
        assert (s.platform, s.count, s.kinds, s.simulated) == ("cpu", 4, ("cpu",), True), s
        assert jaxguide.setup_devices(4) == s       # same request again: fine
        x = jax.numpy.ones(4)
        assert jaxguide.setup_devices(4).count == 4  # also after JAX started
        print(repr(s)); print(s.summary())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "DeviceSetup(platform='cpu', count=4, kinds=('cpu',), simulated=True)" in proc.stdout
    assert "4 simulated CPU devices" in proc.stdout


def test_too_late_is_a_clear_error():
    proc = run(
        """
        import jax, jax.numpy as jnp, jaxguide
        jnp.ones(3).block_until_ready()          # JAX starts with its default: 1 CPU device
        try:
            jaxguide.setup_devices(8)
        except jaxguide.DeviceSetupError as e:
            print(e)
        else:
            raise SystemExit("no error")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "already started with 1 cpu device(s)" in proc.stdout
    assert "Restart the kernel" in proc.stdout
    assert "jaxguide.setup_devices(8) in the first cell" in proc.stdout


def test_falls_back_to_cpu_when_too_few_accelerators():
    proc = run(
        """
        import jaxguide.devices as d, jax
        d._accelerator_plugin_installed = lambda: True
        d._probe_accelerators = lambda: ("gpu", 1, "")   # e.g. a single-GPU Colab runtime
        s = d.setup_devices(8)
        assert (s.platform, s.count) == ("cpu", 8), s
        assert "Found 1 GPU device(s), fewer than the 8" in s.note
        again = d.setup_devices(8)                       # the second call keeps the note
        assert again.note == s.note and again == s, again
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "using 8 simulated CPU devices instead" in proc.stdout  # printed for the reader


def test_a_failed_probe_falls_back_with_a_note_saying_why():
    proc = run(
        """
        import subprocess, jaxguide.devices as d
        d._accelerator_plugin_installed = lambda: True
        def broken(*a, **k):
            return subprocess.CompletedProcess(a, 1, "", "RuntimeError: CUDA driver version is insufficient")
        d.subprocess.run = broken
        s = d.setup_devices(4, verbose=False)
        assert (s.platform, s.count) == ("cpu", 4), s
        print(s.note)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "asking JAX for its devices failed (it exited with code 1: RuntimeError: CUDA driver"
        in proc.stdout
    )
    assert "using 4 simulated CPU devices instead" in proc.stdout


def test_uses_enough_accelerators_without_touching_cpu_config():
    proc = run(
        """
        import jaxguide.devices as d, jax
        d._accelerator_plugin_installed = lambda: True
        d._probe_accelerators = lambda: ("tpu", 8, "")
        d.describe_devices = lambda: d.DeviceSetup("tpu", 8, ("TPU v5 lite",), False)
        s = d.setup_devices(8)
        assert s.platform == "tpu" and s.note == "", s
        assert jax.config.jax_platforms in (None, ""), jax.config.jax_platforms
        """
    )
    assert proc.returncode == 0, proc.stderr


def test_repr_shows_note():
    s = DeviceSetup("cpu", 8, ("cpu",), True, note="fell back")
    assert repr(s).endswith("note: fell back")
    assert s.summary() == "8 simulated CPU devices"
    assert DeviceSetup("gpu", 1, ("H100",), False).summary() == "1 GPU device"


def test_a_notebook_shows_the_set_up_as_a_sentence():
    """A cell ending in ``setup_devices(...)`` shows a line a reader can read (IPython's
    pretty printer), with the note on its own line; ``repr`` stays the dataclass's."""
    from IPython.lib.pretty import pretty

    s = DeviceSetup("cpu", 8, ("cpu",), True)
    assert pretty(s) == str(s) == "8 simulated CPU devices (kind: cpu)"
    gpus = DeviceSetup("gpu", 2, ("NVIDIA H100", "NVIDIA A100"), False, note="mixed kinds")
    assert pretty(gpus) == "2 GPU devices (kind: NVIDIA H100, NVIDIA A100)\nnote: mixed kinds"
    assert repr(s).startswith("DeviceSetup(platform='cpu', count=8")
