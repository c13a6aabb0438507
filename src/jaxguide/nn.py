"""A multilayer perceptron in pure JAX: parameters are a pytree, the model is a function.

The parameters are a list of ``{"w": (d_in, d_out), "b": (d_out,)}`` dicts, one per
layer, so ``jax.grad``, ``jax.tree.map``, optax and orbax all work on them directly.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxguide import nn
    >>> params = nn.init_mlp(jax.random.key(0), (2, 16, 3))
    >>> [layer["w"].shape for layer in params]
    [(2, 16), (16, 3)]
    >>> logits = nn.mlp(params, jnp.zeros((5, 2)))
    >>> logits.shape
    (5, 3)
    >>> float(nn.accuracy(logits, jnp.zeros(5, dtype=jnp.int32)))  # zero input: all logits equal, argmax is class 0
    1.0
"""

from __future__ import annotations

import numbers

from jaxguide._checks import concrete_or_none

__all__ = ["init_mlp", "mlp", "cross_entropy", "accuracy", "classifier_loss"]


def init_mlp(key, sizes) -> list[dict]:
    """Random parameters for an MLP with layer widths ``sizes``, e.g. ``(2, 64, 64, 3)``.

    Weights are drawn with He scaling (``normal * sqrt(2 / d_in)``, right for ReLU);
    biases start at zero. One key is split into one key per layer.
    """
    import jax
    import jax.numpy as jnp

    try:
        sizes = tuple(sizes)
    except TypeError:
        raise TypeError(f"init_mlp(sizes=...): expected a sequence of layer widths, got {sizes!r}.") from None
    if len(sizes) < 2 or any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1 for s in sizes):
        raise ValueError(
            f"init_mlp(sizes=...): expected at least two positive ints (inputs, ..., outputs), got {sizes!r}."
        )
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        {
            "w": jax.random.normal(k, (d_in, d_out)) * jnp.sqrt(2.0 / d_in),
            "b": jnp.zeros((d_out,)),
        }
        for k, d_in, d_out in zip(keys, sizes[:-1], sizes[1:])
    ]


def _check_mlp_input(params, x) -> None:
    if not isinstance(params, (list, tuple)) or not params or not all(
        isinstance(layer, dict) and {"w", "b"} <= layer.keys() for layer in params
    ):
        raise TypeError("mlp: params must be a non-empty list of {'w', 'b'} dicts, as made by init_mlp.")
    d_in = params[0]["w"].shape[0]
    if getattr(x, "ndim", 0) < 1 or x.shape[-1] != d_in:
        got = x.shape[-1] if getattr(x, "ndim", 0) else "no"
        raise ValueError(
            f"mlp: the data has {got} features (x.shape={tuple(getattr(x, 'shape', ()))}) but the model's "
            f"first layer expects {d_in}; make the model with init_mlp(key, ({got}, ...)) or fix the data."
        )


def mlp(params: list[dict], x):
    """Logits of the MLP for one example ``(d,)`` or a batch ``(n, d)``: ReLU between layers."""
    import jax

    _check_mlp_input(params, x)
    *hidden, last = params
    for layer in hidden:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ last["w"] + last["b"]


def _check_labels(logits, labels, where: str) -> None:
    import jax.numpy as jnp

    if not jnp.issubdtype(labels.dtype, jnp.integer):
        raise TypeError(f"{where}: labels must be integer class indices, got dtype {labels.dtype}.")
    if labels.shape != logits.shape[:-1]:
        raise ValueError(
            f"{where}: labels of shape {labels.shape} do not match logits of shape {logits.shape}; "
            "expected one label per row of logits."
        )
    values = concrete_or_none(labels)
    n_classes = logits.shape[-1]
    if values is not None and values.size and not (0 <= values.min() and values.max() < n_classes):
        bad = sorted({int(v) for v in values[(values < 0) | (values >= n_classes)].ravel()[:5]})
        raise ValueError(
            f"{where}: labels must be class indices in [0, {n_classes}) for logits with {n_classes} "
            f"classes, got {bad}; a label >= {n_classes} would give NaN and -1 would wrap to the "
            "last class. Relabel the data or make the model's last layer wider."
        )


def cross_entropy(logits, labels):
    """Mean softmax cross-entropy of integer ``labels`` under ``logits``.

    ``labels`` (one per row of ``logits``) must lie in ``[0, n_classes)``, where
    ``n_classes = logits.shape[-1]``; a ``ValueError`` says so when the labels are
    concrete. Under ``jit`` they are traced and not checked (an out-of-range label
    then gives NaN, or for -1 the last class).
    """
    import jax
    import jax.numpy as jnp

    _check_labels(logits, labels, "cross_entropy")
    log_p = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_p, labels[..., None], axis=-1))


def accuracy(logits, labels):
    """Fraction of rows whose largest logit is the label."""
    import jax.numpy as jnp

    _check_labels(logits, labels, "accuracy")
    return jnp.mean(jnp.argmax(logits, axis=-1) == labels)


def classifier_loss(params: list[dict], batch):
    """``cross_entropy(mlp(params, x), y)`` for a ``batch = (x, y)``: the loss the training loops use."""
    x, y = batch
    return cross_entropy(mlp(params, x), y)
