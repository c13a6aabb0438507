"""The migration chapter: the status column of its table is what running the old calls
shows, every replacement was executed, and the old calls that still exist were run."""

from __future__ import annotations

import re

import numpy as np
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
    "jax.sharding.use_mesh": ("`with jax.sharding.use_mesh", "removed"),
    "jax.experimental.enable_x64": ("`jax.experimental.enable_x64", "removed"),
    "nnx.Optimizer(model, tx)": ("Flax NNX before 0.11", "changed"),
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
    soup = bookcheck.parsed_page(book, "migration")
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
    g = glued(book, "migration")
    # pmap, shard_map and jit with shardings gave the same array; pmap is built on shard_map.
    ways = g["three_ways"]
    assert [spec for spec, _ in ways.values()] == ["P('i',)", "P('x',)", "P('x',)"]
    rows = [r for _, r in ways.values()]
    assert rows[0] == rows[1]
    assert [x for r in rows[2] for x in r] == pytest.approx([x for r in rows[0] for x in r])
    assert all(g["pmap_jaxpr"].values()) and len(g["pmap_jaxpr"]) == 5
    assert g["key_plus_one"].startswith("add does not accept dtypes key<fry>")
    # One row per device along x: device 5 holds row 5 of arange(16).reshape(8, 2).
    assert g["device5_rows"] == [[10.0, 11.0]]
    # Formatted shardings, not raw reprs.
    assert "memory_kind=" not in text
    # make_mesh now defaults to Explicit; Mesh(create_device_mesh) is Auto.
    assert g["axis_types"] == {
        "jax.make_mesh": ["Explicit", "Explicit"],
        "Mesh(create_device_mesh)": ["Auto", "Auto"],
    }
    assert g["explicit_remedies"] == {
        "Explicit mesh": ["float32[16@x]", float(sum(range(16)))],
        "Auto mesh": ["float32[16]", float(sum(range(16)))],
    }
    # The host callback ran inside the program on the concrete values (2 v), and the
    # program returned v + 1 (the claim captured what the callback printed).
    v = np.arange(3.0)
    assert g["debug_callback"] == {"host saw": (2 * v).tolist(), "result": (v + 1).tolist()}
    # A from-import of a removed name is an ImportError naming it.
    assert g["import_error"].startswith("cannot import name 'stax' from 'jax.experimental'")
    # linen vs NNX: the same SGD step from the same weights.
    linen, nnx = g["linen_nnx"]["linen"], g["linen_nnx"]["nnx"]
    assert nnx == pytest.approx(linen, rel=1e-6) and linen[1] < linen[0]
    pickled, restored = g["checkpoint_layouts"]["pickle"], g["checkpoint_layouts"]["orbax"]
    assert pickled == ["SingleDeviceSharding", 1]
    assert restored == ["NamedSharding", "P()", 8]
    # Every visible code cell has output.
    visible = [c for c in cells(book) if "remove-cell" not in c["metadata"].get("tags", [])]
    assert all(c["outputs"] for c in visible[1:])


def test_outputs_read_well_and_show_no_machine_paths(book):
    machine_path = re.compile(r"(?<![\w.])/(?:tmp|work|home|root|usr|var|opt)/")
    for c in cells(book):
        if "remove-cell" in c["metadata"].get("tags", []):
            continue  # not shown: the claims' glued values
        for o in c.get("outputs", []):
            shown = output_text(o)
            assert not machine_path.search(shown), shown
            assert "Array(" not in shown and "PjitFunction" not in shown, shown
            assert not re.search(r"\d\.\d{9,}", shown), shown  # no 17-digit floats


def test_replacements_of_the_added_rows_ran(book):
    text = page_text(book, "migration")
    g = glued(book, "migration")
    # index_update -> .at; tree_multimap -> tree.map on two trees; config object;
    # xla_computation -> lower(...).compiler_ir("hlo"); optimizers -> optax, same step.
    assert g["at_updates"] == {
        "set": [0.0, 7.0, 0.0, 0.0, 0.0],
        "add": [0.0, 2.0, 0.0, 1.0, 0.0],  # index 1 twice: it accumulates
        "v afterwards": [0.0] * 5,
    }
    assert g["config_object"] == {
        "type": "Config",
        "same object": True,
        "jax_num_cpu_devices": 8,
    }
    lowered = g["lowered_facts"]
    assert lowered["HLO module"].startswith("HloModule jit_scaled_sin") and lowered["has a sine"]
    import math

    assert lowered["compiled(1.0)"] == pytest.approx(2 * math.sin(1.0), rel=1e-6)
    steps = g["optimizer_steps"]  # w0 - 0.1 g = [1 - 0.05, -2 - 0.05]
    assert steps["example_libraries"] == pytest.approx([0.95, -2.05])
    assert steps["optax"] == pytest.approx([0.95, -2.05]) and steps["stax.Dense"] is True
    assert "0.949999988" not in text  # no 17-digit floats


