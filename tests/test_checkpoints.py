"""jaxguide.checkpoints: orbax checkpoints round-trip exactly, including a Flax NNX
state, and refuse (writing nothing) a foreign directory or a step already saved."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxguide import checkpoints, models


def _state(seed=0):
    params = models.init_mlp(jax.random.key(seed), (2, 8, 3))
    return {"params": params, "opt_state": optax.adamw(1e-3).init(params)}


def test_checkpoint_round_trip_is_exact(tmp_path):
    state = _state()
    state["opt_state"] = optax.adamw(1e-3).update(
        jax.tree.map(jnp.ones_like, state["params"]), state["opt_state"], state["params"]
    )[1]
    folder = checkpoints.save_checkpoint(tmp_path / "run", 7, state)
    assert folder == (tmp_path / "run" / "7").absolute() and folder.is_dir()
    assert checkpoints.checkpoint_steps(tmp_path / "run") == [7]
    restored, step = checkpoints.restore_checkpoint(
        tmp_path / "run", jax.eval_shape(lambda: _state(1))
    )
    assert step == 7
    assert jax.tree.structure(restored) == jax.tree.structure(state)
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(state)):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_checkpoint_refuses_a_foreign_directory_and_overwrites_nothing(tmp_path):
    (tmp_path / "results.csv").write_text("keep me")
    with pytest.raises(
        checkpoints.CheckpointError,
        match="holds something other than checkpoints \\(results.csv\\)",
    ):
        checkpoints.save_checkpoint(tmp_path, 0, _state())
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]
    assert (tmp_path / "results.csv").read_text() == "keep me"
    with pytest.raises(checkpoints.CheckpointError):
        checkpoints.restore_checkpoint(tmp_path, _state())
    target = tmp_path / "a-file"
    target.write_text("x")
    with pytest.raises(checkpoints.CheckpointError, match="is a file, not a directory"):
        checkpoints.save_checkpoint(target, 0, _state())


def test_checkpoint_refuses_to_overwrite_a_step(tmp_path):
    checkpoints.save_checkpoint(tmp_path, 3, _state(0))
    with pytest.raises(checkpoints.CheckpointError, match="step 3 is already saved"):
        checkpoints.save_checkpoint(tmp_path, 3, _state(1))
    restored, _ = checkpoints.restore_checkpoint(tmp_path, _state(0))
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(_state(0))):
        np.testing.assert_array_equal(a, b)  # still step 3 of the first save


def test_restore_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoints"):
        checkpoints.restore_checkpoint(tmp_path / "missing", _state())
    checkpoints.save_checkpoint(tmp_path, 1, _state())
    with pytest.raises(FileNotFoundError, match="step 2 is not in .*saved steps: \\[1\\]"):
        checkpoints.restore_checkpoint(tmp_path, _state(), step=2)


def test_checkpoint_messages_name_the_directory_as_given(tmp_path, monkeypatch):
    # A relative name stays relative in the message, so outputs do not depend on the
    # folder a program runs in.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.csv").write_text("x")
    with pytest.raises(checkpoints.CheckpointError, match=r"^save_checkpoint: notes holds") as info:
        checkpoints.save_checkpoint("notes", 0, _state())
    assert str(tmp_path) not in str(info.value)
    with pytest.raises(FileNotFoundError, match=r"no checkpoints in missing\.$"):
        checkpoints.restore_checkpoint("missing", _state())


def test_nnx_state_round_trips_through_a_checkpoint(tmp_path):
    from flax import nnx

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 4, rngs=rngs)
            self.norm = nnx.BatchNorm(4, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.dropout(self.norm(self.linear(x)))

    model = Net(nnx.Rngs(params=0, dropout=1))
    model(jnp.ones((3, 2)))  # moves the statistics and the key
    _, state = nnx.split(model)
    checkpoints.save_checkpoint(tmp_path, 5, state)
    graphdef, abstract = nnx.split(nnx.eval_shape(lambda: Net(nnx.Rngs(params=7, dropout=8))))
    restored, step = checkpoints.restore_checkpoint(tmp_path, abstract)
    clone = nnx.merge(graphdef, restored)
    assert step == 5

    def data(a):
        return jax.random.key_data(a) if jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else a

    for a, b in zip(jax.tree.leaves(nnx.state(model)), jax.tree.leaves(nnx.state(clone))):
        np.testing.assert_array_equal(data(a), data(b))
    model.eval(), clone.eval()
    np.testing.assert_array_equal(model(jnp.ones((2, 2))), clone(jnp.ones((2, 2))))
