import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide import models


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
