import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide import data, models


def test_linear_data_is_deterministic_and_shaped():
    x1, y1, t1 = data.linear_regression(jax.random.key(0), 50, 4, noise=0.0)
    x2, y2, _ = data.linear_regression(jax.random.key(0), 50, 4, noise=0.0)
    assert x1.shape == (50, 4) and y1.shape == (50,)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_allclose(y1, np.asarray(x1) @ np.asarray(t1["w"]) + float(t1["b"]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(models.mse_loss(t1, x1, y1), 0.0, atol=1e-10)


def test_logistic_model_matches_numpy():
    x, y, true = data.logistic_regression(jax.random.key(1), 200, 3)
    assert set(np.unique(np.asarray(y))) <= {0.0, 1.0}
    z = np.asarray(x) @ np.asarray(true["w"]) + float(true["b"])
    p = 1 / (1 + np.exp(-z))
    np.testing.assert_allclose(models.predict_logistic(true, x), p, rtol=1e-5)
    bce = -np.mean(np.asarray(y) * np.log(p) + (1 - np.asarray(y)) * np.log(1 - p))
    np.testing.assert_allclose(models.logistic_loss(true, x, y), bce, rtol=1e-4)
    assert models.predict_logistic(true, x[0]).shape == ()


def test_logistic_loss_stays_finite_for_confident_predictions():
    params = {"w": jnp.array([100.0]), "b": jnp.array(0.0)}
    loss = models.logistic_loss(params, jnp.array([[10.0], [-10.0]]), jnp.array([0.0, 1.0]))
    assert np.isfinite(loss) and loss > 900


def test_feature_mismatch_names_both_sizes():
    params = models.init_linear(jax.random.key(0), 3)
    with pytest.raises(ValueError, match=r"x has 5 features .* params\['w'\] expects 3"):
        models.predict_linear(params, jnp.ones((2, 5)))
    with pytest.raises(TypeError, match="dict with keys 'w' and 'b'"):
        models.predict_logistic([1, 2], jnp.ones(3))


@pytest.mark.parametrize("call", [
    lambda: models.init_linear(jax.random.key(0), 0),
    lambda: data.linear_regression(jax.random.key(0), -1, 2),
    lambda: data.linear_regression(jax.random.key(0), 5, 2, noise=-1),
    lambda: data.logistic_regression(jax.random.key(0), 5, 2.5),
])
def test_bad_sizes_raise_value_errors(call):
    with pytest.raises(ValueError, match="got"):
        call()
