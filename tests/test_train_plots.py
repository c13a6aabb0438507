"""jaxguide.train's pictures of a run: the figures show what the run recorded, and bad input
is refused."""

from __future__ import annotations

import jax
import matplotlib
import numpy as np
import pytest

from jaxguide import data, models, train

matplotlib.use("Agg")


def test_plot_history_draws_the_recorded_loss_and_metrics():
    history = train.History(
        steps=[1, 2, 3], loss=[1.0, 0.5, 0.25], eval_steps=[3], metrics={"acc": [0.9]}
    )
    fig = train.plot_history(history, title="run")
    assert len(fig.axes) == 2
    per_step = fig.axes[0].lines[0]
    assert list(per_step.get_xdata()) == [1, 2, 3] and list(per_step.get_ydata()) == [
        1.0,
        0.5,
        0.25,
    ]
    assert fig.axes[0].get_yscale() == "log"
    acc = fig.axes[1].lines[0]
    assert list(acc.get_xdata()) == [3] and list(acc.get_ydata()) == [0.9]
    assert fig._suptitle.get_text() == "run"
    no_metrics = train.plot_history(train.History(steps=[1], loss=[2.0]))
    assert len(no_metrics.axes) == 1


def test_plot_decision_boundary_colours_the_predicted_classes():
    x, y = data.spirals(jax.random.key(0), 60)
    params = models.init_mlp(jax.random.key(0), (2, 8, 3))
    ax = train.plot_decision_boundary(lambda p: models.mlp(params, p), x, y, resolution=20)
    points = ax.collections[-1]
    np.testing.assert_allclose(points.get_offsets(), x)
    # One filled band per class: levels at -0.5, 0.5, 1.5, 2.5.
    contour = ax.collections[0]
    assert list(contour.levels) == [-0.5, 0.5, 1.5, 2.5]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: train.plot_history([1, 2]),
            TypeError,
            r"plot_history\(history=...\): history must be the History returned by "
            r"jaxguide.train.fit, got list",
        ),
        (lambda: train.plot_history(train.History()), ValueError, "the history recorded no steps"),
        (
            lambda: train.plot_decision_boundary(lambda p: p, np.ones((5, 3)), np.ones(5)),
            ValueError,
            r"plot_decision_boundary: expected x of shape \(n, 2\) and n labels, got x \(5, 3\)",
        ),
        (
            lambda: train.plot_decision_boundary(None, np.ones((5, 2)), np.ones(5)),
            TypeError,
            r"plot_decision_boundary\(predict=...\): predict must be a function",
        ),
        (
            lambda: train.plot_decision_boundary(
                lambda p: p, np.ones((5, 2)), np.ones(5), resolution=1
            ),
            ValueError,
            r"plot_decision_boundary\(resolution=1\): resolution must be an int >= 2",
        ),
    ],
)
def test_plots_refuse_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
