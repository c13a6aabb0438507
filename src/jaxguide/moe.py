"""Routing for a mixture-of-experts layer: top-k choice, capacity, load balance.

A router gives every token a score for each of ``E`` experts. :func:`route` keeps
each token's ``k`` best experts and gives each choice a *slot* in its expert's queue;
an expert takes at most ``capacity`` slots (:func:`capacity`, the capacity factor of
Switch Transformer and GShard), and choices beyond it are dropped. Queues fill in
priority order: every token's first choice before any second choice, and tokens in
order within a rank. :func:`load_balancing_loss` is Switch Transformer's auxiliary
loss, ``E * sum_e f_e * P_e``: 1.0 when routing is uniform, larger when it is not.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxguide.moe import capacity, route, load_balancing_loss
    >>> logits = jnp.array([[2.0, 0.0, 0.0], [3.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> capacity(tokens=3, experts=3, k=1, factor=1.0)
    1
    >>> r = route(logits, k=1, capacity=1)
    >>> r.experts[:, 0].tolist(), r.slots[:, 0].tolist(), r.kept[:, 0].tolist()
    ([0, 0, 2], [0, 1, 0], [True, False, True])
    >>> int(r.dropped)
    1
    >>> probs = jnp.full((4, 2), 0.5)
    >>> float(load_balancing_loss(probs, jnp.array([[0], [1], [0], [1]])))
    1.0
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxguide import _checks

__all__ = ["Routing", "capacity", "route", "load_balancing_loss"]


class Routing(NamedTuple):
    """Where each token's ``k`` choices go. Every field has shape ``(tokens, k)``.

    Attributes:
        experts: the chosen expert of each choice (int32), best first.
        gates: the router probability of that expert (softmax over all experts):
            the weight of that expert's output in the token's result.
        slots: the position of the choice in its expert's queue (int32).
        kept: ``slots < capacity``: the choice fits; a dropped choice contributes
            nothing (in a transformer, the token goes on through the residual).
    """

    experts: jax.Array
    gates: jax.Array
    slots: jax.Array
    kept: jax.Array

    @property
    def dropped(self) -> jax.Array:
        """How many choices did not fit in their expert (an int32 scalar)."""

        return jnp.sum(~self.kept, dtype=jnp.int32)


def capacity(tokens: int, experts: int, k: int = 1, factor: float = 1.0) -> int:
    """Slots per expert: ``ceil(factor * k * tokens / experts)``.

    With ``factor=1`` the experts have exactly as many slots in all as there are
    choices to place (``k * tokens``); routing is rarely that even, so ``factor`` of
    1.25 or 2 leaves room for imbalance, at the cost of computing on empty slots.

    Args:
        tokens: tokens routed together (one group: a device's tokens, say), ``>= 1``.
        experts: number of experts, ``>= 1``.
        k: experts per token, between 1 and ``experts``.
        factor: the capacity factor, a number ``> 0``.

    Returns:
        The number of slots of each expert, an int ``>= 1``.

    Raises:
        TypeError: a count is not an int, or ``factor`` not a number.
        ValueError: a count is out of range, or ``factor <= 0``.

    Example:
        >>> capacity(tokens=128, experts=16, k=2, factor=1.25)
        20
    """
    tokens = _checks.positive_int("capacity", "tokens", tokens, example=128)
    experts = _checks.positive_int("capacity", "experts", experts, example=8)
    k = _checks.positive_int("capacity", "k", k, example=2)
    if k > experts:
        raise ValueError(
            f"capacity(k={k!r}): k must be at most experts={experts}; a token cannot "
            f"choose more experts than there are."
        )
    factor = _checks.real(
        "capacity", "factor", factor, minimum=0.0, exclusive=True, hint=" Pass e.g. 1.25."
    )
    return max(1, math.ceil(factor * k * tokens / experts - 1e-9))


def _matrix(fn: str, name: str, value: object, *, integer: bool) -> jax.Array:
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        raise _checks.wrong_type(fn, name, value, "an array")
    array = jnp.asarray(value)
    kind = "integer" if integer else "floating-point"
    ok = jnp.issubdtype(array.dtype, jnp.integer if integer else jnp.floating)
    if not ok:
        raise TypeError(f"{fn}({name}=...): {name} must hold {kind} numbers, got {array.dtype}.")
    if array.ndim != 2:
        shape = "(tokens, k)" if integer else "(tokens, experts)"
        raise ValueError(
            f"{fn}({name}=...): {name} must have shape {shape}, got shape {array.shape}."
        )
    return array


def route(logits: jax.Array, k: int, capacity: int, *, normalize: bool = False) -> Routing:
    """Top-``k`` routing with a capacity per expert.

    Args:
        logits: router scores, shape ``(tokens, experts)``, floating point.
        k: experts per token, between 1 and ``experts``.
        capacity: slots per expert, ``>= 1`` (see :func:`capacity`).
        normalize: divide each token's ``k`` gates by their sum, as GShard does (the
            same as Mixtral's softmax over the top-``k`` logits). False keeps the
            softmax over all experts, as Switch Transformer does (with ``k = 1`` a
            normalised gate is always 1 and gives the router no gradient).

    Returns:
        A :class:`Routing`. Works under ``jit``, ``vmap`` and ``grad`` (the gates
        carry the gradient; the choices, slots and drops are integers).

    Raises:
        TypeError: ``logits`` is not a floating-point array, ``k``/``capacity``
            is not an int, or ``normalize`` is not a bool.
        ValueError: ``logits`` is not 2-D, ``k`` is out of range, ``capacity < 1``.

    Example:
        >>> import jax.numpy as jnp
        >>> r = route(jnp.array([[0.0, 1.0], [0.0, 2.0]]), k=1, capacity=2)
        >>> r.experts[:, 0].tolist(), r.kept.all().item()
        ([1, 1], True)
        >>> r = route(jnp.array([[0.0, 1.0, 2.0]]), k=2, capacity=1, normalize=True)
        >>> round(float(r.gates.sum()), 6)
        1.0
    """

    logits = _matrix("route", "logits", logits, integer=False)
    n_tokens, n_experts = logits.shape
    k = _checks.positive_int("route", "k", k, example=2)
    if k > n_experts:
        raise ValueError(
            f"route(k={k!r}): k must be at most the number of experts, {n_experts} "
            f"(logits has shape {logits.shape})."
        )
    capacity = _checks.positive_int("route", "capacity", capacity, example=8)
    normalize = _checks.boolean("route", "normalize", normalize)

    probs = jax.nn.softmax(logits, axis=-1)
    gates, experts = jax.lax.top_k(probs, k)
    if normalize:
        gates = gates / gates.sum(axis=-1, keepdims=True)
    # Queue order: rank-major (all first choices, then all second ...), then token.
    ranked = experts.T.reshape(-1)  # (k * tokens,)
    onehot = jax.nn.one_hot(ranked, n_experts, dtype=jnp.int32)
    before = jnp.cumsum(onehot, axis=0) - onehot  # choices already in that queue
    slots = jnp.take_along_axis(before, ranked[:, None], axis=1)[:, 0]
    slots = slots.reshape(k, n_tokens).T.astype(jnp.int32)
    return Routing(experts.astype(jnp.int32), gates, slots, slots < capacity)


def load_balancing_loss(probs: jax.Array, experts: jax.Array) -> jax.Array:
    """Switch Transformer's auxiliary loss: ``E * sum_e f_e * P_e``.

    ``f_e`` is the fraction of the ``tokens * k`` choices that went to expert ``e``
    (counted, so not differentiable), ``P_e`` the mean router probability of ``e``
    over the tokens (differentiable: the gradient reaches the router through it).
    The loss is 1.0 when both are uniform and at most ``E``.

    Args:
        probs: router probabilities (softmax of the logits), ``(tokens, experts)``.
        experts: the chosen experts, ``(tokens, k)``, integers in ``[0, experts)``.

    Returns:
        A float scalar.

    Raises:
        TypeError: wrong dtypes (``probs`` floating point, ``experts`` integer).
        ValueError: wrong ranks, or a different number of tokens in the two.

    Example:
        >>> import jax.numpy as jnp
        >>> probs = jnp.array([[0.9, 0.1], [0.8, 0.2]])
        >>> round(float(load_balancing_loss(probs, jnp.array([[0], [0]]))), 4)  # 2 * 0.85
        1.7
    """

    probs = _matrix("load_balancing_loss", "probs", probs, integer=False)
    experts = _matrix("load_balancing_loss", "experts", experts, integer=True)
    if probs.shape[0] != experts.shape[0]:
        raise ValueError(
            f"load_balancing_loss(...): probs has {probs.shape[0]} tokens but experts has "
            f"{experts.shape[0]}; pass the routing of the same tokens."
        )
    n_experts = probs.shape[1]
    counts = jax.nn.one_hot(experts, n_experts, dtype=probs.dtype).sum(axis=(0, 1))
    fraction = counts / experts.size
    return n_experts * jnp.sum(fraction * probs.mean(axis=0))
