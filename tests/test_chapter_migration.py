"""The migration chapter: the status column of its table is what running the old calls
shows, every replacement was executed, and the old calls that still exist were run."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

import bookcheck
from bookcheck import errors, glued, load, output_text, page_text

pytestmark = pytest.mark.book

# Which executed probe (left) backs each row of the table (the row's first cell starts
# with the key on the right), and the status the table must then state.
ROWS = {
    "jax.pmap": ("`jax.pmap(", "works"),
    "jax.numpy.DeviceArray": ("`DeviceArray`", "removed"),
    "pxla.ShardedDeviceArray": ("`DeviceArray`", "removed"),
    "jax.tools.colab_tpu": ("`jax.tools.colab_tpu", "removed"),
    "jax.lib.xla_bridge": ("`from jax.lib import xla_bridge`", "removed"),
    "mesh_utils.create_device_mesh": ("`mesh_utils.create_device_mesh", "works"),
    "jax.sharding.PositionalSharding": ("`jax.sharding.PositionalSharding`", "removed"),
    "jax.experimental.maps.Mesh": ("`jax.experimental.maps.Mesh`", "removed"),
    "jax.experimental.PartitionSpec": ("`jax.experimental.maps.Mesh`", "removed"),
    "jax.experimental.shard_map": ("`from jax.experimental.shard_map", "deprecated"),
    "jax.tree_map": ("`jax.tree_map`", "removed"),
    "jax.tree_leaves": ("`jax.tree_leaves`", "removed"),
    "jax.tree_flatten": ("`jax.tree_leaves`", "removed"),
    "jax.tree_unflatten": ("`jax.tree_leaves`", "removed"),
    "jax.tree_structure": ("`jax.tree_leaves`", "removed"),
    "jax.random.shuffle": ("`jax.random.shuffle(", "removed"),
    "jax.device_put_sharded": ("`jax.device_put_sharded`", "removed"),
    "jax.jit(f, backend='cpu')": ('`jax.jit(f, backend="cpu")`', "deprecated"),
    "with mesh:": ("`with mesh:`", "deprecated"),
    "jax.experimental.pjit.pjit": ("`jax.experimental.pjit.pjit`", "deprecated"),
    "x.device()": ("`x.device()`", "changed"),
    "jax.experimental.host_callback": ("`jax.experimental.host_callback", "removed"),
    "jax.random.KeyArray": ("`jax.random.KeyArray`", "removed"),
    "jax.experimental.maps.xmap": ("`jax.experimental.maps.xmap`", "removed"),
    "jax.experimental.loops": ("`jax.experimental.loops`", "removed"),
    "flax.training.train_state.TrainState": ("Flax linen `TrainState`", "works"),
    "jax.ops.index_update": ("`jax.ops.index_update(", "removed"),
    "jax.config (module)": ("`from jax.config import config`", "removed"),
    "jax.tree_util.tree_multimap": ("`jax.tree_util.tree_multimap`", "removed"),
    "jax.experimental.optimizers": ("`jax.experimental.optimizers`", "removed"),
    "jax.experimental.stax": ("`jax.experimental.optimizers`", "removed"),
    "jax.xla_computation": ("`jax.xla_computation(", "removed"),
    "jax.partial": ("`jax.partial(", "removed"),
}
# What a probe's printed result means.
MEANING = {
    "works": "works",
    "deprecated: runs, but warns": "deprecated",
    "fails: AttributeError": "removed",
    "fails: ModuleNotFoundError": "removed",
    "fails: TypeError": "changed",
}


def cells(book):
    nb = load(book.notebook("migration"))
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def table(book) -> dict[str, str]:
    soup = bookcheck.soup(book, "migration")
    rows = {}
    for tr in soup.select("table tbody tr"):
        tds = tr.find_all("td")
        code = "".join(str(c) for c in tds[0].contents)
        rows[tds[0].get_text()] = (BeautifulSoup(code, "html.parser"), tds[2].get_text())
    return rows


def probes(book) -> dict[str, str]:
    """What running each old API did, as the chapter's claim glued it."""
    return glued(book, "migration")["statuses"]


def test_status_column_is_what_the_old_calls_do(book):
    found = probes(book)
    rows = table(book)
    assert set(ROWS) <= set(found), set(ROWS) - set(found)
    for probe, (row_start, status) in ROWS.items():
        assert MEANING[found[probe]] == status, (probe, found[probe])
        # The table row says the same, in its status column.
        matching = [
            s for text, (_, s) in rows.items() if text.startswith(row_start.replace("`", ""))
        ]
        assert matching, row_start
        assert status in matching[0].lower() or (
            status == "removed" and "removed" in matching[0]
        ), (row_start, matching[0])
    assert found["jax.random.PRNGKey(0)"] == "works"


def test_required_rows_are_in_the_table(book):
    text = " ".join(table(book))
    for old in (
        "jax.pmap",
        "Flax linen",
        "pickle",
        "mesh_utils.create_device_mesh",
        "xla_force_host_platform_device_count",
        "host_callback",
        "jax.make_mesh(shape, names)",
    ):
        assert old in text, old


