import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide.gradcheck import check_grad, numerical_grad


def test_numerical_grad_matches_closed_form_on_a_pytree():
    f = lambda p: jnp.sum(p["w"] ** 3) + jnp.sin(p["b"])
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
    with pytest.raises(ValueError, match="eps must be a small positive number"):
        numerical_grad(jnp.sum, jnp.ones(2), eps=0)
    with pytest.raises(ValueError, match="must return a scalar"):
        numerical_grad(lambda x: x * 2, jnp.ones(2))
    with pytest.raises(TypeError, match="floating-point"):
        numerical_grad(jnp.sum, jnp.arange(3))
    with pytest.raises(TypeError, match="f must be callable"):
        numerical_grad(3, jnp.ones(2))


def test_check_grad_checks_its_arguments():
    with pytest.raises(TypeError, match="f must be callable"):
        check_grad(3, jnp.ones(2))
    with pytest.raises(ValueError, match=r"check_grad\(rtol=...\)"):
        check_grad(jnp.sum, jnp.ones(2), rtol=-1.0)
