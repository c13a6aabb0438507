"""jaxguide.attention against plain references: jax.nn.dot_product_attention, NumPy
softmax, and a brute-force count of the causal mask's blocks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide.attention import (
    LAYOUTS,
    causal_work,
    chunk_table,
    from_layout,
    reference_attention,
    to_layout,
)


def numpy_attention(q, k, v, causal):
    """Attention written out in NumPy float64, one head and one batch row at a time."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, t, n, h = q.shape
    out = np.zeros_like(q)
    for bi in range(b):
        for ni in range(n):
            s = q[bi, :, ni] @ k[bi, :, ni].T / np.sqrt(h)
            if causal:
                s = np.where(np.tri(t, dtype=bool), s, -np.inf)
            w = np.exp(s - s.max(axis=1, keepdims=True))
            out[bi, :, ni] = (w / w.sum(axis=1, keepdims=True)) @ v[bi, :, ni]
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("causal", [False, True])
def test_reference_attention_matches_jax_and_numpy(seed, causal):
    rng = np.random.default_rng(seed)
    b, t, n, h = (int(x) for x in rng.integers(1, 5, size=4))
    t *= 4
    q, k, v = (jnp.asarray(rng.normal(size=(b, t, n, h)), jnp.float32) for _ in range(3))
    out = reference_attention(q, k, v, causal=causal)
    assert out.shape == (b, t, n, h)
    np.testing.assert_allclose(
        out, jax.nn.dot_product_attention(q, k, v, is_causal=causal), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(out, numpy_attention(q, k, v, causal), rtol=1e-4, atol=1e-5)


def test_reference_attention_differentiable_and_jittable():
    q = jax.random.normal(jax.random.key(0), (1, 8, 2, 4))
    g = jax.grad(
        lambda q: jax.jit(reference_attention, static_argnames="causal")(q, q, q, causal=True).sum()
    )(q)
    g_ref = jax.grad(lambda q: jax.nn.dot_product_attention(q, q, q, is_causal=True).sum())(q)
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-5)


def test_reference_attention_bad_arguments():
    q = jnp.ones((1, 8, 2, 4))
    with pytest.raises(ValueError, match=r"reference_attention\(q, k, v\): .*one shape"):
        reference_attention(q, q[:, :4], q)
    with pytest.raises(ValueError, match=r"\(B, T, N, H\)"):
        reference_attention(q[0], q[0], q[0])
    with pytest.raises(ValueError, match="one shape"):
        reference_attention([1.0], q, q)
    with pytest.raises(
        TypeError, match=r"reference_attention\(causal=1\): causal must be True or False"
    ):
        reference_attention(q, q, q, causal=1)


@pytest.mark.parametrize("p", [1, 2, 3, 8])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_chunk_table_is_a_partition(p, layout):
    table = chunk_table(p, layout)
    assert table.shape == (p, 2)
    assert sorted(table.reshape(-1).tolist()) == list(range(2 * p))  # every chunk, once
    if layout == "zigzag":
        assert (table.sum(axis=1) == 2 * p - 1).all()  # one early and one late chunk
    else:
        assert (np.diff(table.reshape(-1)) == 1).all()


def test_chunk_table_bad_arguments():
    with pytest.raises(ValueError, match=r"chunk_table\(layout='striped'\): layout must be one of"):
        chunk_table(4, "striped")
    with pytest.raises(ValueError, match=r"chunk_table\(n_devices=0\)"):
        chunk_table(0, "zigzag")
    with pytest.raises(TypeError, match=r"chunk_table\(n_devices=2.0\): n_devices must be an int"):
        chunk_table(2.0, "zigzag")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_round_trip_and_positions(seed, layout):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(1, 6))
    c = int(rng.integers(1, 4))
    t = 2 * p * c
    x = rng.normal(size=(2, t, 3))
    y = to_layout(x, p, layout)
    np.testing.assert_array_equal(from_layout(y, p, layout), x)
    # Device i's even share of the reordered axis holds exactly its chunks' positions.
    positions = to_layout(np.arange(t), p, layout, axis=0).reshape(p, 2 * c)
    for i, (a, b) in enumerate(chunk_table(p, layout)):
        expected = np.r_[a * c : (a + 1) * c, b * c : (b + 1) * c]
        np.testing.assert_array_equal(positions[i], expected)
    # Works on jax arrays too, on any axis.
    xj = jnp.asarray(x)
    np.testing.assert_array_equal(to_layout(xj, p, layout), np.asarray(y, np.float32))
    np.testing.assert_array_equal(
        from_layout(to_layout(x, p, layout, axis=-2), p, layout, axis=-2), x
    )


def test_layout_bad_arguments():
    x = np.zeros((1, 12, 2))
    with pytest.raises(ValueError, match=r"length 12, which does not split into 2 × 4 = 8"):
        to_layout(x, 4, "zigzag")
    with pytest.raises(ValueError, match=r"from_layout\(axis=3\): axis must be an int"):
        from_layout(x, 2, "zigzag", axis=3)
    with pytest.raises(TypeError, match=r"to_layout\(x=...\): x must be an array, got list"):
        to_layout([1, 2], 1, "zigzag", axis=0)
    with pytest.raises(ValueError, match="layout must be one of"):
        to_layout(x, 2, "round-robin")


def brute_force_work(p, layout, c=3):
    """Count, token by token, the c x c blocks with at least one visible (q, k) pair."""
    t = 2 * p * c
    pos = to_layout(np.arange(t), p, layout, axis=0).reshape(p, 2, c)
    work = np.zeros((p, p), int)
    for i in range(p):
        for s in range(p):
            j = (i - s) % p
            for a in range(2):
                for b in range(2):
                    visible = pos[j, b][None, :] <= pos[i, a][:, None]
                    work[i, s] += int(visible.any())
    return work


@pytest.mark.parametrize("p", [1, 2, 4, 8])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_causal_work_matches_brute_force(p, layout):
    work = causal_work(p, layout)
    np.testing.assert_array_equal(work, brute_force_work(p, layout))
    assert work.sum() == 2 * p * (2 * p + 1) // 2  # the lower triangle of 2p x 2p blocks
    if layout == "zigzag":
        assert (work.sum(axis=1) == 2 * p + 1).all()  # balanced
    else:
        assert work.sum(axis=1).tolist() == [4 * i + 3 for i in range(p)]


def test_causal_work_bad_arguments():
    with pytest.raises(TypeError, match=r"causal_work\(n_devices='8'\)"):
        causal_work("8", "zigzag")
    with pytest.raises(ValueError, match=r"causal_work\(layout='diagonal'\)"):
        causal_work(8, "diagonal")
