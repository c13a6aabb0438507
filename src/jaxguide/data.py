"""Synthetic data sets made in code from a key: deterministic, no downloads.

Example:
    >>> import jax
    >>> from jaxguide import data
    >>> x, y, true = data.linear_regression(jax.random.key(0), 100, 3)
    >>> x.shape, y.shape, true["w"].shape
    ((100, 3), (100,), (3,))
"""

from __future__ import annotations

import numbers

__all__ = ["linear_regression", "logistic_regression"]


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return int(value)


def linear_regression(key, n_samples: int, n_features: int, noise: float = 0.1):
    """``y = x @ w + b + noise`` with random true ``w``, ``b``.

    Returns ``(x, y, true_params)`` where ``true_params = {"w": ..., "b": ...}``.
    """
    import jax
    import jax.numpy as jnp

    n = _positive_int("linear_regression(n_samples=...)", n_samples)
    d = _positive_int("linear_regression(n_features=...)", n_features)
    if not isinstance(noise, numbers.Real) or noise < 0:
        raise ValueError(f"linear_regression(noise=...): expected a number >= 0, got {noise!r}.")
    kx, kw, kb, ke = jax.random.split(key, 4)
    x = jax.random.normal(kx, (n, d))
    true = {"w": jax.random.normal(kw, (d,)), "b": jax.random.normal(kb, ())}
    y = x @ true["w"] + true["b"] + noise * jax.random.normal(ke, (n,))
    return x, y, true


def logistic_regression(key, n_samples: int, n_features: int):
    """Binary labels drawn from ``sigmoid(x @ w + b)`` with random true ``w``, ``b``.

    Returns ``(x, y, true_params)``; ``y`` holds 0.0 and 1.0 (float32).
    """
    import jax

    n = _positive_int("logistic_regression(n_samples=...)", n_samples)
    d = _positive_int("logistic_regression(n_features=...)", n_features)
    kx, kw, kb, ky = jax.random.split(key, 4)
    x = jax.random.normal(kx, (n, d))
    true = {"w": 2.0 * jax.random.normal(kw, (d,)), "b": 0.5 * jax.random.normal(kb, ())}
    p = jax.nn.sigmoid(x @ true["w"] + true["b"])
    y = jax.random.bernoulli(ky, p).astype("float32")
    return x, y, true
