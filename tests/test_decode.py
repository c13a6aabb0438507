"""jaxguide.decode: sampling against plain references, the cache formula against the bytes
of real arrays, the roofline time, and clear errors for bad arguments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide.decode import decode_step_seconds, kv_cache_bytes, sample


@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 4, 11)])
def test_greedy_is_argmax(shape):
    logits = jax.random.normal(jax.random.key(len(shape)), shape)
    got = sample(logits, jax.random.key(0), temperature=0.0)
    assert got.dtype == jnp.int32 and got.shape == shape[:-1]
    np.testing.assert_array_equal(got, np.argmax(np.asarray(logits), axis=-1))


def test_top_k_stays_in_the_top_k_and_reaches_all_of_them():
    rng = np.random.default_rng(0)
    logits = jnp.asarray(rng.normal(size=(4, 20)), jnp.float32)
    keys = jax.random.split(jax.random.key(1), 3000)
    draws = np.asarray(jax.vmap(lambda k: sample(logits, k, temperature=2.0, top_k=3))(keys))
    for row in range(4):
        top = set(np.argsort(np.asarray(logits[row]))[-3:].tolist())
        assert set(draws[:, row].tolist()) == top  # never outside, and every one reached


def test_temperature_one_matches_softmax_frequencies():
    probs = np.array([0.6, 0.3, 0.1])
    logits = jnp.log(jnp.asarray(probs))[None]
    keys = jax.random.split(jax.random.key(2), 20000)
    draws = np.asarray(jax.vmap(lambda k: sample(logits, k))(keys))[:, 0]
    freq = np.bincount(draws, minlength=3) / len(draws)
    np.testing.assert_allclose(freq, probs, atol=0.015)


def test_low_temperature_sharpens_and_top_1_is_greedy():
    logits = jnp.array([[1.0, 1.5, 0.5]])
    keys = jax.random.split(jax.random.key(3), 2000)
    cold = np.asarray(jax.vmap(lambda k: sample(logits, k, temperature=0.05))(keys))
    assert (cold == 1).mean() > 0.99
    top1 = np.asarray(jax.vmap(lambda k: sample(logits, k, temperature=5.0, top_k=1))(keys))
    assert (top1 == 1).all()


def test_same_key_same_draw_and_works_under_jit():
    logits = jax.random.normal(jax.random.key(4), (8, 30))
    f = jax.jit(lambda l, k: sample(l, k, temperature=0.9, top_k=10))
    a, b = f(logits, jax.random.key(5)), f(logits, jax.random.key(5))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, sample(logits, jax.random.key(5), temperature=0.9, top_k=10))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(temperature=-1.0), ValueError, "temperature must be >= 0"),
        (dict(temperature=float("nan")), ValueError, "temperature must be a finite"),
        (dict(temperature="hot"), TypeError, "temperature must be a real number"),
        (dict(top_k=0), ValueError, "top_k must be an int >= 1"),
        (dict(top_k=2.5), TypeError, "top_k must be an int"),
        (dict(top_k=11), ValueError, "top_k must be at most the vocabulary size 10"),
        (dict(top_p=0.0), ValueError, "top_p must be > 0"),
        (dict(top_p=1.5), ValueError, "top_p must be at most 1"),
        (dict(top_p="most"), TypeError, "top_p must be a real number"),
    ],
)
def test_sample_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        sample(jnp.zeros((2, 10)), jax.random.key(0), **kwargs)


def test_top_p_keeps_the_smallest_set_reaching_p():
    # Probabilities 0.4, 0.3, 0.2, 0.1 (in a shuffled order, two rows).
    probs = np.array([[0.2, 0.4, 0.1, 0.3], [0.1, 0.2, 0.3, 0.4]])
    logits = jnp.log(jnp.asarray(probs))
    keys = jax.random.split(jax.random.key(3), 4000)
    for p, allowed in ((0.35, 1), (0.4, 1), (0.65, 2), (0.75, 3), (0.95, 4), (1.0, 4)):
        draws = np.asarray(jax.vmap(lambda k, p=p: sample(logits, k, top_p=p))(keys))
        for row in range(2):
            best = set(np.argsort(-probs[row])[:allowed].tolist())
            assert set(draws[:, row].tolist()) == best, (p, row)
    # Among the kept tokens, the draws follow the renormalised probabilities.
    draws = np.asarray(jax.vmap(lambda k: sample(logits, k, top_p=0.65))(keys))[:, 0]
    assert abs(np.mean(draws == 1) - 0.4 / 0.7) < 0.03


def test_top_p_after_top_k_and_greedy():
    logits = jnp.log(jnp.array([[0.4, 0.3, 0.2, 0.1]]))
    keys = jax.random.split(jax.random.key(4), 2000)
    # top_k=2 first (0.4, 0.3 renormalised to 0.57, 0.43), then top_p=0.5 keeps one.
    draws = np.asarray(jax.vmap(lambda k: sample(logits, k, top_k=2, top_p=0.5))(keys))
    assert set(draws.ravel().tolist()) == {0}
    assert sample(logits, jax.random.key(0), temperature=0.0, top_p=0.1).tolist() == [0]


def test_sample_needs_a_vocabulary_axis():
    with pytest.raises(ValueError, match="vocabulary axis"):
        sample(jnp.float32(1.0), jax.random.key(0))


def test_kv_cache_bytes_matches_real_arrays():
    rng = np.random.default_rng(5)
    for _ in range(5):
        layers, tokens, heads, dim, batch = (int(v) for v in rng.integers(1, 9, size=5))
        for dtype in (jnp.float32, jnp.bfloat16, jnp.int8):
            cache = [(jnp.zeros((batch, tokens, heads, dim), dtype),) * 2 for _ in range(layers)]
            real = sum(a.nbytes for a in jax.tree.leaves(cache))
            assert real == kv_cache_bytes(
                layers=layers,
                tokens=tokens,
                kv_heads=heads,
                head_dim=dim,
                bytes_per_value=jnp.dtype(dtype).itemsize,
                batch=batch,
            )


@pytest.mark.parametrize(
    "bad, error", [(dict(layers=0), ValueError), (dict(tokens=1.5), TypeError)]
)
def test_kv_cache_bytes_bad_arguments(bad, error):
    args = dict(layers=2, tokens=8, kv_heads=2, head_dim=4, bytes_per_value=2) | bad
    name = next(iter(bad))
    with pytest.raises(error, match=f"kv_cache_bytes\\({name}="):
        kv_cache_bytes(**args)


def test_decode_step_seconds_is_the_slower_of_memory_and_compute():
    assert (
        decode_step_seconds(flops=10.0, bytes_moved=4.0, peak_flops=5.0, hbm_bandwidth=4.0) == 2.0
    )
    assert decode_step_seconds(flops=1.0, bytes_moved=8.0, peak_flops=5.0, hbm_bandwidth=4.0) == 2.0
    with pytest.raises(ValueError, match="peak_flops must be > 0"):
        decode_step_seconds(flops=1.0, bytes_moved=1.0, peak_flops=0.0, hbm_bandwidth=1.0)
    with pytest.raises(ValueError, match="bytes_moved must be >= 0"):
        decode_step_seconds(flops=1.0, bytes_moved=-1.0, peak_flops=1.0, hbm_bandwidth=1.0)
