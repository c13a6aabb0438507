"""Training loops and checkpoints for pure-function models: a jitted step, a loop that
reports progress, data parallelism by sharding, and orbax checkpoints that refuse to
overwrite.

Example:
    >>> import jax, optax
    >>> from jaxguide import data, nn, train
    >>> x, y = data.spirals(jax.random.key(0), 512)
    >>> params = nn.init_mlp(jax.random.key(1), (2, 32, 3))
    >>> optimizer = optax.adam(1e-2)
    >>> step = train.make_step(nn.classifier_loss, optimizer)
    >>> params, opt_state, history = train.fit(
    ...     step, params, optimizer.init(params), (x, y), steps=50, batch_size=64, log_every=None)
    >>> len(history.loss), history.loss[-1] < history.loss[0]
    (50, True)
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Callable

from jaxguide._checks import mesh as check_mesh
from jaxguide._checks import positive_int

__all__ = [
    "CheckpointError",
    "History",
    "make_step",
    "fit",
    "replicate",
    "save_checkpoint",
    "restore_checkpoint",
    "checkpoint_steps",
    "plot_history",
    "plot_decision_boundary",
]


def make_step(loss_fn: Callable, optimizer, *, jit: bool = True) -> Callable:
    """A training step ``step(params, opt_state, batch) -> (params, opt_state, loss)``.

    ``loss_fn(params, batch)`` returns a scalar; ``optimizer`` is an optax
    ``GradientTransformation`` (``optax.adamw(1e-3)``, ``optax.sgd(0.1)``, ...).
    The step is jitted unless ``jit=False``. The same jitted step runs data-parallel
    when ``params`` are replicated and ``batch`` is sharded over a mesh (see :func:`fit`).
    """
    import jax
    import optax

    if not callable(loss_fn):
        raise TypeError(f"make_step(loss_fn=...): expected a function (params, batch) -> loss, got {loss_fn!r}.")
    if not (hasattr(optimizer, "init") and hasattr(optimizer, "update")):
        raise TypeError(
            f"make_step(optimizer=...): expected an optax GradientTransformation such as optax.adamw(1e-3), "
            f"got {type(optimizer).__name__}."
        )

    def step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step) if jit else step


@dataclasses.dataclass
class History:
    """What :func:`fit` recorded: the loss at every step, and ``evaluate``'s metrics at each report."""

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


def _int(name: str, value, minimum: int) -> int:
    fn, _, arg = name.partition("(")
    return positive_int(fn, arg.split("=")[0], value, minimum=minimum)


def replicate(tree, mesh):
    """Put a copy of every array of ``tree`` on every device of ``mesh`` (``PartitionSpec()``).

    Raises:
        TypeError: ``mesh`` is not a ``jax.sharding.Mesh``.
    """
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    check_mesh("replicate", "mesh", mesh)
    return jax.device_put(tree, NamedSharding(mesh, P()))


def fit(
    step: Callable,
    params,
    opt_state,
    data,
    *,
    steps: int,
    batch_size: int,
    seed: int = 0,
    start: int = 0,
    mesh=None,
    axis: str | tuple[str, ...] = "x",
    place: Callable | None = None,
    log_every: int | None = 100,
    evaluate: Callable | None = None,
    print_fn: Callable = print,
):
    """Run ``steps`` training steps from step ``start``; return ``(params, opt_state, history)``.

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
    """
    import jax

    from jaxguide.data import batch_at
    from jaxguide.sharding import _check_divides, shard_batch

    steps = _int("fit(steps=...)", steps, 1)
    batch_size = _int("fit(batch_size=...)", batch_size, 1)
    start = _int("fit(start=...)", start, 0)
    if log_every is not None:
        log_every = _int("fit(log_every=...)", log_every, 1)
    if evaluate is not None and not callable(evaluate):
        raise TypeError(f"fit(evaluate=...): expected a function params -> dict of metrics, got {evaluate!r}.")
    if mesh is not None:
        import math

        check_mesh("fit", "mesh", mesh)
        if isinstance(axis, str):
            axes = (axis,)
        elif isinstance(axis, tuple) and axis and all(isinstance(a, str) for a in axis):
            axes = axis
        else:
            raise TypeError(
                f"fit(axis={axis!r}): axis must be a mesh axis name or a tuple of names, "
                "such as 'x' or ('x', 'y')."
            )
        missing = [a for a in axes if a not in mesh.shape]
        if missing:
            raise ValueError(
                f"fit(axis={axis!r}): the mesh has axes {tuple(mesh.shape)}; "
                f"{', '.join(map(repr, missing))} is not one of them."
            )
        _check_divides(batch_size, math.prod(mesh.shape[a] for a in axes), "fit(batch_size=...)")
        params, opt_state = replicate((params, opt_state), mesh)
        if place is None:
            place = lambda batch: shard_batch(batch, mesh, axis)  # noqa: E731
    if place is not None and not callable(place):
        raise TypeError(f"fit(place=...): expected a function batch -> batch, got {place!r}.")

    history = History()

    def record_metrics(at: int) -> str:
        if evaluate is None:
            return ""
        values = {k: float(v) for k, v in evaluate(params).items()}
        history.eval_steps.append(at)
        for k, v in values.items():
            history.metrics.setdefault(k, []).append(v)
        return "".join(f"  {k} {v:.4f}" for k, v in values.items())

    losses = []
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
            print_fn(f"step {s + 1:>5}/{start + steps}  loss {float(loss):.4f}{extra}  ({time.perf_counter() - t0:.1f} s)")
    jax.block_until_ready(params)
    history.seconds = time.perf_counter() - t0
    if evaluate is not None and (not history.eval_steps or history.eval_steps[-1] != start + steps):
        record_metrics(start + steps)
    history.steps = list(range(start + 1, start + steps + 1))
    history.loss = [float(v) for v in jax.device_get(losses)]
    return params, opt_state, history


