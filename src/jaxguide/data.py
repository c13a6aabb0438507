"""Synthetic data sets made in code from a key: deterministic, no downloads.

Example:
    >>> import jax
    >>> from jaxguide import data
    >>> x, y, true = data.linear_regression(jax.random.key(0), 100, 3)
    >>> x.shape, y.shape, true["w"].shape
    ((100, 3), (100,), (3,))
    >>> x, y = data.spirals(jax.random.key(0), 300, n_classes=3)
    >>> x.shape, y.dtype.name, sorted(set(y.tolist()))
    ((300, 2), 'int32', [0, 1, 2])
    >>> bx, by = data.batch_at((x, y), step=0, batch_size=32, seed=0)
    >>> bx.shape, by.shape
    ((32, 2), (32,))
"""

from __future__ import annotations

import functools
import numbers

__all__ = ["linear_regression", "logistic_regression", "spirals", "train_test_split", "batch_at"]


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


def spirals(key, n_samples: int, n_classes: int = 3, *, turns: float = 1.0, noise: float = 0.2):
    """Interleaved 2-D spirals, one arm per class: a small set no linear model can fit.

    Returns ``(x, y)`` as NumPy arrays: ``x`` float32 of shape ``(n_samples, 2)`` and
    ``y`` int32 labels in ``[0, n_classes)``, in random order. The same key gives the
    same points on every machine.
    """
    import jax
    import numpy as np

    n = _positive_int("spirals(n_samples=...)", n_samples)
    k = _positive_int("spirals(n_classes=...)", n_classes)
    if k < 2 or n < k:
        raise ValueError(f"spirals: need n_classes >= 2 and n_samples >= n_classes, got {n_classes=}, {n_samples=}.")
    if not isinstance(noise, numbers.Real) or noise < 0:
        raise ValueError(f"spirals(noise=...): expected a number >= 0, got {noise!r}.")
    if not isinstance(turns, numbers.Real) or turns <= 0:
        raise ValueError(f"spirals(turns=...): expected a number > 0, got {turns!r}.")
    kr, kn, kp = jax.random.split(key, 3)
    y = np.arange(n, dtype=np.int32) % k
    r = np.asarray(jax.random.uniform(kr, (n,), minval=0.05, maxval=1.0))
    angle = 2 * np.pi * (y / k + turns * r) + noise * np.asarray(jax.random.normal(kn, (n,)))
    x = np.stack([r * np.sin(angle), r * np.cos(angle)], axis=1).astype(np.float32)
    order = np.asarray(jax.random.permutation(kp, n))
    return x[order], y[order]


def train_test_split(x, y, *, test_fraction: float = 0.25, seed: int = 0):
    """Shuffle ``(x, y)`` with ``seed`` and split off the last ``test_fraction`` as a test set.

    Returns ``(x_train, y_train), (x_test, y_test)``.
    """
    import numpy as np

    if len(x) != len(y):
        raise ValueError(f"train_test_split: x has {len(x)} examples but y has {len(y)}; they must match.")
    if not isinstance(test_fraction, numbers.Real) or not 0 < test_fraction < 1:
        raise ValueError(f"train_test_split(test_fraction=...): expected a number in (0, 1), got {test_fraction!r}.")
    n_test = int(round(len(x) * test_fraction))
    if not 0 < n_test < len(x):
        raise ValueError(f"train_test_split: {len(x)} examples leave no room for a test fraction of {test_fraction}.")
    order = np.random.default_rng(seed).permutation(len(x))
    train, test = order[:-n_test], order[-n_test:]
    return (x[train], y[train]), (x[test], y[test])


@functools.lru_cache(maxsize=4)
def _epoch_order(seed: int, epoch: int, n: int):
    import numpy as np

    return np.random.default_rng([seed, epoch]).permutation(n)


def batch_at(data, step: int, *, batch_size: int, seed: int = 0):
    """The ``step``-th minibatch of a shuffled pass over ``data``: a pure function of its arguments.

    ``data`` is an array or a pytree of arrays (e.g. ``(x, y)``) with the same leading
    size ``n``. Each epoch of ``n // batch_size`` steps visits the examples in a fresh
    order drawn from ``(seed, epoch)``; the last ``n % batch_size`` of that order are
    skipped. Because the batch depends only on ``step``, training resumed at step
    ``s`` sees exactly the batches an uninterrupted run would.
    """
    import jax

    bs = _positive_int("batch_at(batch_size=...)", batch_size)
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise ValueError(f"batch_at(step=...): expected an int >= 0, got {step!r}.")
    leaves = jax.tree.leaves(data)
    sizes = {len(leaf) for leaf in leaves}
    if len(sizes) != 1:
        raise ValueError(f"batch_at: all arrays in data must have the same length, got {sorted(sizes)}.")
    n = sizes.pop()
    if bs > n:
        raise ValueError(f"batch_at: batch_size={bs} is larger than the {n} examples in data; use at most {n}.")
    epoch, i = divmod(int(step), n // bs)
    idx = _epoch_order(int(seed), epoch, n)[i * bs : (i + 1) * bs]
    return jax.tree.map(lambda a: a[idx], data)
