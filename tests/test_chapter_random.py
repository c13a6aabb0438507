"""The random chapter: the values it glued agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import numpy as np
import pytest

import bookcheck
from bookcheck import errors, glued, load

pytestmark = pytest.mark.book


@pytest.fixture(scope="module")
def g(book):
    return glued(book, "random")


def test_random_distributions(book, g):
    expected = {"normal": 0.0, "uniform": 0.5, "gamma": 2.0, "beta": 2 / 7, "poisson": 3.0}
    for name, mean in expected.items():
        assert g["mean_" + name] == pytest.approx(mean, abs=0.03), name
    soup = bookcheck.parsed_page(book, "random")
    assert len(soup.select("div.cell_output img")) >= 1


def test_random_keys(g):
    import jax

    assert g["fold_in_same_again"] == (True, True)
    assert g["key_kinds"] == ("key<fry>", (), "uint32", (2,))
    # A legacy key is its uint32 words, so "+ 1" adds to the words: asked of JAX here.
    words = np.asarray(jax.random.key_data(jax.random.PRNGKey(0)))
    assert g["legacy_plus_one"] == (words + 1).tolist()


def test_random_key_reuse_checker(book, g):
    cells = [c for c in load(book.notebook("random"))["cells"] if c["cell_type"] == "code"]
    raised = errors(book, "random")
    # Arithmetic on a typed key, the reuse checker, split given a batch of keys, then
    # nnx.vmap handing the split keys of an Rngs to every member whole.
    assert [e.name for e in raised] == ["TypeError", "KeyReuseError", "ValueError", "ValueError"]
    assert "add does not accept dtypes key<fry>" in raised[0].message
    i = raised[1].cell
    assert 'jax_debug_key_reuse", True' in raised[1].source
    # The next cell runs correct code with the checker on, then switches it off.
    after = "".join(cells[i + 1]["source"])
    assert after.rstrip().endswith('jax.config.update("jax_debug_key_reuse", False)')
    assert g["checker_off_again"] is False
    # The checker in compiled code is in the debugging chapter: linked.
    soup = bookcheck.parsed_page(book, "random")
    hrefs = {a.get("href", "").split("#")[0] for a in soup.select("a.reference")}
    assert "debugging.html" in hrefs


def test_random_in_compiled_code(g):
    assert g["global_key_caught"].startswith("Previously-consumed key passed to jit")
    # fold_in(base_key, step): three different states, and step 2 redone exactly.
    assert g["noisy_step_distinct"] == (3, True)


def test_random_sharded(g):
    # The normal draw matches exactly on the book's JAX (the bits' claim: on any JAX).
    assert float(g["sharded_normal_gap"]) == 0.0
    assert float(g["f32_eps"]) == pytest.approx(float(np.finfo(np.float32).eps), rel=0.01)
    # One device hashes the whole (8, 4) array of counters; each of 8 devices its row.
    arrays = g["u32_arrays"]
    assert "u32[8,4]" in arrays["one device"]
    assert "u32[1,4]" in arrays["8 devices"] and "u32[8,4]" not in arrays["8 devices"]
    # One device's block: the row of counters it hashes (u32[1,4]), as float32.
    rows, cols = 1, 4
    assert f"u32[{rows},{cols}]" in arrays["8 devices"]
    assert g["block_bytes"] == rows * cols * np.dtype(np.float32).itemsize
    off = g["collectives_off"]
    assert "all-gather" in off or "collective-permute" in off
    # With the flag off each device counts fewer FLOPs; its cost is communication.
    assert int(g["flops_off_device"]) < int(g["flops_on_device"])


def test_random_compiled_counts_recomputed(g):
    """The page compiles at XLA's backend level 0; this process at the default level.
    The one-device program's FLOPs and loop trip count agree (the Overview's remark),
    and the partitionable generator's extra hashing on one device is recomputed."""
    import re

    import jax

    key = jax.random.key(3)
    compiled = jax.jit(lambda k: jax.random.normal(k, (8, 4))).lower(key).compile()
    assert compiled.cost_analysis()["flops"] == float(g["flops_one_device"])
    assert re.findall(r'known_trip_count":\{"n":"(\d+)"', compiled.as_text()) == g["hash_trips"]
    assert g["same_at_default_level"] == float(g["flops_on_device"])

    def bits_flops(flag):
        with jax.threefry_partitionable(flag):
            lowered = jax.jit(lambda k: jax.random.bits(k, (1024,))).lower(key)
            return lowered.compile().cost_analysis()["flops"]

    assert float(g["bits_cost"]) == pytest.approx(bits_flops(True) / bits_flops(False), abs=0.05)