# --------------------------------------------------------------------------- pictures


def plot_history(history: History, *, title: str | None = None):
    """Training loss per step (log scale, with a running mean) beside ``evaluate``'s
    metrics at each report. Returns the matplotlib ``Figure``."""
    import matplotlib.pyplot as plt
    import numpy as np

    if not isinstance(history, History) or not history.loss:
        raise TypeError("plot_history(history): expected the History returned by fit().")
    panels = 2 if history.metrics else 1
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.0), layout="constrained", squeeze=False)
    ax = axes[0, 0]
    loss = np.asarray(history.loss)
    ax.plot(history.steps, loss, color="0.75", lw=0.8, label="per step")
    window = max(1, len(loss) // 50)
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    ax.plot(history.steps[window - 1 :], smooth, color="C0", lw=1.5, label=f"mean of {window} steps")
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


def plot_decision_boundary(predict: Callable, x, y, *, ax=None, title: str | None = None, resolution: int = 200):
    """Colour the plane by the class ``predict(points) -> logits`` picks, with the
    points ``x`` (shape ``(n, 2)``) on top coloured by their label ``y``. Returns the ``Axes``."""
    import matplotlib.pyplot as plt
    import numpy as np

    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or x.shape[1] != 2 or len(y) != len(x):
        raise ValueError(
            f"plot_decision_boundary: expected x of shape (n, 2) and n labels, got x {x.shape} and y {y.shape}."
        )
    lo, hi = x.min(axis=0) - 0.1, x.max(axis=0) + 0.1
    g0, g1 = np.meshgrid(np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution))
    grid = np.stack([g0.ravel(), g1.ravel()], axis=1).astype(np.float32)
    classes = np.asarray(predict(grid)).argmax(axis=-1).reshape(g0.shape)
    k = int(max(y.max(), classes.max())) + 1
    cmap = plt.get_cmap("tab10", 10)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 4.0), layout="constrained")
    ax.contourf(g0, g1, classes, levels=np.arange(k + 1) - 0.5, colors=[cmap(i) for i in range(k)], alpha=0.25)
    ax.scatter(x[:, 0], x[:, 1], c=[cmap(int(i)) for i in y], s=6, edgecolors="none")
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=10)
    return ax


# --------------------------------------------------------------------------- checkpoints


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be used as asked; nothing was written."""


def _checkpoint_dir(directory, where: str) -> Path:
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"{where}: directory must be a path, got {type(directory).__name__}.")
    path = Path(directory).absolute()
    # Messages name the directory as the caller wrote it (a relative name stays
    # relative), so they do not depend on where the program runs.
    shown = os.fspath(directory)
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{where}: {shown} is a file, not a directory; nothing was written.")
    if path.is_dir():
        foreign = sorted(p.name for p in path.iterdir() if not (p.is_dir() and p.name.isdigit()))
        if foreign:
            names = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise CheckpointError(
                f"{where}: {shown} holds something other than checkpoints ({names}); "
                "choose a new or empty directory. Nothing was written or removed."
            )
    return path


def checkpoint_steps(directory) -> list[int]:
    """The steps saved in ``directory``, oldest first (``[]`` if there are none)."""
    path = _checkpoint_dir(directory, "checkpoint_steps")
    return sorted(int(p.name) for p in path.iterdir()) if path.is_dir() else []


def save_checkpoint(directory, step: int, state) -> Path:
    """Save the pytree ``state`` (parameters, optimiser state, ...) as step ``step``.

    Uses orbax-checkpoint's ``CheckpointManager``; returns the step's folder. Refuses
    (with :class:`CheckpointError`, writing nothing) a directory holding anything but
    checkpoints, and a step that is already saved there.
    """
    import orbax.checkpoint as ocp

    step = _int("save_checkpoint(step=...)", step, 0)
    path = _checkpoint_dir(directory, "save_checkpoint")
    if step in checkpoint_steps(path):
        raise CheckpointError(
            f"save_checkpoint: step {step} is already saved in {os.fspath(directory)}; "
            "save under a new step or directory. Nothing was overwritten."
        )
    with ocp.CheckpointManager(path) as manager:
        manager.save(step, args=ocp.args.StandardSave(state))
        manager.wait_until_finished()
    return path / str(step)


def restore_checkpoint(directory, like, *, step: int | None = None):
    """Restore step ``step`` (default: the latest) into the structure of ``like``.

    ``like`` is a pytree with the saved tree's structure, shapes and dtypes: real
    arrays, or ``jax.ShapeDtypeStruct``s from ``jax.eval_shape``. Returns ``(state, step)``.
    """
    import jax
    import orbax.checkpoint as ocp

    path = _checkpoint_dir(directory, "restore_checkpoint")
    saved = checkpoint_steps(path)
    if not saved:
        raise FileNotFoundError(f"restore_checkpoint: no checkpoints in {os.fspath(directory)}.")
    if step is None:
        step = saved[-1]
    elif step not in saved:
        raise FileNotFoundError(
            f"restore_checkpoint: step {step!r} is not in {os.fspath(directory)}; saved steps: {saved}."
        )
    abstract = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None)), like)
    with ocp.CheckpointManager(path) as manager:
        state = manager.restore(step, args=ocp.args.StandardRestore(abstract))
    return state, step
