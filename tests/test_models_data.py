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
    np.testing.assert_allclose(
        y1, np.asarray(x1) @ np.asarray(t1["w"]) + float(t1["b"]), rtol=1e-5, atol=1e-5
    )
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
        (
            lambda: data.linear_regression(jax.random.key(0), -1, 2),
            ValueError,
            r"linear_regression\(n_samples=-1\)",
        ),
        (
            lambda: data.linear_regression(jax.random.key(0), 5, 2, noise=-1),
            ValueError,
            r"linear_regression\(noise=-1.0\): noise must be >= 0",
        ),
        (
            lambda: data.logistic_regression(jax.random.key(0), 5, 2.5),
            TypeError,
            r"logistic_regression\(n_features=2.5\): n_features must be an int",
        ),
        (
            lambda: data.linear_regression(jax.random.key(0), 5, 2, noise=float("nan")),
            ValueError,
            r"linear_regression\(noise=nan\): noise must be a finite",
        ),
        (
            lambda: data.linear_regression(jax.random.key(0), 5, 2, noise=float("inf")),
            ValueError,
            r"linear_regression\(noise=inf\): noise must be a finite",
        ),
        (
            lambda: data.spirals(jax.random.key(0), 30, noise=float("nan")),
            ValueError,
            r"spirals\(noise=nan\): noise must be a finite",
        ),
        (
            lambda: data.spirals(jax.random.key(0), 30, noise=float("-inf")),
            ValueError,
            r"spirals\(noise=-inf\): noise must be a finite",
        ),
        (
            lambda: data.spirals(jax.random.key(0), 30, turns=float("nan")),
            ValueError,
            r"spirals\(turns=nan\)",
        ),
        (
            lambda: data.noisy_spirals(jax.random.key(0), 30, noise=float("nan")),
            ValueError,
            r"noisy_spirals\(noise=nan\)",
        ),
        (
            lambda: data.noisy_spirals(jax.random.key(0), 30, scale=float("inf")),
            ValueError,
            r"noisy_spirals\(scale=inf\)",
        ),
        (
            lambda: data.noisy_spirals(jax.random.key(0), 30, label_noise=float("nan")),
            ValueError,
            r"noisy_spirals\(label_noise=nan\)",
        ),
        (
            lambda: data.batch_at(np.arange(10), -1, batch_size=2),
            ValueError,
            r"batch_at\(step=-1\): step must be an int >= 0",
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


def test_noisy_spirals_adds_exactly_the_defects_it_names():
    key = jax.random.key(5)
    x, y, y_true = data.noisy_spirals(key, 4000, label_noise=0.2, n_distractors=3)
    again = data.noisy_spirals(key, 4000, label_noise=0.2, n_distractors=3)
    for a, b in zip((x, y, y_true), again):
        np.testing.assert_array_equal(a, b)  # deterministic from the key
    assert x.shape == (4000, 5) and x.dtype == np.float32
    assert y.dtype == np.int32 and y_true.dtype == np.int32
    # The true labels and the first two features are the spirals of the first subkey.
    arms, labels = data.spirals(jax.random.split(key, 4)[0], 4000)
    np.testing.assert_array_equal(y_true, labels)
    np.testing.assert_allclose(x[:, :2], arms, rtol=1e-6)
    # About 20% of the labels are wrong, and a wrong label is another class.
    wrong = y != y_true
    assert 0.18 < wrong.mean() < 0.22
    assert set(np.unique(y).tolist()) == {0, 1, 2}
    # Distractors: centred noise of standard deviation 0.3, unrelated to the class.
    np.testing.assert_allclose(x[:, 2:].std(axis=0), 0.3, rtol=0.06)
    for c in range(3):
        assert np.all(np.abs(x[y_true == c, 2:].mean(axis=0)) < 0.05)
    # Raw units: every feature is x * scale + offset.
    xr, yr, yr_true = data.noisy_spirals(
        key, 4000, label_noise=0.0, n_distractors=0, offset=40.0, scale=10.0
    )
    np.testing.assert_allclose(xr, arms * 10 + 40, rtol=1e-5)
    np.testing.assert_array_equal(yr, yr_true)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"label_noise": 1.0}, "label_noise"),
        ({"label_noise": -0.1}, "label_noise"),
        ({"n_distractors": -1}, "n_distractors"),
        ({"scale": 0.0}, "scale"),
        ({"n_classes": 1}, "n_classes"),
    ],
)
def test_noisy_spirals_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        data.noisy_spirals(jax.random.key(0), 100, **kwargs)