def test_random_versions(g):
    import jax

    # The flag demonstration, recomputed here.
    key = jax.random.key(42)
    now = np.asarray(jax.random.normal(key, (3,)))
    with jax.threefry_partitionable(False):
        before = np.asarray(jax.random.normal(key, (3,)))
    assert np.allclose(g["flag_values"]["True"], now, rtol=1e-6)
    assert np.allclose(g["flag_values"]["False"], before, rtol=1e-6)
    assert not np.allclose(now, before)


def test_random_generators(g):
    words = g["key_words"]
    # The uint32 words of one key of each implementation, asked of JAX here.
    import jax

    for impl, n in words.items():
        assert jax.random.key_data(jax.random.key(0, impl=impl)).size == n, impl

    # The page's loop is lax.map inside one compiled program; it draws what a
    # Python loop of eager draws over the same four keys draws, for every generator.
    def draw(k):
        return jax.random.uniform(k, (2,))

    for impl in words:
        ks = jax.random.split(jax.random.key(0, impl=impl), 4)
        eager_loop = np.stack([np.asarray(draw(ks[i])) for i in range(4)])
        mapped = np.asarray(jax.lax.map(draw, ks))
        np.testing.assert_array_equal(mapped, eager_loop, err_msg=impl)
    # (vmap == loop, vmap == one (4, 2) draw from the first key)
    assert g["vmap_is_loop"] == {
        "threefry2x32": (True, False),
        "threefry4x32": (True, False),
        "philox2x32": (True, False),
        "philox4x32": (True, False),
        "rbg": (False, True),
        "unsafe_rbg": (False, True),
    }


def test_random_gpu_determinism_is_background(book):
    # The section is a paragraph of background with XLA's page and the flag named;
    # its scatter demonstration and the misspelt-flag cell were cut.
    soup = bookcheck.parsed_page(book, "random")
    section = soup.select_one("section#same-key-different-results-on-a-gpu")
    assert section is not None and not section.select("div.cell")
    text = section.get_text()
    assert "--xla_gpu_deterministic_ops=true" in text
    assert "determinstic" not in soup.get_text()


def test_random_samplers_without_out_sharding(g):
    import inspect

    import jax

    # Recomputed from the installed JAX: the sampling functions (first parameter
    # `key`, not split/fold_in/clone) whose signature has no out_sharding=.
    def lacks(name):
        try:
            params = inspect.signature(getattr(jax.random, name)).parameters
        except (TypeError, ValueError):
            return False
        return list(params)[:1] == ["key"] and "out_sharding" not in params

    names = sorted(
        n
        for n in dir(jax.random)
        if not n.startswith("_") and n not in ("clone", "fold_in", "split") and lacks(n)
    )
    assert g["no_out_sharding"] == ", ".join(names[:-1]) + " and " + names[-1]
    assert "choice" in names and "normal" not in names


def test_random_eager_and_jit(g):
    import jax

    # A beta draw that differs in rounding only: recomputed here at XLA's default
    # backend level, where some of the draws differ too.
    assert g["beta_differing"] < 20_000 and g["beta_n"] == "20,000"
    eps = float(np.finfo(np.float32).eps)
    assert float(g["beta_gap"]) <= 2 * eps
    key = jax.random.key(0)

    def draw(k):
        return jax.random.beta(k, 2.0, 5.0, (1000,))

    gap = np.abs(np.asarray(draw(key)) - np.asarray(jax.jit(draw)(key)))
    assert gap.max() <= 2 * eps


