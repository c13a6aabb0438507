"""Pieces of autoregressive decoding that do not depend on the model.

* :func:`sample`: the next token from logits: greedy (``temperature=0``), with a
  temperature, restricted to the ``top_k`` most likely tokens and/or to the smallest
  set whose probability reaches ``top_p`` (nucleus sampling), from an explicit key.
* :func:`kv_cache_bytes`: the size of a KV cache, ``2 × layers × tokens × kv_heads ×
  head_dim × bytes`` (times the batch).
* :func:`decode_step_seconds`: the roofline time of one decode step, the larger of its
  memory time and its compute time on given hardware.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxguide.decode import kv_cache_bytes, sample
    >>> logits = jnp.array([[0.0, 3.0, 1.0]])
    >>> sample(logits, jax.random.key(0), temperature=0.0).tolist()   # greedy: the argmax
    [1]
    >>> sample(logits, jax.random.key(0), top_k=1).tolist()           # top-1 is greedy too
    [1]
    >>> kv_cache_bytes(layers=32, tokens=8192, kv_heads=8, head_dim=128, bytes_per_value=2)
    1073741824
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxguide import _checks

__all__ = ["sample", "kv_cache_bytes", "decode_step_seconds"]


def sample(
    logits: ArrayLike,
    key: ArrayLike,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> jax.Array:
    """Draw the next token from ``logits`` (one row per sequence).

    ``temperature=0`` is greedy decoding (``argmax``; the key is not used). Otherwise the
    logits are divided by ``temperature`` and, if ``top_k`` is given, every logit below
    the ``top_k``-th largest of its row is removed; if ``top_p`` is given, only the
    smallest set of most likely tokens whose probabilities (after the temperature and
    ``top_k``) add up to at least ``top_p`` is kept (nucleus sampling; tokens tied with
    the last one kept stay too). Then it draws with ``jax.random.categorical``. Works
    under ``jit`` (``temperature``, ``top_k`` and ``top_p`` are Python numbers, fixed at
    trace time).

    Args:
        logits: shape ``(..., vocab)``, unnormalised log-probabilities.
        key: a JAX random key (one key for the whole batch).
        temperature: ``>= 0``; below 1 sharpens the distribution, above 1 flattens it.
        top_k: ``None`` (the whole vocabulary) or an int in ``[1, vocab]``.
        top_p: ``None`` (no nucleus) or a number in ``(0, 1]``.

    Returns:
        int32 token ids of shape ``logits.shape[:-1]``.

    Raises:
        TypeError: ``temperature`` or ``top_p`` is not a real number, or ``top_k`` not
            an int.
        ValueError: ``logits`` has no vocabulary axis, ``temperature < 0``, ``top_k``
            outside ``[1, vocab]``, or ``top_p`` outside ``(0, 1]``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> logits = jnp.log(jnp.array([[0.5, 0.3, 0.2]]))
        >>> draws = jax.vmap(lambda k: sample(logits, k, top_k=2))(
        ...     jax.random.split(jax.random.key(0), 1000))
        >>> sorted(set(draws.ravel().tolist()))          # token 2 is never drawn
        [0, 1]
        >>> draws = jax.vmap(lambda k: sample(logits, k, top_p=0.6))(
        ...     jax.random.split(jax.random.key(0), 1000))
        >>> sorted(set(draws.ravel().tolist()))          # 0.5 + 0.3 reaches 0.6
        [0, 1]
    """

    temperature = _checks.real(
        "sample", "temperature", temperature, minimum=0.0, hint=" Pass 0 for greedy, e.g. 0.8."
    )
    logits = jnp.asarray(logits)
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError(
            f"sample(logits=...): logits must have a vocabulary axis last, got shape "
            f"{logits.shape}; pass e.g. the model's logits for the last position, (batch, vocab)."
        )
    vocab = logits.shape[-1]
    if top_k is not None:
        top_k = _checks.positive_int("sample", "top_k", top_k, example=min(40, vocab))
        if top_k > vocab:
            raise ValueError(
                f"sample(top_k={top_k}): top_k must be at most the vocabulary size {vocab}; "
                "pass a smaller k, or None for the whole vocabulary."
            )
    if top_p is not None:
        top_p = _checks.real("sample", "top_p", top_p, minimum=0.0, exclusive=True)
        if top_p > 1.0:
            raise ValueError(
                f"sample(top_p={top_p}): top_p must be at most 1 (the whole distribution); "
                "pass e.g. 0.9, or None for no nucleus."
            )
    if temperature == 0.0:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    logits = logits.astype(jnp.float32) / temperature
    if top_k is not None and top_k < vocab:
        kth = jax.lax.top_k(logits, top_k)[0][..., -1:]
        logits = jnp.where(logits >= kth, logits, -jnp.inf)
    if top_p is not None and top_p < 1.0:
        ranked = jnp.sort(logits, axis=-1)[..., ::-1]  # most likely first
        probs = jax.nn.softmax(ranked, axis=-1)
        before = jnp.cumsum(probs, axis=-1) - probs  # probability of the tokens ahead
        # Keep a token while the ones ahead of it have not reached top_p yet.
        cutoff = jnp.min(jnp.where(before < top_p, ranked, jnp.inf), axis=-1, keepdims=True)
        logits = jnp.where(logits >= cutoff, logits, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def kv_cache_bytes(
    *,
    layers: int,
    tokens: int,
    kv_heads: int,
    head_dim: int,
    bytes_per_value: int,
    batch: int = 1,
) -> int:
    """Bytes of a KV cache: ``2 × layers × tokens × kv_heads × head_dim × bytes × batch``.

    The 2 is one key and one value per token, head and layer (*How to Scale Your Model*,
    inference chapter).

    Args:
        layers, tokens, kv_heads, head_dim: positive ints (``tokens``: the cache's
            length, the longest sequence it can hold).
        bytes_per_value: bytes of one cached number (2 for bfloat16, 4 for float32,
            1 for int8).
        batch: sequences held at once.

    Returns:
        The size in bytes.

    Raises:
        TypeError, ValueError: an argument is not a positive int.

    Example:
        >>> kv_cache_bytes(layers=2, tokens=128, kv_heads=4, head_dim=8, bytes_per_value=4)
        65536
    """
    sizes = {
        "layers": layers,
        "tokens": tokens,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "bytes_per_value": bytes_per_value,
        "batch": batch,
    }
    total = 2
    for name, value in sizes.items():
        total *= _checks.positive_int("kv_cache_bytes", name, value, example=8)
    return total


def decode_step_seconds(
    *, flops: float, bytes_moved: float, peak_flops: float, hbm_bandwidth: float
) -> float:
    """Roofline time of one step: ``max(flops / peak_flops, bytes_moved / hbm_bandwidth)``.

    A lower bound: the step can run no faster than its arithmetic or its memory traffic
    allows, whichever is slower (it assumes the two overlap perfectly).

    Args:
        flops: floating-point operations of the step, ``>= 0``.
        bytes_moved: bytes read and written from main memory, ``>= 0``.
        peak_flops: the chip's peak FLOP/s, ``> 0``.
        hbm_bandwidth: its memory bandwidth in bytes/s, ``> 0``.

    Returns:
        Seconds.

    Raises:
        TypeError, ValueError: an argument is not a finite number in its range.

    Example:
        >>> # 16 GB of bf16 weights read once per step on 8.1e11 B/s: about 20 ms
        >>> round(decode_step_seconds(flops=1.6e10, bytes_moved=1.6e10,
        ...                           peak_flops=1.97e14, hbm_bandwidth=8.1e11), 4)
        0.0198
    """
    fn = "decode_step_seconds"
    flops = _checks.real(fn, "flops", flops, minimum=0.0)
    bytes_moved = _checks.real(fn, "bytes_moved", bytes_moved, minimum=0.0)
    peak = _checks.real(fn, "peak_flops", peak_flops, minimum=0.0, exclusive=True)
    hbm = _checks.real(fn, "hbm_bandwidth", hbm_bandwidth, minimum=0.0, exclusive=True)
    return max(flops / peak, bytes_moved / hbm)
