"""The pytrees chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import pytest

from bookcheck import glued, page_text

pytestmark = pytest.mark.book


def test_pytrees_numbers(book):
    g = glued(book, "pytrees")
    # {"layers": [{w, b}, {w, b=None}], "scale": (2.0, array)}: None is no leaf.
    assert g["n_leaves"] == g["n_structure_leaves"] == 2 + 1 + 2
    # tree.reduce over ones_like: one per entry (6 + 3 + 3 + 1 + 1).
    assert g["sq_norm"] == "14"
    assert g["bad_leaf"] == "[1]['w']"
    widths = (2, 16, 16, 3)
    assert g["mlp_params"] == sum(a * b + b for a, b in zip(widths, widths[1:]))
    assert 0 <= g["optax_gap_value"] < 1e-6
    gap = g["optax_gap"]
    assert gap == "0 (bit for bit equal)" if g["optax_gap_value"] == 0 else float(gap) < 1e-6


def test_pytrees_demonstrations(book):
    text = page_text(book, "pytrees")
    # Structure, with None as an empty node.
    assert "PyTreeDef({'layers': [{'b': *, 'w': *}, {'b': None, 'w': *}], 'scale': (*, *)})" in text
    # The mismatched-structure error, read in the prose.
    assert "ValueError" in text and "('bias', 'w')" in text and "tree_map tree" in text
    # Key paths name the NaN leaf, in both spellings.
    assert "[1]['w'] (3, 1) finite: False" in text and "1/w" in text
    # An unregistered class is a leaf, and grad refuses it.
    assert "leaves of [Point(1., 2.)]: [Point(x=1.0, y=2.0)]" in text
    assert "leaves of [PointTuple(1., 2.)]: [1.0, 2.0]" in text
    assert "TypeError" in text and "is not a valid JAX type" in text
    # register_dataclass: the static field lives in the structure.
    assert "PyTreeDef(CustomNode(Dense[('relu',)], [*, *]))" in text
    assert "PyTreeDef(CustomNode(Polar[0.25], [*]))" in text
    assert "gradient: Dense, Dense(w=(2, 3), b=(3,), activation='relu')" in text
    # is_leaf stops at shape tuples; jit retraces when a static field changes.
    assert "leaves of the shapes tree: [3, 2, 3, 3, 1]" in text and "round trip: True" in text
    assert "3 calls, traced for: ['relu', 'tanh']" in text
    # None is an empty node unless is_leaf says otherwise.
    assert "{'b': None, 'w': 'leaf'}" in text and "{'b': 'leaf', 'w': 'leaf'}" in text
    # Pytree in_axes for vmap.
    assert "(6, 3) (5, 6, 3) (5, 6, 3)" in text
    # tree.map over five trees stacks them.
    assert "stacked: Dense(w=(5, 2, 3), b=(5, 3), activation='relu')" in text
    # Sorted dict keys, insertion-ordered OrderedDict, and mixed keys refused.
    assert "dict: [2, 1]" in text and "OrderedDict: [1, 2]" in text
    assert "Comparator raised exception while sorting pytree dictionary keys" in text
    # Key objects behind a path; unnamed children of register_pytree_node.
    assert "(SequenceKey(idx=1), DictKey(key='w'))" in text
    assert "list index: 1, dict key: 'w'" in text
    assert "['[<flat index 0>]']" in text
    # Arrays in auxiliary data; unflatten that validates its children.
    assert "first call: [1. 1.]" in text
    assert "Exception raised while checking equality of metadata fields" in text
    assert "CheckedUnit jit TracerBoolConversionError" in text
    assert "CheckedUnit tree.map(jnp.shape) TypeError" in text
    assert "Unit jit [1.2 1.6]" in text and "Unit tree.map(jnp.shape) (2,)" in text
    # in_axes: a tuple per argument, and static fields must match.
    assert "vmap in_axes must be an int, None, or a tuple of entries" in text
    assert "different pytree metadata" in text and "('tanh',)" in text
    assert "Dense(w=0, b=0, activation='tanh')" in text and "(5, 6, 3)" in text
    assert "global norm after clipping: 0.1000" in text
    # The tree.map optimizer works on another model's tree unchanged.
    assert "the same update on the Dense layer: Dense(w=(2, 3), b=(3,), activation='relu')" in text
