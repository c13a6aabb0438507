"""The package's doctests, run alone (``pytest --doctest-modules src/jaxguide``).

Some examples (``compiled.pass_of``, ``devices.setup_devices``, ...) show what a program
does on the 8 simulated CPU devices the multi-device chapters use. ``tests/conftest.py``
gives the whole test session those devices; this file gives them to a session that
collects only the package, before anything starts JAX's backends. It lives beside the
package, not in it, so the wheel does not carry it.
"""

from __future__ import annotations

import jax

if jax.config.jax_num_cpu_devices != 8:  # tests/conftest.py may have set it already
    jax.config.update("jax_num_cpu_devices", 8)
