"""Small models as pure functions of their parameters, and their losses.

* Linear and logistic regression: parameters ``{"w": (d,), "b": ()}``
  (:data:`LinearParams`), made by :func:`init_linear`.
* A multilayer perceptron: parameters are a list of ``{"w": (d_in, d_out),
  "b": (d_out,)}`` dicts, one per layer (:data:`MLPParams`), made by :func:`init_mlp`.
* Losses: :func:`mse_loss` and :func:`logistic_loss` for the regressions,
  :func:`cross_entropy`, :func:`accuracy` and :func:`classifier_loss` for classifiers.

The parameters are plain pytrees, so ``jax.grad``, ``jax.vmap``, ``jax.jit``,
``jax.tree.map``, optax and orbax all work on them directly. Every function checks
its inputs' shapes (a feature count that does not match the model, targets that would
broadcast, labels out of range where their values are concrete) and says how to fix
them.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxguide import models
    >>> params = models.init_linear(jax.random.key(0), 3)
    >>> models.predict_logistic(params, jnp.ones(3)).shape   # one example
    ()
    >>> mlp_params = models.init_mlp(jax.random.key(0), (2, 16, 3))
    >>> [layer["w"].shape for layer in mlp_params]
    [(2, 16), (16, 3)]
    >>> logits = models.mlp(mlp_params, jnp.zeros((5, 2)))
    >>> logits.shape
    (5, 3)
    >>> float(models.accuracy(logits, jnp.zeros(5, dtype=jnp.int32)))  # all logits equal: argmax is 0
    1.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxguide import _checks

__all__ = [
    "LabeledBatch",
    "LinearParams",
    "MLPParams",
    "init_linear",
    "predict_linear",
    "mse_loss",
    "predict_logistic",
    "logistic_loss",
    "init_mlp",
    "mlp",
    "cross_entropy",
    "accuracy",
    "classifier_loss",
]

#: Parameters of linear and logistic regression: ``{"w": (d,), "b": ()}``.
LinearParams: TypeAlias = "Mapping[str, jax.Array]"
#: Parameters of an MLP: one ``{"w": (d_in, d_out), "b": (d_out,)}`` dict per layer.
MLPParams: TypeAlias = "Sequence[Mapping[str, jax.Array]]"
#: A classification batch ``(x, labels)``: ``x`` of shape ``(n, d)``, integer labels ``(n,)``.
LabeledBatch: TypeAlias = "tuple[ArrayLike, ArrayLike]"


def _check_features(fn: str, w: Any, x: Any) -> None:
    """``x``'s last axis must be the ``w.shape[0]`` features the model expects."""
    d = w.shape[0]
    ndim = getattr(x, "ndim", 0)
    if ndim < 1 or x.shape[-1] != d:
        got = x.shape[-1] if ndim else "no"
        raise ValueError(
            f"{fn}: the data has {got} features (x.shape={tuple(getattr(x, 'shape', ()))}) but the "
            f"model expects {d}; the last axis of x is the feature axis: make the model for "
            f"{got} features or fix the data."
        )


def _affine(fn: str, params: object, x: ArrayLike) -> jax.Array:
    """``x @ w + b``, after checking ``params`` and the feature count, for ``fn``'s errors."""

    if not (isinstance(params, Mapping) and {"w", "b"} <= params.keys()):
        raise _checks.wrong_type(
            fn, "params", params, "a dict with keys 'w' and 'b', as made by init_linear"
        )
    x = jnp.asarray(x)
    _check_features(fn, params["w"], x)
    return x @ params["w"] + params["b"]


def init_linear(key: ArrayLike, n_features: int, scale: float = 0.1) -> dict[str, jax.Array]:
    """Small random weights and a zero bias for linear or logistic regression.

    Args:
        key: a JAX random key.
        n_features: number of input features ``d``, a positive int.
        scale: standard deviation of the weights, a finite number ``>= 0``.

    Returns:
        ``{"w": (d,), "b": ()}`` (:data:`LinearParams`).

    Raises:
        TypeError: ``n_features`` is not an int, or ``scale`` not a real number.
        ValueError: ``n_features < 1``, or ``scale`` negative, NaN or infinite.

    Example:
        >>> import jax
        >>> p = init_linear(jax.random.key(0), 3)
        >>> p["w"].shape, float(p["b"])
        ((3,), 0.0)
    """

    n_features = _checks.positive_int("init_linear", "n_features", n_features, example=3)
    scale = _checks.real("init_linear", "scale", scale, minimum=0.0, hint=" Pass e.g. 0.1.")
    return {"w": scale * jax.random.normal(key, (n_features,)), "b": jnp.zeros(())}


