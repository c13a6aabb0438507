"""Argument checks shared by every public ``jaxguide`` function (private module).

One rule everywhere: a value of the wrong *type* raises ``TypeError``, a value of the
right type but outside what makes sense raises ``ValueError``, NaN and infinity are
refused unless a function says it accepts them, and every message names the function,
the argument and what to pass instead::

    >>> positive_int("benchmark", "repeats", 0)
    Traceback (most recent call last):
    ...
    ValueError: benchmark(repeats=0): repeats must be an int >= 1; pass a positive count such as 7.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable


def _call(fn: str, name: str, value: object) -> str:
    return f"{fn}({name}={value!r})"


def positive_int(fn: str, name: str, value: object, *, minimum: int = 1, example: int = 7) -> int:
    """``value`` as an int ``>= minimum`` (bools are refused: they are not counts)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be an int, got {type(value).__name__}; "
            f"pass a whole number such as {example}."
        )
    if value < minimum:
        what = "a positive count" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(
            f"{_call(fn, name, value)}: {name} must be an int >= {minimum}; pass {what} such as {max(example, minimum)}."
        )
    return int(value)


def real(
    fn: str,
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    exclusive: bool = False,
    finite: bool = True,
    hint: str = "",
) -> float:
    """``value`` as a float: a real number (not a bool), not NaN, finite unless
    ``finite=False``, and ``>= minimum`` (``> minimum`` if ``exclusive``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{_call(fn, name, value)}: {name} must be a real number, got {type(value).__name__}.{hint}")
    value = float(value)
    if math.isnan(value) or (finite and math.isinf(value)):
        raise ValueError(f"{_call(fn, name, value)}: {name} must be a finite number.{hint}")
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        bound = f"> {minimum:g}" if exclusive else f">= {minimum:g}"
        raise ValueError(f"{_call(fn, name, value)}: {name} must be {bound}.{hint}")
    return value


def boolean(fn: str, name: str, value: object) -> bool:
    """``value``, which must be ``True`` or ``False`` (not a truthy stand-in)."""
    if not isinstance(value, bool):
        raise TypeError(f"{_call(fn, name, value)}: {name} must be True or False, got {type(value).__name__}.")
    return value


def one_of(fn: str, name: str, value: object, choices: Iterable[object]) -> object:
    """``value``, which must be one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{_call(fn, name, value)}: {name} must be one of {', '.join(map(repr, choices))}.")
    return value


def concrete_or_none(value: object):
    """``value`` as a NumPy array, or ``None`` when it is traced (inside ``jit``,
    ``vmap``, or differentiated by ``grad``): value checks run only where values exist."""
    import jax
    import numpy as np

    try:
        return np.asarray(value)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def mesh(fn: str, name: str, value: object):
    """``value``, which must be a ``jax.sharding.Mesh`` (or an ``AbstractMesh``)."""
    import jax

    kinds = (jax.sharding.Mesh, jax.sharding.AbstractMesh)
    if not isinstance(value, kinds):
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be a jax.sharding.Mesh, got "
            f"{type(value).__name__}; make one with jax.make_mesh((8,), ('x',)) or "
            "jaxguide.sharding.make_mesh."
        )
    return value
