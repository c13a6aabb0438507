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
    # The first call hands out the given key folded with 0.
    sub = KeyStream(jax.random.key(1))()
    expected = jax.random.fold_in(jax.random.key(1), 0)
    assert is_typed_key(sub)
    assert float(jax.random.uniform(sub)) == float(jax.random.uniform(expected))


def test_stream_is_wide_fold_in_of_the_count():
    # Key i is fold_in(key, i), one hop from the parent, whether handed out one at a
    # time or in a batch: a stream of 2 + 3 keys equals five single calls.
    base = jax.random.key(5)
    one_by_one = KeyStream(base)
    singles = [one_by_one() for _ in range(5)]
    batched = KeyStream(base)
    batch = jnp.concatenate([batched(2), batched(3)])
    for i, k in enumerate(singles):
        expected = jax.random.key_data(jax.random.fold_in(base, i))
        assert (jax.random.key_data(k) == expected).all()
        assert (jax.random.key_data(batch[i]) == expected).all()
    # The same keys as a Flax-style stream of the same seed (a key and a count).
    assert (
        jax.random.key_data(KeyStream(0)(2)[1])
        == jax.random.key_data(jax.random.fold_in(jax.random.key(0), 1))
    ).all()


@pytest.mark.parametrize("bad", [jax.random.PRNGKey(0), "seed", 1.5, True])
def test_bad_seed_is_explained(bad):
    with pytest.raises(TypeError, match="expected an int seed or one typed key"):
        KeyStream(bad)


def test_bad_count():
    with pytest.raises(ValueError, match=r"KeyStream\(n=0\): n must be an int >= 1"):
        KeyStream(0)(0)
    with pytest.raises(TypeError, match=r"KeyStream\(n=2.0\): n must be an int"):
        KeyStream(0)(2.0)
