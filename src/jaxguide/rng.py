"""Random keys for notebooks: a stream of fresh keys, so that no key is used twice.

JAX random functions are pure: the same key always gives the same numbers. Reusing a
key by accident gives *identical* "random" draws. In interactive code a
:class:`KeyStream` hands out a new key on every call: key ``i`` is
``fold_in(key, i)``, a wide tree (every key one hop from the parent), as Flax's
``nnx.Rngs`` does. Inside jitted code, pass keys explicitly instead: the stream's
count lives in Python.

Example:
    >>> import jax
    >>> from jaxguide.rng import KeyStream
    >>> keys = KeyStream(0)
    >>> k1, k2 = keys(), keys()
    >>> bool((k1 == k2).all())
    False
    >>> bool(k2 == jax.random.fold_in(jax.random.key(0), 1))
    True
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from jaxguide import _checks

__all__ = ["KeyStream", "is_typed_key"]


def is_typed_key(key: object) -> bool:
    """True for a typed key (``jax.random.key``), False for a legacy ``uint32[2]`` key.

    Args:
        key: anything; arrays without a key dtype (and non-arrays) give False.

    Returns:
        Whether ``key``'s dtype is a PRNG key dtype (``key<fry>`` and the like).

    Example:
        >>> import jax
        >>> is_typed_key(jax.random.key(0)), is_typed_key(jax.random.PRNGKey(0))
        (True, False)
    """

    return bool(jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key))


class KeyStream:
    """An endless supply of independent keys derived from one seed or key.

    ``stream()`` returns the next key; ``stream(n)`` returns the next ``n`` keys
    stacked. Key ``i`` (counting from 0) is ``jax.random.fold_in(key, i)``: every key
    is one hop from the parent (a wide tree, not a chain of splits), ``stream(3)``
    gives the keys that three calls of ``stream()`` would, and the count is the whole
    state. The count lives in Python: use the stream outside ``jit``.

    Args:
        seed_or_key: an int seed, or one typed key (``jax.random.key``).

    Raises:
        TypeError: anything else (a legacy ``PRNGKey`` must be wrapped first with
            ``jax.random.wrap_key_data``).
        TypeError: ``stream(n)`` with ``n`` not an int (or ``None``).
        ValueError: ``stream(n)`` with ``n < 1``.

    Example:
        >>> keys = KeyStream(0)
        >>> keys(3).shape, keys
        ((3,), KeyStream(keys handed out: 3))
    """

    def __init__(self, seed_or_key: int | jax.Array = 0) -> None:
        self._key: jax.Array
        if isinstance(seed_or_key, numbers.Integral) and not isinstance(seed_or_key, bool):
            self._key = jax.random.key(int(seed_or_key))
        elif is_typed_key(seed_or_key) and getattr(seed_or_key, "shape", None) == ():
            self._key = seed_or_key  # type: ignore[assignment]  # a typed key (checked above)
        else:
            raise TypeError(
                "KeyStream(seed_or_key): expected an int seed or one typed key from "
                f"jax.random.key, got {seed_or_key!r}. Wrap a legacy PRNGKey with "
                "jax.random.wrap_key_data(key)."
            )
        self.count = 0

    def __call__(self, n: int | None = None) -> jax.Array:
        """The next key, or the next ``n`` keys stacked (shape ``(n,)``)."""

        if n is None:
            key = jax.random.fold_in(self._key, self.count)
            self.count += 1
            return key
        n = _checks.positive_int("KeyStream", "n", n, example=3)
        counts = jnp.arange(self.count, self.count + n, dtype=jnp.uint32)
        self.count += n  # keys handed out, not calls
        return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(self._key, counts)

    def __repr__(self) -> str:
        return f"KeyStream(keys handed out: {self.count})"
