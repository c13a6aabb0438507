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

import numbers

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

    if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features < 1:
        raise ValueError(f"init_linear(n_features=...): expected a positive int, got {n_features!r}.")
    return {"w": scale * jax.random.normal(key, (int(n_features),)), "b": jnp.zeros(())}


def predict_linear(params: dict, x):
    """``x @ w + b`` for one example ``x`` of shape ``(d,)`` or a batch ``(n, d)``."""
    _check_features(params, x, "predict_linear")
    return x @ params["w"] + params["b"]


def mse_loss(params: dict, x, y):
    """Mean squared error of :func:`predict_linear`."""
    import jax.numpy as jnp

    return jnp.mean((predict_linear(params, x) - y) ** 2)


def predict_logistic(params: dict, x):
    """Probability of class 1, ``sigmoid(x @ w + b)``, for one example or a batch."""
    import jax

    _check_features(params, x, "predict_logistic")
    return jax.nn.sigmoid(x @ params["w"] + params["b"])


def logistic_loss(params: dict, x, y):
    """Mean binary cross-entropy for labels ``y`` in {0, 1}, computed from logits
    with ``log_sigmoid`` so that it stays finite for confident predictions."""
    import jax
    import jax.numpy as jnp

    _check_features(params, x, "logistic_loss")
    logits = x @ params["w"] + params["b"]
    return -jnp.mean(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))
