"""The random chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from bs4 import BeautifulSoup

from bookcheck import glued, page_text

pytestmark = pytest.mark.book


def test_random(book):
    g = glued(book, "random")
    expected = {"normal": 0.0, "uniform": 0.5, "gamma": 2.0, "beta": 2 / 7, "poisson": 3.0}
    for name, mean in expected.items():
        assert g["mean_" + name] == pytest.approx(mean, abs=0.03), name
    text = page_text(book, "random")
    assert "correlation: 1.0000" in text  # the key-reuse bug, shown
    assert "key<fry>" in text and "uint32 (2,)" in text
    assert "is a typed key? True False" in text
    corr = float(re.search(r"2-D normal: sample correlation (-?[\d.]+)", text).group(1))
    assert corr == pytest.approx(0.8, abs=0.03)
    # The pi exercise's bug: one key for x and y gives 4 / sqrt(2).
    wrong = float(re.search(r"with one key for x and y: ([\d.]+)", text).group(1))
    assert wrong == pytest.approx(4 / np.sqrt(2), abs=0.02)
    soup = BeautifulSoup(book.page("random"), "html.parser")
    assert len(soup.select("div.cell_output img")) >= 1


def test_random_key_reuse_checker(book):
    nb = json.loads(book.notebook("random").read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    raised = [
        (i, o)
        for i, c in enumerate(cells)
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]
    # Arithmetic on a typed key, then the reuse checker.
    assert [o["ename"] for _, o in raised] == ["TypeError", "KeyReuseError"]
    assert "add does not accept dtypes key<fry>" in raised[0][1]["evalue"]
    assert "legacy + 1: [1 1]" in page_text(book, "random")
    i = raised[1][0]
    assert 'jax_debug_key_reuse", True' in "".join(cells[i]["source"])
    # The next cell runs correct code with the checker on, then switches it off.
    after = "".join(cells[i + 1]["source"])
    assert after.rstrip().endswith('jax.config.update("jax_debug_key_reuse", False)')
    assert "split keys: no error with the checker on" in page_text(book, "random")
    # The checker in compiled code is in the debugging chapter: linked.
    soup = BeautifulSoup(book.page("random"), "html.parser")
    hrefs = {a.get("href", "").split("#")[0] for a in soup.select("a.reference")}
    assert "debugging.html" in hrefs


def test_random_outputs_formatted(book):
    nb = json.loads(book.notebook("random").read_text())
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            text = o.get("text", "") if o["output_type"] == "stream" else ""
            text = "".join(text)
            assert not re.search(r"\d\.\d{7,}", text), text  # no raw float reprs
    text = page_text(book, "random")
    m = re.search(r"first call: (\[[^]]*\]) second call: (\[[^]]*\])", text)
    assert m and m.group(1) == m.group(2)
    # The key-reuse checker catches the global key, not the constant seed.
    assert "constant seed, two calls: no error" in text
    assert "global key, second call: Previously-consumed key passed to jit" in text
    # ... and the same numbers as the flag demonstration's default (True).
    assert f"with True: {m.group(1)}" in text
    # NumPy's sequential equivalence, shown.
    m = re.search(r"NumPy, one call: (\[[^]]*\]) NumPy, one by one: (\[[^]]*\])", text)
    assert m and m.group(1) == m.group(2)
    # The key-reuse checker catches the global key, not the constant seed.
    assert "constant seed, two calls: no error" in text
    assert "global key, second call: Previously-consumed key passed to jit" in text


def test_random_per_device_and_versions(book):
    import jax

    text = page_text(book, "random")
    assert text.count("8 different rows from 8 devices") == 1
    assert "row i is normal(fold_in(key, i)): True" in text
    assert "the same rows as the split way: True" in text
    assert "sharded over 8 devices: P('devices',)" in text
    assert "same numbers as on one device: True" in text
    # The compiled program: no collective with the flag on, some with it off.
    assert "collectives, jax_threefry_partitionable on: {}" in text
    off = re.search(r"jax_threefry_partitionable off: \{([^}]*)\}", text).group(1)
    assert "all-gather" in off or "collective-permute" in off
    assert glued(book, "random")["block_bytes"] == 4 * 4
    assert "bytes of output per device: 16" in text
    # The flag demonstration, recomputed here.
    key = jax.random.key(42)
    now = np.asarray(jax.random.normal(key, (3,)))
    with jax.threefry_partitionable(False):
        before = np.asarray(jax.random.normal(key, (3,)))
    assert "jax_threefry_partitionable = True" in text
    for values in (now, before):
        assert " ".join(np.array2string(values, precision=4).split()) in text
    assert not np.array_equal(now, before)
    assert "split(key, 8)[i] == fold_in(key, i): True False" in text


def test_random_sharded_work_is_split(book):
    text = page_text(book, "random")
    g = glued(book, "random")
    # One device hashes the whole (8, 4) array of counters; each of 8 devices its row.
    listing = text.split("bytes of output per device: 16")[-1]
    whole, per_device = listing.split(" 8 devices ", 1)
    assert "collectives {}" in whole and "'u32[8,4]'" in whole
    per_device = per_device.split("On one device")[0]
    assert "collectives {}" in per_device and "'u32[1,4]'" in per_device
    assert "'u32[8,4]'" not in per_device
    assert float(g["flops_ratio"]) > 4
    # With the flag off the numbers still do not depend on the layout.
    assert "flag off, same numbers as on one device: True" in text


def test_random_in_compiled_code(book):
    text = page_text(book, "random")
    # A constant key inside jit: every call draws the same numbers.
    m = re.search(r"call 1: (\[[^]]*\]) call 2: (\[[^]]*\])", text)
    assert m and m.group(1) == m.group(2)
    # The key-reuse checker catches the global key, not the constant seed.
    assert "constant seed, two calls: no error" in text
    assert "global key, second call: Previously-consumed key passed to jit" in text
    steps = re.findall(r"step (\d): (\[[^]]*\])", text)
    assert [s for s, _ in steps] == ["0", "1", "2"]
    assert len({v for _, v in steps}) == 3  # each call drew other noise
    assert "same as the Python loop: True" in text
    # The other generators: four-word keys, other numbers from the same seed.
    assert "rbg key<rbg> key data (4,)" in text
    assert "unsafe_rbg key<urbg> key data (4,)" in text
    assert "threefry2x32 key<fry> key data (2,)" in text


def test_random_means_in_standard_errors(book):
    g = glued(book, "random")
    assert float(g["largest_z"]) < 4
    text = page_text(book, "random")
    assert "mean exact z" in text
