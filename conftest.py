"""The package's doctests, run alone (``pytest --doctest-modules src/jaxguide``).

Some examples (``compiled.pass_of``, ``devices.setup_devices``, ...) show what a program
does on the 8 simulated CPU devices the multi-device chapters use. ``tests/conftest.py``
gives the whole test session those devices; this file, pytest's first conftest in any
session run from this checkout, gives them to a session that collects only the package,
before anything starts JAX's backends. It lives at the root, not in the package (the
wheel does not carry it) nor in ``src/`` (pytest would then load it after
``tests/conftest.py``, and the doctest run of that file, imported as ``conftest``
again, would find this one under its name).
"""

from __future__ import annotations

import jax

if jax.config.jax_num_cpu_devices != 8:  # tests/conftest.py may have set it already
    jax.config.update("jax_num_cpu_devices", 8)
