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

from jaxguide._checks import positive_int, real

__all__ = [
    "linear_regression",
    "logistic_regression",
    "spirals",
    "noisy_spirals",
    "train_test_split",
    "batch_at",
]


def linear_regression(key, n_samples: int, n_features: int, noise: float = 0.1):
    """``y = x @ w + b + noise`` with random true ``w``, ``b``.

    Returns ``(x, y, true_params)`` where ``true_params = {"w": ..., "b": ...}``.
    """
    import jax
    import jax.numpy as jnp

    n = positive_int("linear_regression", "n_samples", n_samples)
    d = positive_int("linear_regression", "n_features", n_features)
    noise = real("linear_regression", "noise", noise, minimum=0.0, hint=" Pass a standard deviation such as 0.1.")
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

    n = positive_int("logistic_regression", "n_samples", n_samples)
    d = positive_int("logistic_regression", "n_features", n_features)
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
    same points (on a given JAX version: JAX does not promise the same random bits
    across releases).
    """
    import jax
    import numpy as np

    n = positive_int("spirals", "n_samples", n_samples)
    k = positive_int("spirals", "n_classes", n_classes)
    if k < 2 or n < k:
        raise ValueError(f"spirals: need n_classes >= 2 and n_samples >= n_classes, got {n_classes=}, {n_samples=}.")
    noise = real("spirals", "noise", noise, minimum=0.0, hint=" Pass a standard deviation such as 0.1.")
    turns = real("spirals", "turns", turns, minimum=0.0, exclusive=True, hint=" Pass a number of turns such as 1.0.")
    kr, kn, kp = jax.random.split(key, 3)
    y = np.arange(n, dtype=np.int32) % k
    r = np.asarray(jax.random.uniform(kr, (n,), minval=0.05, maxval=1.0))
    angle = 2 * np.pi * (y / k + turns * r) + noise * np.asarray(jax.random.normal(kn, (n,)))
    x = np.stack([r * np.sin(angle), r * np.cos(angle)], axis=1).astype(np.float32)
    order = np.asarray(jax.random.permutation(kp, n))
    return x[order], y[order]


def noisy_spirals(
    key,
    n_samples: int,
    n_classes: int = 3,
    *,
    label_noise: float = 0.2,
    n_distractors: int = 3,
    offset: float = 0.0,
    scale: float = 1.0,
    turns: float = 1.0,
    noise: float = 0.2,
):
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
    import jax
    import numpy as np

    n = positive_int("noisy_spirals", "n_samples", n_samples)
    k = positive_int("noisy_spirals", "n_classes", n_classes)
    label_noise = real("noisy_spirals", "label_noise", label_noise, minimum=0.0)
    if not label_noise < 1:
        raise ValueError(
            f"noisy_spirals(label_noise={label_noise!r}): label_noise must be a probability "
            "in [0, 1); pass a fraction such as 0.2."
        )
    n_distractors = positive_int("noisy_spirals", "n_distractors", n_distractors, minimum=0, example=3)
    scale = real("noisy_spirals", "scale", scale, minimum=0.0, exclusive=True, hint=" Pass a scale such as 10.0.")
    offset = real("noisy_spirals", "offset", offset, hint=" Pass an offset such as 40.0.")
    noise = real("noisy_spirals", "noise", noise, minimum=0.0, hint=" Pass a standard deviation such as 0.2.")
    k_arms, k_extra, k_flip, k_other = jax.random.split(key, 4)
    arms, y_true = spirals(k_arms, n, n_classes=k, turns=turns, noise=noise)
    extra = 0.3 * np.asarray(jax.random.normal(k_extra, (n, int(n_distractors))))
    x = (np.concatenate([arms, extra], axis=1) * scale + offset).astype(np.float32)
    flip = np.asarray(jax.random.bernoulli(k_flip, label_noise, (n,)))
    other = (y_true + np.asarray(jax.random.randint(k_other, (n,), 1, k))) % k
    y = np.where(flip, other, y_true).astype(np.int32)
    return x, y, y_true


def train_test_split(x, y, *, test_fraction: float = 0.25, seed: int = 0):
    """Shuffle ``(x, y)`` with ``seed`` and split off the last ``test_fraction`` as a test set.

    Returns ``(x_train, y_train), (x_test, y_test)``.
    """
    import numpy as np

    if len(x) != len(y):
        raise ValueError(f"train_test_split: x has {len(x)} examples but y has {len(y)}; they must match.")
    test_fraction = real("train_test_split", "test_fraction", test_fraction)
    if not 0 < test_fraction < 1:
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

    bs = positive_int("batch_at", "batch_size", batch_size)
    step = positive_int("batch_at", "step", step, minimum=0, example=0)
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
