"""orbax checkpoints of any pytree, saved under a step number, that never overwrite.

A checkpoint directory holds one folder per saved step (``0/``, ``500/``, ...), as
orbax-checkpoint's ``CheckpointManager`` writes them. These helpers refuse, with a
:class:`CheckpointError` and without writing anything, a directory that holds
anything else and a step that is already saved.

Example:
    >>> import tempfile, jax.numpy as jnp
    >>> from jaxguide import checkpoints
    >>> run = tempfile.mkdtemp()
    >>> _ = checkpoints.save_checkpoint(run, 10, {"w": jnp.arange(3.0)})
    >>> checkpoints.checkpoint_steps(run)
    [10]
    >>> state, step = checkpoints.restore_checkpoint(run, {"w": jnp.zeros(3)})
    >>> state["w"].tolist(), step
    ([0.0, 1.0, 2.0], 10)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxguide import _checks
from jaxguide._types import PyTree

if TYPE_CHECKING:
    import jax

__all__ = ["CheckpointError", "PyTree", "checkpoint_steps", "save_checkpoint", "restore_checkpoint"]


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be used as asked; nothing was written."""


def _checkpoint_dir(fn: str, directory: object) -> Path:
    _checks.path(fn, "directory", directory)
    assert isinstance(directory, (str, os.PathLike))
    path = Path(directory).absolute()
    # Messages name the directory as the caller wrote it (a relative name stays
    # relative), so they do not depend on where the program runs.
    shown = os.fspath(directory)
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{fn}: {shown} is a file, not a directory; nothing was written.")
    if path.is_dir():
        foreign = sorted(p.name for p in path.iterdir() if not (p.is_dir() and p.name.isdigit()))
        if foreign:
            names = ", ".join(foreign[:3]) + (
                f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
            )
            raise CheckpointError(
                f"{fn}: {shown} holds something other than checkpoints ({names}); "
                "choose a new or empty directory. Nothing was written or removed."
            )
    return path


def checkpoint_steps(directory: str | os.PathLike[str]) -> list[int]:
    """The steps saved in ``directory``, oldest first.

    Args:
        directory: a checkpoint directory (it need not exist).

    Returns:
        The saved step numbers, sorted; ``[]`` if there are none.

    Raises:
        TypeError: ``directory`` is not a path.
        CheckpointError: ``directory`` is a file, or holds something other than
            checkpoints.

    Example:
        >>> import tempfile
        >>> checkpoint_steps(tempfile.mkdtemp())
        []
    """
    path = _checkpoint_dir("checkpoint_steps", directory)
    return sorted(int(p.name) for p in path.iterdir()) if path.is_dir() else []


def save_checkpoint(directory: str | os.PathLike[str], step: int, state: PyTree) -> Path:
    """Save the pytree ``state`` (parameters, optimiser state, ...) as step ``step``.

    Uses orbax-checkpoint's ``CheckpointManager`` and waits until the checkpoint is
    written.

    Args:
        directory: the checkpoint directory; created if it does not exist.
        step: the step number to save under, an int ``>= 0``.
        state: any pytree of arrays.

    Returns:
        The folder of the saved step, ``directory / str(step)``.

    Raises:
        TypeError: ``directory`` is not a path, or ``step`` is not an int.
        ValueError: ``step`` is negative.
        CheckpointError: ``directory`` holds something other than checkpoints, or
            ``step`` is already saved there. Nothing is written or overwritten.

    Example:
        >>> import tempfile, jax.numpy as jnp
        >>> run = tempfile.mkdtemp()
        >>> save_checkpoint(run, 0, {"w": jnp.ones(2)}).name
        '0'
        >>> save_checkpoint(run, 0, {"w": jnp.ones(2)})
        Traceback (most recent call last):
        ...
        jaxguide.checkpoints.CheckpointError: save_checkpoint: step 0 is already saved in ...
    """
    import orbax.checkpoint as ocp

    step = _checks.count("save_checkpoint", "step", step)
    path = _checkpoint_dir("save_checkpoint", directory)
    if step in checkpoint_steps(path):
        raise CheckpointError(
            f"save_checkpoint: step {step} is already saved in {os.fspath(directory)}; "
            "save under a new step or directory. Nothing was overwritten."
        )
    with ocp.CheckpointManager(path) as manager:
        manager.save(step, args=ocp.args.StandardSave(state))
        manager.wait_until_finished()
    return path / str(step)


def restore_checkpoint(
    directory: str | os.PathLike[str], like: PyTree, *, step: int | None = None
) -> tuple[PyTree, int]:
    """Restore step ``step`` (default: the latest) into the structure of ``like``.

    Args:
        directory: the checkpoint directory.
        like: a pytree with the saved tree's structure, shapes and dtypes: real
            arrays, or ``jax.ShapeDtypeStruct``s from ``jax.eval_shape``. Their
            shardings, if any, are the restored arrays' shardings.
        step: the step to restore; ``None`` restores the latest.

    Returns:
        ``(state, step)``: the restored pytree and the step it was saved under.

    Raises:
        TypeError: ``directory`` is not a path, or ``step`` is not an int.
        FileNotFoundError: there are no checkpoints, or ``step`` is not saved.
        CheckpointError: ``directory`` holds something other than checkpoints.

    Example:
        >>> import tempfile, jax.numpy as jnp
        >>> run = tempfile.mkdtemp()
        >>> restore_checkpoint(run, {"w": jnp.ones(2)})
        Traceback (most recent call last):
        ...
        FileNotFoundError: restore_checkpoint: no checkpoints in ...
    """
    import jax
    import orbax.checkpoint as ocp

    path = _checkpoint_dir("restore_checkpoint", directory)
    if step is not None:
        step = _checks.count("restore_checkpoint", "step", step)
    saved = checkpoint_steps(path)
    if not saved:
        raise FileNotFoundError(f"restore_checkpoint: no checkpoints in {os.fspath(directory)}.")
    if step is None:
        step = saved[-1]
    elif step not in saved:
        raise FileNotFoundError(
            f"restore_checkpoint: step {step!r} is not in {os.fspath(directory)}; saved steps: {saved}."
        )

    def abstract(a: Any) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None))

    with ocp.CheckpointManager(path) as manager:
        state = manager.restore(step, args=ocp.args.StandardRestore(jax.tree.map(abstract, like)))
    return state, step
