"""jaxguide.sharding, in-process on the 8 simulated CPU devices conftest.py sets up."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxguide.sharding import (
    make_mesh,
    notation,
    plot_sharding,
    shard_batch,
    shard_blocks,
    show,
    split_batch,
)

matplotlib.use("Agg")
A = jnp.arange(64.0).reshape(8, 8)


@pytest.fixture(scope="module")
def mesh():
    return make_mesh((4, 2), ("x", "y"))


@pytest.fixture(scope="module")
def put(mesh):
    return lambda spec: jax.device_put(A, NamedSharding(mesh, spec))


def expected_blocks(arr):
    """Independent reading of addressable_shards: index -> set of device ids."""
    out = {}
    for s in arr.addressable_shards:
        key = tuple(sl.indices(n)[:2] for sl, n in zip(s.index, arr.shape))
        out.setdefault(key, set()).add(s.device.id)
    return out


@pytest.mark.parametrize("spec", [P("x", None), P(None, "y"), P("x", "y"), P(), P(("x", "y"))])
def test_blocks_agree_with_addressable_shards_and_tile_the_array(put, spec):
    arr = put(spec)
    blocks = shard_blocks(arr)
    assert {b.bounds: set(b.devices) for b in blocks} == expected_blocks(arr)
    assert sum(np.prod(b.shape) for b in blocks) == A.size  # each element exactly once
    for b in blocks:
        (r0, r1), (c0, c1) = b.bounds
        shard = next(s for s in arr.addressable_shards if s.device.id == b.devices[0])
        np.testing.assert_array_equal(shard.data, A[r0:r1, c0:c1])


def test_blocks_make_replication_explicit(put):
    rows = shard_blocks(put(P("x", None)))
    assert len(rows) == 4 and all(b.replicated and len(b.devices) == 2 for b in rows)
    assert [b.devices for b in rows] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    full = shard_blocks(put(P()))
    assert len(full) == 1 and full[0].devices == tuple(range(8))
    tiles = shard_blocks(put(P("x", "y")))
    assert len(tiles) == 8 and not any(b.replicated for b in tiles)


def test_notation_of_arrays(put):
    assert notation(put(P("x", None))) == "A[I_x, J]"
    assert notation(put(P("x", "y")), name="W") == "W[I_x, J_y]"
    assert notation(put(P(("x", "y")))) == "A[I_xy, J]"
    assert notation(put(P())) == "A[I, J]"
    assert notation(jnp.ones((2, 3))) == "A[I, J] (one device)"
    assert notation(jax.pmap(lambda r: r)(jnp.ones((8, 2)))) == "A[I_pmap, J]"
    # The caller chooses the index letters; the default is unchanged.
    assert notation(put(P("x", None)), "W", indices="KN") == "W[K_x, N]"
    assert notation(put(P(None, "y")), "x", indices=("B", "K")) == "x[B, K_y]"
    s1 = jax.jit(lambda a: a.sum(axis=0))(put(P("x", "y")))
    assert notation(s1, "s", indices="J") == "s[J_y]"
    assert notation(s1, "s") == "s[I_y]"


def test_notation_errors(put):
    with pytest.raises(ValueError, match=r"1 index letter\(s\).*2 dimension\(s\)"):
        notation(put(P()), indices="K")
    with pytest.raises(TypeError, match="indices must be a string"):
        notation(put(P()), indices=3)
    with pytest.raises(TypeError, match=r"notation\(name=3\): name must be a str"):
        notation(put(P()), name=3)


def test_plot_sharding_labels_each_block_and_calls_out_replication(put, mesh):
    import matplotlib.pyplot as plt

    ax = plot_sharding(put(P("x", None)), name="W", indices="KN")
    assert ax.get_title().startswith("W[K_x, N]"), ax.get_title()
    ax = plot_sharding(put(P("x", None)))
    labels = [t.get_text() for t in ax.texts]
    assert labels == [f"D{2 * i} D{2 * i + 1}\nreplicated ×2" for i in range(4)], labels
    assert "A[I_x, J]" in ax.get_title()
    ax = plot_sharding(put(P("x", "y")))
    assert sorted(t.get_text() for t in ax.texts) == [f"D{i}" for i in range(8)]
    ax = plot_sharding(jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("x"))))
    assert len(ax.texts) == 4 and list(ax.get_xticks()) == [0, 4, 8, 12, 16]
    plt.close("all")
    assert show(put(P("x", "y"))) is None  # nothing for a notebook to echo ...
    assert plt.gcf().axes[0].get_title().startswith("A[I_x, J_y]")  # ... but the figure is drawn
    plt.close("all")


def test_plot_sharding_errors():
    with pytest.raises(TypeError, match=r"plot_sharding\(arr=...\): arr must be a jax.Array"):
        plot_sharding(np.zeros(3))
    with pytest.raises(ValueError, match="1 or 2 dimensions"):
        plot_sharding(jnp.zeros((2, 2, 2)))


def test_split_and_shard_batch(mesh):
    assert split_batch(jnp.zeros((16, 3))).shape == (8, 2, 3)
    xy = split_batch((jnp.zeros((16, 3)), jnp.zeros(16)))
    assert xy[0].shape == (8, 2, 3) and xy[1].shape == (8, 2)
    assert split_batch(jnp.zeros((6, 1)), n_devices=3).shape == (3, 2, 1)
    sb = shard_batch(jnp.zeros((12, 5)), mesh, "x")
    assert sb.sharding.spec == P("x") and {s.data.shape for s in sb.addressable_shards} == {(3, 5)}
    both = shard_batch(jnp.zeros((16, 5)), mesh, ("x", "y"))
    assert {s.data.shape for s in both.addressable_shards} == {(2, 5)}


def test_batch_helper_errors(mesh):
    with pytest.raises(
        ValueError,
        match=r"batch of 10 examples does not divide across 8 devices.*multiple of 8 \(e.g. 16 or 8\)",
    ):
        split_batch(jnp.zeros((10, 3)))
    with pytest.raises(ValueError, match="batch of 6 examples does not divide across 8 devices"):
        shard_batch(jnp.zeros((6, 2)), mesh, ("x", "y"))
    with pytest.raises(ValueError, match="same batch size"):
        split_batch((jnp.zeros((8, 3)), jnp.zeros(16)))
    with pytest.raises(
        ValueError,
        match=r"shard_batch\(axis='z'\): the mesh has axes \('x', 'y'\); 'z' is not among them",
    ):
        shard_batch(jnp.zeros((8, 2)), mesh, "z")
    with pytest.raises(TypeError, match=r"shard_batch\(axis=3\): axis must be a mesh axis name"):
        shard_batch(jnp.zeros((8, 2)), mesh, 3)
    with pytest.raises(TypeError, match=r"split_batch\(n_devices=2.0\): n_devices must be an int"):
        split_batch(jnp.zeros((8, 2)), n_devices=2.0)


def test_make_mesh(mesh):
    assert make_mesh((8,), "x", explicit=True).axis_types == (jax.sharding.AxisType.Explicit,)
    assert make_mesh((2, 4), ("a", "b")).axis_types == (jax.sharding.AxisType.Auto,) * 2
    assert make_mesh(8, "x").shape == {"x": 8}


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        (
            ((4, 4), ("x", "y")),
            {},
            ValueError,
            r"needs 16 devices, but JAX has 8.*setup_devices\(16\)",
        ),
        (
            ((8,), ("x", "y")),
            {},
            ValueError,
            r"make_mesh\(names=\('x', 'y'\)\): names must be 1 distinct",
        ),
        (((4, 2), ("x", "x")), {}, ValueError, "names must be 2 distinct"),
        (
            ((0, 8), ("x", "y")),
            {},
            ValueError,
            r"make_mesh\(shape=\(0, 8\)\): shape must be a non-empty tuple of ints >= 1",
        ),
        (
            ((8.0,), ("x",)),
            {},
            TypeError,
            r"make_mesh\(shape=\(8.0,\)\): shape must hold ints only",
        ),
        (("8", ("x",)), {}, TypeError, r"make_mesh\(shape='8'\): shape must be a tuple of ints"),
        (
            ((8,), (1,)),
            {},
            TypeError,
            r"make_mesh\(names=...\): names must be a tuple of axis names \(str\), got int",
        ),
        (
            ((8,), "x"),
            {"explicit": 1},
            TypeError,
            r"make_mesh\(explicit=1\): explicit must be True or False",
        ),
    ],
)
def test_make_mesh_errors(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        make_mesh(*args, **kwargs)


# ------------------------------------------------- silent wrong results (issue 17)


def test_notation_reads_a_partition_spec_as_a_spec():
    from jax.sharding import PartitionSpec as P

    from jaxguide.sharding import notation

    assert notation(P("x", None)) == "A[I_x, J]"
    assert notation(P(("x", "y"))) == "A[I_xy]"
    # Longer names stay readable: braces and a comma, not "I_datamodel".
    assert notation(P(("data", "model"), None)) == "A[I_{data,model}, J]"
    assert notation(P("data", "model")) == "A[I_data, J_model]"
    assert notation(P("x"), "W", ndim=2) == "W[I_x, J]"
    assert notation(P(None, "y"), indices="BK") == "A[B, K_y]"


@pytest.mark.parametrize("bad", ["abc", 3, None, [0.0, 1.0]])
def test_notation_refuses_what_is_not_an_array_sharding_or_spec(bad):
    from jaxguide.sharding import notation

    with pytest.raises(
        TypeError, match=r"notation\(.*\): expected a jax.Array, a sharding or a PartitionSpec"
    ):
        notation(bad)


def test_notation_of_a_sharding_object_and_an_abstract_array():
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxguide.sharding import make_mesh, notation

    mesh = make_mesh((8,), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    assert notation(sharding, ndim=2) == "A[I_x, J]"
    assert notation(jax.ShapeDtypeStruct((8, 3), jnp.float32, sharding=sharding)) == "A[I_x, J]"
    assert notation(jnp.ones((2, 3))) == "A[I, J] (one device)"
    with pytest.raises(ValueError, match=r"notation\(ndim=-1\): ndim must be an int >= 0"):
        notation(sharding, ndim=-1)


def test_shard_batch_refuses_what_is_not_a_mesh():
    import jax.numpy as jnp

    from jaxguide.sharding import shard_batch

    with pytest.raises(
        TypeError, match=r"shard_batch\(mesh=None\): mesh must be a jax.sharding.Mesh"
    ):
        shard_batch(jnp.zeros((8, 2)), None)
    with pytest.raises(
        TypeError, match=r"shard_batch\(mesh=\(8,\)\): mesh must be a jax.sharding.Mesh"
    ):
        shard_batch(jnp.zeros((8, 2)), (8,))


# ------------------------------------------------- label contrast (issue 16)
# WCAG 2 contrast, computed here independently of jaxguide.sharding's own helpers.


def _luminance(color) -> float:
    from matplotlib.colors import to_rgb

    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _wcag_contrast(a, b) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _over(top, alpha: float, bottom):
    """``top`` drawn with opacity ``alpha`` over ``bottom`` (RGB tuples in 0..1)."""
    from matplotlib.colors import to_rgb

    return tuple(alpha * t + (1 - alpha) * b for t, b in zip(to_rgb(top), to_rgb(bottom)))


def _contrast_arrays():
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxguide.sharding import make_mesh

    mesh = make_mesh((4, 2), ("x", "y"))
    a = jnp.arange(64.0).reshape(8, 8)
    specs = [P("x", "y"), P("y", "x"), P(("x", "y")), P("x"), P(None, "y"), P()]
    arrays = [jax.device_put(a, NamedSharding(mesh, s)) for s in specs]
    line = make_mesh((8,), ("x",))
    arrays.append(jax.device_put(jnp.arange(16.0), NamedSharding(line, P("x"))))
    return arrays


def test_device_palette_takes_white_labels_at_4_5_to_1():
    from jaxguide.sharding import DEVICE_COLORS

    assert len(set(DEVICE_COLORS)) == len(DEVICE_COLORS) >= 8
    low = {
        c: round(_wcag_contrast("#ffffff", c), 2)
        for c in DEVICE_COLORS
        if _wcag_contrast("#ffffff", c) < 4.5
    }
    assert low == {}, f"white labels below 4.5:1 on {low}"


def test_picture_labels_contrast_with_their_blocks():
    """Every label of plot_sharding against what is drawn behind it (the block's colour;
    for a label on a translucent box, the box over the block and over its hatching)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from jaxguide.sharding import plot_sharding

    checked, low = 0, []
    for arr in _contrast_arrays():
        ax = plot_sharding(arr)
        for text in ax.texts:
            x, y = text.get_position()
            behind = [
                p
                for p in ax.patches
                if isinstance(p, Rectangle) and p.get_fill() and p.get_bbox().contains(x, y)
            ]
            assert behind, f"no block behind label {text.get_text()!r}"
            block = behind[-1]
            face = _over(block.get_facecolor()[:3], block.get_facecolor()[3], "#ffffff")
            backgrounds = [face]
            if block.get_hatch():
                backgrounds.append(block.get_edgecolor()[:3])  # the hatch lines
            box = text.get_bbox_patch()
            if box is not None:
                rgba = box.get_facecolor()
                backgrounds = [_over(rgba[:3], rgba[3], b) for b in backgrounds]
            ratio = min(_wcag_contrast(text.get_color(), b) for b in backgrounds)
            checked += 1
            if ratio < 4.5:
                low.append((text.get_text(), round(ratio, 2)))
        plt.close(ax.figure)
    assert checked >= 30 and low == [], low


