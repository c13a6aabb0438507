"""jaxguide.pipeline: the schedules against an independent reading of what a pipeline
must do, the closed form, the chart, and the HLO reader on a real compiled program."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from jaxguide.compiled import analyze
from jaxguide.pipeline import (
    Schedule,
    bubble_formula,
    circular_schedule,
    gpipe_schedule,
    permute_pairs,
    plot_schedule,
)
from jaxguide.sharding import make_mesh

matplotlib.use("Agg")
RNG = np.random.default_rng(22)
CASES = [tuple(int(n) for n in RNG.integers(1, 9, size=3)) for _ in range(25)]


def gpipe_reference(p: int, m: int) -> np.ndarray:
    """Stage s runs microbatch t - s at step t: cell by cell, with Python loops."""
    table = np.full((p, m + p - 1), -1)
    for s in range(p):
        for t in range(m + p - 1):
            if 0 <= t - s < m:
                table[s, t] = t - s
    return table


@pytest.mark.parametrize("p, m, _", CASES)
def test_gpipe_matches_reference(p, m, _):
    plan = gpipe_schedule(p, m)
    assert (plan.microbatch == gpipe_reference(p, m)).all()
    assert (plan.chunk == np.where(plan.microbatch >= 0, np.arange(p)[:, None], -1)).all()
    assert plan.steps == m + p - 1 and plan.idle == p * (p - 1)
    assert plan.bubble == pytest.approx(bubble_formula(p, m))
    assert plan.stages == p and plan.microbatches == m and plan.repeats == 1


@pytest.mark.parametrize("p, m, v", CASES)
def test_circular_is_a_valid_pipeline(p, m, v):
    """Every (microbatch, chunk) runs exactly once, chunk c on device c % p, and
    chunk c + 1 exactly one step after chunk c (the activation's one hop)."""
    plan = circular_schedule(p, m, v)
    when = {}
    for s, t in itertools.product(range(p), range(plan.steps)):
        i, c = int(plan.microbatch[s, t]), int(plan.chunk[s, t])
        assert (i == -1) == (c == -1)
        if i == -1:
            continue
        assert (i, c) not in when, "ran twice"
        assert c % p == s, "chunk on the wrong device"
        when[i, c] = t
    assert set(when) == set(itertools.product(range(m), range(v * p)))
    for i, c in itertools.product(range(m), range(v * p - 1)):
        assert when[i, c + 1] == when[i, c] + 1
    assert min(when.values()) == 0 and max(when.values()) == plan.steps - 1
    assert plan.busy == m * v * p and plan.repeats == v
    if m % p == 0:  # the closed form's assumption
        assert plan.steps == v * m + p - 1
        assert plan.bubble == pytest.approx(bubble_formula(p, m, v))


def test_circular_with_one_repeat_is_gpipe():
    for p, m, _ in CASES:
        a, b = circular_schedule(p, m, 1), gpipe_schedule(p, m)
        assert (a.microbatch == b.microbatch).all() and (a.chunk == b.chunk).all()


def test_str_and_counts():
    plan = circular_schedule(2, 2, 2)
    assert str(plan) == "stage 0:  0  1  0  1  .\nstage 1:  .  0  1  0  1"
    assert (plan.idle, plan.busy, plan.steps) == (2, 8, 5)
    assert plan.bubble == pytest.approx(0.2)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: gpipe_schedule(0, 4), ValueError, "stages"),
        (lambda: gpipe_schedule(4, 0), ValueError, "microbatches"),
        (lambda: gpipe_schedule(4.0, 4), TypeError, "stages"),
        (lambda: gpipe_schedule(True, 4), TypeError, "stages"),
        (lambda: circular_schedule(4, 4, 0), ValueError, "repeats"),
        (lambda: circular_schedule(4, "8", 2), TypeError, "microbatches"),
        (lambda: bubble_formula(4, 4, repeats=-1), ValueError, "repeats"),
        (lambda: bubble_formula(-2, 4), ValueError, "stages"),
        (lambda: plot_schedule(np.zeros((2, 3))), TypeError, "schedule"),
        (lambda: plot_schedule(gpipe_schedule(2, 2), backward=1), TypeError, "backward"),
        (lambda: plot_schedule(gpipe_schedule(2, 2), step_time=0), ValueError, "step_time"),
        (lambda: permute_pairs(b"text"), TypeError, "hlo"),
    ],
)
def test_bad_arguments_name_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_bubble_formula_values():
    assert bubble_formula(1, 5) == 0.0
    assert bubble_formula(4, 4) == pytest.approx(3 / 7)
    assert bubble_formula(4, 8, repeats=2) == pytest.approx(3 / 19)


@pytest.mark.parametrize("backward", [False, True])
def test_plot_draws_one_cell_per_busy_stage_step(backward):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    plan = circular_schedule(3, 6, 2)
    ax = plot_schedule(plan, backward=backward, step_time=2.0)
    cells = [a for a in ax.patches if isinstance(a, Rectangle)]
    assert len(cells) == plan.busy * (2 if backward else 1)
    assert ax.get_xlim() == (0, plan.steps * 2.0 * (2 if backward else 1))
    assert all(c.get_width() == 2.0 for c in cells)
    assert "bubble" in ax.get_title()
    plt.close("all")


def test_permute_pairs_parses_sync_and_async_forms():
    hlo = "\n".join(
        [
            "  %a = f32[4]{0} collective-permute(%x), channel_id=1, "
            "source_target_pairs={{0,1},{1,2}}, metadata={}",
            "  %b = (f32[4]{0}, f32[4]{0}) collective-permute-start(%y), "
            "source_target_pairs={{1,0}}",
            "  %c = f32[4]{0} collective-permute-done(%b)",
            "  %d = f32[4]{0} all-reduce(%x), replica_groups={{0,1}}",
        ]
    )
    assert permute_pairs(hlo) == [((0, 1), (1, 2)), ((1, 0),)]
    assert permute_pairs("") == []


def test_permute_pairs_on_a_compiled_program():
    mesh = make_mesh((8,), ("x",))
    perm = [(i, (i + 3) % 8) for i in range(8)]
    f = jax.jit(
        jax.shard_map(
            lambda b: jax.lax.ppermute(b, "x", perm), mesh=mesh, in_specs=P("x"), out_specs=P("x")
        )
    )
    x = jnp.arange(16.0)
    np.testing.assert_array_equal(f(x), np.roll(np.arange(16.0).reshape(8, 2), 3, axis=0).ravel())
    assert [sorted(ps) for ps in permute_pairs(analyze(f, x).hlo)] == [sorted(perm)]


def test_schedule_is_a_dataclass_of_arrays():
    plan = gpipe_schedule(2, 3)
    assert isinstance(plan, Schedule)
    assert plan.microbatch.shape == plan.chunk.shape == (2, 4)