def predict_linear(params: LinearParams, x: ArrayLike) -> jax.Array:
    """``x @ w + b`` for one example ``x`` of shape ``(d,)`` or a batch ``(n, d)``.

    Args:
        params: ``{"w": (d,), "b": ()}``, as made by :func:`init_linear`.
        x: one example ``(d,)`` or a batch ``(n, d)``.

    Returns:
        The predictions: a scalar, or shape ``(n,)``.

    Raises:
        TypeError: ``params`` is not a ``{"w", "b"}`` dict.
        ValueError: ``x`` does not have ``d`` features on its last axis.

    Example:
        >>> import jax.numpy as jnp
        >>> params = {"w": jnp.array([2.0, 1.0]), "b": jnp.array(0.5)}
        >>> predict_linear(params, jnp.array([[1.0, 1.0], [0.0, 2.0]])).tolist()
        [3.5, 2.5]
    """

    return _affine("predict_linear", params, x)


def _check_targets(fn: str, pred: jax.Array, y: object) -> None:
    shape = getattr(
        y, "shape", () if isinstance(y, (int, float)) and not isinstance(y, bool) else None
    )
    if shape is None:
        raise TypeError(
            f"{fn}(y={y!r:.60}): y must be an array of targets, got {type(y).__name__}."
        )
    if tuple(shape) != tuple(pred.shape):
        raise ValueError(
            f"{fn}: y has shape {tuple(shape)} but the predictions have shape {tuple(pred.shape)}; "
            "they must match exactly (a (n, 1) column against (n,) predictions would broadcast "
            "to (n, n)); pass y with one target per example, e.g. y.reshape(-1)."
        )


def mse_loss(params: LinearParams, x: ArrayLike, y: ArrayLike) -> jax.Array:
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

    pred = _affine("mse_loss", params, x)
    _check_targets("mse_loss", pred, y)
    return jnp.mean((pred - jnp.asarray(y)) ** 2)


def predict_logistic(params: LinearParams, x: ArrayLike) -> jax.Array:
    """Probability of class 1, ``sigmoid(x @ w + b)``, for one example or a batch.

    Args:
        params: ``{"w": (d,), "b": ()}``, as made by :func:`init_linear`.
        x: one example ``(d,)`` or a batch ``(n, d)``.

    Returns:
        Probabilities in ``[0, 1]``: a scalar, or shape ``(n,)``.

    Raises:
        TypeError: ``params`` is not a ``{"w", "b"}`` dict.
        ValueError: ``x`` does not have ``d`` features on its last axis.

    Example:
        >>> import jax.numpy as jnp
        >>> params = {"w": jnp.array([0.0]), "b": jnp.array(0.0)}
        >>> float(predict_logistic(params, jnp.array([3.0])))
        0.5
    """

    return jax.nn.sigmoid(_affine("predict_logistic", params, x))


def logistic_loss(params: LinearParams, x: ArrayLike, y: ArrayLike) -> jax.Array:
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

    logits = _affine("logistic_loss", params, x)
    _check_targets("logistic_loss", logits, y)
    labels = _checks.concrete_or_none(y)
    if labels is not None and not np.all((labels == 0) | (labels == 1)):
        bad = np.unique(labels[(labels != 0) & (labels != 1)])[:5]
        raise ValueError(
            f"logistic_loss: labels y must be 0 or 1, got values {bad.tolist()}; "
            "for labels -1/+1 pass (y + 1) / 2."
        )
    y = jnp.asarray(y)
    return -jnp.mean(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))


def init_mlp(key: ArrayLike, sizes: Sequence[int]) -> list[dict[str, jax.Array]]:
    """Random parameters for an MLP with layer widths ``sizes``, e.g. ``(2, 64, 64, 3)``.

    Weights are drawn with He scaling (``normal * sqrt(2 / d_in)``, right for ReLU);
    biases start at zero. One key is split into one key per layer.

    Args:
        key: a JAX random key.
        sizes: the widths of the input, the hidden layers and the output: at least
            two positive ints.

    Returns:
        One ``{"w": (d_in, d_out), "b": (d_out,)}`` dict per layer (:data:`MLPParams`).

    Raises:
        TypeError: ``sizes`` is not a sequence of ints.
        ValueError: a width below 1, or fewer than two widths.

    Example:
        >>> import jax
        >>> [p["b"].shape for p in init_mlp(jax.random.key(0), (4, 8, 2))]
        [(8,), (2,)]
    """

    sizes = _checks.positive_ints("init_mlp", "sizes", sizes, example="(2, 64, 3)")
    if len(sizes) < 2:
        raise ValueError(
            f"init_mlp(sizes={sizes!r}): sizes needs at least two widths (inputs, ..., outputs); "
            "pass e.g. (2, 64, 3)."
        )
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        {
            "w": jax.random.normal(k, (d_in, d_out)) * jnp.sqrt(2.0 / d_in),
            "b": jnp.zeros((d_out,)),
        }
        for k, d_in, d_out in zip(keys, sizes[:-1], sizes[1:])
    ]


def _check_mlp(params: object, x: ArrayLike) -> jax.Array:
    if (
        not isinstance(params, (list, tuple))
        or not params
        or not all(isinstance(layer, Mapping) and {"w", "b"} <= layer.keys() for layer in params)
    ):
        raise TypeError(
            "mlp(params=...): params must be a non-empty list of {'w', 'b'} dicts, as made by init_mlp."
        )
    x = jnp.asarray(x)
    _check_features("mlp", params[0]["w"], x)
    return x


