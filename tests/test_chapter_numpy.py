"""The numpy chapter: what its prose says the program did is in its outputs, and the
numbers it glues agree with the outputs and with independent computations."""

from __future__ import annotations

import re

import numpy as np
import pytest

import bookcheck
from bookcheck import VERDICT, errors, glued, page_text, seconds

pytestmark = pytest.mark.book

# The page's verdicts: a factor where the interquartile ranges separate, else this.
NO_DIFFERENCE = "not measurably different from"
IQR_VERDICT = rf"(?:{VERDICT}|{NO_DIFFERENCE})"


def check_verdict(phrase: str, baseline: list, other: list) -> None:
    """``phrase`` is what the page says of ``other`` against ``baseline``, each glued
    as [median, 25th percentile, 75th percentile, minimum] in seconds: a factor only
    where the ranges separate and the minima are ordered the same way, and the factor
    is the ratio of the medians."""
    assert re.fullmatch(IQR_VERDICT, phrase), phrase
    faster = other[3] < baseline[3]
    separate = (other[2] < baseline[1] and faster) or (baseline[2] < other[1] and not faster)
    if not separate:
        assert phrase == NO_DIFFERENCE, (phrase, baseline, other)
        return
    ratio = baseline[0] / other[0]
    if abs(ratio - 1) <= 0.1:
        assert phrase.startswith("as fast"), (phrase, ratio)
        return
    assert ("faster" in phrase) == (ratio > 1), (phrase, ratio)
    factor = float(phrase.split("×")[0])
    assert factor == pytest.approx(max(ratio, 1 / ratio), rel=0.06), (phrase, ratio)


def raised(book, chapter: str) -> dict[str, str]:
    """The errors the chapter's raises-exception cells raised: name -> their messages."""
    found: dict[str, str] = {}
    for e in errors(book, chapter):
        found[e.name] = found.get(e.name, "") + "\n" + e.message
    return found


def test_formatted_outputs(book):
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    for raw in ("Array(", "ArrayImpl", "weak_type=True)", "e-01", "e+00"):
        assert raw not in text, raw
    assert "seed" not in text.lower()
    # The sines agree with an independent NumPy computation.
    np.testing.assert_allclose(g["sin_values"], np.sin(np.linspace(0, np.pi, 5)), atol=1e-6)


def test_in_place_and_donation(book):
    g = glued(book, "numpy")
    assert g["scale_then_set"] == {
        "fusions": [["multiply", "dynamic-update-slice"]],
        "temp_bytes": 0,
    }
    d = g["donation"]
    assert isinstance(d["plain_alias"], int) and d["deleted"] is True
    assert d["donating_alias"] == d["output"] == 1_000_000 * 4  # float32 zeros(1e6)
    assert "Array has been deleted" in raised(book, "numpy")["RuntimeError"]


def test_out_of_bounds(book):
    g = glued(book, "numpy")
    oob = g["out_of_bounds"]
    # Read clamped to the last element of x (which the refused set left as it was).
    assert oob["x[10]"] == oob["set"][-1]
    assert oob["set"] == [0.0, 1.0, 2.0, 3.0, 4.0]  # dropped
    more = g["oob_take_grad"]
    # The gradient of the clamped read goes to the element read: x's last.
    assert more["grad slice"] == np.eye(len(oob["set"]))[-1].tolist()
    assert more["grad gather"] == [0.0] * 5  # a broken promise: no gradient
    text = page_text(book, "numpy")
    assert "clamped the out-of-bounds index len(x) to the last valid one here" in text
    assert "(not guaranteed" in text
    assert oob["set clip"] == [0.0, 1.0, 2.0, 3.0, 99.0]


def test_block_until_ready_and_eager_compiles(book):
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    # The idiom, called directly (the page's code spans vary: compare without spaces).
    assert ".block_until_ready()" in "".join(text.split())
    n_eqns = g["chain_eqns"]
    # One compilation per operation on a new shape, none on a repeat call.
    assert g["eager_compile_counts"] == [n_eqns, 0, n_eqns] and g["eager_compiles"] == n_eqns
    # tanh, x**2, mul, sin, mul, add, div, sub, sum: nine equations.
    assert n_eqns == 9
    assert g["eager_first"] in text and g["eager_second"] in text
    assert seconds(g["eager_first_compiling"]) <= seconds(g["eager_first"])
    assert f"of which {g['eager_first_compiling']} went into compiling" in text


