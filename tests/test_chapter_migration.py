"""The migration chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations


import pytest

from bookcheck import load, page_text, source

pytestmark = pytest.mark.book


def test_migration(book):
    text = page_text(book, "migration")
    for new in ("jax.Array", "NamedSharding", "jax.shard_map", "jax.tree.map", "jax.set_mesh", "jax.random.key"):
        assert new in text
    # Every replacement was executed: one code cell per table row plus set-up, all with output.
    nb = load(book.notebook("migration"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "remove-cell" not in c["metadata"].get("tags", [])]
    assert len(code) >= 13 and all(c["outputs"] for c in code[2:])
    # No old API is executed.
    for old in ("tree_map(", "device_put_sharded", "device_put_replicated", "PositionalSharding", "pjit(", "colab_tpu", "xla_bridge", "check_rep"):
        assert not any(old in source(c) for c in code), old
