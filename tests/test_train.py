"""jaxguide.data (spirals, batches), models (the MLP), train and checkpoints:
training converges, data parallelism matches one device (in-process, on conftest's 8 CPU
devices), checkpoints round-trip exactly, bad input is refused."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxguide import checkpoints, data, models, train


@pytest.fixture(scope="module")
def spirals():
    x, y = data.spirals(jax.random.key(0), 1200)
    return data.train_test_split(x, y, test_fraction=0.25, seed=0)


# ------------------------------------------------------------------- data


def test_spirals_are_deterministic_and_balanced():
    x1, y1 = data.spirals(jax.random.key(3), 601, n_classes=4)
    x2, y2 = data.spirals(jax.random.key(3), 601, n_classes=4)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    assert x1.shape == (601, 2) and x1.dtype == np.float32 and y1.dtype == np.int32
    assert np.bincount(y1).tolist() == [151, 150, 150, 150]
    assert np.all(np.linalg.norm(x1, axis=1) <= 1.0 + 1e-6)
    x3, _ = data.spirals(jax.random.key(4), 601, n_classes=4)
    assert not np.array_equal(x1, x3)


def test_train_test_split_partitions_the_examples():
    x = np.arange(20.0)[:, None]
    y = np.arange(20)
    (xa, ya), (xb, yb) = data.train_test_split(x, y, test_fraction=0.25, seed=1)
    assert len(xb) == 5 and len(xa) == 15
    assert sorted(ya.tolist() + yb.tolist()) == list(range(20))
    np.testing.assert_array_equal(xa[:, 0], ya)  # rows stay paired


def test_batch_at_is_a_pure_function_of_the_step_and_covers_each_epoch():
    x = np.arange(10.0)
    first = [data.batch_at(x, s, batch_size=3, seed=5) for s in range(3)]  # one epoch: 3 batches
    again = [data.batch_at(x, s, batch_size=3, seed=5) for s in (2, 0, 1)]
    np.testing.assert_array_equal(first[2], again[0])
    np.testing.assert_array_equal(first[0], again[1])
    seen = np.concatenate(first)
    assert len(set(seen.tolist())) == 9  # no repeats inside an epoch; one left over
    assert not np.array_equal(
        data.batch_at(x, 3, batch_size=3, seed=5), first[0]
    )  # new order next epoch
    bx, by = data.batch_at((x, x * 2), 4, batch_size=3, seed=5)
    np.testing.assert_array_equal(by, bx * 2)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: data.batch_at(np.ones(10), 0, batch_size=11),
            r"batch_at\(batch_size=11\): batch_size is larger than the 10 examples",
        ),
        (
            lambda: data.batch_at(np.ones(10), -1, batch_size=2),
            r"batch_at\(step=-1\): step must be an int >= 0",
        ),
        (lambda: data.batch_at((np.ones(10), np.ones(9)), 0, batch_size=2), "same length"),
        (
            lambda: data.spirals(jax.random.key(0), 100, n_classes=1),
            r"spirals\(n_classes=1\): n_classes must be an int >= 2",
        ),
        (
            lambda: data.spirals(jax.random.key(0), 2, n_classes=3),
            r"spirals\(n_samples=2\): n_samples must be at least n_classes=3",
        ),
        (lambda: data.train_test_split(np.ones(4), np.ones(5)), "x has 4 examples but y has 5"),
        (
            lambda: data.train_test_split(np.ones(4), np.ones(4), test_fraction=1.5),
            r"train_test_split\(test_fraction=1.5\): test_fraction must be in \(0, 1\)",
        ),
        (
            lambda: data.train_test_split(np.ones(4), np.ones(4), seed=-2),
            r"train_test_split\(seed=-2\): seed must be an int >= 0",
        ),
        (
            lambda: data.batch_at(np.ones(10), 0, batch_size=2, seed=-1),
            r"batch_at\(seed=-1\): seed must be an int >= 0",
        ),
    ],
)
def test_data_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------------- models


def test_mlp_matches_a_numpy_forward_pass():
    params = models.init_mlp(jax.random.key(0), (2, 5, 3))
    x = np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32)
    w1, b1, w2, b2 = (np.asarray(params[i][k]) for i in (0, 1) for k in ("w", "b"))
    expected = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(models.mlp(params, x), expected, rtol=1e-5, atol=1e-6)
    labels = np.array([0, 2, 1, 1])
    log_p = expected - np.log(np.exp(expected).sum(axis=1, keepdims=True))
    assert float(models.cross_entropy(jnp.asarray(expected), labels)) == pytest.approx(
        -log_p[np.arange(4), labels].mean(), rel=1e-5
    )
    assert float(models.accuracy(jnp.asarray(expected), labels)) == np.mean(
        expected.argmax(1) == labels
    )


def test_model_errors_name_the_mismatch():
    params = models.init_mlp(jax.random.key(0), (3, 4, 2))
    with pytest.raises(
        ValueError,
        match=r"mlp: the data has 2 features \(x.shape=\(5, 2\)\) but the model expects 3",
    ):
        models.mlp(params, jnp.ones((5, 2)))
    with pytest.raises(
        ValueError, match="labels of shape \\(4,\\) do not match logits of shape \\(5, 2\\)"
    ):
        models.cross_entropy(jnp.ones((5, 2)), jnp.zeros(4, dtype=jnp.int32))
    with pytest.raises(TypeError, match="integer class indices"):
        models.accuracy(jnp.ones((5, 2)), jnp.zeros(5))
    with pytest.raises(
        ValueError, match=r"init_mlp\(sizes=\(3,\)\): sizes needs at least two widths"
    ):
        models.init_mlp(jax.random.key(0), (3,))
    with pytest.raises(
        ValueError,
        match=r"init_mlp\(sizes=\(2, 0, 3\)\): sizes must be a non-empty tuple of ints >= 1",
    ):
        models.init_mlp(jax.random.key(0), (2, 0, 3))
    with pytest.raises(TypeError, match=r"init_mlp\(sizes=\(2, 4.5\)\): sizes must hold ints only"):
        models.init_mlp(jax.random.key(0), (2, 4.5))
    with pytest.raises(TypeError, match=r"mlp\(params=...\): params must be a non-empty list"):
        models.mlp({"w": jnp.ones((2, 3))}, jnp.ones((5, 2)))


# ------------------------------------------------------------------- train


def test_training_converges(spirals):
    (x, y), (xt, yt) = spirals
    params = models.init_mlp(jax.random.key(1), (2, 64, 64, 3))
    optimizer = optax.adamw(3e-3, weight_decay=1e-4)
    lines = []
    evaluate = jax.jit(lambda p: {"acc": models.accuracy(models.mlp(p, xt), yt)})
    params, _, history = train.fit(
        train.make_step(models.classifier_loss, optimizer),
        params,
        optimizer.init(params),
        (x, y),
        steps=800,
        batch_size=64,
        log_every=200,
        evaluate=evaluate,
        print_fn=lines.append,
    )
    assert len(lines) == 4 and lines[-1].startswith("step   800/800")
    assert history.steps == list(range(1, 801)) and len(history.loss) == 800
    assert history.eval_steps == [200, 400, 600, 800]
    assert np.mean(history.loss[-50:]) < 0.3 * np.mean(history.loss[:50])
    accuracy = float(models.accuracy(models.mlp(params, xt), yt))
    assert accuracy > 0.95, accuracy
    assert history.metrics["acc"][-1] == pytest.approx(accuracy)
    rest = history.seconds - history.first_step_seconds
    assert history.steps_per_second == pytest.approx(799 / rest)


def test_make_step_is_one_optax_update():
    params = models.init_mlp(jax.random.key(0), (2, 4, 3))
    batch = (jnp.ones((8, 2)), jnp.zeros(8, dtype=jnp.int32))
    step = train.make_step(models.classifier_loss, optax.sgd(0.5), jit=False)
    new, _, loss = step(params, optax.sgd(0.5).init(params), batch)
    grads = jax.grad(models.classifier_loss)(params, batch)
    for p, g, n in zip(jax.tree.leaves(params), jax.tree.leaves(grads), jax.tree.leaves(new)):
        np.testing.assert_allclose(n, p - 0.5 * g, rtol=1e-6)
    assert float(loss) == pytest.approx(float(models.classifier_loss(params, batch)))


def test_train_argument_errors():
    params = models.init_mlp(jax.random.key(0), (2, 4, 3))
    opt = optax.sgd(0.1)
    step = train.make_step(models.classifier_loss, opt)
    xy = (np.ones((16, 2), np.float32), np.zeros(16, np.int32))
    with pytest.raises(TypeError, match="optax GradientTransformation"):
        train.make_step(models.classifier_loss, "adam")
    with pytest.raises(ValueError, match=r"fit\(steps=0\): steps must be an int >= 1"):
        train.fit(step, params, opt.init(params), xy, steps=0, batch_size=4)
    with pytest.raises(TypeError, match=r"fit\(batch_size=4.0\): batch_size must be an int"):
        train.fit(step, params, opt.init(params), xy, steps=1, batch_size=4.0)
    with pytest.raises(
        ValueError, match=r"batch_at\(batch_size=32\): batch_size is larger than the 16 examples"
    ):
        train.fit(step, params, opt.init(params), xy, steps=1, batch_size=32)
    with pytest.raises(ValueError, match="the data has 2 features .* expects 5"):
        wide = models.init_mlp(jax.random.key(0), (5, 4, 3))
        train.fit(step, wide, opt.init(wide), xy, steps=1, batch_size=4, log_every=None)


def test_resumed_training_equals_uninterrupted(tmp_path, spirals):
    (x, y), _ = spirals
    opt = optax.adamw(3e-3)
    step = train.make_step(models.classifier_loss, opt)
    p0 = models.init_mlp(jax.random.key(2), (2, 16, 3))
    p, s, _ = train.fit(step, p0, opt.init(p0), (x, y), steps=40, batch_size=32, log_every=None)
    checkpoints.save_checkpoint(tmp_path, 40, {"p": p, "s": s})
    restored, at = checkpoints.restore_checkpoint(tmp_path, {"p": p0, "s": opt.init(p0)})
    p_resumed, _, h_resumed = train.fit(
        step,
        restored["p"],
        restored["s"],
        (x, y),
        steps=40,
        start=at,
        batch_size=32,
        log_every=None,
    )
    p_straight, _, h_straight = train.fit(
        step, p0, opt.init(p0), (x, y), steps=80, batch_size=32, log_every=None
    )
    assert h_resumed.loss == h_straight.loss[40:]
    for a, b in zip(jax.tree.leaves(p_resumed), jax.tree.leaves(p_straight)):
        np.testing.assert_array_equal(a, b)


def test_data_parallel_fit_matches_one_device(spirals):
    # In-process, on the 8 CPU devices conftest.py sets up.
    from jax import lax

    from jaxguide.sharding import make_mesh, split_batch

    (x, y), _ = spirals
    params = models.init_mlp(jax.random.key(1), (2, 32, 3))
    opt = optax.adamw(3e-3)
    step = train.make_step(models.classifier_loss, opt)
    mesh = make_mesh((8,), ("x",))
    kw = dict(steps=30, batch_size=64, log_every=None)
    p1, _, h1 = train.fit(step, params, opt.init(params), (x, y), **kw)
    p2, _, h2 = train.fit(step, params, opt.init(params), (x, y), mesh=mesh, **kw)
    assert p2[0]["w"].sharding.is_fully_replicated and len(p2[0]["w"].sharding.device_set) == 8
    np.testing.assert_allclose(h2.loss, h1.loss, atol=1e-5, rtol=0)

    def pstep(p, s, b):
        loss, g = jax.value_and_grad(models.classifier_loss)(p, b)
        g, loss = lax.pmean((g, loss), "d")
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    pm = jax.pmap(pstep, axis_name="d", in_axes=(None, None, 0), out_axes=(None, None, None))
    _, _, h3 = train.fit(pm, params, opt.init(params), (x, y), place=split_batch, **kw)
    np.testing.assert_allclose(h3.loss, h1.loss, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"batch_size": 60},
            ValueError,
            r"fit\(batch_size=...\): a batch of 60 examples does not divide across 8 devices",
        ),
        ({"batch_size": 12}, ValueError, "a batch of 12 examples does not divide across 8 devices"),
        (
            {"axis": "data"},
            ValueError,
            r"fit\(axis='data'\): the mesh has axes \('x',\); 'data' is not among them",
        ),
        (
            {"axis": ("x", 1)},
            TypeError,
            r"fit\(axis=\('x', 1\)\): axis must be a mesh axis name or a tuple of names",
        ),
        ({"seed": -1}, ValueError, r"fit\(seed=-1\): seed must be an int >= 0"),
        ({"print_fn": None}, TypeError, r"fit\(print_fn=...\): print_fn must be a function"),
        ({"evaluate": 3}, TypeError, r"fit\(evaluate=...\): evaluate must be a function"),
    ],
)
def test_data_parallel_fit_errors(spirals, kwargs, error, message):
    from jaxguide.sharding import make_mesh

    (x, y), _ = spirals
    params = models.init_mlp(jax.random.key(1), (2, 4, 3))
    opt = optax.sgd(0.1)
    step = train.make_step(models.classifier_loss, opt)
    args = {"steps": 1, "batch_size": 64, "mesh": make_mesh((8,), ("x",)), **kwargs}
    with pytest.raises(error, match=message):
        train.fit(step, params, opt.init(params), (x, y), **args)


# ------------------------------------------------- silent wrong results (issue 17)


def _small_fit(**kw):
    x, y = data.spirals(jax.random.key(0), 256)
    params = models.init_mlp(jax.random.key(1), (2, 8, 3))
    opt = optax.sgd(0.1)
    step = train.make_step(models.classifier_loss, opt)
    return train.fit(step, params, opt.init(params), (x, y), batch_size=32, log_every=None, **kw)


def test_steps_per_second_leaves_out_the_compiling_first_step():
    h = train.History(steps=[1, 2, 3, 4, 5], seconds=10.0, first_step_seconds=9.0)
    assert h.steps_per_second == 4.0  # 4 steps after the first, in 1 s
    assert np.isnan(train.History(steps=[1], seconds=3.0, first_step_seconds=3.0).steps_per_second)
    *_, history = _small_fit(steps=20)
    assert 0 < history.first_step_seconds < history.seconds
    expected = 19 / (history.seconds - history.first_step_seconds)
    assert history.steps_per_second == pytest.approx(expected)
    assert history.steps_per_second > 20 / history.seconds


def test_fit_accepts_a_two_dimensional_batch_axis():
    from jaxguide.sharding import make_mesh

    mesh = make_mesh((4, 2), ("x", "y"))
    p1, _, h1 = _small_fit(steps=5)
    p2, _, h2 = _small_fit(steps=5, mesh=mesh, axis=("x", "y"))
    np.testing.assert_allclose(h2.loss, h1.loss, atol=1e-5, rtol=0)
    with pytest.raises(
        ValueError, match=r"a batch of 12 examples does not divide across 8 devices"
    ):
        opt = optax.sgd(0.1)
        train.fit(
            train.make_step(models.classifier_loss, opt),
            p1,
            opt.init(p1),
            data.spirals(jax.random.key(0), 256),
            steps=1,
            batch_size=12,
            mesh=mesh,
            axis=("x", "y"),
        )
    with pytest.raises(
        ValueError,
        match=r"fit\(axis=\('x', 'z'\)\): the mesh has axes \('x', 'y'\); 'z' is not among them",
    ):
        _small_fit(steps=1, mesh=mesh, axis=("x", "z"))
    with pytest.raises(TypeError, match=r"fit\(axis=3\): axis must be a mesh axis name or a tuple"):
        _small_fit(steps=1, mesh=mesh, axis=3)


def test_replicate_and_fit_refuse_what_is_not_a_mesh():
    with pytest.raises(
        TypeError, match=r"replicate\(mesh=None\): mesh must be a jax.sharding.Mesh"
    ):
        train.replicate(jnp.ones(3), None)
    with pytest.raises(TypeError, match=r"fit\(mesh='x'\): mesh must be a jax.sharding.Mesh"):
        _small_fit(steps=1, mesh="x")