def test_random_has_aux_and_saving(g):
    assert g["has_aux_key"] == "key<fry>"


def test_random_seed_dtypes(g):
    # (32-bit eager, x64 eager, x64 jit) key words for #4745's three seeds, by hand:
    # -1000 as int64 fills the high word with ones, as int32 leaves it zero;
    # 2**63 as uint64 is [2**31, 0] with x64 and its low 32 bits (0) without.
    low = str([0, 2**32 - 1000])
    assert g["seed_dtypes"] == {
        "-1000": (low, str([2**32 - 1, 2**32 - 1000]), str([2**32 - 1, 2**32 - 1000])),
        "jnp.int32(-1000)": (low, low, low),
        "np.uint64(2**63)": (str([0, 0]), str([2**31, 0]), str([2**31, 0])),
    }


def test_random_exercises(g):
    assert g["pi_reproducible"] == (True, True)


def test_random_keys_from_names_and_seeds(g):
    import jax

    shape, distinct = g["grid_keys"]
    assert distinct == shape[0] * shape[1]  # every cell of the grid a different draw
    # Both words of a column key folded in: 200,000 columns, 200,000 keys per row;
    # 32 bits each lose a few to coincidences (the birthday bound: n**2 / 2**33).
    n = 200_000
    counts = g["combine_distinct"]
    assert counts["both words"] == n
    many = jax.random.split(jax.random.key(2), n)
    one_word = np.asarray(jax.vmap(jax.random.bits)(many))
    assert counts["bits(col)"] == len(np.unique(one_word)) < n
    assert n - counts["bits(col)"] < 4 * n**2 / 2**33
    assert g["distinct_one_word"] == counts["bits(col)"]

    # Per seed: (eager, under jit) in 32-bit mode, then (eager, under jit) with x64,
    # each the key's (hi, lo) words. Recomputed from the seed's bits here.
    def words(seed, bits):
        if not -(2**63) <= seed < 2**63:
            return "OverflowError"
        low = seed % 2**64 if bits == 64 else seed % 2**32
        return str([low >> 32, low % 2**32])

    for seed, (eager, jitted, x64, x64_jit) in g["seed_bits"].items():
        assert eager == words(seed, 32), seed
        assert jitted == (words(seed, 32) if -(2**31) <= seed < 2**31 else "OverflowError")
        assert x64 == x64_jit == words(seed, 64), seed
    draws = g["x64_draws"]
    for seed in (0, -1):
        assert draws[seed][0] == pytest.approx(float(jax.random.normal(jax.random.key(seed))))
        with jax.enable_x64(True):
            k = jax.random.key(seed)
            assert draws[seed][1] == pytest.approx(float(jax.random.normal(k)))
            assert draws[seed][2] == pytest.approx(float(jax.random.normal(k, dtype=np.float32)))
    assert draws[0][0] == draws[0][2] != draws[0][1]


def test_random_split_of_a_batch_of_keys(book):
    raised = errors(book, "random")[2]
    assert raised.name == "ValueError"
    assert "jax.random.split(batch_keys)" in raised.source
    assert "split accepts a single key" in raised.message
    assert "Use jax.vmap for batching" in raised.message


def test_random_flag_under_jit(g):
    import jax

    flag = g["flag_jit"]
    assert list(flag) == ["on", "off inside", "off around", "on again"]
    # The two classes (the claim compares the four runs), recomputed here: jax-ml/jax#5061's
    # categorical, with the flag on and off.
    import jax.numpy as jnp

    key = jax.random.key(72)
    assert flag["on"][0] == int(jax.random.categorical(key, jnp.zeros(100)))
    with jax.threefry_partitionable(False):
        assert flag["off inside"][0] == int(jax.random.categorical(key, jnp.zeros(100)))


