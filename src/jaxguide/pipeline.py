"""Pipeline schedules as data: which microbatch each stage works on at each step.

A pipeline splits a model's layers into ``stages`` consecutive groups, one per device,
and the batch into ``microbatches``. At every step each stage either runs its layers on
one microbatch or waits. :func:`gpipe_schedule` and :func:`circular_schedule` return that
plan as a :class:`Schedule`: a ``stages x steps`` table a pipelined program can follow
(and check itself against), whose idle cells are the *bubble*.

* GPipe (Huang et al. 2019): stage ``s`` runs microbatch ``t - s`` at step ``t``;
  ``m + p - 1`` steps, of which ``p - 1`` are idle on every stage.
* Circular, or looping (Narayanan et al. 2021's interleaved schedule, on a loop): each
  device holds ``repeats`` non-adjacent chunks of layers (chunk ``c`` on device
  ``c % p``), so a microbatch loops around the devices ``repeats`` times and a step is
  ``1/repeats`` of a GPipe step; ``repeats * m + p - 1`` steps.

:func:`bubble_formula` is the closed form ``(p - 1) / (v m + p - 1)`` the tables are
compared with, :func:`plot_schedule` draws a table as a stage x time chart, and
:func:`permute_pairs` reads the source-target pairs of every collective-permute in a
compiled program's HLO text (the direction activations or gradients travel).

Example:
    >>> from jaxguide.pipeline import gpipe_schedule, bubble_formula
    >>> plan = gpipe_schedule(stages=3, microbatches=2)
    >>> print(plan)
    stage 0:  0  1  .  .
    stage 1:  .  0  1  .
    stage 2:  .  .  0  1
    >>> plan.idle, plan.bubble, bubble_formula(3, 2)
    (6, 0.5, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from jaxguide import _checks

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "Schedule",
    "bubble_formula",
    "circular_schedule",
    "gpipe_schedule",
    "permute_pairs",
    "plot_schedule",
]

IDLE = -1  #: the table entry of a stage that waits


@dataclass(frozen=True, eq=False)
class Schedule:
    """A pipeline schedule: what every stage does at every step.

    Attributes:
        microbatch: ``int`` array ``(stages, steps)``: the microbatch stage ``s`` works
            on at step ``t``, or ``-1`` when it waits.
        chunk: ``int`` array ``(stages, steps)``: which chunk of layers it runs (the
            virtual stage, ``0 .. repeats * stages - 1``), or ``-1`` when it waits.
        repeats: chunks of layers per device (1 for GPipe).
    """

    microbatch: np.ndarray
    chunk: np.ndarray
    repeats: int = 1

    @property
    def stages(self) -> int:
        """Devices in the pipeline (rows of the table)."""
        return int(self.microbatch.shape[0])

    @property
    def steps(self) -> int:
        """Steps from the first microbatch entering to the last one leaving."""
        return int(self.microbatch.shape[1])

    @property
    def microbatches(self) -> int:
        """Microbatches the schedule carries through."""
        return int(self.microbatch.max()) + 1

    @property
    def busy(self) -> int:
        """Stage-steps that do work."""
        return int((self.microbatch != IDLE).sum())

    @property
    def idle(self) -> int:
        """Stage-steps spent waiting: the bubble, counted."""
        return self.stages * self.steps - self.busy

    @property
    def bubble(self) -> float:
        """The fraction of stage-steps spent waiting."""
        return self.idle / (self.stages * self.steps)

    def __str__(self) -> str:
        width = len(str(self.microbatches - 1))
        rows = []
        for s in range(self.stages):
            cells = ["." if mb == IDLE else str(mb) for mb in self.microbatch[s].tolist()]
            rows.append(f"stage {s}: " + " ".join(f"{c:>{width + 1}}" for c in cells))
        return "\n".join(rows)


def _counts(fn: str, stages: object, microbatches: object) -> tuple[int, int]:
    p = _checks.positive_int(fn, "stages", stages, example=4)
    m = _checks.positive_int(fn, "microbatches", microbatches, example=8)
    return p, m


def circular_schedule(stages: int, microbatches: int, repeats: int) -> Schedule:
    """The circular (looping) schedule: ``repeats`` chunks of layers per device.

    The model's layers are cut into ``repeats * stages`` chunks; chunk ``c`` lives on
    device ``c % stages``, so a microbatch visits every device ``repeats`` times.
    Microbatches enter in groups of ``stages``: microbatch ``i = g * stages + j`` runs
    chunk ``c`` at step ``g * repeats * stages + j + c``. No device is asked for two
    things at once, every chunk follows the previous one on the next device one step
    later, and a device works on chunk ``c = r * stages + s`` (round ``r``).

    Args:
        stages: devices in the pipeline, ``>= 1``.
        microbatches: microbatches per batch, ``>= 1``. With a multiple of ``stages``
            the bubble is ``(stages - 1) / (repeats * microbatches + stages - 1)``.
        repeats: chunks of layers per device, ``>= 1`` (1 is GPipe).

    Returns:
        The :class:`Schedule`.

    Raises:
        TypeError: an argument is not an int.
        ValueError: an argument is below 1.

    Example:
        >>> plan = circular_schedule(stages=2, microbatches=2, repeats=2)
        >>> print(plan)
        stage 0:  0  1  0  1  .
        stage 1:  .  0  1  0  1
        >>> plan.chunk.tolist()
        [[0, 0, 2, 2, -1], [-1, 1, 1, 3, 3]]
    """
    p, m = _counts("circular_schedule", stages, microbatches)
    v = _checks.positive_int("circular_schedule", "repeats", repeats, example=2)
    i = np.arange(m)[:, None]
    c = np.arange(v * p)[None, :]
    t = (i // p) * v * p + i % p + c  # step of (microbatch i, chunk c)
    steps = int(t.max()) + 1
    microbatch = np.full((p, steps), IDLE, dtype=np.int64)
    chunk = np.full((p, steps), IDLE, dtype=np.int64)
    device = np.broadcast_to(c % p, t.shape)
    microbatch[device, t] = np.broadcast_to(i, t.shape)
    chunk[device, t] = np.broadcast_to(c, t.shape)
    if (microbatch != IDLE).sum() != m * v * p:  # pragma: no cover - see the docstring
        raise AssertionError("circular_schedule: a device was given two things at once")
    return Schedule(microbatch, chunk, v)


def gpipe_schedule(stages: int, microbatches: int) -> Schedule:
    """The GPipe schedule's forward pass: stage ``s`` runs microbatch ``t - s`` at step ``t``.

    Args:
        stages: devices in the pipeline (one group of consecutive layers each), ``>= 1``.
        microbatches: microbatches per batch, ``>= 1``.

    Returns:
        The :class:`Schedule`: ``microbatches + stages - 1`` steps. The backward pass
        runs the same table in reverse order of steps.

    Raises:
        TypeError: an argument is not an int.
        ValueError: an argument is below 1.

    Example:
        >>> gpipe_schedule(4, 8).steps, gpipe_schedule(4, 8).idle
        (11, 12)
    """
    p, m = _counts("gpipe_schedule", stages, microbatches)
    return circular_schedule(p, m, 1)


def bubble_formula(stages: int, microbatches: int, repeats: int = 1) -> float:
    """The idle fraction of a pipeline, in closed form: ``(p - 1) / (v m + p - 1)``.

    (GPipe is ``v = 1``; for the circular schedule it holds when ``stages`` divides
    ``microbatches``.)

    Args:
        stages: ``p``, devices in the pipeline, ``>= 1``.
        microbatches: ``m``, microbatches per batch, ``>= 1``.
        repeats: ``v``, chunks of layers per device, ``>= 1``.

    Returns:
        The fraction, in ``[0, 1)``.

    Raises:
        TypeError: an argument is not an int.
        ValueError: an argument is below 1.

    Example:
        >>> round(bubble_formula(4, 4), 4), round(bubble_formula(4, 4, repeats=2), 4)
        (0.4286, 0.2727)
    """
    p, m = _counts("bubble_formula", stages, microbatches)
    v = _checks.positive_int("bubble_formula", "repeats", repeats, example=2)
    return (p - 1) / (v * m + p - 1)


def plot_schedule(
    schedule: Schedule,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    backward: bool = False,
    step_time: float = 1.0,
) -> Axes:
    """Draw a schedule as a stage x time chart. Returns the ``Axes``.

    One row per stage, one column per step. A working cell is coloured by its
    microbatch and labelled with it (for a circular schedule, with one prime per
    earlier trip round the loop, ``3′`` in the second round, and every other round
    hatched); a waiting cell is left blank. With ``backward=True`` the backward pass follows, the same table with its
    steps reversed, in lighter colours.

    Args:
        schedule: a :class:`Schedule`.
        ax: the matplotlib ``Axes`` to draw on (default: a new figure).
        title: the title (default: stages, microbatches and the measured bubble).
        backward: also draw the backward pass.
        step_time: the width of one step on the time axis (``> 0``): draw two
            schedules whose steps last differently on one scale, e.g. GPipe with
            ``step_time=2`` above a circular schedule with two chunks per device.

    Returns:
        The ``Axes``.

    Raises:
        TypeError: ``schedule`` is not a :class:`Schedule`, or ``backward`` not a bool.
        ValueError: ``step_time`` is not a finite number ``> 0``.

    Example:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> ax = plot_schedule(gpipe_schedule(4, 8), step_time=2.0)
        >>> [float(t) for t in ax.get_xlim()]  # 11 steps of 2
        [0.0, 22.0]
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if not isinstance(schedule, Schedule):
        raise _checks.wrong_type(
            "plot_schedule",
            "schedule",
            schedule,
            "a jaxguide.pipeline.Schedule",
            "make one with gpipe_schedule(stages, microbatches)",
        )
    backward = _checks.boolean("plot_schedule", "backward", backward)
    w = _checks.real("plot_schedule", "step_time", step_time, minimum=0.0, exclusive=True)
    p, n = schedule.stages, schedule.steps
    total = 2 * n if backward else n
    if ax is None:
        _, ax = plt.subplots(figsize=(min(0.32 * total * w + 1.2, 11.0), 0.42 * p + 0.9))
    colors = plt.get_cmap("tab10" if schedule.microbatches <= 10 else "tab20")
    small = total > 40
    for phase in (0, 1) if backward else (0,):
        for s in range(p):
            for t in range(n):
                mb = int(schedule.microbatch[s, t if phase == 0 else n - 1 - t])
                if mb == IDLE:
                    continue
                r = int(schedule.chunk[s, t if phase == 0 else n - 1 - t]) // p
                x = (t + phase * n) * w
                ax.add_patch(
                    Rectangle(
                        (x, s),
                        w,
                        1,
                        facecolor=colors(mb % colors.N),
                        alpha=0.45 if phase else 0.9,
                        edgecolor="white",
                        hatch="///" if r % 2 else None,
                        linewidth=1.0,
                    )
                )
                if not small:
                    label = str(mb) + "\u2032" * r  # a prime per trip round the loop
                    # a white box keeps a hatched cell's primes readable
                    box = dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none")
                    ax.text(
                        x + w / 2,
                        s + 0.5,
                        label,
                        ha="center",
                        va="center",
                        fontsize=7,
                        bbox=box if r % 2 else None,
                    )
    if backward:
        ax.axvline(n * w, color="black", linewidth=1.2)
        ax.text(n * w / 2, -0.15, "forward", ha="center", va="bottom", fontsize=8)
        ax.text(1.5 * n * w, -0.15, "backward", ha="center", va="bottom", fontsize=8)
    ax.set_xlim(0, total * w)
    ax.set_ylim(p, -0.6 if backward else 0)
    ax.set_yticks([s + 0.5 for s in range(p)], [f"stage {s}" for s in range(p)])
    ax.set_xlabel("step" if w == 1 else f"time (a step lasts {w:g})")
    ticks = range(0, total + 1, max(1, total // 12))
    ax.set_xticks([t * w for t in ticks], [str(t * w).removesuffix(".0") for t in ticks])
    ax.set_title(
        title
        if title is not None
        else f"{p} stages, {schedule.microbatches} microbatches: bubble {schedule.bubble:.0%}",
        fontsize=9,
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def permute_pairs(hlo: str) -> list[tuple[tuple[int, int], ...]]:
    """The ``(source, target)`` device pairs of every collective-permute in HLO text.

    Args:
        hlo: a compiled program's text (``compiled.as_text()``, or
            :attr:`jaxguide.compiled.ProgramReport.hlo`).

    Returns:
        One tuple of pairs per collective-permute, in program order (an asynchronous
        permute's ``-start`` and ``-done`` halves count once).

    Raises:
        TypeError: ``hlo`` is not a str.

    Example:
        >>> permute_pairs("%cp = f32[4]{0} collective-permute(%x), "
        ...               "channel_id=1, source_target_pairs={{0,1},{1,2}}")
        [((0, 1), (1, 2))]
    """
    if not isinstance(hlo, str):
        raise _checks.wrong_type(
            "permute_pairs",
            "hlo",
            hlo,
            "the program's HLO text (a str)",
            "pass jaxguide.compiled.analyze(f, ...).hlo",
        )
    if not hlo.strip():  # no program, no permutes
        return []
    from jaxguide import compiled

    return [
        c.source_target_pairs for c in compiled.collectives(hlo) if c.kind == "collective-permute"
    ]
