"""Pictures of training: the loss curve and metrics of a run, and a classifier's
decision regions in the plane.

Example:
    >>> import jax, optax
    >>> from jaxguide import data, models, plots, train
    >>> x, y = data.spirals(jax.random.key(0), 256)
    >>> params = models.init_mlp(jax.random.key(1), (2, 16, 3))
    >>> opt = optax.adam(1e-2)
    >>> step = train.make_step(models.classifier_loss, opt)
    >>> params, _, history = train.fit(
    ...     step, params, opt.init(params), (x, y), steps=20, batch_size=32, log_every=None)
    >>> fig = plots.plot_history(history, title="adam")
    >>> len(fig.axes)
    1
    >>> ax = plots.plot_decision_boundary(lambda p: models.mlp(params, p), x, y)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from jaxguide import _checks
from jaxguide.train import History

if TYPE_CHECKING:
    from jax.typing import ArrayLike
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_history", "plot_decision_boundary"]


def plot_history(history: History, *, title: str | None = None) -> Figure:
    """Training loss per step (log scale, with a running mean) beside ``evaluate``'s
    metrics at each report.

    Args:
        history: the :class:`~jaxguide.train.History` returned by
            :func:`jaxguide.train.fit`.
        title: a title over the figure.

    Returns:
        The matplotlib ``Figure`` (one panel, or two when ``history`` has metrics).

    Raises:
        TypeError: ``history`` is not a ``History``.
        ValueError: ``history`` recorded no steps.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if not isinstance(history, History):
        raise TypeError(
            f"plot_history(history=...): history must be the History returned by "
            f"jaxguide.train.fit, got {type(history).__name__}."
        )
    if not history.loss:
        raise ValueError(
            "plot_history(history=...): the history recorded no steps; run fit() first."
        )
    panels = 2 if history.metrics else 1
    fig, axes = plt.subplots(
        1, panels, figsize=(4.2 * panels, 3.0), layout="constrained", squeeze=False
    )
    ax = axes[0, 0]
    loss = np.asarray(history.loss)
    ax.plot(history.steps, loss, color="0.75", lw=0.8, label="per step")
    window = max(1, len(loss) // 50)
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    ax.plot(
        history.steps[window - 1 :], smooth, color="C0", lw=1.5, label=f"mean of {window} steps"
    )
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.legend(fontsize=8, frameon=False)
    if history.metrics:
        ax = axes[0, 1]
        for name, values in history.metrics.items():
            ax.plot(history.eval_steps, values, marker="o", ms=3, label=name)
        ax.set_xlabel("step")
        ax.set_ylabel("metric")
        ax.legend(fontsize=8, frameon=False)
    for ax in axes.flat:
        ax.spines[["top", "right"]].set_visible(False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_decision_boundary(
    predict: Callable[[ArrayLike], ArrayLike],
    x: ArrayLike,
    y: ArrayLike,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    resolution: int = 200,
) -> Axes:
    """Colour the plane by the class ``predict(points) -> logits`` picks, with the
    points ``x`` on top coloured by their label ``y``.

    Args:
        predict: maps points of shape ``(m, 2)`` to logits ``(m, n_classes)``.
        x: the points, shape ``(n, 2)``.
        y: their integer labels, shape ``(n,)``.
        ax: the matplotlib ``Axes`` to draw on (default: a new figure).
        title: a title over the plot.
        resolution: grid points per side of the coloured plane.

    Returns:
        The ``Axes``.

    Raises:
        TypeError: ``predict`` is not callable, or ``resolution`` not an int.
        ValueError: ``x`` is not of shape ``(n, 2)`` with ``n`` labels, or
            ``resolution < 2``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    _checks.function(
        "plot_decision_boundary", "predict", predict, what="a function points -> logits"
    )
    resolution = _checks.positive_int(
        "plot_decision_boundary", "resolution", resolution, minimum=2, example=200
    )
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or x.shape[1] != 2 or y.shape != (len(x),):
        raise ValueError(
            f"plot_decision_boundary: expected x of shape (n, 2) and n labels, got x {x.shape} and y {y.shape}."
        )
    lo, hi = x.min(axis=0) - 0.1, x.max(axis=0) + 0.1
    g0, g1 = np.meshgrid(
        np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
    )
    grid = np.stack([g0.ravel(), g1.ravel()], axis=1).astype(np.float32)
    classes = np.asarray(predict(grid)).argmax(axis=-1).reshape(g0.shape)
    k = int(max(y.max(), classes.max())) + 1
    cmap = plt.get_cmap("tab10", 10)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 4.0), layout="constrained")
    ax.contourf(
        g0,
        g1,
        classes,
        levels=np.arange(k + 1) - 0.5,
        colors=[cmap(i) for i in range(k)],
        alpha=0.25,
    )
    ax.scatter(x[:, 0], x[:, 1], c=[cmap(int(i)) for i in y], s=6, edgecolors="none")
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=10)
    return ax