def test_fusion_evidence(book):
    g = glued(book, "numpy")
    ops = g["horner_fusion"]["ops"]
    assert ops.count("multiply") == 5 and ops.count("add") == 5
    assert ops[-1] == "reduce" and g["horner_n_ops"] == len(ops)
    assert g["horner_temp"] == "0 B"
    # The transcendental chain: sine in a fusion of its own, a temporary between.
    chain = g["chain_fusions"]
    assert ["kLoop", ["sine"]] in [list(f) for f in chain["chain"]]
    assert chain["temp"] == "3.81 MiB"  # one float32 1000 x 1000 array
    # The matrix product: eager jnp runs a transpose then the product; the compiled
    # program is one dot that contracts dimension 1 of both operands, no transpose.
    gram = g["gram_programs"]
    assert gram["contracts 1 and 1"] is True


def test_ynnpack_and_xla_fusions(book):
    """The page says the CPU fusions are YNNPACK calls (XLA's own fusions are shown
    once, in the accelerators chapter)."""
    g = glued(book, "numpy")
    assert g["horner_fusion"]["kinds"] == [("ynn_fusion", "kCustom")]
    # The transcendental chain: sine outside YNNPACK, alone the same XLA loop.
    chain = g["chain_fusions"]
    assert chain["sin alone"] == [("kLoop", ["sine"])]
    assert any(kind == "kCustom" and "tanh" in ops for kind, ops in chain["chain"])


def test_kernel_accounting(book):
    """The numbers the transcendental paragraph cites."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    k = g["kernel_spreads"]
    for key, base, other in (
        ("sin_vs_numpy", "np.sin", "jit(jnp.sin)"),
        ("np_sin_vs_pass", "np.multiply out=", "np.sin out="),
    ):
        check_verdict(g[key], k[base], k[other])
        assert g[key] in text, key
    # XLA's sin alone against the jitted chain that contains it (same rounds).
    check_verdict(g["sin_vs_chain"], k["jit(chain)"], k["jit(jnp.sin)"])
    assert g["sin_vs_chain"] in text
    # The dispatch estimate is the chain's operation count times one small call.
    assert seconds(g["dispatch_total"]) == pytest.approx(
        g["horner_n_ops"] * seconds(g["small_jit"]), rel=0.02
    )


def test_verdicts(book):
    """Every speed verdict follows its glued medians and spreads: no factor where the
    interquartile ranges overlap."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    h, c, m = g["horner_spreads"], g["chain_spreads"], g["gram_spreads"]
    cases = {
        "horner_jit_vs_numpy": (h["NumPy"], h["jit(jnp)"]),
        "horner_jit_vs_jnp": (h["jnp"], h["jit(jnp)"]),
        "horner_jnp_vs_numpy": (h["NumPy"], h["jnp"]),
        "horner_out_vs_numpy": (h["NumPy"], h["NumPy out="]),
        "horner_jit_vs_out": (h["NumPy out="], h["jit(jnp)"]),
        "chain_jit_vs_numpy": (c["NumPy"], c["jit(jnp)"]),
        "chain_jit_vs_jnp": (c["jnp"], c["jit(jnp)"]),
        "chain_jnp_vs_numpy": (c["NumPy"], c["jnp"]),
        "gram_jit_vs_numpy": (m["NumPy"], m["jit(jnp)"]),
        "gram_jit_vs_jnp": (m["jnp"], m["jit(jnp)"]),
        "gram_jnp_vs_numpy": (m["NumPy"], m["jnp"]),
    }
    for key, (base, other) in cases.items():
        check_verdict(g[key], base, other)
        assert g[key] in text, key
    for key in ("horner_jnp_vs_numpy", "chain_jnp_vs_numpy", "gram_jnp_vs_numpy"):
        assert f"{g[key]} NumPy" in text, key
    # The busy-machine note follows the load the build measured.
    busy = float(g["build_load"]) > g["cpu_cores"]
    assert ("busy machine" in g["load_note"]) == busy
    assert g["load_note"] in text and "ten or more" not in text


