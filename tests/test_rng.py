import jax
import jax.numpy as jnp
import pytest

from jaxguide.rng import KeyStream, is_typed_key


def test_stream_never_repeats_a_key_and_is_reproducible():
    s1, s2 = KeyStream(3), KeyStream(3)
    draws1 = [float(jax.random.normal(s1())) for _ in range(5)]
    draws2 = [float(jax.random.normal(s2())) for _ in range(5)]
    assert draws1 == draws2
    assert len(set(draws1)) == 5
    assert s1.count == 5 and "5" in repr(s1)


def test_stream_gives_batches_of_keys():
    stream = KeyStream(0)
    keys = stream(4)
    assert keys.shape == (4,) and is_typed_key(keys)
    stream()
    assert stream.count == 5 and "keys handed out: 5" in repr(stream)  # keys, not calls
    assert len({float(jax.random.uniform(k)) for k in keys}) == 4


def test_typed_vs_legacy_keys():
    assert is_typed_key(jax.random.key(0))
    assert not is_typed_key(jax.random.PRNGKey(0))
    assert not is_typed_key(jnp.zeros(2, jnp.uint32))
    # One call hands out the second half of a split of the given key.
    sub = KeyStream(jax.random.key(1))()
    expected = jax.random.split(jax.random.key(1))[1]
    assert is_typed_key(sub)
    assert float(jax.random.uniform(sub)) == float(jax.random.uniform(expected))


@pytest.mark.parametrize("bad", [jax.random.PRNGKey(0), "seed", 1.5, True])
def test_bad_seed_is_explained(bad):
    with pytest.raises(TypeError, match="expected an int seed or one typed key"):
        KeyStream(bad)


def test_bad_count():
    with pytest.raises(ValueError, match=r"KeyStream\(n=0\): n must be an int >= 1"):
        KeyStream(0)(0)
    with pytest.raises(TypeError, match=r"KeyStream\(n=2.0\): n must be an int"):
        KeyStream(0)(2.0)
