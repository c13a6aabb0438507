"""The training chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import math
import re

import pytest

from bookcheck import errors, glued, images, page_text, seconds

pytestmark = pytest.mark.book


def pct(value: str) -> float:
    return float(value.rstrip("%")) / 100


def test_training(book):
    g = glued(book, "training")
    text = page_text(book, "training")
    n_params = 2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3
    # Training converged: the glued accuracies are above the bar and appear in the prose.
    for key, bar in (("acc_adamw", 0.95), ("acc_nnx", 0.95), ("acc_sgd", 0.6)):
        assert pct(g[key]) > bar, (key, g[key])
        assert g[key] in text
    assert g["n_params"] == f"{n_params:,}"
    # SGD and AdamW are compared at the same number of steps, both printed.
    assert g["steps_cmp"] == "600"
    losses = float(g["loss_sgd"]), float(g["loss_adamw"])
    lower = "AdamW's is lower" if losses[1] < losses[0] else "SGD's is lower"
    # The glued verdict is in the prose (typeset with a curly apostrophe).
    assert g["loss_verdict"] == lower and lower in text  # glued: quotes kept straight
    # A progress line and an evaluation every 120 of the 600 steps; the prose counts them.
    assert g["eval_steps"] == [120, 240, 360, 480, 600]
    assert g["n_evals"] == 5
    # NNX modes: dropout random in train mode, fixed in eval; BatchNorm statistics; an
    # eval view of the train-mode model: deterministic, and the same weights.
    assert g["nnx_modes"] == {
        "train, two calls equal": False,
        "eval, two calls equal": True,
        "eval call keeps the running mean": True,
        "train call moves the running mean": True,
        "eval view, two calls equal": True,
        "eval view shares the weights": True,
    }
    # The NNX model went through orbax's StandardCheckpointer: one folder, no steps.
    assert "ocdbt.process_0" in g["nnx_saved"] and "400" not in g["nnx_saved"]
    assert g["abstract_kernel"] == ["Param", "ShapeDtypeStruct(shape=(2, 64), dtype=float32)"]
    # The optimiser's state went into the same checkpoint and came back (step count 400).
    restored = g["nnx_restored"]
    assert restored["state arrays"] > 0 and restored["optimiser arrays"] > 0
    # The NNX metrics: the train step's loop logs MultiMetric's means, and the eval step
    # fills the same metrics; the harder-data experiment is gone from this page.
    assert "nnx.MultiMetric" in text and "drop_on" not in g and "bn_on" not in g
    # Data parallel: shardings read from the arrays, not typed.
    assert "(replicated)" not in text
    assert g["dp_placement"] == {
        "parameters": ["P()", True, [2, 64], 8],
        "batch": ["P('x',)", False, [16, 2], 8],
    }
    # One all-reduce of all gradients (4 bytes per parameter) and the 4-byte loss; its
    # operands in the layouts the prose describes.
    assert (
        g["allreduce_operands"]
        == "f32[64], f32[64,2], f32[64], f32[64,64], f32[3], f32[3,64], f32[]"
    )
    assert g["allreduce_bytes"] == f"{4 * n_params + 4:,}"
    assert g["sm_allreduce_bytes"] == f"{4 * n_params + 4:,}"
    # A ring all-reduce over 8 devices: 2 (N - 1) / N times the operand per device.
    assert g["ring_bytes"] == f"{2 * 7 / 8 * (4 * n_params + 4):,.0f}"
    # The baked-in rate is a constant of each of the 6 parameter arrays' updates.
    assert list(g["lr_constants"]) == [6, 0]
    # Three methods agree with one device; the largest difference is glued at the
    # precision the outputs print it (1.8e-07, not "2e-07").
    assert float(g["dp_worst"]) <= 1e-4 and re.fullmatch(r"\d\.\de-\d\d", g["dp_worst"])
    assert g["dp_tol"] == "0.0001" and g["dp_steps"] == "50"
    # The pmean trap is taught once, in the pmap chapter: no repeat here.
    assert "times too large\n" not in text
    # The checkpoint wrapper lives in jaxguide.checkpoints (the orbax calls are shown);
    # the unreproduced deadlock claim is gone.
    assert "jaxguide.checkpoints wraps these same two calls" in text
    assert "ocp.args.StandardRestore(like) gives orbax the structure" in text
    # Asynchronous dispatch: per-call medians, split by ready on return; the
    # split's counts add up to the 15 calls, and the prose reads both splits.
    assert g["big_split"] in text and g["step_split"] in text
    flat = " ".join(text.split())
    assert "wait for a free core" in flat
    counts = [int(n) for n in re.findall(r"(\d+) (?:of the 15 )?calls?", g["step_split"])]
    assert g["step_done_on_return"] in counts or g["step_done_on_return"] == 0
    assert "big_return_us" not in g and "step_return_us" not in g
    # The host's cost per array is measured: identities over 1, the step's and 100 arrays.
    assert g["identity_sizes"] == [1, g["step_arrays"], 100]
    # The calls that returned before their result: when they returned, against the
    # step's median (no bound on host work: the return includes a wait for a core).
    bound = g["step_host_bound"]
    assert bound in flat
    m = re.search(r"median ([\d,]+) µs of the step's median ([\d,]+) µs", bound)
    assert m or "every call returned with its result ready" in bound
    assert 0 <= g["step_done_on_return"] <= 15
    # The dispatch queue: the glued times of its last calls agree with each other.
    steps = float(g["queue_last_steps"])  # the last 40 calls' time in steps, from rounded glue
    assert abs(float(g["queue_last_ms"]) / float(g["queue_step_ms"]) - steps) <= 0.05 * steps + 1
    # The 2019 history dropdown is gone.
    # The first step compiles, and the prose says so.
    assert "first_step_seconds" in text and "it compiles the step" in text
    # orbax's V1 API is named and linked beside the V0 manager the page uses.
    assert g["orbax_v1"] == "Checkpointer" and "ocp.v1.training.Checkpointer" in text
    # A loop that reads the loss every step is slower than one that reads it once
    # (at most 2 times in principle).
    eager, deferred = (seconds(g[k]) for k in ("loop_eager", "loop_deferred"))
    assert abs(float(g["loop_speedup"]) - eager / deferred) <= 0.06
    assert 1.15 < eager / deferred, (eager, deferred)
    # Clipping: a gradient below norm 1 unchanged, the one 10x larger scaled to norm 1.
    (small, small_after), (large, large_after) = g["clip_norms"]
    assert small_after == small
    assert abs(large - 10 * small) <= 0.051 and large_after == 1.0
    # The restored schedule count gives the learning rate of step 100 (cosine by hand).
    frac = (100 - 60) / (600 - 60)
    lr100 = 3e-5 + (3e-3 - 3e-5) * 0.5 * (1 + math.cos(math.pi * frac))
    assert g["restored_lr"] == f"{lr100:.2e}"
    # NNX writes the advanced dropout stream back: one Dropout called twice per step,
    # for the steps the NNX model was saved after.
    assert g["dropout_keys"] == 2 * g["nnx_restored"]["optimiser step"]
    # The optax recipe: warmup then cosine (values by hand), the schedule's count in the
    # state, and donation aliasing every byte of parameters + optimiser state.
    assert g["lr_points"] == ["0.0e+00", "1.5e-03", "3.0e-03", "1.5e-03", "3.0e-05"]
    assert g["recipe_state_kinds"] == ["ScaleByAdamState", "EmptyState", "ScaleByScheduleState"]
    n_params_mlp = (2 * 64 + 64) + (64 * 64 + 64) + (64 * 3 + 3)
    # params + Adam's mu and nu (float32) + two int32 counts (Adam's, the schedule's).
    assert g["donated_bytes"] == 3 * 4 * n_params_mlp + 2 * 4
    # File-backed data: a memory map gives the same batch as the in-memory arrays.
    assert g["memmap_batch"] == [["memmap", "ndarray"], [[128, 2], [128]]]
    # No data-parallel timing here: the pmap placement timing is the pmap chapter's.
    assert "pmap_placed" not in g
    assert "steps/s" not in text and "dp_vs_single" not in g
    # Checkpoint: the bad inputs raised what the prose says.
    raised = errors(book, "training")
    assert [e.name for e in raised] == ["ValueError", "CheckpointError"], raised
    assert "a batch of 100 examples does not divide across 8 devices" in raised[0].message
    assert (
        "save_checkpoint: notes holds something other than checkpoints (results.csv)"
        in raised[1].message
    )
    # Hermetic: no temporary path printed.
    assert "/tmp" not in text and "jaxguide-training" not in text
    # Figures: data, curves, two boundaries (one figure), NNX boundary, data-parallel losses.
    assert len(images(book, "training")) >= 5
    assert "Further reading" in text


def test_training_shard_map_communicates_like_jit(book):
    g = glued(book, "training")
    n_params = 2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3
    assert g["sm_allreduce_bytes"] == f"{4 * n_params + 4:,}"


def test_training_nnx_state_holds_more_than_parameters(book):
    # 2 hidden Linear (kernel, bias) + output Linear = 6 Params; 2 BatchNorms add
    # scale and bias (Params) and mean and var (BatchStats); dropout's stream adds
    # its key and counter.
    kinds = glued(book, "training")["nnx_var_kinds"]
    assert kinds == {"Param": 10, "BatchStat": 4, "RngCount": 1, "RngKey": 1}, kinds


def test_freezing_and_injected_learning_rates(book):
    g = glued(book, "training")
    # Three layers of (w, b): only the last layer's two leaves move.
    assert g["freeze_moved"] == [False] * 4 + [True] * 2
    full, frozen, forward = g["freeze_flops"]
    assert frozen < full / 2 and forward <= frozen < 1.2 * forward
    # A clip in front of the freeze costing about the full step is the build's claim.
    # warmup_cosine_decay_schedule(0 -> 3e-3 over 60 steps): linear warmup.
    assert g["lr_used"] == pytest.approx([0.0, 3e-3 / 60, 2 * 3e-3 / 60], rel=1e-4, abs=1e-12)


def test_training_bank_questions(book):
    g = glued(book, "training")
    text = page_text(book, "training")
    # inject_hyperparams: every numeric argument becomes a float32 array, b1 and b2
    # included (the state is printed; the glued dtypes are all the same).
    assert len(g["inject_dtypes"]) == 1 and g["inject_dtypes"][0].startswith("float")
    assert "static_args" in text
    # The bounded dispatch queue: when 120 calls that never wait end, far fewer steps
    # are still queued.
    # The prose shows it (not the printed line, which has a colon after "ended").
    assert f"the loop ended, about {g['queue_ahead']} steps" in " ".join(text.split())


def test_training_sharded_dropout(book):
    g = glued(book, "training")
    # The random-word forensics live in the random chapter; this page links there.
    assert "drop_words_old" not in g
    assert set(g["drop_same_masks"]) == {"jit", "shard_map", "shard_map, fold_in"}


def test_training_compiles_at_level_0_with_one_exception(book):
    text = page_text(book, "training")
    # A note before the first timing (not the overview) says how the page compiles:
    # LLVM's optimisation off, and the AdamW step that most runs use at the default,
    # its option marked page-only.
    assert "optimisation off ( --xla_backend_optimization_level=0 , set in a hidden" in text
    assert "is compiled at the default level through its" in text
    overview = text[: text.index("The data: three interleaved spirals")]
    assert "xla_backend_optimization_level" not in overview
    assert "page-only" in text


def test_training_checkpoint_manager_and_logging_late(book):
    g = glued(book, "training")
    text = " ".join(page_text(book, "training").split())
    # CheckpointManager offered steps 1..100 with save_interval_steps=25: orbax saves
    # the first step it is offered (no checkpoint yet), then every multiple of 25;
    # max_to_keep=2 leaves the last two of those on disk.
    saved = [1] + list(range(25, 101, 25))
    assert g["ckpt_saved_at"] == saved
    assert g["ckpt_kept"] == " and ".join(str(s) for s in saved[-2:])
    assert g["ckpt_kept"] in text and g["ckpt_tmp"] in text
    # Asynchronous save: as save(100) returned, step 100 was not final under its name,
    # and step 50 (beyond max_to_keep) was not yet deleted; its temporary folder was
    # seen while the cell watched.
    on_return = g["ckpt_on_return"]
    assert "100" not in on_return and {"50", "75"} <= set(on_return)
    assert g["ckpt_tmp"].startswith("100.")
    assert "wait_until_finished()" in text
    # The same checkpoint restored onto the 8-device mesh, replicated.
    assert g["restored_dp"] == ["P()", 8]
    # Logging one step late: its loop's time is in the prose, and the speed-up over
    # logging at once is the ratio of the two glued times (the claim holds it > 1).
    assert g["loop_late"] in text and g["loop_eager"] in text
    ratio = seconds(g["loop_eager"]) / seconds(g["loop_late"])
    assert abs(float(g["loop_late_speedup"]) - ratio) <= 0.05 * ratio + 0.05
    assert ratio > 1


def test_training_prefetch_batched_eval_and_orbax_v1(book):
    g = glued(book, "training")
    text = " ".join(page_text(book, "training").split())
    # (That the prefetching loop equals train.fit, and that one program served every
    # evaluation batch, the build's claims check.) Batched evaluation: the test set
    # (a quarter of the 3000 spirals) in batches of 128, the last one padded.
    n, batches, _ = g["eval_batches"]
    assert n == 3000 // 4 and batches == math.ceil(n / 128)
    assert g["eval_n_batches"] == batches and g["eval_last_batch"] == n - 128 * (batches - 1)
    assert f"{g['eval_n_test']} test points went through in {batches} calls" in text
    # orbax V1: FixedIntervalPolicy(25) over steps 1..100 saves the multiples of 25;
    # LatestN(2) keeps the last two; the sharded load equals the V0 restore.
    assert g["v1_saved"] == list(range(25, 101, 25))
    assert g["v1_kept"] == "75 and 100" and g["v1_kept"] in text


def test_training_orbax_folders_and_nnx_partition(book, tmp_path):
    g = glued(book, "training")
    text = page_text(book, "training")
    # StandardCheckpointer's folder, written here by the same orbax: the page's
    # NNX checkpoint holds the same top-level names (OCDBT, no step folders).
    import jax.numpy as jnp
    import orbax.checkpoint as ocp

    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(tmp_path / "one", {"w": jnp.ones(3)})
    checkpointer.wait_until_finished()
    assert g["nnx_saved"] == sorted(f.name for f in (tmp_path / "one").iterdir())
    # Resuming from another folder, and optax.partition with NNX labels.
    assert "StandardCheckpointer" in text and "map_state" in text
    assert "partition" in text and g["nnx_partition_wrapped"] in text


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "may run a program as cheap as this step inline": "review r50 FALSE: XLA:CPU runs a program inline only below 1000 FLOPs",
    "perhaps also running the start of the program": "review r50: the return time is mostly waiting for a free core",
    "has done only host work by then": "review r49 FALSE: XLA:CPU may run the start of a program before the call returns",
    "cannot show it). A NumPy step": "review r49 FALSE: the read waits for the queued step on one CPU device too",
    "pmean inside the loss": "The pmean trap is taught once, in the pmap chapter: no repeat here.",
    "rendezvous": "cut in 741c8ee: Issue 21 (scaling, training, multiprocess): the 100x roofline...",
    "in 2019": "The 2019 history dropdown is gone.",
    "two dropout layers": "cut in f85243a: training: checked values via jaxguide.claim (donation, clipping,...",
}
