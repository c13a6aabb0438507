"""Small models as pure functions over dict parameters: linear and logistic regression.

Parameters are plain dicts ``{"w": (d,), "b": ()}``, so every JAX transformation
(``grad``, ``vmap``, ``jit``, ``hessian``) works on them directly.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxguide import models
    >>> params = models.init_linear(jax.random.key(0), 3)
    >>> models.predict_logistic(params, jnp.ones(3)).shape   # one example
    ()
"""

from __future__ import annotations

from jaxguide._checks import concrete_or_none, positive_int

__all__ = ["init_linear", "predict_linear", "mse_loss", "predict_logistic", "logistic_loss"]


def _check_features(params, x, where: str):
    w = params["w"] if isinstance(params, dict) and "w" in params else None
    if w is None or "b" not in params:
        raise TypeError(f"{where}: params must be a dict with keys 'w' and 'b', got {type(params).__name__}.")
    if getattr(x, "ndim", 0) < 1 or x.shape[-1] != w.shape[0]:
        raise ValueError(
            f"{where}: x has {x.shape[-1] if getattr(x, 'ndim', 0) else 'no'} features "
            f"(shape {getattr(x, 'shape', ())}) but params['w'] expects {w.shape[0]}; "
            "the last axis of x must be the feature axis."
        )


def init_linear(key, n_features: int, scale: float = 0.1) -> dict:
    """Small random weights ``w`` of shape ``(n_features,)`` and a zero bias ``b``."""
    import jax
    import jax.numpy as jnp

    n_features = positive_int("init_linear", "n_features", n_features, example=3)
    return {"w": scale * jax.random.normal(key, (n_features,)), "b": jnp.zeros(())}


def predict_linear(params: dict, x):
    """``x @ w + b`` for one example ``x`` of shape ``(d,)`` or a batch ``(n, d)``."""
    _check_features(params, x, "predict_linear")
    return x @ params["w"] + params["b"]


def _check_targets(pred, y, where: str) -> None:
    import numbers

    shape = () if isinstance(y, numbers.Real) else getattr(y, "shape", None)
    if shape is None:
        raise TypeError(f"{where}(y={y!r}): y must be an array of targets, got {type(y).__name__}.")
    if tuple(shape) != tuple(pred.shape):
        raise ValueError(
            f"{where}: y has shape {tuple(shape)} but the predictions have shape {tuple(pred.shape)}; "
            "they must match exactly (a (n, 1) column against (n,) predictions would broadcast "
            "to (n, n)); pass y with one target per example, e.g. y.reshape(-1)."
        )


def mse_loss(params: dict, x, y):
    """Mean squared error of :func:`predict_linear`.

    Args:
        params: ``{"w": (d,), "b": ()}``, as made by :func:`init_linear`.
        x: one example ``(d,)`` or a batch ``(n, d)``.
        y: the targets, of exactly the predictions' shape (``()`` or ``(n,)``).

    Returns:
        The scalar mean of ``(predict_linear(params, x) - y) ** 2``.

    Raises:
        TypeError: ``params`` is not a ``{"w", "b"}`` dict, or ``y`` is not an array.
        ValueError: ``x`` has the wrong number of features, or ``y``'s shape is not
            the predictions' shape (no broadcasting: ``(n, 1)`` against ``(n,)``
            would silently compare every pair).

    Example:
        >>> import jax.numpy as jnp
        >>> params = {"w": jnp.array([2.0]), "b": jnp.array(0.0)}
        >>> float(mse_loss(params, jnp.array([[1.0], [2.0]]), jnp.array([2.0, 5.0])))
        0.5
    """
    import jax.numpy as jnp

    pred = predict_linear(params, x)
    _check_targets(pred, y, "mse_loss")
    return jnp.mean((pred - y) ** 2)


def predict_logistic(params: dict, x):
    """Probability of class 1, ``sigmoid(x @ w + b)``, for one example or a batch."""
    import jax

    _check_features(params, x, "predict_logistic")
    return jax.nn.sigmoid(x @ params["w"] + params["b"])


def logistic_loss(params: dict, x, y):
    """Mean binary cross-entropy for labels ``y`` in {0, 1}, computed from logits
    with ``log_sigmoid`` so that it stays finite for confident predictions.

    Args:
        params: ``{"w": (d,), "b": ()}``, as made by :func:`init_linear`.
        x: one example ``(d,)`` or a batch ``(n, d)``.
        y: labels 0 or 1, of exactly the predictions' shape (``()`` or ``(n,)``).
            Their values are checked when they are concrete (not inside ``jit``).

    Returns:
        The scalar mean binary cross-entropy.

    Raises:
        TypeError: ``params`` is not a ``{"w", "b"}`` dict, or ``y`` is not an array.
        ValueError: ``x`` has the wrong number of features, ``y``'s shape is not
            the predictions' shape, or a concrete label is not 0 or 1 (labels
            ``-1``/``+1`` would give a negative "loss").

    Example:
        >>> import jax.numpy as jnp
        >>> params = {"w": jnp.array([0.0]), "b": jnp.array(0.0)}
        >>> round(float(logistic_loss(params, jnp.ones((2, 1)), jnp.array([0.0, 1.0]))), 4)
        0.6931
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

    _check_features(params, x, "logistic_loss")
    logits = x @ params["w"] + params["b"]
    _check_targets(logits, y, "logistic_loss")
    labels = concrete_or_none(y)
    if labels is not None and not np.all((labels == 0) | (labels == 1)):
        bad = np.unique(labels[(labels != 0) & (labels != 1)])[:5]
        raise ValueError(
            f"logistic_loss: labels y must be 0 or 1, got values {bad.tolist()}; "
            "for labels -1/+1 pass (y + 1) / 2."
        )
    return -jnp.mean(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))
