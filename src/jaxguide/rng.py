"""Random keys for notebooks: a stream of fresh keys, so that no key is used twice.

JAX random functions are pure: the same key always gives the same numbers. Reusing a
key by accident gives *identical* "random" draws. In interactive code a
:class:`KeyStream` hands out a new key on every call. Inside jitted code, pass keys
explicitly and split them instead: the stream's state lives in Python.

Example:
    >>> from jaxguide.rng import KeyStream
    >>> keys = KeyStream(0)
    >>> k1, k2 = keys(), keys()
    >>> bool((k1 == k2).all())
    False
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from jaxguide import _checks

if TYPE_CHECKING:
    import jax

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
    import jax

    return bool(jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key))


class KeyStream:
    """An endless supply of independent keys derived from one seed or key.

    ``stream()`` returns the next key; ``stream(n)`` returns ``n`` keys stacked.
    Each call splits the stream's key, so no key is handed out twice. The state
    lives in Python: use it outside ``jit``.

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
        import jax

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
        """The next key, or ``n`` keys stacked (shape ``(n,)``)."""
        import jax

        if n is not None:
            n = _checks.positive_int("KeyStream", "n", n, example=3)
        self._key, sub = jax.random.split(self._key)
        self.count += 1 if n is None else n  # keys handed out, not calls
        return sub if n is None else jax.random.split(sub, n)

    def __repr__(self) -> str:
        return f"KeyStream(keys handed out: {self.count})"
