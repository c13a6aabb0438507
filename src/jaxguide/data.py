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
    >>> xn, yn, yn_true = data.noisy_spirals(jax.random.key(0), 300)
    >>> xn.shape, bool((yn != yn_true).any())
    ((300, 5), True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxguide._checks import count, positive_int, real
from jaxguide._types import Dataset

__all__ = [
    "Dataset",
    "linear_regression",
    "logistic_regression",
    "spirals",
    "noisy_spirals",
    "train_test_split",
    "batch_at",
]


def linear_regression(
    key: ArrayLike, n_samples: int, n_features: int, noise: float = 0.1
) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
    """``y = x @ w + b + noise`` with random true ``w``, ``b``.

    Args:
        key: a JAX random key.
        n_samples, n_features: the shape of ``x``, positive ints.
        noise: standard deviation of the Gaussian noise added to ``y``, finite, ``>= 0``.

    Returns:
        ``(x, y, true_params)``: ``x`` of shape ``(n_samples, n_features)``, ``y`` of
        shape ``(n_samples,)``, and ``true_params = {"w": (d,), "b": ()}``.

    Raises:
        TypeError: a count that is not an int, or ``noise`` not a real number.
        ValueError: a count below 1, or ``noise`` negative, NaN or infinite.

    Example:
        >>> import jax
        >>> x, y, true = linear_regression(jax.random.key(0), 4, 2, noise=0.0)
        >>> bool(jax.numpy.allclose(y, x @ true["w"] + true["b"]))
        True
    """

    n = positive_int("linear_regression", "n_samples", n_samples)
    d = positive_int("linear_regression", "n_features", n_features)
    noise = real(
        "linear_regression",
        "noise",
        noise,
        minimum=0.0,
        hint=" Pass a standard deviation such as 0.1.",
    )
    kx, kw, kb, ke = jax.random.split(key, 4)
    x = jax.random.normal(kx, (n, d))
    true = {"w": jax.random.normal(kw, (d,)), "b": jax.random.normal(kb, ())}
    y = x @ true["w"] + true["b"] + noise * jax.random.normal(ke, (n,))
    return x, y, true


def logistic_regression(
    key: ArrayLike, n_samples: int, n_features: int
) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
    """Binary labels drawn from ``sigmoid(x @ w + b)`` with random true ``w``, ``b``.

    Args:
        key: a JAX random key.
        n_samples, n_features: the shape of ``x``, positive ints.

    Returns:
        ``(x, y, true_params)``; ``y`` holds 0.0 and 1.0 (float32).

    Raises:
        TypeError: a count that is not an int.
        ValueError: a count below 1.

    Example:
        >>> import jax
        >>> x, y, _ = logistic_regression(jax.random.key(0), 6, 2)
        >>> sorted(set(y.tolist())) in ([0.0], [1.0], [0.0, 1.0])
        True
    """

    n = positive_int("logistic_regression", "n_samples", n_samples)
    d = positive_int("logistic_regression", "n_features", n_features)
    kx, kw, kb, ky = jax.random.split(key, 4)
    x = jax.random.normal(kx, (n, d))
    true = {"w": 2.0 * jax.random.normal(kw, (d,)), "b": 0.5 * jax.random.normal(kb, ())}
    p = jax.nn.sigmoid(x @ true["w"] + true["b"])
    y = jax.random.bernoulli(ky, p).astype("float32")
    return x, y, true


def spirals(
    key: ArrayLike, n_samples: int, n_classes: int = 3, *, turns: float = 1.0, noise: float = 0.2
) -> tuple[np.ndarray, np.ndarray]:
    """Interleaved 2-D spirals, one arm per class: a small set no linear model can fit.

    The same key gives the same points (on a given JAX version: JAX does not promise
    the same random bits across releases).

    Args:
        key: a JAX random key.
        n_samples: number of points, at least ``n_classes``.
        n_classes: number of arms, at least 2.
        turns: how far each arm winds, ``> 0``.
        noise: standard deviation of the angular noise, ``>= 0``.

    Returns:
        ``(x, y)`` as NumPy arrays: ``x`` float32 of shape ``(n_samples, 2)`` and
        ``y`` int32 labels in ``[0, n_classes)``, in random order.

    Raises:
        TypeError: a count that is not an int, or a number that is not real.
        ValueError: ``n_classes < 2``, ``n_samples < n_classes``, or a ``turns`` or
            ``noise`` out of range, NaN or infinite.

    Example:
        >>> import jax
        >>> x, y = spirals(jax.random.key(0), 6, n_classes=2)
        >>> x.shape, sorted(y.tolist())
        ((6, 2), [0, 0, 0, 1, 1, 1])
    """

    n = positive_int("spirals", "n_samples", n_samples)
    k = positive_int("spirals", "n_classes", n_classes)
    if k < 2:
        raise ValueError(f"spirals(n_classes={k}): n_classes must be an int >= 2; pass e.g. 3.")
    if n < k:
        raise ValueError(
            f"spirals(n_samples={n}): n_samples must be at least n_classes={k}, so that every arm has a point."
        )
    noise = real(
        "spirals", "noise", noise, minimum=0.0, hint=" Pass a standard deviation such as 0.1."
    )
    turns = real(
        "spirals",
        "turns",
        turns,
        minimum=0.0,
        exclusive=True,
        hint=" Pass a number of turns such as 1.0.",
    )
    y = np.arange(n, dtype=np.int32) % k
    r, angle_noise, order = (np.asarray(a) for a in _spiral_draws()(key, n))
    angle = 2 * np.pi * (y / k + turns * r) + noise * angle_noise
    x = np.stack([r * np.sin(angle), r * np.cos(angle)], axis=1).astype(np.float32)
    return x[order], y[order]


@functools.cache
def _spiral_draws() -> Callable[[ArrayLike, int], tuple[jax.Array, jax.Array, jax.Array]]:
    """The random draws of :func:`spirals` (radii, angular noise, order), one compiled
    program per ``n`` instead of one per draw (the same bits as drawing them one by one)."""

    def draws(key: ArrayLike, n: int) -> tuple[jax.Array, jax.Array, jax.Array]:
        kr, kn, kp = jax.random.split(key, 3)
        return (
            jax.random.uniform(kr, (n,), minval=0.05, maxval=1.0),
            jax.random.normal(kn, (n,)),
            jax.random.permutation(kp, n),
        )

    return jax.jit(draws, static_argnums=1)


@functools.cache
def _defect_draws() -> Callable[..., tuple[jax.Array, jax.Array, jax.Array, jax.Array]]:
    """The random draws of :func:`noisy_spirals` (the arms' key, noise features, which
    labels flip, to which class), one compiled program per shape."""

    def draws(
        key: ArrayLike, n: int, n_classes: int, n_distractors: int, label_noise: float
    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        k_arms, k_extra, k_flip, k_other = jax.random.split(key, 4)
        return (
            k_arms,
            jax.random.normal(k_extra, (n, n_distractors)),
            jax.random.bernoulli(k_flip, label_noise, (n,)),
            jax.random.randint(k_other, (n,), 1, n_classes),
        )

    return jax.jit(draws, static_argnums=(1, 2, 3))


def noisy_spirals(
    key: ArrayLike,
    n_samples: int,
    n_classes: int = 3,
    *,
    label_noise: float = 0.2,
    n_distractors: int = 3,
    offset: float = 0.0,
    scale: float = 1.0,
    turns: float = 1.0,
    noise: float = 0.2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The spirals with three defects of real data: wrong labels, useless features, raw units.

    The points of :func:`spirals` (drawn from a subkey of ``key``, with ``n_classes``,
    ``turns``, ``noise``) get ``n_distractors`` extra features of pure noise (normal,
    standard deviation 0.3, unrelated to the class); a fraction ``label_noise`` of the
    labels, drawn at random, is replaced by another class; and every feature can be
    put in "raw units", ``x * scale + offset`` (e.g. ``offset=40, scale=10``), so that
    no feature is centred or of unit size. A network can memorise the wrong labels
    through the noise features, which regularisation (dropout) counters; uncentred
    features slow plain training, which normalisation (BatchNorm) undoes. The
    defaults add the first two defects and keep the units.

    Args:
        key: a JAX random key; the same key gives the same set (on a given JAX
            version).
        n_samples: number of examples (``>= n_classes``).
        n_classes: number of spiral arms (``>= 2``).
        label_noise: probability that an example's label is replaced by a different
            class, in ``[0, 1)``.
        n_distractors: number of noise features added to the two informative ones.
        offset, scale: the raw-units transform applied to every feature
            (``scale > 0``).
        turns, noise: as in :func:`spirals`.

    Returns:
        ``(x, y, y_true)`` as NumPy arrays: ``x`` float32 of shape
        ``(n_samples, 2 + n_distractors)`` (the two spiral coordinates first), ``y``
        the int32 labels to train on (some wrong), ``y_true`` the int32 arm each
        point was drawn from (to measure what the model really learned).

    Raises:
        TypeError: a count that is not an int, or a number that is not real.
        ValueError: a count below its minimum, ``label_noise`` outside
            ``[0, 1)``, a ``scale`` that is not > 0, or a NaN or infinite number.

    Example:
        >>> import jax
        >>> x, y, y_true = noisy_spirals(jax.random.key(0), 1000, label_noise=0.1)
        >>> x.shape, round(float((y != y_true).mean()), 2)
        ((1000, 5), 0.1)
    """

    n = positive_int("noisy_spirals", "n_samples", n_samples)
    k = positive_int("noisy_spirals", "n_classes", n_classes)
    label_noise = real("noisy_spirals", "label_noise", label_noise, minimum=0.0)
    if not label_noise < 1:
        raise ValueError(
            f"noisy_spirals(label_noise={label_noise!r}): label_noise must be a probability "
            "in [0, 1); pass a fraction such as 0.2."
        )
    n_distractors = count("noisy_spirals", "n_distractors", n_distractors, example=3)
    scale = real(
        "noisy_spirals",
        "scale",
        scale,
        minimum=0.0,
        exclusive=True,
        hint=" Pass a scale such as 10.0.",
    )
    offset = real("noisy_spirals", "offset", offset, hint=" Pass an offset such as 40.0.")
    noise = real(
        "noisy_spirals", "noise", noise, minimum=0.0, hint=" Pass a standard deviation such as 0.2."
    )
    k_arms, extra, flip, shift = _defect_draws()(key, n, k, int(n_distractors), label_noise)
    arms, y_true = spirals(k_arms, n, n_classes=k, turns=turns, noise=noise)
    x = np.concatenate([arms, 0.3 * np.asarray(extra)], axis=1) * scale + offset
    other = (y_true + np.asarray(shift)) % k
    y = np.where(np.asarray(flip), other, y_true).astype(np.int32)
    return x.astype(np.float32), y, y_true


def train_test_split(
    x: np.ndarray, y: np.ndarray, *, test_fraction: float = 0.25, seed: int = 0
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Shuffle ``(x, y)`` with ``seed`` and split off the last ``test_fraction`` as a test set.

    Args:
        x, y: NumPy arrays (or ``jax.Array``s) with the same number of rows.
        test_fraction: the share of examples in the test set, in ``(0, 1)``.
        seed: seed of the shuffle, an int ``>= 0``.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``.

    Raises:
        TypeError: ``test_fraction`` is not a real number, or ``seed`` not an int.
        ValueError: ``x`` and ``y`` differ in length, ``test_fraction`` is outside
            ``(0, 1)``, or it leaves an empty train or test set.

    Example:
        >>> import numpy as np
        >>> (xt, yt), (xs, ys) = train_test_split(np.arange(8), np.arange(8), test_fraction=0.25)
        >>> len(xt), len(xs), sorted(np.concatenate([xt, xs]).tolist()) == list(range(8))
        (6, 2, True)
    """

    seed = count("train_test_split", "seed", seed)
    if len(x) != len(y):
        raise ValueError(
            f"train_test_split(x=..., y=...): x has {len(x)} examples but y has {len(y)}; "
            "they must match."
        )
    test_fraction = real("train_test_split", "test_fraction", test_fraction)
    if not 0 < test_fraction < 1:
        raise ValueError(
            f"train_test_split(test_fraction={test_fraction!r}): test_fraction must be in (0, 1); "
            "pass a fraction such as 0.25."
        )
    n_test = int(round(len(x) * test_fraction))
    if not 0 < n_test < len(x):
        raise ValueError(
            f"train_test_split: {len(x)} examples leave no room for a test fraction of {test_fraction}."
        )
    order = np.random.default_rng(seed).permutation(len(x))
    train, test = order[:-n_test], order[-n_test:]
    return (x[train], y[train]), (x[test], y[test])


@functools.lru_cache(maxsize=4)
def _epoch_order(seed: int, epoch: int, n: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(n)


def batch_at(data: Dataset, step: int, *, batch_size: int, seed: int = 0) -> Dataset:
    """The ``step``-th minibatch of a shuffled pass over ``data``: a pure function of its arguments.

    Each epoch of ``n // batch_size`` steps visits the examples in a fresh order drawn
    from ``(seed, epoch)``; the last ``n % batch_size`` of that order are skipped.
    Because the batch depends only on ``step``, training resumed at step ``s`` sees
    exactly the batches an uninterrupted run would.

    Args:
        data: an array or a pytree of arrays (e.g. ``(x, y)``) with the same leading
            size ``n``.
        step: the step number, an int ``>= 0``.
        batch_size: examples per batch, at most ``n``.
        seed: seed of the epochs' orders, an int ``>= 0``.

    Returns:
        ``data`` with every array indexed by the batch's ``batch_size`` rows.

    Raises:
        TypeError: a count that is not an int.
        ValueError: a count out of range, arrays of different lengths, or a
            ``batch_size`` larger than ``n``.

    Example:
        >>> import numpy as np
        >>> a = batch_at(np.arange(10), 0, batch_size=5)
        >>> b = batch_at(np.arange(10), 1, batch_size=5)
        >>> sorted(np.concatenate([a, b]).tolist()) == list(range(10))   # one epoch
        True
    """

    bs = positive_int("batch_at", "batch_size", batch_size)
    step = count("batch_at", "step", step)
    seed = count("batch_at", "seed", seed)
    leaves = jax.tree.leaves(data)
    sizes = {len(leaf) for leaf in leaves}
    if len(sizes) != 1:
        raise ValueError(
            f"batch_at(data=...): all arrays in data must have the same length, got {sorted(sizes)}."
        )
    n = sizes.pop()
    if bs > n:
        raise ValueError(
            f"batch_at(batch_size={bs}): batch_size is larger than the {n} examples in data; "
            f"use at most {n}."
        )
    epoch, i = divmod(int(step), n // bs)
    idx = _epoch_order(int(seed), epoch, n)[i * bs : (i + 1) * bs]
    return jax.tree.map(lambda a: a[idx], data)
