"""Training loops for pure-function models: a jitted optax step, and a loop that
reports progress and runs data-parallel by sharding, and pictures of a run: its loss
curve and metrics (``plot_history``) and a classifier's decision regions in the plane
(``plot_decision_boundary``). Checkpoints are in :mod:`jaxguide.checkpoints`.

Example:
    >>> import jax, optax
    >>> from jaxguide import data, models, train
    >>> x, y = data.spirals(jax.random.key(0), 512)
    >>> params = models.init_mlp(jax.random.key(1), (2, 32, 3))
    >>> optimizer = optax.adam(1e-2)
    >>> step = train.make_step(models.classifier_loss, optimizer)
    >>> params, opt_state, history = train.fit(
    ...     step, params, optimizer.init(params), (x, y), steps=50, batch_size=64, log_every=None)
    >>> len(history.loss), history.loss[-1] < history.loss[0]
    (50, True)
    >>> fig = train.plot_history(history, title="adam")
    >>> len(fig.axes)
    1
    >>> ax = train.plot_decision_boundary(lambda p: models.mlp(params, p), x, y)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import jax
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from jax.typing import ArrayLike

from jaxguide import _checks
from jaxguide._types import PyTree

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "History",
    "PyTree",
    "Step",
    "make_step",
    "fit",
    "replicate",
    "plot_history",
    "plot_decision_boundary",
]

#: A training step: ``step(params, opt_state, batch) -> (params, opt_state, loss)``.
Step: TypeAlias = "Callable[[PyTree, PyTree, PyTree], tuple[PyTree, PyTree, jax.Array]]"


def make_step(
    loss_fn: Callable[[PyTree, PyTree], jax.Array],
    optimizer: optax.GradientTransformation,
    *,
    jit: bool = True,
) -> Step:
    """A training step ``step(params, opt_state, batch) -> (params, opt_state, loss)``.

    The same jitted step runs data-parallel when ``params`` are replicated and
    ``batch`` is sharded over a mesh (see :func:`fit`).

    Args:
        loss_fn: ``loss_fn(params, batch)`` returns a scalar loss.
        optimizer: an optax ``GradientTransformation`` (``optax.adamw(1e-3)``,
            ``optax.sgd(0.1)``, ...).
        jit: return the step jitted (the default) or as a plain function.

    Returns:
        The step function.

    Raises:
        TypeError: ``loss_fn`` is not callable, ``optimizer`` has no ``init`` and
            ``update``, or ``jit`` is not a bool.

    Example:
        >>> import jax.numpy as jnp, optax
        >>> step = make_step(lambda p, b: jnp.sum((p - b) ** 2), optax.sgd(0.25))
        >>> p, state, loss = step(jnp.array(1.0), optax.sgd(0.25).init(jnp.array(1.0)), 3.0)
        >>> float(p), float(loss)    # 1 - 0.25 * 2 * (1 - 3)
        (2.0, 4.0)
    """

    _checks.function("make_step", "loss_fn", loss_fn, what="a function (params, batch) -> loss")
    jit = _checks.boolean("make_step", "jit", jit)
    if not (hasattr(optimizer, "init") and hasattr(optimizer, "update")):
        raise TypeError(
            f"make_step(optimizer=...): optimizer must be an optax GradientTransformation such as "
            f"optax.adamw(1e-3), got {type(optimizer).__name__}."
        )

    def step(params: PyTree, opt_state: PyTree, batch: PyTree) -> tuple[PyTree, PyTree, jax.Array]:
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step) if jit else step


@dataclasses.dataclass
class History:
    """What :func:`fit` recorded: the loss at every step, and ``evaluate``'s metrics at each report.

    Attributes:
        steps: the step numbers, one per step run (1-based: the step just finished).
        loss: the training loss at each of those steps.
        eval_steps: the steps at which ``evaluate`` ran.
        metrics: each metric's values at ``eval_steps``.
        seconds: wall time of the whole run.
        first_step_seconds: wall time of the first step alone (it compiles).
    """

    steps: list[int] = dataclasses.field(default_factory=list)
    loss: list[float] = dataclasses.field(default_factory=list)
    eval_steps: list[int] = dataclasses.field(default_factory=list)
    metrics: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    first_step_seconds: float = 0.0

    @property
    def steps_per_second(self) -> float:
        """Steady-state speed: the steps after the first, over the time they took.

        The first step includes tracing and compilation (often far longer than a
        step), so it is left out; ``nan`` when fewer than two steps ran.
        """
        rest = len(self.steps) - 1
        elapsed = self.seconds - self.first_step_seconds
        return rest / elapsed if rest > 0 and elapsed > 0 else float("nan")


def replicate(tree: PyTree, mesh: jax.sharding.Mesh) -> PyTree:
    """Put a copy of every array of ``tree`` on every device of ``mesh`` (``PartitionSpec()``).

    Args:
        tree: any pytree of arrays.
        mesh: the ``jax.sharding.Mesh`` to replicate over.

    Returns:
        ``tree`` with every leaf a ``jax.Array`` replicated on all of ``mesh``'s devices.

    Raises:
        TypeError: ``mesh`` is not a ``jax.sharding.Mesh``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> mesh = jax.make_mesh((jax.device_count(),), ("x",))
        >>> w = replicate({"w": jnp.ones(3)}, mesh)["w"]
        >>> w.sharding.is_fully_replicated, len(w.sharding.device_set) == jax.device_count()
        (True, True)
    """
    _checks.mesh("replicate", "mesh", mesh)
    return _replicate(tree, mesh)


def _replicate(tree: PyTree, mesh: jax.sharding.Mesh) -> PyTree:
    """:func:`replicate` for a mesh already checked (:func:`fit` checks it once)."""

    return jax.device_put(tree, NamedSharding(mesh, P()))


def fit(
    step: Step,
    params: PyTree,
    opt_state: PyTree,
    data: PyTree,
    *,
    steps: int,
    batch_size: int,
    seed: int = 0,
    start: int = 0,
    mesh: jax.sharding.Mesh | None = None,
    axis: str | tuple[str, ...] = "x",
    place: Callable[[PyTree], PyTree] | None = None,
    log_every: int | None = 100,
    evaluate: Callable[[PyTree], dict[str, Any]] | None = None,
    print_fn: Callable[[str], object] = print,
) -> tuple[PyTree, PyTree, History]:
    """Run ``steps`` training steps from step ``start``.

    Step ``s`` trains on ``jaxguide.data.batch_at(data, s, batch_size=batch_size, seed=seed)``,
    so a run resumed at ``start=s`` sees the same batches as an uninterrupted one.

    Args:
        step: a step from :func:`make_step` (or any function with its signature).
        params, opt_state: the starting state.
        data: the training set, e.g. ``(x, y)`` NumPy arrays.
        steps, batch_size, seed, start: how many steps, of what size, in which order.
        mesh: optional ``jax.sharding.Mesh`` for data parallelism: parameters and
            optimiser state are replicated on it and each batch is split along
            ``axis``, a mesh axis name or a tuple of them (``('x', 'y')`` splits
            over both). ``batch_size`` must divide by the product of their sizes.
        place: optional ``place(batch) -> batch`` run on every batch before the step,
            e.g. ``jaxguide.sharding.split_batch`` for a ``jax.pmap`` step. With a
            ``mesh`` it defaults to ``jaxguide.sharding.shard_batch`` over ``axis``.
        log_every: print one progress line every this many steps (``None``: silent).
        evaluate: optional ``evaluate(params) -> dict`` of metrics, called at each
            progress line and at the end, and recorded in ``history.metrics``.
        print_fn: where progress lines go.

    Returns:
        ``(params, opt_state, history)``: the trained state and a :class:`History`.

    Raises:
        TypeError: a count that is not an int, ``step``/``place``/``evaluate``/
            ``print_fn`` not callable, ``mesh`` not a ``Mesh``, ``axis`` not a name
            or tuple of names.
        ValueError: ``steps`` or ``batch_size`` below 1, ``start`` or ``seed``
            negative, ``axis`` not an axis of ``mesh``, or a batch that does not
            divide over the mesh axes.

    Example (a step that counts its calls; :func:`make_step` makes real ones):
        >>> import numpy as np
        >>> data = (np.arange(8.0), np.zeros(8))
        >>> def step(params, opt_state, batch):
        ...     x, y = batch
        ...     return params + 1, opt_state, np.mean((x - y) ** 2)
        >>> lines = []
        >>> params, _, history = fit(step, 0, None, data, steps=4, batch_size=2,
        ...                          log_every=2, print_fn=lines.append)
        >>> params, history.steps, len(history.loss), [line.split()[1] for line in lines]
        (4, [1, 2, 3, 4], 4, ['2/4', '4/4'])
    """
    from jaxguide.data import batch_at

    _checks.function("fit", "step", step, what="a step from make_step")
    steps = _checks.positive_int("fit", "steps", steps, example=100)
    batch_size = _checks.positive_int("fit", "batch_size", batch_size, example=64)
    start = _checks.count("fit", "start", start)
    seed = _checks.count("fit", "seed", seed)
    if log_every is not None:
        log_every = _checks.positive_int("fit", "log_every", log_every, example=100)
    if evaluate is not None:
        _checks.function("fit", "evaluate", evaluate, what="a function params -> dict of metrics")
    _checks.function("fit", "print_fn", print_fn, what="a function str -> None, such as print")
    if mesh is not None:
        params, opt_state, place = _on_mesh(mesh, axis, batch_size, params, opt_state, place)
    if place is not None:
        _checks.function("fit", "place", place, what="a function batch -> batch")

    history = History()

    def record_metrics(at: int) -> str:
        return _record(history, evaluate, params, at)

    losses: list[jax.Array] = []
    t0 = time.perf_counter()
    for s in range(start, start + steps):
        batch = batch_at(data, s, batch_size=batch_size, seed=seed)
        if place is not None:
            batch = place(batch)
        params, opt_state, loss = step(params, opt_state, batch)
        if place is not None:
            # Multi-device steps run one at a time. Simulated CPU devices share one
            # in-process communicator, and on a small machine several queued steps,
            # each waiting in its own all-reduce, can deadlock it (XLA aborts with
            # "Expected 8 threads to join the rendezvous"). Waiting here costs little.
            jax.block_until_ready(loss)
        losses.append(loss)
        if s == start:
            jax.block_until_ready(loss)  # the first step compiles: time it apart
            history.first_step_seconds = time.perf_counter() - t0
        done = s + 1 - start
        if log_every is not None and (done % log_every == 0 or done == steps):
            extra = record_metrics(s + 1)
            print_fn(
                f"step {s + 1:>5}/{start + steps}  loss {float(loss):.4f}{extra}  ({time.perf_counter() - t0:.1f} s)"
            )
    jax.block_until_ready(params)
    history.seconds = time.perf_counter() - t0
    if evaluate is not None and (not history.eval_steps or history.eval_steps[-1] != start + steps):
        record_metrics(start + steps)
    history.steps = list(range(start + 1, start + steps + 1))
    history.loss = [float(v) for v in jax.device_get(losses)]
    return params, opt_state, history


def _on_mesh(
    mesh: jax.sharding.Mesh,
    axis: str | tuple[str, ...],
    batch_size: int,
    params: PyTree,
    opt_state: PyTree,
    place: Callable[[PyTree], PyTree] | None,
) -> tuple[PyTree, PyTree, Callable[[PyTree], PyTree]]:
    """:func:`fit`'s data parallelism: ``params`` and ``opt_state`` replicated over
    ``mesh``, and ``place`` (unless given) splitting a batch over ``axis``. The mesh, the
    axes and the batch size are checked here once, not again at every step."""
    import math

    from jaxguide.sharding import _shard_batch

    _checks.mesh("fit", "mesh", mesh)
    axes = _checks.mesh_axes("fit", "axis", axis, mesh)
    _checks.divides("fit", "batch_size", batch_size, math.prod(mesh.shape[a] for a in axes))
    params, opt_state = _replicate((params, opt_state), mesh)
    if place is None:

        def place(batch: PyTree) -> PyTree:
            return _shard_batch(batch, mesh, axes)

    return params, opt_state, place


def _record(
    history: History,
    evaluate: Callable[[PyTree], dict[str, Any]] | None,
    params: PyTree,
    at: int,
) -> str:
    """Add ``evaluate(params)`` at step ``at`` to ``history``; the text of a report."""
    if evaluate is None:
        return ""
    values = {k: float(v) for k, v in evaluate(params).items()}
    history.eval_steps.append(at)
    for k, v in values.items():
        history.metrics.setdefault(k, []).append(v)
    return "".join(f"  {k} {v:.4f}" for k, v in values.items())


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

    Example:
        >>> import matplotlib.pyplot as plt
        >>> history = History(steps=[1, 2, 3], loss=[1.0, 0.5, 0.25],
        ...                   eval_steps=[3], metrics={"accuracy": [0.9]})
        >>> fig = plot_history(history, title="a run")
        >>> [ax.get_ylabel() for ax in fig.axes]
        ['training loss', 'metric']
        >>> plt.close(fig)
    """
    import matplotlib.pyplot as plt

    _checks.instance(
        "plot_history",
        "history",
        history,
        History,
        what="the History returned by jaxguide.train.fit",
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

    Example (a linear classifier: class 1 where the first coordinate is positive):
        >>> import jax.numpy as jnp, matplotlib.pyplot as plt
        >>> x = jnp.array([[-1.0, 0.0], [1.0, 0.5], [2.0, -1.0]])
        >>> y = jnp.array([0, 1, 1])
        >>> predict = lambda p: jnp.stack([-p[:, 0], p[:, 0]], axis=-1)
        >>> ax = plot_decision_boundary(predict, x, y, resolution=20, title="sign of x")
        >>> ax.get_title()
        'sign of x'
        >>> plt.close(ax.figure)
    """
    import matplotlib.pyplot as plt

    _checks.function(
        "plot_decision_boundary", "predict", predict, what="a function points -> logits"
    )
    resolution = _checks.integer(
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
