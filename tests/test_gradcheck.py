import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide.gradcheck import check_grad, numerical_grad


def test_numerical_grad_matches_closed_form_on_a_pytree():
    def f(p):
        return jnp.sum(p["w"] ** 3) + jnp.sin(p["b"])

    p = {"w": jnp.array([1.0, -2.0]), "b": jnp.array(0.3)}
    g = numerical_grad(f, p)
    np.testing.assert_allclose(g["w"], 3 * np.array([1.0, 4.0]), rtol=1e-3)
    np.testing.assert_allclose(g["b"], np.cos(0.3), rtol=1e-3)


def test_check_grad_passes_for_correct_gradients():
    assert check_grad(lambda x: jnp.sum(jnp.tanh(x)), jnp.array([0.1, 0.5, 2.0])) < 1e-3


def test_check_grad_catches_a_wrong_custom_gradient_and_names_the_leaf():
    @jax.custom_vjp
    def bad_square(x):
        return x**2

    bad_square.defvjp(lambda x: (x**2, x), lambda x, g: (g * x,))  # should be 2x
    with pytest.raises(AssertionError, match=r"gradient mismatch at \['w'\]"):
        check_grad(lambda p: jnp.sum(bad_square(p["w"])), {"w": jnp.array([1.0, 2.0])})


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"numerical_grad\(eps=0.0\): eps must be > 0"):
        numerical_grad(jnp.sum, jnp.ones(2), eps=0)
    with pytest.raises(ValueError, match=r"numerical_grad\(eps=nan\): eps must be a finite"):
        numerical_grad(jnp.sum, jnp.ones(2), eps=float("nan"))
    with pytest.raises(TypeError, match=r"numerical_grad\(eps='x'\): eps must be a real"):
        numerical_grad(jnp.sum, jnp.ones(2), eps="x")
    with pytest.raises(
        ValueError, match=r"^numerical_grad\(f=\.\.\.\): f must return a scalar, got shape \(2,\); "
    ):
        numerical_grad(lambda x: x * 2, jnp.ones(2))
    with pytest.raises(
        TypeError,
        match=r"^numerical_grad\(params=\.\.\.\): leaf 0 of params must be a floating-point "
        r"array \(gradients need one\), got dtype int32; pass x\.astype",
    ):
        numerical_grad(jnp.sum, jnp.arange(3))
    with pytest.raises(
        TypeError, match=r"numerical_grad\(f=...\): f must be a function params -> scalar"
    ):
        numerical_grad(3, jnp.ones(2))
    with pytest.raises(
        ValueError, match=r"^numerical_grad\(params=\.\.\.\): params must hold at least one array"
    ):
        numerical_grad(jnp.sum, {})


def test_check_grad_checks_its_arguments():
    with pytest.raises(
        TypeError, match=r"check_grad\(f=...\): f must be a function params -> scalar"
    ):
        check_grad(3, jnp.ones(2))
    with pytest.raises(ValueError, match=r"check_grad\(rtol=-1.0\): rtol must be >= 0"):
        check_grad(jnp.sum, jnp.ones(2), rtol=-1.0)
    with pytest.raises(ValueError, match=r"check_grad\(atol=nan\): atol must be a finite"):
        check_grad(jnp.sum, jnp.ones(2), atol=float("nan"))
    with pytest.raises(ValueError, match=r"check_grad\(eps=-1.0\): eps must be > 0"):
        check_grad(jnp.sum, jnp.ones(2), eps=-1.0)


def test_check_grad_fails_on_a_nan_gradient_from_where():
    # softplus written with jnp.where: the untaken branch overflows at 100 and
    # its NaN cotangent leaks into jax.grad (the classic jnp.where trap).
    def softplus(x):
        return jnp.sum(jnp.where(x > 50.0, x, jnp.log1p(jnp.exp(x))))

    assert np.isnan(jax.grad(softplus)(jnp.array([100.0]))).all()
    with pytest.raises(AssertionError, match="non-finite gradient at params"):
        check_grad(softplus, jnp.array([100.0]))
    with pytest.raises(AssertionError, match="non-finite gradient at params"):
        check_grad(lambda x: jnp.sum(jnp.sqrt(x)), jnp.array([-1.0]))


def test_check_grad_fails_on_a_nan_numerical_side():
    with pytest.raises(AssertionError, match=r"non-finite gradient at \['w'\]"):
        check_grad(lambda p: jnp.sum(jnp.sqrt(p["w"])), {"w": jnp.array([4.0, -1.0])})


def test_check_grad_fails_on_an_infinite_gradient():
    # d/dx sqrt(x) at 0 is inf analytically; the central difference is NaN.
    with pytest.raises(AssertionError, match="non-finite gradient"):
        check_grad(lambda x: jnp.sum(jnp.sqrt(x)), jnp.array([0.0]))