def test_one_operation(book):
    """One m * 0.5 four ways: the verdicts and the reading follow the spreads."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy").replace("\u2019", "'")  # smart quotes
    o = g["one_op_spreads"]
    np_, eager, jit = o["NumPy m_np * 0.5"], o["jnp m * 0.5"], o["jit(x * 0.5)"]
    donated = o["jit, donated"]
    check_verdict(g["one_jit_vs_numpy"], np_, jit)
    check_verdict(g["one_jnp_vs_numpy"], np_, eager)
    check_verdict(g["one_jnp_vs_jit"], jit, eager)
    check_verdict(g["one_donated_vs_numpy"], np_, donated)
    check_verdict(g["one_donated_vs_jit"], jit, donated)
    reading = g["one_op_reading"].replace("\u2019", "'")
    slower_in_place = "slower" in g["one_donated_vs_numpy"]
    assert reading.startswith("So even in place" if slower_in_place else "So XLA's multiply is not")
    assert reading in text
    # The #4537 answer quotes the same measurement.
    assert f"every call, was {g['one_jit_vs_numpy']} NumPy's ufunc" in text


def test_async_by_hand(book):
    g = glued(book, "numpy")
    a = g["async_by_hand"]
    returned = [seconds(t) for t in a["returned"]]
    ready = [seconds(t) for t in a["ready"]]
    # Each call returned before its result was ready (the claim compares the medians).
    assert len(returned) == len(ready) == 7
    assert all(r <= d for r, d in zip(returned, ready))


def test_small_arrays(book):
    """On 1000 numbers NumPy wins, as the prose says; its numbers are the table's."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    assert seconds(g["small_numpy"]) < seconds(g["small_jit"])
    s = g["small_spreads"]
    check_verdict(g["small_numpy_vs_jit"], s["jit(jnp)"], s["NumPy"])
    assert "faster" in g["small_numpy_vs_jit"]
    assert f"NumPy was {g['small_numpy_vs_jit']} jit(jnp) here" in text
    # The machine is named next to the timings.
    assert isinstance(g["cpu_cores"], int) and g["cpu_cores"] >= 1
    assert f"with {g['cpu_cores']} cores" in text and g["cpu_model"] in text


def test_page_shape(book):
    g = glued(book, "numpy")
    soup = bookcheck.parsed_page(book, "numpy")
    text = soup.get_text(" ")
    # The machine the timings name: 8 simulated CPU devices on this build.
    assert g["setup_platform"].startswith("8 simulated CPU devices, JAX ")
    # The raises-exception cells raised the errors the prose explains.
    errors = raised(book, "numpy")
    assert "JAX arrays are immutable" in errors["TypeError"]
    assert "incompatible devices" in errors["ValueError"]
    # The exercises' answers: np.bincount's counts, the device, clamping and filling.
    assert g["histogram"] == np.bincount([0, 2, 2, 4, 2, 1, 0], minlength=5).tolist()
    assert g["placement"] == (True, "ndarray")
    assert g["shift_left"] == ([2.0, 3.0, 4.0, 4.0], [2.0, 3.0, 4.0, 0.0])
    # The timing comparison: a figure with alt text, and "per call afterwards".
    imgs = soup.select("div.cell_output img")
    assert imgs and all(len(i.get("alt", "")) > 20 for i in imgs)
    assert "per call afterwards" in " ".join(text.split())
    # Exercise solutions are in the page but hidden (a dropdown).
    solutions = soup.select("div.solution")
    assert len(solutions) >= 2
    assert all("dropdown" in s.get("class", []) for s in solutions)


def test_lists_refused(book):
    assert "got <class 'list'>" in raised(book, "numpy")["TypeError"]