def test_callbacks_device_and_explicit_remedy(book):
    g = glued(book, "migration")
    # pure_callback's value flows back into the program (2 x the cumulative product of
    # 1..4); io_callback ran in order, each step's running sum before the addition.
    callbacks = g["callbacks"]
    assert callbacks["pure_callback"] == (2 * np.cumprod(np.arange(1.0, 5.0))).tolist()
    assert callbacks["io_callback"] == 6.0
    assert callbacks["log"] == [[i, float(sum(range(i + 1)))] for i in range(3)]
    # .device of a sharded array is its sharding, not an error.
    assert g["sharded_device"] == ["NamedSharding", list(range(8))]
    # pmap's in_axes=None / out_axes=None / axis_index, rewritten: both totals scalars.
    totals = g["offset_totals"]
    assert totals["pmap"] == totals["shard_map"]  # scalars: their claim


def test_linen_side_looks_like_old_code(book):
    src = source_of_chapter()
    assert 'params=variables["params"]' in src and 'apply_fn({"params": params}' in src
    assert 'params={"params":' not in src


def test_change_log_column(book):
    soup = bookcheck.parsed_page(book, "migration")
    head = [th.get_text() for th in soup.select("table thead th")]
    assert head[:3] == ["Old", "Today", "Status of the old API"] and "Change log" in head[3]
    versions = {
        tr.find_all("td")[0].get_text(): tr.find_all("td")[3].get_text()
        for tr in soup.select("table tbody tr")
    }
    row = next(v for k, v in versions.items() if k.startswith("jax.ops.index_update"))
    assert row == "deprecated 0.2.22, removed 0.3.2"
    row = next(v for k, v in versions.items() if k.startswith("jax.xla_computation"))
    assert row == "deprecated 0.4.30, removed 0.4.34"  # CHANGELOG 0.4.30 and 0.4.34
    row = next(v for k, v in versions.items() if k.startswith("jax.partial"))
    assert row == "removed 0.2.21"  # CHANGELOG 0.2.21: accidental export removed
    # CHANGELOG.md: xla_bridge's functions deprecated under 0.4.32 (not 0.4.31).
    row = next(v for k, v in versions.items() if k.startswith("from jax.lib import xla_bridge"))
    assert row == "deprecated 0.4.32, removed 0.8.0"
    row = next(v for k, v in versions.items() if k.startswith("jax.pmap("))
    assert "0.8.0" in row and "0.10.0" in row
    row = next(v for k, v in versions.items() if k.startswith("jax.tree_leaves"))
    assert row == "deprecated 0.3.15, removed 0.6.0"


def test_answers_added_for_the_question_bank(book):
    values = glued(book, "migration")
    found = probes(book)
    # jax.experimental.maps.Mesh and jax.experimental.PartitionSpec are gone.
    assert found["jax.experimental.maps.Mesh"] == "fails: ModuleNotFoundError"
    assert found["jax.experimental.PartitionSpec"] == "fails: AttributeError"
    # pmap compiled ahead of time returns what a call returns (jax-ml/jax#31910).
    assert values["pmap_compiled_same"] == "tuple"
    # Both give the doubled (8, 4) rows and one sum per row (x is arange(32) as 8 x 4);
    # the claim of pmap_compiled_same also holds only if the values are the same.
    shapes = [(8, 4), (8,)]
    assert values["pmap_compiled_shapes"] == {"pair(x)": shapes, "lower.compile": shapes}
    # shuffle -> permutation: whole rows move; independent=True mixes columns.
    assert values["shuffle_rows_whole"] is True
    shown = values["shuffle_rows"]
    rows = {k: [tuple(r) for r in v] for k, v in shown.items() if k != "permutation(key, 5)"}
    grid = [tuple(range(3 * i, 3 * i + 3)) for i in range(4)]
    assert rows["grid"] == grid
    assert sorted(rows["permutation"]) == grid and rows["permutation"] != grid

    def columns(rs):
        return [sorted(r[j] for r in rs) for j in range(3)]

    assert columns(rows["independent=True"]) == columns(grid)
    assert sorted(rows["independent=True"]) != grid
    assert sorted(shown["permutation(key, 5)"]) == list(range(5))
    # flax's replicate still runs and equals device_put of stacked copies.
    assert values["replicate"] == {
        "shape": [8, 2],
        "device 3": [[0.0, 1.0]],
        "equals stacked": True,
    }


def source_of_chapter():
    from pathlib import Path

    return (Path(__file__).parents[1] / "book" / "migration.md").read_text()


def test_rules_listing_a_name_twice(book):
    """google/flax#1702's rules, `embed` on `model` and else on `data`: NNX keeps the
    last rule of each name, so the activation's `batch` and `embed` both land on
    `data`, which the error names."""
    got = glued(book, "migration")["rules_twice"]
    assert "duplicate entries for `data`" in got["error"]
    assert got["error"].count("'data'") == 2


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "Both are shown in": "the old false cross-reference",
}