def mlp(params: MLPParams, x: ArrayLike) -> jax.Array:
    """Logits for one example ``(d,)`` or a batch ``(n, d)``: ReLU between layers.

    Args:
        params: one ``{"w", "b"}`` dict per layer, as made by :func:`init_mlp`.
        x: inputs with the first layer's ``d`` features on the last axis.

    Returns:
        The logits, of shape ``x.shape[:-1] + (n_classes,)``.

    Raises:
        TypeError: ``params`` is not a list of ``{"w", "b"}`` dicts.
        ValueError: ``x`` does not have the ``d`` features the first layer expects.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> params = init_mlp(jax.random.key(0), (2, 8, 3))  # 2 features, 3 classes
        >>> mlp(params, jnp.ones((5, 2))).shape, mlp(params, jnp.ones(2)).shape
        ((5, 3), (3,))
    """

    x = _check_mlp(params, x)
    *hidden, last = params
    for layer in hidden:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ last["w"] + last["b"]


def _check_labels(fn: str, logits: ArrayLike, labels: ArrayLike) -> tuple[jax.Array, jax.Array]:
    logits, labels = jnp.asarray(logits), jnp.asarray(labels)
    if not jnp.issubdtype(labels.dtype, jnp.integer):
        raise TypeError(
            f"{fn}: labels must be integer class indices, got dtype {labels.dtype}; "
            "pass e.g. y.astype(jnp.int32)."
        )
    if labels.shape != logits.shape[:-1]:
        raise ValueError(
            f"{fn}: labels of shape {labels.shape} do not match logits of shape {logits.shape}; "
            "expected one label per row of logits."
        )
    values = _checks.concrete_or_none(labels)
    n_classes = logits.shape[-1]
    if values is not None and values.size and not (0 <= values.min() and values.max() < n_classes):
        bad = sorted({int(v) for v in values[(values < 0) | (values >= n_classes)].ravel()[:5]})
        raise ValueError(
            f"{fn}: labels must be class indices in [0, {n_classes}) for logits with {n_classes} "
            f"classes, got {bad}; a label >= {n_classes} would give NaN and -1 would wrap to the "
            "last class. Relabel the data or make the model's last layer wider."
        )
    return logits, labels


def cross_entropy(logits: ArrayLike, labels: ArrayLike) -> jax.Array:
    """Mean softmax cross-entropy of integer ``labels`` under ``logits``.

    Args:
        logits: shape ``(..., n_classes)``.
        labels: integer class indices of shape ``logits.shape[:-1]``.

    Returns:
        The scalar mean of ``-log softmax(logits)[label]``.

    Raises:
        TypeError: ``labels`` are not integers.
        ValueError: their shape does not match, or a label is outside
            ``[0, n_classes)``: checked where labels are concrete, not under ``jit``
            (there a label out of range gives NaN, and -1 the last class).

    Example:
        >>> import jax.numpy as jnp
        >>> even = jnp.zeros((2, 2))  # two classes at even odds: log 2 each
        >>> round(float(cross_entropy(even, jnp.array([0, 1]))), 4)
        0.6931
        >>> sure = jnp.array([[9.0, -9.0]])
        >>> float(cross_entropy(sure, jnp.array([0]))) < 1e-7
        True
    """

    logits, labels = _check_labels("cross_entropy", logits, labels)
    log_p = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_p, labels[..., None], axis=-1))


def accuracy(logits: ArrayLike, labels: ArrayLike) -> jax.Array:
    """Fraction of rows whose largest logit is the label.

    Args:
        logits: shape ``(..., n_classes)``.
        labels: integer class indices of shape ``logits.shape[:-1]``, in
            ``[0, n_classes)`` (checked where they are concrete).

    Returns:
        The scalar fraction, in ``[0, 1]``.

    Raises:
        TypeError: ``labels`` are not integers.
        ValueError: their shape does not match, or a concrete label is out of range.

    Example:
        >>> import jax.numpy as jnp
        >>> float(accuracy(jnp.array([[2.0, 1.0], [0.0, 3.0]]), jnp.array([0, 0])))
        0.5
    """

    logits, labels = _check_labels("accuracy", logits, labels)
    return jnp.mean(jnp.argmax(logits, axis=-1) == labels)


def classifier_loss(params: MLPParams, batch: LabeledBatch) -> jax.Array:
    """``cross_entropy(mlp(params, x), y)`` for ``batch = (x, y)``: the training loops' loss.

    Args:
        params: the MLP's parameters (:func:`init_mlp`).
        batch: ``(x, y)``: inputs ``(n, d)`` and integer labels ``(n,)``.

    Returns:
        The scalar mean cross-entropy.

    Raises:
        TypeError, ValueError: as :func:`mlp` and :func:`cross_entropy`.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> params = init_mlp(jax.random.key(0), (2, 3))
        >>> zero = [{"w": p["w"] * 0, "b": p["b"]} for p in params]   # uniform guess
        >>> round(float(classifier_loss(zero, (jnp.ones((4, 2)), jnp.zeros(4, int)))), 4)
        1.0986
    """
    x, y = batch
    return cross_entropy(mlp(params, x), y)
