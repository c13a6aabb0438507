"""The pytrees chapter: the values it glued agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import pytest

from bookcheck import errors, glued

pytestmark = pytest.mark.book


@pytest.fixture(scope="module")
def g(book):
    return glued(book, "pytrees")


def shown_errors(book) -> str:
    """What the chapter's raises-exception cells show, "Name: message" per error (the
    prose names most of it too, so the page's text could not tell them apart)."""
    return "\n".join(f"{e.name}: {e.message}" for e in errors(book, "pytrees"))


def test_pytrees_numbers(g):
    # {"layers": [{w, b}, {w, b=None}], "scale": (2.0, array)}: None is no leaf.
    assert g["n_leaves"] == 2 + 1 + 2
    assert g["structure"] == (
        "PyTreeDef({'layers': [{'b': *, 'w': *}, {'b': None, 'w': *}], 'scale': (*, *)})"
    )
    # tree.reduce over ones_like: one per entry (6 + 3 + 3 + 1 + 1).
    assert g["sq_norm"] == "14"
    widths = (2, 16, 16, 3)
    assert g["mlp_params"] == sum(a * b + b for a, b in zip(widths, widths[1:]))
    assert g["package_mlp_same"] is True
    before, after = g["momentum_losses"]
    assert after < before


def test_pytrees_leaves_and_keys(g):
    # is_leaf stops at shape tuples.
    assert g["shape_leaves"] == ([3, 2, 3, 3, 1], [(3,), (2, 3), (3, 1), (), ()])
    # [d.values()]: one leaf (with a DeprecationWarning); [list(d.values())]: two.
    assert g["iterable_leaf"] == (1, len({"w": 0, "b": 0}))
    # Key paths name the NaN leaf, in both spellings; the key objects behind a path.
    assert g["finite_by_path"] == {
        "[0]['b']": True,
        "[0]['w']": True,
        "[1]['b']": True,
        "[1]['w']": False,
    }
    assert g["bad_leaf"] == "[1]['w']"
    # The short form of the path: its keys (index 1, then "w") joined by "/".
    assert g["bad_path_simple"] == "/".join(str(k) for k in g["path_keys"][1:])
    assert g["path_keys"] == ("(SequenceKey(idx=1), DictKey(key='w'))", 1, "w")


def test_pytrees_custom_nodes(book, g):
    text = shown_errors(book)
    # An unregistered class is a leaf (its claim), and grad refuses it.
    assert "TypeError" in text and "is not a valid JAX type" in text
    # register_dataclass: the static field lives in the structure.
    assert g["dense_structure"] == "PyTreeDef(CustomNode(Dense[('relu',)], [*, *]))"
    assert g["polar"] == ("PyTreeDef(CustomNode(Polar[0.25], [*]))", ["[<flat index 0>]"])
    assert g["dense_grads"] == "Dense(w=(2, 3), b=(3,), activation='relu')"
    assert g["traced_for"] == ["relu", "tanh"]
    # Arrays in auxiliary data (the error cell); unflatten that validates its children.
    assert "Exception raised while checking equality of metadata fields" in text
    assert g["rebuilds"] == {
        "CheckedUnit jit": "TracerBoolConversionError",
        "CheckedUnit tree.map(jnp.shape)": "TypeError",
        "Unit jit": "[1.2 1.6]",
        "Unit tree.map(jnp.shape)": "(2,)",
    }


def test_pytrees_transformations(book, g):
    text = shown_errors(book)
    # The mismatched-structure error, read in the prose.
    assert "ValueError" in text and "('bias', 'w')" in text and "tree_map tree" in text
    assert "Comparator raised exception while sorting pytree dictionary keys" in text
    # Pytree in_axes for vmap; tree.map over five trees stacks them.
    assert g["in_axes_shapes"] == ((5, 2, 3), (6, 3), (5, 6, 3), (5, 6, 3))
    # in_axes: a tuple per argument, and static fields must match.
    assert "vmap in_axes must be an int, None, or a tuple of entries" in text
    assert "different pytree metadata" in text and "('tanh',)" in text
    assert g["tanh_spec"] == ("Dense(w=0, b=0, activation='tanh')", (5, 6, 3))
    # The tree.map optimizer works on another model's tree unchanged.
    assert g["dense_update"] == "Dense(w=(2, 3), b=(3,), activation='relu')"
    assert g["weight_counts"] == {"[0]['w']": 32, "[1]['w']": 256, "[2]['w']": 48}


def test_pytrees_mismatches_and_flat_vectors(book, g):
    text = shown_errors(book)
    # A list against a tuple of lists: the roots differ in type (the error cell).
    assert "different types" in text and "<class 'tuple'>" in text
    # pair = [1, 0]; each leaf meets (p, 2p): p - p - 2p.
    assert g["prefix_map"] == [[p - p - 2 * p] * 2 for p in (1.0, 0.0)]
    # The same mistake with a 2-tuple runs: each p meets the whole pair, p - 1 - 0.
    assert g["silent_pair"] == [[p - 1.0 - 0.0] * 2 for p in (1.0, 0.0)]
    # (2, 3) + 3 + (3, 1) + 1 entries.
    assert g["ravel_size"] == 6 + 3 + 3 + 1
    # int32 and bfloat16 leaves share one vector dtype (bfloat16 is the wider float).
    assert g["ravel_dtype"] in ("bfloat16", "float32")
    # A flatten function that returns a list; aux data that differs between trees.
    assert "should return a (children, aux_data) tuple" in text
    assert text.count("different pytree metadata") >= 2


def test_pytrees_transpose_and_registrations(book, g):
    text = shown_errors(book)
    # tree.map over the records raises instead (the error cell).
    assert "+ ('accuracy', 'loss')" in text
    # register_dataclass rebuilds through __init__, which turned (2,) into an array.
    assert g["init_box_shape"] == "Array([2.], dtype=float32)"
    # Registered by attributes: the shape survives; key paths; grad(prod(hi - lo)).
    assert g["attr_box"] == ((2,), [".lo", ".hi"], [2.0, 1.0], "crop")
    # A second registration (the error cell); a subclass is a leaf until registered.
    assert "Duplicate custom PyTreeDef type registration for" in text
    assert g["crop_box"] == (["CropBox"], (2,), 2, ("box",))


def test_pytrees_flax_static_fields(book, g):
    # A static field with a default, in flax.struct.
    assert g["sampler_structure"] == "PyTreeDef(CustomNode(Sampler[(4,)], [*]))"
    # An nnx.Module's static int: a retrace per value; equal hashes, unequal structures.
    assert g["nnx_static"] == ([1, 2], [".w.value"], False, True)


def test_pytrees_merge(book, g):
    """jax-ml/jax#7828: trees split with None merge back with is_leaf, which applies
    to the first tree only; the error's key path then misses the mismatch."""
    model = {"w": 1.0, "b": 0.0, "head": {"w": 2.0, "b": 0.5}}
    merged = g["merge_none"]
    assert merged["round trip"] == model
    orders = g["merge_order"]
    prefix = "ValueError: pytree structure error: different types at key path "
    assert orders["no_dec_w, no_enc"] == prefix + "tree_map tree['dec']['w']"
    assert orders["no_enc, no_dec"] == prefix + "tree_map tree['dec']"
    assert orders["no_dec, no_enc"] == prefix + "tree_map tree['dec']"


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "needs no registration: it is a tuple, so its fields": "review r50 FALSE: a NamedTuple is its own node type, a plain tuple subclass is one leaf",
}
