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
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    import jax
    import numpy as np

T = TypeVar("T")


def _call(fn: str, name: str, value: object) -> str:
    return f"{fn}({name}={value!r})"


def integer(fn: str, name: str, value: object, *, minimum: int, example: int) -> int:
    """``value`` as an int ``>= minimum`` (bools are refused: they are not numbers here).

    :func:`positive_int` (``>= 1``) and :func:`count` (``>= 0``) name the usual bounds.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be an int, got {type(value).__name__}; "
            f"pass a whole number such as {example}."
        )
    if value < minimum:
        what = {1: "a positive count", 0: "zero or a positive count"}.get(
            minimum, f"an int >= {minimum}"
        )
        raise ValueError(
            f"{_call(fn, name, value)}: {name} must be an int >= {minimum}; "
            f"pass {what} such as {max(example, minimum)}."
        )
    return int(value)


def positive_int(fn: str, name: str, value: object, *, example: int = 7) -> int:
    """``value`` as an int ``>= 1``: a size, a number of repeats, devices or steps."""
    return integer(fn, name, value, minimum=1, example=example)


def count(fn: str, name: str, value: object, *, example: int = 0) -> int:
    """``value`` as an int ``>= 0``: an index, a step number, a seed, a count that may be 0.

    >>> count("batch_at", "step", -1)
    Traceback (most recent call last):
    ...
    ValueError: batch_at(step=-1): step must be an int >= 0; pass zero or a positive count such as 0.
    """
    return integer(fn, name, value, minimum=0, example=example)


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
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be a real number, got {type(value).__name__}.{hint}"
        )
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
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be True or False, got {type(value).__name__}."
        )
    return value


def positive_ints(fn: str, name: str, value: object, *, example: str = "(4, 2)") -> tuple[int, ...]:
    """``value`` (an int, or a non-empty sequence of ints) as a tuple of ints ``>= 1``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,)
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be a tuple of ints, got "
            f"{type(value).__name__}; pass e.g. {example}."
        )
    items: tuple[Any, ...] = tuple(value)
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in items):
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must hold ints only; pass e.g. {example}."
        )
    if not items or any(v < 1 for v in items):
        raise ValueError(
            f"{_call(fn, name, value)}: {name} must be a non-empty tuple of ints >= 1; pass e.g. {example}."
        )
    return tuple(int(v) for v in items)


def string(fn: str, name: str, value: object, *, example: str = "'x'") -> str:
    """``value``, which must be a non-empty ``str``."""
    if not isinstance(value, str):
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be a str, got {type(value).__name__}; pass e.g. {example}."
        )
    if not value:
        raise ValueError(
            f"{_call(fn, name, value)}: {name} must not be empty; pass e.g. {example}."
        )
    return value


def wrong_type(fn: str, name: str, value: object, what: str, fix: str = "") -> TypeError:
    """The error for an argument of the wrong type, in the package's one form:
    ``fn(name=...): name must be <what>, got <type>[; <fix>].`` Raise it where the test
    is more than an ``isinstance`` (:func:`instance`), e.g. ``hasattr(x, "shape")``."""
    hint = f"; {fix}" if fix else ""
    return TypeError(f"{fn}({name}=...): {name} must be {what}, got {type(value).__name__}{hint}.")


def instance(
    fn: str, name: str, value: object, types: type | tuple[type, ...], *, what: str, fix: str = ""
) -> Any:
    """``value``, which must be an instance of ``types`` (:func:`wrong_type` otherwise)."""
    if not isinstance(value, types):
        raise wrong_type(fn, name, value, what, fix)
    return value