_ANSI_COLORS = r"\x1b\[(?:\d+;)*?38;2;(\d+);(\d+);(\d+);48;2;(\d+);(\d+);(\d+)m"


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in rgb)


def test_text_picture_labels_contrast_in_a_terminal_and_in_html(monkeypatch, capsys):
    """show()'s text picture (jax.debug.visualize_array_sharding, drawn by rich): the
    colours it writes to a true-colour terminal and the HTML it gives Jupyter."""
    import re

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import rich.console
    import rich.jupyter

    from jaxguide.sharding import show

    arrays = _contrast_arrays()
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLORTERM", "truecolor")
    monkeypatch.setenv("TERM", "xterm-256color")
    for arr in arrays:
        show(arr)
        plt.close("all")
    terminal = re.findall(_ANSI_COLORS, capsys.readouterr().out)
    # The same pictures as Jupyter receives them: rich's HTML.
    pages = []
    monkeypatch.setattr(rich.console, "_is_jupyter", lambda: True)
    monkeypatch.setattr(
        rich.jupyter,
        "display",
        lambda segments, text: pages.append(rich.jupyter._render_segments(segments)),
    )
    for arr in arrays:
        show(arr)
        plt.close("all")
    capsys.readouterr()
    html = re.findall(
        r"color: (#[0-9a-fA-F]{6})[^\"]*?background-color: (#[0-9a-fA-F]{6})", "".join(pages)
    )
    pairs = {(_hex(m[:3]), _hex(m[3:])) for m in terminal} | {
        (f.lower(), b.lower()) for f, b in html
    }
    assert len(terminal) > 20 and len(html) > 20, (len(terminal), len(html))
    assert len({b for _, b in pairs}) >= 8, pairs  # every device's colour appears
    low = {p: round(_wcag_contrast(*p), 2) for p in pairs if _wcag_contrast(*p) < 4.5}
    assert low == {}, f"labels below 4.5:1: {low}"
