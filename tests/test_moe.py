"""jaxguide.moe against plain NumPy references on random shapes, and its argument checks."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide.moe import Routing, capacity, load_balancing_loss, route


def reference_route(logits: np.ndarray, k: int, cap: int):
    """Loops: softmax, top-k (ties to the lower index), queues filled rank by rank."""
    logits = np.asarray(logits, dtype=np.float64)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    tokens, n_experts = probs.shape
    experts = np.zeros((tokens, k), dtype=int)
    gates = np.zeros((tokens, k))
    for t in range(tokens):
        order = sorted(range(n_experts), key=lambda e: (-probs[t, e], e))[:k]
        experts[t], gates[t] = order, probs[t, order]
    slots = np.zeros((tokens, k), dtype=int)
    filled = [0] * n_experts
    for c in range(k):
        for t in range(tokens):
            e = experts[t, c]
            slots[t, c] = filled[e]
            filled[e] += 1
    return experts, gates, slots, slots < cap


@pytest.mark.parametrize("seed", range(6))
def test_route_matches_the_loop_reference_on_random_shapes(seed):
    rng = np.random.default_rng(seed)
    tokens, n_experts = int(rng.integers(1, 40)), int(rng.integers(1, 12))
    k = int(rng.integers(1, n_experts + 1))
    cap = int(rng.integers(1, 2 * tokens + 1))
    logits = rng.normal(size=(tokens, n_experts)).astype(np.float32)
    r = route(jnp.asarray(logits), k, cap)
    experts, gates, slots, kept = reference_route(logits, k, cap)
    np.testing.assert_array_equal(r.experts, experts)
    np.testing.assert_allclose(r.gates, gates, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(r.slots, slots)
    np.testing.assert_array_equal(r.kept, kept)
    assert int(r.dropped) == int((~kept).sum())
    assert r.experts.dtype == jnp.int32 and r.slots.dtype == jnp.int32


def test_route_keeps_at_most_capacity_per_expert_and_fills_first_choices_first():
    rng = np.random.default_rng(7)
    logits = jnp.asarray(rng.normal(size=(64, 4)).astype(np.float32))
    r = route(logits, k=2, capacity=5)
    for e in range(4):
        assert int(jnp.sum(r.kept & (r.experts == e))) <= 5
    # a kept second choice never displaced a first choice of the same expert
    for e in range(4):
        first = np.asarray(r.slots[:, 0][np.asarray(r.experts[:, 0]) == e])
        second = np.asarray(r.slots[:, 1][np.asarray(r.experts[:, 1]) == e])
        if first.size and second.size:
            assert first.max() < second.min()


def test_route_works_under_jit_vmap_and_grad():
    logits = jax.random.normal(jax.random.key(0), (3, 10, 5))
    r = jax.jit(jax.vmap(lambda l: route(l, 2, 4)))(logits)
    assert isinstance(r, Routing) and r.experts.shape == (3, 10, 2)
    for g in range(3):
        one = route(logits[g], 2, 4)
        np.testing.assert_array_equal(r.slots[g], one.slots)
    grad = jax.grad(lambda l: route(l, 2, 4).gates.sum())(logits[0])
    assert grad.shape == (10, 5) and np.all(np.isfinite(grad)) and np.any(grad != 0)


def test_route_normalize_is_mixtrals_softmax_over_the_top_k():
    logits = jax.random.normal(jax.random.key(1), (12, 6))
    r = route(logits, 2, 12, normalize=True)
    top, idx = jax.lax.top_k(logits, 2)
    np.testing.assert_allclose(r.gates, jax.nn.softmax(top, axis=-1), rtol=1e-6)
    np.testing.assert_array_equal(r.experts, idx)
    plain = route(logits, 2, 12)
    assert not np.allclose(plain.gates.sum(-1), 1.0)  # the default is not normalised
    one = jax.grad(lambda l: route(l, 1, 12, normalize=True).gates.sum())(logits)
    assert np.abs(one).max() < 1e-6  # k = 1: a gate of 1, no gradient to the router
    with pytest.raises(TypeError, match=r"route\(normalize=1\): normalize must be True or False"):
        route(logits, 2, 12, normalize=1)


@pytest.mark.parametrize(
    ("tokens", "experts", "k", "factor"),
    [(128, 16, 2, 1.25), (100, 7, 3, 1.1), (1, 1, 1, 0.01), (4096, 256, 8, 1.0), (10, 3, 1, 2.0)],
)
def test_capacity_is_the_ceiling_of_the_formula(tokens, experts, k, factor):
    expected = max(1, math.ceil(round(factor * k * tokens / experts, 9)))
    assert capacity(tokens, experts, k, factor) == expected


def test_capacity_is_exact_where_the_formula_is_whole():
    # 1.1 * 2 * 50 / 11 = 10 exactly in real numbers, 10.000000000000002 in floats.
    assert capacity(50, 11, 2, 1.1) == 10


@pytest.mark.parametrize("seed", range(5))
def test_load_balancing_loss_matches_the_formula(seed):
    rng = np.random.default_rng(seed)
    tokens, n_experts = int(rng.integers(1, 50)), int(rng.integers(1, 10))
    k = int(rng.integers(1, n_experts + 1))
    logits = rng.normal(size=(tokens, n_experts))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    experts = rng.integers(0, n_experts, size=(tokens, k))
    f = np.bincount(experts.ravel(), minlength=n_experts) / experts.size
    expected = n_experts * np.sum(f * probs.mean(axis=0))
    got = load_balancing_loss(jnp.asarray(probs, jnp.float32), jnp.asarray(experts))
    np.testing.assert_allclose(float(got), expected, rtol=1e-5)


def test_load_balancing_loss_is_one_when_uniform_and_e_when_collapsed():
    uniform = jnp.full((8, 4), 0.25)
    even = jnp.arange(8).reshape(8, 1) % 4
    assert float(load_balancing_loss(uniform, even)) == pytest.approx(1.0)
    collapsed = jnp.zeros((8, 4)).at[:, 0].set(1.0)
    assert float(load_balancing_loss(collapsed, jnp.zeros((8, 1), jnp.int32))) == 4.0


def test_load_balancing_loss_gradient_flows_through_the_probabilities():
    logits = jax.random.normal(jax.random.key(1), (16, 4))
    experts = route(logits, 1, 16).experts
    grad = jax.grad(lambda l: load_balancing_loss(jax.nn.softmax(l), experts))(logits)
    assert np.any(np.asarray(grad) != 0)


def test_bad_arguments_get_clear_errors():
    logits = jnp.zeros((4, 3))
    with pytest.raises(
        ValueError, match=r"route\(k=4\): k must be at most the number of experts, 3"
    ):
        route(logits, 4, 2)
    with pytest.raises(ValueError, match=r"route\(capacity=0\): capacity must be an int >= 1"):
        route(logits, 1, 0)
    with pytest.raises(TypeError, match=r"route\(k=1.5\): k must be an int"):
        route(logits, 1.5, 2)
    with pytest.raises(ValueError, match=r"route\(logits=...\): logits must have shape"):
        route(jnp.zeros(3), 1, 2)
    with pytest.raises(TypeError, match=r"logits must hold floating-point numbers, got int32"):
        route(jnp.zeros((4, 3), jnp.int32), 1, 2)
    with pytest.raises(TypeError, match=r"route\(logits=...\): logits must be an array, got list"):
        route([[0.0, 1.0]], 1, 2)
    with pytest.raises(ValueError, match=r"capacity\(k=3\): k must be at most experts=2"):
        capacity(8, 2, 3)
    with pytest.raises(ValueError, match=r"capacity\(factor=0.0\): factor must be > 0"):
        capacity(8, 2, 1, 0.0)
    with pytest.raises(TypeError, match=r"capacity\(tokens=True\): tokens must be an int"):
        capacity(True, 2)
    with pytest.raises(ValueError, match=r"capacity\(experts=0\): experts must be an int >= 1"):
        capacity(8, 0)
    with pytest.raises(TypeError, match=r"experts must hold integer numbers, got float32"):
        load_balancing_loss(jnp.ones((2, 2)), jnp.zeros((2, 1)))
    with pytest.raises(ValueError, match=r"probs has 2 tokens but experts has 3"):
        load_balancing_loss(jnp.ones((2, 2)), jnp.zeros((3, 1), jnp.int32))
