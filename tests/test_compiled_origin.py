"""jaxguide.compiled's readers of an instruction's origin (hlo_line, op_name, pass_of,
scopes_of, parameter_of), checked on small programs whose collectives are known: which
pass, which named scope and which argument each comes from, and clear errors for bad
arguments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxguide.compiled import analyze, hlo_line, op_name, parameter_of, pass_of, scopes_of


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


@pytest.fixture(scope="module")
def two_layer(mesh):
    """grad of a two-layer model with the batch split over 8 devices: the weight
    gradients are summed across devices in the backward pass."""

    @jax.named_scope("first")
    def first(w, x):
        return jnp.tanh(x @ w)

    @jax.named_scope("second")
    def second(v, h):
        return h @ v

    def loss(params, x):
        return second(params["v"], first(params["w"], x)).sum()

    rng = np.random.default_rng(0)
    params = {"w": jnp.asarray(rng.normal(size=(4, 3))), "v": jnp.asarray(rng.normal(size=3))}
    x = jax.device_put(jnp.asarray(rng.normal(size=(16, 4))), NamedSharding(mesh, P("x")))
    return analyze(jax.grad(loss), params, x)


def test_backward_collectives_carry_their_scope(two_layer):
    assert two_layer.collectives
    for c in two_layer.collectives:
        assert pass_of(two_layer, c) == "backward"
        assert "transpose(" in op_name(two_layer, c)
        assert set(scopes_of(two_layer, c)) <= {"first", "second"}
    # Both layers' weight gradients are summed over the batch shards.
    found = {s for c in two_layer.collectives for s in scopes_of(two_layer, c)}
    assert found, [op_name(two_layer, c) for c in two_layer.collectives]


def test_forward_collective(mesh):
    x = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P("x")))
    report = analyze(lambda x: x.sum(), x)
    (c,) = report.collectives
    assert pass_of(report, c) == "forward"
    assert op_name(report, c) == "jit(<lambda>)/reduce_sum"
    assert scopes_of(report, c) == ()
    # The instruction's own line, found by the collective or by its name.
    assert hlo_line(report, c) == hlo_line(report, c.name)
    assert hlo_line(report, c).startswith(f"%{c.name} = ") and "all-reduce" in hlo_line(report, c)


@pytest.mark.parametrize("key", ["table", "other"])
def test_parameter_of_follows_the_operand_back(mesh, key):
    table = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
    whole = jax.jit(lambda params: params[key] * 2.0, out_shardings=NamedSharding(mesh, P()))
    report = analyze(whole, {key: table})
    (c,) = report.collectives
    assert c.kind == "all-gather"
    assert parameter_of(report, c) == f"params['{key}']"
    # One hop is not enough to pass the fusion that doubles the table.
    assert parameter_of(report, c, max_hops=1) is None


def test_bad_arguments(two_layer):
    c = two_layer.collectives[0]
    with pytest.raises(TypeError, match="report must be a ProgramReport"):
        op_name("not a report", c)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="collective must be a Collective"):
        pass_of(two_layer, 3)  # type: ignore[arg-type]
    with pytest.raises(
        KeyError, match=r"hlo_line\(collective='nowhere'\): .* no instruction %nowhere; pass"
    ):
        scopes_of(two_layer, "nowhere")
    with pytest.raises(ValueError, match="max_hops"):
        parameter_of(two_layer, c, max_hops=0)
