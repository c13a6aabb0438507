import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide import data, models


def test_cross_entropy_matches_numpy_for_valid_labels():
    logits = jnp.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
    labels = jnp.array([1, 2])
    p = np.exp(np.asarray(logits)) / np.exp(np.asarray(logits)).sum(-1, keepdims=True)
    expected = -np.mean(np.log(p[[0, 1], [1, 2]]))
    np.testing.assert_allclose(models.cross_entropy(logits, labels), expected, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(models.cross_entropy)(logits, labels), expected, rtol=1e-6)


@pytest.mark.parametrize("bad, shown", [(3, r"\[3\]"), (7, r"\[7\]"), (-1, r"\[-1\]")])
def test_cross_entropy_refuses_concrete_labels_out_of_range(bad, shown):
    logits = jnp.zeros((2, 3))
    with pytest.raises(
        ValueError, match=r"cross_entropy: labels must be class indices in \[0, 3\).*got " + shown
    ):
        models.cross_entropy(logits, jnp.array([0, bad]))


def test_accuracy_refuses_concrete_labels_out_of_range():
    with pytest.raises(ValueError, match=r"accuracy: labels must be class indices in \[0, 3\)"):
        models.accuracy(jnp.zeros((2, 3)), jnp.array([0, 3]))


def test_label_check_is_skipped_when_labels_are_traced():
    # Under jit the values do not exist; the documented behaviour (NaN) remains.
    out = jax.jit(models.cross_entropy)(jnp.zeros((2, 3)), jnp.array([0, 3]))
    assert np.isnan(out)


def test_classifier_loss_checks_labels_under_grad():
    params = models.init_mlp(jax.random.key(0), (2, 4, 3))
    batch = (jnp.ones((2, 2)), jnp.array([0, 5]))
    with pytest.raises(ValueError, match=r"labels must be class indices in \[0, 3\)"):
        jax.grad(models.classifier_loss)(params, batch)


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
    with pytest.raises(
        ValueError,
        match=r"predict_linear: the data has 5 features \(x.shape=\(2, 5\)\) but the model expects 3",
    ):
        models.predict_linear(params, jnp.ones((2, 5)))
    with pytest.raises(ValueError, match=r"mse_loss: the data has no features"):
        models.mse_loss(params, jnp.float32(1.0), jnp.float32(1.0))
    with pytest.raises(
        TypeError,
        match=r"predict_logistic\(params=...\): params must be a dict with keys 'w' and 'b'",
    ):
        models.predict_logistic([1, 2], jnp.ones(3))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: models.init_linear(jax.random.key(0), 0),
            ValueError,
            r"init_linear\(n_features=0\): n_features must be an int >= 1",
        ),
        (
            lambda: models.init_linear(jax.random.key(0), 2, scale=float("nan")),
            ValueError,
            r"init_linear\(scale=nan\): scale must be a finite",
        ),
    ],
)
def test_bad_arguments_raise_errors_naming_function_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_mse_loss_refuses_a_column_of_targets_instead_of_broadcasting():
    x, y, true = data.linear_regression(jax.random.key(0), 20, 3)
    ok = models.mse_loss(true, x, y)
    assert float(ok) < 0.05
    with pytest.raises(
        ValueError, match=r"mse_loss: y has shape \(20, 1\) but the predictions have shape \(20,\)"
    ):
        models.mse_loss(true, x, y[:, None])
    with pytest.raises(TypeError, match=r"mse_loss\(y=.*\): y must be an array"):
        models.mse_loss(true, x, [1.0] * 20)
    # One example against a Python number is fine: both are scalars.
    assert float(models.mse_loss(true, x[0], float(y[0]))) == pytest.approx(
        float(models.mse_loss(true, x[:1], y[:1]))
    )
    # Inside jit the shapes are still checked (they are static).
    with pytest.raises(ValueError, match="must match exactly"):
        jax.jit(models.mse_loss)(true, x, y[:, None])


def test_logistic_loss_refuses_mismatched_shapes_and_labels_other_than_0_1():
    x, y, true = data.logistic_regression(jax.random.key(1), 20, 3)
    with pytest.raises(ValueError, match=r"logistic_loss: y has shape \(20, 1\)"):
        models.logistic_loss(true, x, y[:, None])
    pm1 = 2 * y - 1
    with pytest.raises(ValueError, match=r"labels y must be 0 or 1, got values \[-1.0\]"):
        models.logistic_loss(true, x, pm1)
    # Traced labels cannot be checked, and valid ones work under jit and grad.
    np.testing.assert_allclose(
        jax.jit(models.logistic_loss)(true, x, y), models.logistic_loss(true, x, y), rtol=1e-6
    )
    assert jax.grad(models.logistic_loss)(true, x, y)["w"].shape == (3,)