def test_type_promotion(book):
    g = glued(book, "numpy")
    # int32 overflows silently: 256**4 = 2**32 does not fit, and wraps around as two's
    # complement does (worked out here); float32 holds it exactly.
    assert g["int32_powers"] == [(256**k + 2**31) % 2**32 - 2**31 for k in (1, 2, 3, 4)]
    # The same power in NumPy's float32: exact.
    assert g["float_power"] == float(np.float32(256.0) ** np.float32(4))
    # jax-ml/jax#10692's case, 2 ** 64 in int8: the shapes disagree.
    p = g["int8_power"]
    assert p["shape (1,)"] != [p["shape ()"]]
    assert g["int8_power_array"] == str(p["shape (1,)"])
    assert g["int8_power_scalar"] == str(p["shape ()"])


def test_lists(book):
    g = glued(book, "numpy")
    # jnp.array takes nested lists of numbers; stack and concatenate a list of arrays.
    assert g["list_building"] == {
        "array": (2, 2),
        "stack": (2, 2),
        "concatenate of lists": "TypeError",
    }


def test_lax_beneath_jnp(book):
    assert "requires arguments to have the same dtypes" in raised(book, "numpy")["TypeError"]


def test_out_of_bounds_modes_and_links(book):
    text = " ".join(page_text(book, "numpy").split())
    assert "a promise to the compiler that every index is valid" in text
    soup = bookcheck.parsed_page(book, "numpy")
    hrefs = [a.get("href", "") for a in soup.select("a")]
    assert any(h.startswith("debugging.html") for h in hrefs)  # checkify


def test_unsafe_cast(book):
    g = glued(book, "numpy")
    numpy_cast, jax_cast = g["uint8_casts"]
    assert numpy_cast == np.arange(254.0, 258.0).astype(np.uint8).tolist()
    assert jax_cast[:2] == [254, 255] and jax_cast != numpy_cast  # clamped on this CPU


def test_timed_functions_agree(book):
    """The three timed workloads compute the same result in NumPy and JAX."""
    g = glued(book, "numpy")
    assert g["horner_agrees"] is True and g["chain_agrees"] is True
    assert g["gram_agrees"] is True


def test_refs(book):
    """A Ref is written in place under jit, is never returned from jit
    (jax-ml/jax#26349), and refuses a float32 write into int32 (jax-ml/jax#27683)."""
    g = glued(book, "numpy")
    assert g["ref_hits"] == {"type": "Ref", "value": [1.0, 0.0, 2.0, 1.0], "read": True}
    assert "mutable array references cannot be returned" in raised(book, "numpy")["ValueError"]
    assert g["ref_int_write"] == {
        "+= 1.5": "ValueError",
        "kept": [1, 1, 1],
        "final": [2, 2, 2],
        "dtype": "int32",
    }


