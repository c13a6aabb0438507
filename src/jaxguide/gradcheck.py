"""Finite differences: an independent check of any gradient JAX computes.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxguide.gradcheck import check_grad
    >>> f = lambda p: jnp.sum(p["w"] ** 2) + jnp.sin(p["b"])
    >>> err = check_grad(f, {"w": jnp.array([1.0, 2.0]), "b": jnp.array(0.5)})
    >>> err < 1e-3
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxguide._checks import function, real
from jaxguide._types import PyTree

__all__ = ["PyTree", "numerical_grad", "check_grad"]


def _check_eps(fn: str, eps: object) -> float:
    return real(
        fn,
        "eps",
        eps,
        minimum=0.0,
        exclusive=True,
        hint=" Pass a small positive step such as 1e-3.",
    )


def _check_tol(name: str, value: object) -> float:
    return real(
        "check_grad",
        name,
        value,
        minimum=0.0,
        hint=f" Pass a non-negative tolerance such as {name}=1e-3.",
    )


def numerical_grad(f: Callable[[PyTree], Any], params: PyTree, eps: float = 1e-3) -> PyTree:
    """Central-difference gradient of a scalar function ``f`` at ``params``.

    Every coordinate of every leaf is moved by ``+eps`` and ``-eps`` (the moved
    values are cast back to the leaf's dtype before ``f`` sees them), and the slope
    ``(f(+) - f(-)) / (2 eps)`` is taken in float64. That is ``2 * size`` calls of
    ``f``: use it on small problems.

    Args:
        f: a function of ``params`` returning a scalar.
        params: any pytree of floating-point arrays (a dict of weights, a tuple ...).
        eps: the step, a positive number.

    Returns:
        A pytree shaped like ``params`` (NumPy float64 leaves).

    Raises:
        TypeError: ``f`` is not callable, ``eps`` is not a real number, or a leaf
            is not floating point.
        ValueError: ``eps`` is not a positive finite number, ``params`` has no
            leaves, or ``f`` does not return a scalar.

    Example:
        >>> import jax.numpy as jnp
        >>> g = numerical_grad(lambda x: jnp.sum(x**2), jnp.array([1.0, 2.0]))
        >>> [round(float(v), 2) for v in g]
        [2.0, 4.0]
    """

    eps = _check_eps("numerical_grad", eps)
    function("numerical_grad", "f", f, what="a function params -> scalar")
    leaves, treedef = jax.tree.flatten(params)
    if not leaves:
        raise ValueError(
            "numerical_grad(params=...): params must hold at least one array, got a pytree "
            "with no leaves; pass the parameters, e.g. jnp.array([1.0, 2.0])."
        )
    arrays = [np.asarray(leaf, dtype=np.float64) for leaf in leaves]
    for i, leaf in enumerate(leaves):
        if not np.issubdtype(np.asarray(leaf).dtype, np.floating):
            raise TypeError(
                f"numerical_grad(params=...): leaf {i} of params must be a floating-point "
                f"array (gradients need one), got dtype {np.asarray(leaf).dtype}; pass "
                "x.astype(jnp.float32)."
            )

    def value(arrs: list[np.ndarray]) -> float:
        out = f(
            jax.tree.unflatten(
                treedef, [a.astype(np.asarray(l).dtype) for a, l in zip(arrs, leaves)]
            )
        )
        if np.ndim(out) != 0:
            raise ValueError(
                f"numerical_grad(f=...): f must return a scalar, got shape {np.shape(out)}; "
                "reduce its output, e.g. with jnp.sum."
            )
        return float(out)

    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (value(plus) - value(minus)) / (2 * eps)
        grads.append(g)
    return jax.tree.unflatten(treedef, grads)


def check_grad(
    f: Callable[[PyTree], Any],
    params: PyTree,
    *,
    eps: float = 1e-3,
    rtol: float = 1e-2,
    atol: float = 1e-3,
) -> float:
    """Compare ``jax.grad(f)(params)`` with :func:`numerical_grad`.

    Args:
        f: a function of ``params`` returning a scalar.
        params: any pytree of floating-point arrays.
        eps: the finite-difference step.
        rtol, atol: the tolerance, ``atol + rtol * |numerical|`` per coordinate.

    Returns:
        The largest absolute difference between the two gradients.

    Raises:
        AssertionError: the gradients disagree, or either of them has a NaN or
            infinite coordinate (a non-finite gradient never passes); the
            message names the leaf (its pytree path) and shows both.
        TypeError, ValueError: as :func:`numerical_grad`, or a tolerance that is
            negative, NaN or infinite.

    Example:
        >>> import jax.numpy as jnp
        >>> check_grad(lambda x: jnp.sum(jnp.sin(x)), jnp.array([0.5, 1.0])) < 1e-3
        True
    """

    rtol, atol = _check_tol("rtol", rtol), _check_tol("atol", atol)
    eps = _check_eps("check_grad", eps)
    function("check_grad", "f", f, what="a function params -> scalar")

    analytic = jax.grad(f)(params)
    numeric = numerical_grad(f, params, eps)
    worst = 0.0
    paths = jax.tree_util.tree_flatten_with_path(analytic)[0]
    for (path, a), n in zip(paths, jax.tree.leaves(numeric)):
        a = np.asarray(a, dtype=np.float64)
        where = jax.tree_util.keystr(path) or "params"
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(n))):
            raise AssertionError(
                f"non-finite gradient at {where}: jax.grad gives {a}, finite "
                f"differences give {n}; a NaN or infinite gradient never passes."
            )
        diff = np.abs(a - n)
        worst = max(worst, float(diff.max(initial=0.0)))
        if np.any(diff > atol + rtol * np.abs(n)):
            raise AssertionError(
                f"gradient mismatch at {where}: jax.grad gives {a}, finite differences give {n}."
            )
    return worst