def test_random_keys_through_autodiff(g):
    import jax

    seed_key, key_bar, seed_bar = g["key_autodiff"]
    assert seed_key == "key<fry>"
    assert key_bar == seed_bar == str(jax.dtypes.float0)


def test_random_nnx_vmap_of_split_keys(book, g):
    # Split, not mapped: the members' initializers get the batch of keys (flax#4355),
    # and fold_in is the function that refuses it, as in the thread's traceback.
    raised = errors(book, "random")[3]
    assert raised.name == "ValueError"
    assert "in_axes=None" in raised.source and "nnx.split_rngs(splits=4)" in raised.source
    assert raised.message.startswith("fold_in accepts a single key")
    assert "but was given a key array of shape (4,)" in raised.message
    assert "Use jax.vmap for batching" in raised.message
    # The explicit form beside it: the Rngs split by Rngs.split, mapped by nnx.vmap.
    soup = bookcheck.parsed_page(book, "random")
    code = " ".join(pre.get_text() for pre in soup.select("div.cell_input pre"))
    assert "nnx.Rngs(0).split(4)" in code


def test_random_clone(g):
    import jax
    import jax.numpy as jnp

    # Recomputed here with the checker on: a cloned key may be used once more, and
    # a legacy key used twice is not flagged.
    with jax.debug_key_reuse(True):
        key = jax.random.key(7)
        twin = jax.random.clone(key)
        same_bits = bool((jax.random.key_data(twin) == jax.random.key_data(key)).all())
        eager = jax.random.uniform(key, (3,))
        jitted = jax.jit(lambda k: jax.random.uniform(k, (3,)))(twin)
        legacy = jax.random.PRNGKey(7)
        twice = bool(jax.random.uniform(legacy) == jax.random.uniform(legacy))
    assert g["clone_reuse"] == (same_bits, bool(jnp.array_equal(eager, jitted)), twice)
    assert g["clone_reuse"] == (True, True, True)


def test_random_key_streams(g):
    import jax

    # Each stream stores its seed's key and a count of the keys it handed out: the
    # page drew params twice (from default) and dropout once.
    data = {
        name: jax.random.key_data(jax.random.key(seed)).tolist()
        for name, seed in [("default", 0), ("dropout", 1)]
    }
    assert g["rngs_state"] == {"default": (data["default"], 2), "dropout": (data["dropout"], 1)}
    # The counts the prose shows: two params keys (from default), one dropout key,
    # then two more dropout keys drawn by the two nnx.jit calls.
    assert (g["default_count"], g["dropout_count"]) == (2, 1)
    assert g["dropout_count_after"] == 1 + 2
    # nnx.Dropout: a new mask per call, the first again after nnx.reseed, none in eval.
    assert g["dropout_layer"] == [True, True, True]


def test_random_rbg_sharding(g):
    # The thread's 496 rows on 8 devices: every generator draws the one-device numbers
    # for 2, 4 and 8 shards; with 8 shards a Threefry device generates its 496 / 8 words,
    # an rbg device all 496.
    rows, devices = 496, 8
    per_impl = g["rbg_sharding"]
    assert set(per_impl) == {"threefry2x32", "rbg", "unsafe_rbg"}
    assert all(same == [True, True, True] for same, _ in per_impl.values())
    assert per_impl["threefry2x32"][1] == rows // devices
    assert per_impl["rbg"][1] == per_impl["unsafe_rbg"][1] == rows
    assert (
        "No such compile option: 'xla_tpu_spmd_rng_bit_generator_unsafe'" in g["tpu_flag_refused"]
    )


def test_random_categorical_random_numbers(g):
    """jax-ml/jax#5246: categorical generates categories x draws random numbers,
    choice with p one per draw."""
    assert g["thread_gumbel_numbers"] == f"{2**30 * 10**5:,}"
    assert g["thread_gumbel_tb"] == f"{2**30 * 10**5 * 4 / 1e12:.0f} TB"
    assert g["draw_cost"] == {"gumbel_draws": 2**30 * 10**5, "cdf_draws": 10**5}
