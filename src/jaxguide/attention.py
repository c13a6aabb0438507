"""Attention split over a sequence axis: the reference and the layouts of ring attention.

Context parallelism splits a sequence of ``T`` tokens over ``p`` devices. For causal
attention the split matters: with ``2p`` chunks of ``T / (2p)`` tokens each, a
*contiguous* layout gives device ``i`` chunks ``2i`` and ``2i + 1`` (the late devices
see many keys, the early ones few), while the *zig-zag* layout gives it chunks ``i``
and ``2p - 1 - i`` (one early and one late chunk, so every device has the same work).

* :func:`reference_attention` - plain softmax attention on one device, the yardstick.
* :func:`chunk_table` - which chunks of the sequence each device holds in a layout.
* :func:`to_layout` / :func:`from_layout` - reorder a sequence axis into a layout, so
  that splitting it evenly over ``p`` devices gives each device its chunks, and back.
* :func:`causal_work` - the ``(chunk, chunk)`` blocks of causal attention each device
  must compute at each step of a ring, predicted from the layout alone.

Example:
    >>> from jaxguide.attention import chunk_table, causal_work
    >>> chunk_table(4, "zigzag").tolist()
    [[0, 7], [1, 6], [2, 5], [3, 4]]
    >>> causal_work(4, "contiguous").sum(axis=1).tolist()   # blocks per device
    [3, 7, 11, 15]
    >>> causal_work(4, "zigzag").sum(axis=1).tolist()
    [9, 9, 9, 9]
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide import _checks

__all__ = [
    "LAYOUTS",
    "causal_work",
    "chunk_table",
    "from_layout",
    "reference_attention",
    "to_layout",
]

#: The sequence layouts this module knows.
LAYOUTS = ("contiguous", "zigzag")


def reference_attention(
    q: jax.Array, k: jax.Array, v: jax.Array, *, causal: bool = False
) -> jax.Array:
    """Softmax attention ``softmax(q k^T / sqrt(H)) v``, computed whole on one device.

    Args:
        q, k, v: arrays of shape ``(B, T, N, H)``: batch, sequence, heads, head size
            (the layout of ``jax.nn.dot_product_attention``), all of the same shape.
        causal: if ``True``, position ``t`` attends only to positions ``<= t``.

    Returns:
        An array of shape ``(B, T, N, H)``.

    Raises:
        TypeError: ``causal`` is not a bool.
        ValueError: ``q``, ``k``, ``v`` are not 4-D arrays of one shape.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> q = jax.random.normal(jax.random.key(0), (1, 8, 2, 4))
        >>> out = reference_attention(q, q, q, causal=True)
        >>> ref = jax.nn.dot_product_attention(q, q, q, is_causal=True)
        >>> bool(jnp.allclose(out, ref, atol=1e-6))
        True
    """

    causal = _checks.boolean("reference_attention", "causal", causal)
    shapes = [getattr(x, "shape", None) for x in (q, k, v)]
    if any(s is None or len(s) != 4 for s in shapes) or len(set(shapes)) != 1:
        raise ValueError(
            f"reference_attention(q, k, v): q, k and v must be arrays of one shape "
            f"(B, T, N, H), got shapes {shapes}."
        )
    scores = jnp.einsum("bqnh,bknh->bnqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    if causal:
        t = q.shape[1]
        scores = jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -jnp.inf)
    return jnp.einsum("bnqk,bknh->bqnh", jax.nn.softmax(scores, axis=-1), v)


def chunk_table(n_devices: int, layout: str) -> np.ndarray:
    """The chunks of the sequence each device holds: an int array of shape ``(p, 2)``.

    The sequence is cut into ``2p`` equal chunks. Row ``i`` lists device ``i``'s two
    chunks, in the order they sit in its local block.

    Args:
        n_devices: ``p``, the number of devices along the sequence axis.
        layout: ``"contiguous"`` (chunks ``2i, 2i + 1``) or ``"zigzag"``
            (chunks ``i, 2p - 1 - i``).

    Returns:
        An int array of shape ``(p, 2)``: ``[device]`` -> its two chunk numbers.

    Raises:
        TypeError: ``n_devices`` is not an int.
        ValueError: ``n_devices < 1`` or an unknown ``layout``.

    Example:
        >>> chunk_table(2, "contiguous").tolist()
        [[0, 1], [2, 3]]
    """

    p = _checks.positive_int("chunk_table", "n_devices", n_devices, example=8)
    _checks.one_of("chunk_table", "layout", layout, LAYOUTS)
    i = np.arange(p)
    if layout == "contiguous":
        return np.stack([2 * i, 2 * i + 1], axis=1)
    return np.stack([i, 2 * p - 1 - i], axis=1)


def _order(fn: str, x: Any, n_devices: int, layout: str, axis: int) -> tuple[np.ndarray, int]:
    p = _checks.positive_int(fn, "n_devices", n_devices, example=8)
    _checks.one_of(fn, "layout", layout, LAYOUTS)
    ndim = getattr(x, "ndim", None)
    if ndim is None:
        raise _checks.wrong_type(fn, "x", x, "an array")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise ValueError(f"{fn}(axis={axis!r}): axis must be an int in [{-ndim}, {ndim}).")
    axis %= ndim
    if x.shape[axis] % (2 * p):
        raise ValueError(
            f"{fn}(x=...): the sequence axis {axis} has length {x.shape[axis]}, which does not "
            f"split into 2 × {p} = {2 * p} equal chunks; use a length that is a multiple of {2 * p}."
        )
    return chunk_table(p, layout).reshape(-1), axis


def _take_chunks(x: Any, order: np.ndarray, axis: int) -> Any:
    n = len(order)
    shape = x.shape
    split = shape[:axis] + (n, shape[axis] // n) + shape[axis + 1 :]
    return x.reshape(split).take(order, axis=axis).reshape(shape)


def to_layout(x: Any, n_devices: int, layout: str, *, axis: int = 1) -> Any:
    """Reorder the sequence axis of ``x`` so that an even split over ``n_devices`` gives
    each device the chunks :func:`chunk_table` lists (in that order).

    Args:
        x: an array (``jax.Array`` or NumPy) whose ``axis`` is the sequence.
        n_devices: ``p``; the sequence length must be a multiple of ``2p``.
        layout: ``"contiguous"`` or ``"zigzag"``.
        axis: the sequence axis (default 1, as in ``(B, T, N, H)``).

    Returns:
        An array of the same shape and type, its sequence axis reordered.

    Raises:
        TypeError: ``x`` is not an array, or ``n_devices`` is not an int.
        ValueError: an unknown layout, a bad axis, or a length not divisible by ``2p``.

    Example:
        >>> import numpy as np
        >>> to_layout(np.arange(8), 2, "zigzag", axis=0).tolist()
        [0, 1, 6, 7, 2, 3, 4, 5]
    """
    order, axis = _order("to_layout", x, n_devices, layout, axis)
    return _take_chunks(x, order, axis)


def from_layout(x: Any, n_devices: int, layout: str, *, axis: int = 1) -> Any:
    """Undo :func:`to_layout`: put the chunks back in sequence order.

    Args:
        x: an array whose ``axis`` was reordered by :func:`to_layout`.
        n_devices: ``p``, as given to :func:`to_layout`.
        layout: ``"contiguous"`` or ``"zigzag"``, as given to :func:`to_layout`.
        axis: the sequence axis (default 1).

    Returns:
        An array of the same shape and type, in sequence order.

    Raises:
        The errors of :func:`to_layout`, for the same arguments.

    Example:
        >>> import numpy as np
        >>> x = np.arange(16)
        >>> bool((from_layout(to_layout(x, 4, "zigzag", axis=0), 4, "zigzag", axis=0) == x).all())
        True
    """

    order, axis = _order("from_layout", x, n_devices, layout, axis)
    return _take_chunks(x, np.argsort(order), axis)


def causal_work(n_devices: int, layout: str) -> np.ndarray:
    """Blocks of causal attention each device computes at each step of a ring.

    At step ``s`` device ``i`` holds the keys and values of device ``(i - s) mod p``. A
    block pairs one of its query chunks with one of those key chunks; it is computed
    (masked on the diagonal) unless the keys are all in the future of the queries.

    Args:
        n_devices: ``p``.
        layout: ``"contiguous"`` or ``"zigzag"``.

    Returns:
        An int array of shape ``(p, p)``: ``[device, step]`` -> blocks computed (0 to 4).

    Raises:
        TypeError: ``n_devices`` is not an int.
        ValueError: ``n_devices < 1`` or an unknown ``layout``.

    Example:
        >>> causal_work(2, "contiguous").tolist()
        [[3, 0], [3, 4]]
    """

    p = _checks.positive_int("causal_work", "n_devices", n_devices, example=8)
    _checks.one_of("causal_work", "layout", layout, LAYOUTS)
    table = chunk_table(p, layout)
    work = np.zeros((p, p), dtype=int)
    for i in range(p):
        for s in range(p):
            j = (i - s) % p
            work[i, s] = sum(int(kc <= qc) for qc in table[i] for kc in table[j])
    return work