def test_old_calls_ran_and_failed_as_the_prose_says(book):
    """The deprecated and removed calls were executed under raises-exception."""
    raised = {e.source: e.name for e in errors(book, "migration")}
    by_call = {
        "from jax.experimental.shard_map import shard_map": "DeprecationWarning",
        "with mesh:\n        pass": "DeprecationWarning",
        "jax.tree_map(": "AttributeError",
        'jax.config.update("jax_num_cpu_devices", 4)': "RuntimeError",
        'explicit = jax.make_mesh((8,), ("x",))': "ValueError",
    }
    for call, ename in by_call.items():
        hits = [e for src, e in raised.items() if call in src]
        assert hits == [ename], (call, hits)
    assert len(raised) == len(by_call)


def test_replacements_run_and_agree(book):
    text = page_text(book, "migration")
    for new in (
        "jax.Array",
        "NamedSharding",
        "jax.shard_map",
        "jax.tree.map",
        "jax.set_mesh",
        "jax.random.key",
    ):
        assert new in text
    # pmap, shard_map and jit with shardings gave the same array; pmap is built on shard_map.
    assert re.search(
        r"pmap P\('i',\) rows 0-1: (\[.*?\]\]) shard_map P\('x',\) rows 0-1: \1 jit P\('x',\) rows 0-1: \1",
        text,
    )
    assert "shard_map[" in text and "psum[axes=('i',)" in text
    # Both ways of asking for CPU devices gave 4 in a fresh process.
    assert (
        "XLA_FLAGS before start: device count 4" in text
        and "jax_num_cpu_devices config: device count 4" in text
    )
    assert "XLA_FLAGS after start: device count 1" in text  # ignored without a word
    assert "its warnings (stderr): none" in text
    assert "key + 1: TypeError: add does not accept dtypes key<fry>" in text
    # Formatted shardings, not raw reprs.
    assert "device 5 holds [[10.0, 11.0]]" in text and "memory_kind=" not in text
    # pmean became a psum followed by a division, inside a jit.
    assert re.search(r"= div \w+ 8", text) and re.search(r"= (p?jit)\[", text)
    # pmap's jaxpr: a shard_map whose per-device block [1,4] is squeezed, pmean as psum.
    assert (
        re.search(r"jaxpr=\{ lambda ; \w+:f32\[1,4\]\. let", text)
        and "squeeze[dimensions=(0,)]" in text
    )
    # make_mesh now defaults to Explicit; Mesh(create_device_mesh) is Auto.
    assert "jax.make_mesh(...) axis types: (Explicit, Explicit)" in text
    assert "Mesh(create_device_mesh(...)) axis types: (Auto, Auto)" in text
    assert (
        "Explicit mesh, input float32[16@x]: total 120" in text
        and "Auto mesh, plain input float32[16]: total 120" in text
    )
    # host callback, linen vs NNX (same losses), pickle vs orbax.
    assert "host sees [0. 2. 4.]" in text and "result [1. 2. 3.]" in text
    linen = re.search(r"linen \+ TrainState: loss (\S+) -> (\S+)", text)
    nnx = re.search(r"NNX \+ nnx.Optimizer: loss (\S+) -> (\S+)", text)
    assert linen and nnx and linen.groups() == nnx.groups() and float(linen[2]) < float(linen[1])
    assert "pickled and back: SingleDeviceSharding on 1 device" in text
    assert "orbax, restored to: NamedSharding P() on 8 devices" in text
    # Every visible code cell has output.
    visible = [c for c in cells(book) if "remove-cell" not in c["metadata"].get("tags", [])]
    assert all(c["outputs"] for c in visible[1:])


def test_outputs_read_well_and_show_no_machine_paths(book):
    machine_path = re.compile(r"(?<![\w.])/(?:tmp|work|home|root|usr|var|opt)/")
    for c in cells(book):
        for o in c.get("outputs", []):
            shown = output_text(o)
            assert not machine_path.search(shown), shown
            assert "Array(" not in shown and "PjitFunction" not in shown, shown
            assert not re.search(r"\d\.\d{9,}", shown), shown  # no 17-digit floats


def test_replacements_of_the_added_rows_ran(book):
    text = page_text(book, "migration")
    # index_update -> .at; tree_multimap -> tree.map on two trees; config object;
    # xla_computation -> lower(...).compiler_ir("hlo"); optimizers -> optax, same step.
    assert "set: [0.0, 7.0, 0.0, 0.0, 0.0]" in text and "add: [0.0, 2.0, 0.0, 1.0, 0.0]" in text
    assert "{'b': 1.0, 'w': [3.0, 3.0]}" in text
    assert "jax.config is a Config" in text and "jax_num_cpu_devices: 8" in text
    assert "from jax import config gives the same object: True" in text
    assert "HloModule jit_scaled_sin" in text and "sine(" in text
    assert re.search(r"example_libraries\.optimizers: \[ ?0\.95 +-2\.05\]", text)
    assert re.search(r"optax: \[ ?0\.95 +-2\.05\]", text)
    assert "example_libraries.stax.Dense: True" in text
    assert "0.949999988" not in text  # no 17-digit floats