def test_host_data(book):
    """The list and small-array conversions: verdicts follow the spreads, and the
    prose's reading follows the one-against-a-thousand verdict."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    assert g["host_agrees"] == "float32"
    h = g["host_spreads"]
    for key, base, other in (
        ("list_jnp_vs_numpy", "np.asarray(list)", "jnp.asarray(list)"),
        ("list_via_numpy", "jnp.asarray(list)", "jnp.asarray(np.asarray(list))"),
        ("one_array_vs_numpy", "np.array(one number)", "jnp.array(one number)"),
        ("one_vs_thousand", "jnp.array(1000 numbers)", "jnp.array(one number)"),
    ):
        check_verdict(g[key], h[base], h[other])
        assert g[key] in text, key
    assert "slower" in g["list_jnp_vs_numpy"] and "faster" in g["list_via_numpy"]
    assert "slower" in g["one_array_vs_numpy"]
    same = not re.search("faster|slower", g["one_vs_thousand"])
    assert g["per_array_reading"].startswith("the price is per array") == same
    k_over_one = h["jnp.array(1000 numbers)"][0] / h["jnp.array(one number)"][0]
    if not same:
        most = g["per_array_reading"].startswith("most of the price")
        assert most == (k_over_one < 2)
    assert g["per_array_reading"] in text
    assert g["one_jnp"] in text and g["thousand_jnp"] in text


def test_old_dtype_threads(book):
    """A float16 cast prints (jax-ml/jax#616), and a weakly typed int16 plus 1 is a
    weakly typed int32, not a TypeError (jax-ml/jax#6051)."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    # The thread's float32 array cast to float16 prints as NumPy prints a float16 one.
    assert g["half_print"] == f"{np.ones(1, np.float16)} float16" == "[1.] float16"
    assert f"printed {g['half_print']}" in " ".join(text.split())


def test_loop_of_small_operations(book):
    """jax-ml/jax#20326's loop: its operation count, the agreement of the three
    versions, and verdicts that follow the spreads."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    ops, n_lat = g["loop_ops"], g["loop_n_lat"]
    # An empty result, then per latent: three indexings (slice, squeeze), the jitted
    # solve, the product, a squeeze, and the .at update (broadcast, scatter).
    per_latent = ["slice", "squeeze"] * 2 + ["jit"] + ["slice", "squeeze"]
    per_latent += ["dot_general", "squeeze", "broadcast_in_dim", "scatter"]
    assert ops == ["broadcast_in_dim"] + per_latent * n_lat
    assert g["loop_n_ops"] == len(ops) == 1 + 11 * n_lat
    s = g["loop_spreads"]
    for key, base, other in (
        ("loop_jnp_vs_numpy", "NumPy loop", "jnp loop"),
        ("loop_vmap_vs_jnp", "jnp loop", "jit(vmap(one latent))"),
        ("loop_vmap_vs_numpy", "NumPy loop", "jit(vmap(one latent))"),
        ("index_vs_solve", "one cho_solve", "one chol[1]"),
        ("at_vs_solve", "one cho_solve", "one .at[:, 1].set"),
        ("loop_replay", "jnp loop", "loop's jaxpr, replayed"),
    ):
        check_verdict(g[key], s[base], s[other])
        assert g[key] in text, key
    assert "slower" in g["loop_jnp_vs_numpy"] and "faster" in g["loop_vmap_vs_jnp"]
    assert "slower" in g["index_vs_solve"] and "slower" in g["at_vs_solve"]
    # The replayed .at against the eager one: the minima of their rows.
    assert seconds(g["at_replay"]) == pytest.approx(s["its jaxpr, replayed"][3], rel=0.02)
    assert seconds(g["at_min"]) == pytest.approx(s["one .at[:, 1].set"][3], rel=0.02)
    # The average per operation is the loop's median over its operation count.
    assert seconds(g["loop_per_op"]) == pytest.approx(s["jnp loop"][0] / g["loop_n_ops"], rel=0.02)


def test_negative_indices_wrap_before_drop(book):
    """jax-ml/jax#21708: -1 wraps to the last element before mode="drop" applies;
    wrap_negative_indices=False, or an index past the end, drops it."""
    g = glued(book, "numpy")
    x = np.arange(5.0)
    last_set = x.copy()
    last_set[-1] = 99.0  # Python's own wrapping of -1
    w = g["negative_wrap"]
    assert w["set -1 drop"] == last_set.tolist()
    assert w["set -6 drop"] == w["set -1 no wrap"] == x.tolist()  # dropped
    assert w["get -1 no wrap"] == x[0]  # the dynamic_slice clamps -1 to 0
    assert w["get -1 no wrap fill"] == "nan"
    # The thread's slots, recomputed in NumPy with the -1 slots skipped.
    slots, vals = [-1, -1, 0, 1, 2, 3, -1, -1], list(range(8))
    intended = np.full(4, -1)
    for i, v in zip(slots, vals):
        if i >= 0:
            intended[i] = v
    s = g["padded_slots"]
    assert s["no wrap"] == s["past end"] == intended.tolist()
    assert g["padded_slots_fixed"] == str(intended)
    # With wrapping the last element holds a value whose slot wraps to 3.
    assert s["drop"][:3] == intended[:3].tolist()
    assert s["drop"][3] in {v for i, v in zip(slots, vals) if i % 4 == 3}
    assert g["padded_slots_last"] == s["drop"][3] != intended[3]
    assert not {"lt", "add", "select_n"} & set(s["no wrap ops"])
    text = page_text(book, "numpy")
    assert f"competing values, {g['padded_slots_last']} here" in text
    assert f"intended {g['padded_slots_fixed']}" in text
    hrefs = [a.get("href", "") for a in bookcheck.parsed_page(book, "numpy").select("a")]
    assert "https://github.com/jax-ml/jax/issues/21708" in hrefs


def test_create_on_device_and_aliasing(book):
    """jax-ml/jax#8007: device= on jnp.array and jnp.asarray commits like device_put,
    and only device_put shares a NumPy array's memory (64-byte-aligned data)."""
    g = glued(book, "numpy")
    placed = g["created_on_device"]
    assert {dev for dev, _ in placed.values()} == {"cpu:3"}
    committed = {name: c for name, (_, c) in placed.items()}
    assert committed == {
        "jnp.array(host, device=cpu3)": True,
        "jnp.asarray(host, device=cpu3)": True,
        "jnp.zeros(6, device=cpu3)": True,
        "jax.device_put(host, cpu3)": True,
        "jnp.asarray(host), default_device": False,
    }
    shared = g["device_put_aliases"]
    assert len(shared) == 8
    for key, (same, first) in shared.items():
        offset, name = key.split(" ", 1)
        aliases = offset == "0" and not name.startswith("jnp.")
        # A shared buffer shows the later write of -1.0 to the NumPy array.
        assert (same, first) == ((True, -1.0) if aliases else (False, 0.0)), key
    assert shared["0 may_alias=False"] == (True, -1.0)  # jax-ml/jax#37830
    assert shared["0 jnp.asarray(src, device=cpu3)"] == (False, 0.0)
    assert shared["0 jax.device_put(src, cpu3)"] == (True, -1.0)


def test_numpy_int8_matmul_wraps(book):
    """jax-ml/jax#4465: eight products of 50 in int8 wrap as NumPy's int8 does."""
    g = glued(book, "numpy")
    assert g["int8_wrapped"] == int(np.array(8 * 50).astype(np.int8))


def test_list_index_and_subnormals(book):
    """A list as an index is a TypeError; an array of positions gathers. NumPy keeps
    subnormal products, XLA:CPU flushes them, and a jitted x * 1 is no multiply."""
    g = glued(book, "numpy")
    assert g["list_index"] == ["TypeError", np.arange(5.0)[[0, 1]].tolist()]
    tiny = np.array([1e-40, 3e-39], np.float32)
    sub = g["subnormals"]
    # NumPy's products and the untouched input, computed here; the flushed JAX
    # results are the build's claim.
    assert sub["NumPy"] == (tiny * 2).tolist()
    assert sub["jit x*1"] == tiny.tolist()
    assert (tiny * 2 < np.finfo(np.float32).smallest_normal).all()  # subnormal
    assert sub["x*1 compiled has a multiply"] is False


def test_page_faults(book):
    """The fault counts the one-op paragraph cites are the table's: the eager Horner
    chain's fewest over both rounds, the compiled chain's and the donated call's most."""
    g = glued(book, "numpy")
    text = page_text(book, "numpy")
    rounds = g["faults"]
    assert len(rounds) == 2
    eager = min(r["jnp horner"] for r in rounds)
    assert g["faults_eager"] == f"{eager:,.0f}"
    assert g["faults_jit"] == f"{max(r['jit(horner)'] for r in rounds):,.0f}"
    assert g["faults_donated"] == f"{max(r['jit, donated'] for r in rounds):,.0f}"
    # Pages of 4 KiB: the bytes the eager chain touched per call.
    mib = eager * 4096 / 2**20
    assert float(g["faults_eager_bytes"].split()[0]) == pytest.approx(mib, rel=0.05)
    assert f"touched at least {g['faults_eager']} fresh pages" in " ".join(text.split())


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "Python-side checks of the arguments": "review r49 FALSE: a cached jit call checks its arguments in C++",
    "cannot say": "cut in 8b9d0ca: numpy: read the one-op table with a donated jit(x*0.5) row; decide...",
    "mallopt": "cut in 9c31b81: numpy: verdicts only where IQRs separate, busy-machine note; NumPy...",
    "freshly mapped for them": "r48: unbacked; NumPy's page faults depend on allocator history",
    "costly to evaluate": "r48: a sine is not costly in itself; only XLA:CPU's sin is slow here",
    "lost to eager dispatch": "r48: half the eager loop is jnp's Python index translation",
    "cho_solve is a jitted function": "r48: public cho_solve calls the jitted _cho_solve",
    "advised this rewrite": "r48: not verified in the thread",
}