def strings(
    fn: str, name: str, value: object, *, what: str, example: str, kinds: type | tuple[type, ...]
) -> tuple[str, ...]:
    """``value``, an instance of ``kinds`` (a tuple, or any sequence) holding only strs,
    as a tuple; :func:`wrong_type` names the first item that is not a str.

    >>> strings("format_outputs", "drop", ("DEBUG", 3), what="a tuple of str",
    ...         example="('DEBUG',)", kinds=tuple)
    Traceback (most recent call last):
    ...
    TypeError: format_outputs(drop=...): drop must be a tuple of str, got int; pass e.g. ('DEBUG',).
    """
    fix = f"pass e.g. {example}"
    if isinstance(value, str) or not isinstance(value, kinds):
        raise wrong_type(fn, name, value, what, fix)
    items: tuple[Any, ...] = tuple(cast("Iterable[Any]", value))  # an instance of kinds
    for item in items:
        if not isinstance(item, str):
            raise wrong_type(fn, name, item, what, fix)
    return items


def function(fn: str, name: str, value: T, *, what: str = "a function") -> T:
    """``value``, which must be callable; ``what`` says which signature is expected."""
    if not callable(value):
        raise wrong_type(fn, name, value, what)
    return value


def path(fn: str, name: str, value: object) -> str | os.PathLike[str]:
    """``value``, which must be a path (``str`` or ``os.PathLike``)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be a path (str or pathlib.Path), "
            f"got {type(value).__name__}."
        )
    return value


def one_of(fn: str, name: str, value: T, choices: Iterable[object]) -> T:
    """``value``, which must be one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(
            f"{_call(fn, name, value)}: {name} must be one of {', '.join(map(repr, choices))}."
        )
    return value


def divides(fn: str, name: str, batch: int, parts: int) -> None:
    """Raise ``ValueError`` unless a batch of ``batch`` examples splits evenly into ``parts``.

    >>> divides("shard_batch", "batch", 30, 8)
    Traceback (most recent call last):
    ...
    ValueError: shard_batch(batch=...): a batch of 30 examples does not divide across 8 devices (30 = 3 × 8 + 6); use a batch size that is a multiple of 8 (e.g. 32 or 24), or drop the last 6 examples.
    """
    if batch % parts:
        lower, upper = (batch // parts) * parts, (batch // parts + 1) * parts
        fix = (
            f"use a batch size that is a multiple of {parts} (e.g. {upper}"
            + (f" or {lower}" if lower else "")
            + ")"
        )
        raise ValueError(
            f"{fn}({name}=...): a batch of {batch} examples does not divide across {parts} devices "
            f"({batch} = {batch // parts} × {parts} + {batch % parts}); {fix}, or drop the "
            f"last {batch % parts} examples."
        )


def mesh_axes(fn: str, name: str, value: object, mesh: Any) -> tuple[str, ...]:
    """``value`` (a mesh axis name, or a non-empty tuple of them) as a tuple of axes of ``mesh``."""
    if isinstance(value, str):
        axes: tuple[str, ...] = (value,)
    elif isinstance(value, (tuple, list)) and value and all(isinstance(a, str) for a in value):
        axes = tuple(value)
    else:
        raise TypeError(
            f"{_call(fn, name, value)}: {name} must be a mesh axis name or a tuple of names, "
            "such as 'x' or ('x', 'y')."
        )
    missing = [a for a in axes if a not in mesh.shape]
    if missing:
        raise ValueError(
            f"{_call(fn, name, value)}: the mesh has axes {tuple(mesh.shape)}; "
            f"{', '.join(map(repr, missing))} {'is' if len(missing) == 1 else 'are'} not among them. "
            f"Pass one of {tuple(mesh.shape)}."
        )
    return axes


def concrete_or_none(value: object) -> np.ndarray | None:
    """``value`` as a NumPy array, or ``None`` when it is traced (inside ``jit``,
    ``vmap``, or differentiated by ``grad``): value checks run only where values exist."""
    import jax
    import numpy as np

    try:
        return np.asarray(value)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def mesh(fn: str, name: str, value: object) -> jax.sharding.Mesh | jax.sharding.AbstractMesh:
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
