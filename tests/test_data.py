"""jaxguide.data: synthetic sets are deterministic, shaped as documented, carry exactly
the defects they name, and refuse bad arguments."""

import jax
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


@pytest.mark.parametrize(
    "call, error, message",
    [
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
            lambda: data.batch_at(np.arange(10), -1, batch_size=2),
            ValueError,
            r"batch_at\(step=-1\): step must be an int >= 0",
        ),
    ],
)
def test_bad_arguments_raise_errors_naming_function_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "function, args, name, value",
    [
        ("linear_regression", (5, 2), "noise", NAN),
        ("linear_regression", (5, 2), "noise", INF),
        ("spirals", (30,), "noise", NAN),
        ("spirals", (30,), "noise", -INF),
        ("spirals", (30,), "turns", NAN),
        ("noisy_spirals", (30,), "noise", NAN),
        ("noisy_spirals", (30,), "scale", INF),
        ("noisy_spirals", (30,), "label_noise", NAN),
    ],
)
def test_a_float_argument_that_is_not_finite_is_refused_by_name(function, args, name, value):
    with pytest.raises(
        ValueError, match=rf"^{function}\({name}={value}\): {name} must be a finite"
    ):
        getattr(data, function)(jax.random.key(0), *args, **{name: value})


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