def test_callbacks_device_and_explicit_remedy(book):
    text = page_text(book, "migration")
    # pure_callback's value flows back into the program; io_callback ran in order.
    assert "pure_callback: [2.0, 4.0, 12.0, 48.0]" in text
    assert "io_callback: 6.0 log: [(0, 0.0), (1, 1.0), (2, 3.0)]" in text
    assert "Both are shown in" not in text  # the old false cross-reference
    # .device of a sharded array is its sharding, not an error.
    assert "sharded .device: NamedSharding" in text
    # Both remedies for the Explicit-mesh error ran.
    assert "Explicit mesh, input float32[16@x]: total 120" in text
    assert "Auto mesh, plain input float32[16]: total 120" in text
    # pmap's in_axes=None / out_axes=None / axis_index, rewritten.
    assert "total, pmap: () | shard_map: ()" in text


def test_linen_side_looks_like_old_code(book):
    src = source_of_chapter()
    assert 'params=variables["params"]' in src and 'apply_fn({"params": params}' in src
    assert 'params={"params":' not in src


def test_change_log_column(book):
    soup = bookcheck.soup(book, "migration")
    head = [th.get_text() for th in soup.select("table thead th")]
    assert head[:3] == ["Old", "Today", "Status of the old API"] and "Change log" in head[3]
    versions = {
        tr.find_all("td")[0].get_text(): tr.find_all("td")[3].get_text()
        for tr in soup.select("table tbody tr")
    }
    row = next(v for k, v in versions.items() if k.startswith("jax.ops.index_update"))
    assert row == "deprecated 0.2.22, removed 0.3.2"
    row = next(v for k, v in versions.items() if k.startswith("jax.xla_computation"))
    assert row == "removed 0.4.34"
    # CHANGELOG.md: xla_bridge's functions deprecated under 0.4.32 (not 0.4.31).
    row = next(v for k, v in versions.items() if k.startswith("from jax.lib import xla_bridge"))
    assert row == "deprecated 0.4.32, removed 0.8.0"
    row = next(v for k, v in versions.items() if k.startswith("jax.pmap("))
    assert "0.8.0" in row and "0.10.0" in row
    row = next(v for k, v in versions.items() if k.startswith("jax.tree_leaves"))
    assert row == "removed 0.6.0"


def test_answers_added_for_the_question_bank(book):
    text = page_text(book, "migration")
    values = glued(book, "migration")
    found = probes(book)
    # jax.experimental.maps.Mesh and jax.experimental.PartitionSpec are gone.
    assert found["jax.experimental.maps.Mesh"] == "fails: ModuleNotFoundError"
    assert found["jax.experimental.PartitionSpec"] == "fails: AttributeError"
    # pmap compiled ahead of time returns what a call returns (jax-ml/jax#31910).
    assert values["pmap_compiled_same"] == "tuple"
    assert "pair(x) tuple of shapes [(8, 4), (8,)]" in text
    assert "lower.compile tuple of shapes [(8, 4), (8,)]" in text
    assert "same values: True" in text
    # shuffle -> permutation: whole rows move; independent=True mixes columns.
    assert values["shuffle_rows_whole"] is True
    lines = {
        name: re.search(name + r" +((?:\[[\d, ]+\](?: \| )?)+)", text)
        for name in ("grid", "permutation", "independent=True")
    }
    assert all(lines.values()), lines
    rows = {
        k: [tuple(map(int, r.split(", "))) for r in re.findall(r"\[([\d, ]+)\]", m[1])]
        for k, m in lines.items()
    }
    grid = [tuple(range(3 * i, 3 * i + 3)) for i in range(4)]
    assert rows["grid"] == grid
    assert sorted(rows["permutation"]) == grid and rows["permutation"] != grid

    def columns(rs):
        return [sorted(r[j] for r in rs) for j in range(3)]

    assert columns(rows["independent=True"]) == columns(grid)
    assert sorted(rows["independent=True"]) != grid
    assert rows["independent=True"][0] == (6, 7, 2)  # the row the prose quotes
    shuffled = re.search(r"permutation\(key, 5\): \[([\d, ]+)\]", text)
    assert shuffled and sorted(map(int, shuffled[1].split(", "))) == list(range(5))
    # flax's replicate still runs and equals device_put of stacked copies.
    assert "jax_utils.replicate: shape (8, 2), device 3 holds [[0.0, 1.0]]" in text
    assert "equals device_put of 8 stacked copies: True" in text
    # A function without inputs runs where jax.default_device says.
    assert "no inputs, default: [0] | under default_device(devices()[3]): [3]" in text
    # The Lowered compiles and runs: 2 sin(1).
    import math

    ran = re.search(r"lowered\.compile\(\)\(1\.0\) = (\d+\.\d+)", text)
    assert ran and float(ran[1]) == round(2 * math.sin(1.0), 4)


def source_of_chapter():
    from pathlib import Path

    return (Path(__file__).parents[1] / "book" / "migration.md").read_text()
