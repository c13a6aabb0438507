"""Shardings you can see, and the helpers multi-device code repeats.

* :func:`shard_blocks` reads how an array is laid out from its own
  ``addressable_shards``: which block of the index space each device holds.
* :func:`plot_sharding` draws those blocks, coloured by device; a block held by
  several devices (replicated) is hatched, shows all their colours and says so.
* :func:`notation` writes a sharding in the book's notation, ``A[I_x, J_y]``: one
  index letter per array dimension, subscripted by the mesh axes it is split over.
* :func:`make_mesh`, :func:`split_batch` and :func:`shard_batch` check their input and
  say how to fix it.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jax.sharding import NamedSharding, PartitionSpec as P
    >>> from jaxguide.sharding import make_mesh, notation
    >>> mesh = make_mesh((jax.device_count(),), ("x",))
    >>> a = jax.device_put(jnp.zeros((jax.device_count(), 2)), NamedSharding(mesh, P("x")))
    >>> notation(a)
    'A[I_x, J]'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
from jax.sharding import AxisType, NamedSharding, PartitionSpec, Sharding
from jax.sharding import PartitionSpec as P

from jaxguide import _checks, _wcag
from jaxguide._types import Batch

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "Batch",
    "Block",
    "shard_blocks",
    "notation",
    "plot_sharding",
    "show",
    "make_mesh",
    "split_batch",
    "shard_batch",
]

_INDEX_LETTERS = "IJKLMN"
# jax.pmap results are sharded over a mesh axis with this internal name; the notation
# shows it as "pmap".
_PMAP_AXIS, _PMAP_AXIS_LABEL = "_internal_pmap_axis_name", "pmap"


@dataclass(frozen=True)
class Block:
    """One block of an array's index space and the devices holding a copy of it.

    Attributes:
        bounds: one ``(start, stop)`` pair per array dimension.
        devices: the ids of the devices holding this block, sorted.
    """

    bounds: tuple[tuple[int, int], ...]
    devices: tuple[int, ...]

    @property
    def replicated(self) -> bool:
        """Whether more than one device holds the block."""
        return len(self.devices) > 1

    @property
    def shape(self) -> tuple[int, ...]:
        """The block's shape."""
        return tuple(stop - start for start, stop in self.bounds)


def _as_array(arr: object, fn: str) -> Any:
    if not hasattr(arr, "addressable_shards"):
        raise _checks.wrong_type(
            fn, "arr", arr, "a jax.Array", "use jnp.asarray or jax.device_put first"
        )
    return arr


def shard_blocks(arr: jax.Array) -> list[Block]:
    """The blocks of ``arr``'s index space, read from ``arr.addressable_shards``.

    Shards with the same index are merged into one :class:`Block` listing every device
    that holds it, so replication is explicit. Blocks are sorted by position.

    Args:
        arr: a ``jax.Array``.

    Returns:
        One :class:`Block` per distinct block, sorted by position.

    Raises:
        TypeError: ``arr`` is not a ``jax.Array``.

    Example:
        >>> import jax.numpy as jnp
        >>> shard_blocks(jnp.zeros((2, 3)))   # one device holds everything
        [Block(bounds=((0, 2), (0, 3)), devices=(0,))]
    """
    _as_array(arr, "shard_blocks")
    holders: dict[tuple, list[int]] = {}
    for shard in arr.addressable_shards:
        bounds = tuple(tuple(s.indices(dim)[:2]) for s, dim in zip(shard.index, arr.shape))
        holders.setdefault(bounds, []).append(shard.device.id)
    return [Block(b, tuple(sorted(d))) for b, d in sorted(holders.items())]


def _spec_and_mesh(arr_or_sharding: Any) -> tuple[Any, Any]:
    sharding = getattr(arr_or_sharding, "sharding", arr_or_sharding)
    spec = getattr(sharding, "spec", None)
    return spec, getattr(sharding, "mesh", None)


def _index_letters(indices: str | Sequence[str] | None, ndim: int, where: str) -> tuple[str, ...]:
    if indices is None:
        if ndim > len(_INDEX_LETTERS):
            raise ValueError(
                f"{where}: at most {len(_INDEX_LETTERS)} dimensions get default index letters, "
                f"got {ndim}; pass indices=... with one letter per dimension."
            )
        return tuple(_INDEX_LETTERS[:ndim])
    if isinstance(indices, str):
        letters = tuple(indices)
    else:
        try:
            letters = tuple(indices)
        except TypeError:
            raise TypeError(
                f"{where}: indices must be a string such as 'KN' or a sequence of strings, "
                f"got {indices!r}."
            ) from None
    if not all(isinstance(l, str) and l for l in letters):
        raise TypeError(
            f"{where}: indices must be a string such as 'KN' or a sequence of non-empty "
            f"strings, got {indices!r}."
        )
    if len(letters) != ndim:
        raise ValueError(
            f"{where}: indices gives {len(letters)} index letter(s) {letters!r} for an array "
            f"of {ndim} dimension(s); give exactly one per dimension."
        )
    return letters


def notation(
    arr_or_sharding: jax.Array | jax.ShapeDtypeStruct | Sharding | PartitionSpec,
    name: str = "A",
    ndim: int | None = None,
    *,
    indices: str | Sequence[str] | None = None,
) -> str:
    """The book's notation for a sharding: ``A[I_x, J]`` for ``P('x', None)``.

    Each array dimension gets an index letter (I, J, K, ... unless ``indices`` says
    otherwise); a dimension split over mesh axes gets them as a subscript (``I_xy``
    for ``P(('x', 'y'))``, ``I_{data,model}`` when a name is longer than a letter); a
    dimension without subscript is whole on every device.
    ``A[I, J]`` on a mesh therefore means fully replicated. A single-device array has
    no mesh: ``A[I, J] (one device)``. A ``jax.pmap`` result's internal device axis is
    written ``pmap``: ``A[I_pmap, J]``. The notation is the one of "How to Scale Your
    Model" (https://jax-ml.github.io/scaling-book/sharding/).

    Args:
        arr_or_sharding: a ``jax.Array`` (or ``jax.ShapeDtypeStruct``), a sharding,
            or a ``PartitionSpec`` such as ``P('x', None)`` (written without the
            "(one device)" note: a spec always means a mesh).
        name: the array's name in the notation.
        ndim: number of dimensions, when a sharding (not an array) is given and its
            spec is shorter than the array's rank.
        indices: the index letters, one per dimension: a string (``"KN"``) or a
            sequence of strings (``("B", "K")``). Default: ``I, J, K, ...``, so a
            weight matrix contracted over its rows can read ``W[K_x, N]``.

    Returns:
        The notation as a string.

    Raises:
        ValueError: ``indices`` does not give one letter per dimension, or the array
            has more dimensions than default letters.
        TypeError: ``arr_or_sharding`` is not an array, a sharding or a
            ``PartitionSpec``, or ``indices`` is neither a string nor a sequence of
            strings.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = make_mesh((jax.device_count(),), ("x",))
        >>> w = jax.device_put(jnp.zeros((jax.device_count(), 3)), NamedSharding(mesh, P("x")))
        >>> notation(w, "W", indices="KN")
        'W[K_x, N]'
    """

    if isinstance(arr_or_sharding, PartitionSpec):
        spec, mesh = arr_or_sharding, None
    elif isinstance(arr_or_sharding, Sharding) or (
        hasattr(arr_or_sharding, "sharding") and hasattr(arr_or_sharding, "ndim")
    ):
        spec, mesh = _spec_and_mesh(arr_or_sharding)
    else:
        raise TypeError(
            f"notation({arr_or_sharding!r:.60}): expected a jax.Array, a sharding or a "
            f"PartitionSpec, got {type(arr_or_sharding).__name__}; pass e.g. "
            "jax.device_put(x, NamedSharding(mesh, P('x'))) or P('x', None)."
        )
    _checks.string("notation", "name", name, example="'W'")
    if ndim is not None:
        ndim = _checks.count("notation", "ndim", ndim, example=2)
    else:
        ndim = getattr(arr_or_sharding, "ndim", None)
    if ndim is None:
        ndim = len(spec) if spec is not None else 0
    letters = _index_letters(indices, ndim, "notation")
    entries = list(spec) if spec is not None else []
    entries += [None] * (ndim - len(entries))
    dims = []
    for letter, entry in zip(letters, entries):
        axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        axes = tuple(_PMAP_AXIS_LABEL if a == _PMAP_AXIS else a for a in axes)
        if len(axes) > 1 and any(len(a) > 1 for a in axes):
            axes = ("{" + ",".join(axes) + "}",)  # I_{data,model}, not I_datamodel
        dims.append(letter + ("_" + "".join(axes) if axes else ""))
    text = f"{name}[{', '.join(dims)}]"
    return text if mesh is not None or spec is not None else text + " (one device)"


# One colour per device (tab10's hues, darkened where needed) in the matplotlib picture
# and in JAX's text picture alike. White labels reach at least 4.5:1 contrast (WCAG AA)
# on every one, and each is dark enough that JAX's text picture, which picks black or
# white text by brightness, picks white. tests/test_sharding.py measures the contrast
# of every label in both pictures.
DEVICE_COLORS = (
    "#1f77b4",
    "#b35900",
    "#2a7d2a",
    "#d62728",
    "#8c5fb8",
    "#8c564b",
    "#b8418f",
    "#6b6b6b",
    "#6f6f10",
    "#127f8c",
)
# Replicated blocks in the matplotlib picture: hatched light grey, label on a white box.
_HATCH_FACE, _HATCH_LINES, _LABEL_BOX_ALPHA = "#f0f0f0", "#b0b0b0", 0.85


_Color = (
    str | tuple[float, float, float] | tuple[float, float, float, float]
)  # a hex string or an RGB(A) tuple in 0..1


def _device_colors(ids: Iterable[int]) -> dict[int, str]:
    return {i: DEVICE_COLORS[i % len(DEVICE_COLORS)] for i in ids}


def _contrast(a: _Color, b: _Color) -> float:
    """WCAG 2 contrast ratio of two colours (any matplotlib colour), 1 to 21."""
    from matplotlib.colors import to_rgb

    return _wcag.contrast(to_rgb(a), to_rgb(b))


def _label_color(background: _Color) -> str:
    """Black or white, whichever contrasts more with ``background``."""
    return (
        "#000000"
        if _contrast("#000000", background) >= _contrast("#ffffff", background)
        else "#ffffff"
    )


class _TextPictureColors:
    """A ``color_map`` for ``jax.debug.visualize_array_sharding`` that gives each block
    its device's colour from :data:`DEVICE_COLORS`, so both pictures agree. JAX asks for
    one colour per block, row by row; a block held by several devices gets the colour
    of the first of them."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        self._colors = [DEVICE_COLORS[b.devices[0] % len(DEVICE_COLORS)] for b in blocks] or [
            DEVICE_COLORS[0]
        ]
        self._calls = 0

    def __call__(self, value: float) -> tuple[float, ...]:
        from matplotlib.colors import to_rgb

        color = self._colors[self._calls % len(self._colors)]
        self._calls += 1
        # JAX turns the floats back into bytes by truncation: a quarter step up keeps each byte.
        return tuple(min(1.0, (round(c * 255) + 0.25) / 255) for c in to_rgb(color)) + (1.0,)


def plot_sharding(
    arr: jax.Array,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    name: str = "A",
    indices: str | Sequence[str] | None = None,
) -> Axes:
    """Draw how ``arr`` (1-D or 2-D) is split over devices. Returns the ``Axes``.

    Each block of the index space is a rectangle coloured by the device that holds it
    and labelled ``D<id>``. A replicated block is hatched, carries one colour chip per
    holding device and is labelled with all of them and ``×n``. Ticks mark block edges.
    The title is the book's notation (:func:`notation`, with ``name`` and ``indices``).

    Args:
        arr: a 1-D or 2-D ``jax.Array``.
        ax: the matplotlib ``Axes`` to draw on (default: a new figure).
        title: the title (default: the notation, dtype, shape and spec).
        name, indices: the array's name and index letters, as in :func:`notation`.

    Returns:
        The ``Axes``.

    Raises:
        TypeError: ``arr`` is not a ``jax.Array``.
        ValueError: ``arr`` has neither 1 nor 2 dimensions.

    Example:
        >>> import jax, jax.numpy as jnp, matplotlib.pyplot as plt
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = make_mesh((jax.device_count(),), ("x",))
        >>> a = jax.device_put(jnp.zeros((jax.device_count(), 2)), NamedSharding(mesh, P("x")))
        >>> ax = plot_sharding(a, name="W")
        >>> ax.get_title().startswith("W[I_x, J]")
        True
        >>> plt.close(ax.figure)
    """
    import matplotlib.pyplot as plt

    _as_array(arr, "plot_sharding")
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"plot_sharding: arrays of 1 or 2 dimensions only, got shape {arr.shape}. Reshape it, or plot a slice."
        )
    blocks = shard_blocks(arr)
    rows, cols = (1, arr.shape[0]) if arr.ndim == 1 else arr.shape
    if ax is None:
        aspect = rows / cols if arr.ndim == 2 else 0.15
        width = 4.2
        height = min(max(width * aspect, 0.9), 4.2)
        _, ax = plt.subplots(figsize=(width, height + 0.5), layout="constrained")
    colors = _device_colors({d for b in blocks for d in b.devices})
    for b in blocks:
        _draw_block(ax, b, colors, arr.ndim)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    edges_c = sorted({e for b in blocks for e in (b.bounds[-1])})
    ax.set_xticks(edges_c)
    if arr.ndim == 2:
        ax.set_yticks(sorted({e for b in blocks for e in b.bounds[0]}))
        ax.set_ylabel("row")
    else:
        ax.set_yticks([])
    ax.set_xlabel("column" if arr.ndim == 2 else "index")
    ax.tick_params(labelsize=8)
    spec, _ = _spec_and_mesh(arr)
    heading = title or f"{notation(arr, name, indices=indices)}   {arr.dtype}{list(arr.shape)}"
    if spec is not None and not title:
        heading += f"\n{spec}"
    ax.set_title(heading, fontsize=9)
    return ax


def _draw_block(ax: Axes, b: Block, colors: dict[int, str], ndim: int) -> None:
    """One block of :func:`plot_sharding`: its device's colour, or a hatched block with a
    chip per device when replicated, an outline, and its label."""
    from matplotlib.patches import Rectangle

    (r0, r1), (c0, c1) = ((0, 1), b.bounds[0]) if ndim == 1 else b.bounds
    n = len(b.devices)
    if n == 1:
        ax.add_patch(Rectangle((c0, r0), c1 - c0, r1 - r0, facecolor=colors[b.devices[0]]))
    else:
        # Replicated: a hatched block with one colour chip per holding device along
        # its bottom edge, so that it cannot be mistaken for a split.
        ax.add_patch(
            Rectangle(
                (c0, r0),
                c1 - c0,
                r1 - r0,
                facecolor=_HATCH_FACE,
                hatch="//",
                edgecolor=_HATCH_LINES,
                linewidth=0,
            )
        )
        band = 0.22 * (r1 - r0)
        w = (c1 - c0) / n
        for k, dev in enumerate(b.devices):
            ax.add_patch(
                Rectangle(
                    (c0 + k * w, r1 - band),
                    w,
                    band,
                    facecolor=colors[dev],
                    edgecolor="white",
                    linewidth=0.5,
                )
            )
    ax.add_patch(
        Rectangle((c0, r0), c1 - c0, r1 - r0, fill=False, edgecolor="black", linewidth=1.2)
    )
    if n == 1:
        # Straight on the device's colour, in black or white, whichever contrasts more.
        label = f"D{b.devices[0]}"
        style: dict[str, Any] = {"color": _label_color(colors[b.devices[0]])}
    else:
        # In black on a white box over the hatching.
        if n <= 4:
            label = " ".join(f"D{d}" for d in b.devices) + f"\nreplicated ×{n}"
        else:
            label = f"D{b.devices[0]}…D{b.devices[-1]}\nreplicated ×{n}"
        box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": _LABEL_BOX_ALPHA}
        style = {"color": "#000000", "bbox": {**box, "linewidth": 0}}
    ax.text(
        (c0 + c1) / 2,
        (r0 + r1) / 2,
        label,
        ha="center",
        va="center",
        fontsize=8,
        fontweight="bold",
        **style,
    )


def make_mesh(
    shape: int | Sequence[int], names: str | Sequence[str], *, explicit: bool = False
) -> jax.sharding.Mesh:
    """A device mesh over all devices, with its axis mode stated rather than defaulted.

    Args:
        shape: mesh shape, e.g. ``(8,)`` or ``(4, 2)``; its product must equal
            ``jax.device_count()``.
        names: one axis name per dimension, e.g. ``("x",)`` or ``("x", "y")``.
        explicit: ``False`` (default) gives ``AxisType.Auto`` axes: the compiler
            propagates shardings. ``True`` gives ``AxisType.Explicit`` axes: shardings
            are part of array types (``jax.typeof``) and ambiguous results are errors.

    Returns:
        A ``jax.sharding.Mesh`` over all ``jax.devices()``.

    Raises:
        TypeError: ``shape`` is not ints, ``names`` not strings, ``explicit`` not a bool.
        ValueError: a size below 1, names that are not one distinct non-empty string
            per dimension, or a shape whose product is not ``jax.device_count()``.

    Example:
        >>> import jax
        >>> mesh = make_mesh((jax.device_count(),), "x")
        >>> mesh.axis_names, mesh.axis_types[0].name
        (('x',), 'Auto')
    """

    shape = _checks.positive_ints("make_mesh", "shape", shape, example="(4, 2)")
    names = _checks.strings(
        "make_mesh",
        "names",
        (names,) if isinstance(names, str) else names,
        what="a tuple of axis names (str)",
        example="('x', 'y')",
        kinds=Sequence,
    )
    if len(names) != len(shape) or not all(names) or len(set(names)) != len(names):
        raise ValueError(
            f"make_mesh(names={names!r}): names must be {len(shape)} distinct non-empty strings, one per mesh "
            f"dimension of shape {shape}; pass e.g. {('x', 'y', 'z')[: len(shape)]!r}."
        )
    explicit = _checks.boolean("make_mesh", "explicit", explicit)
    needed, have = math.prod(shape), jax.device_count()
    if needed != have:
        raise ValueError(
            f"make_mesh: a mesh of shape {shape} needs {needed} devices, but JAX has {have}. "
            f"Use a shape whose product is {have} (e.g. ({have},)), or restart and call "
            f"jaxguide.setup_devices({needed}) first."
        )
    kind = AxisType.Explicit if explicit else AxisType.Auto
    return jax.make_mesh(shape, names, axis_types=(kind,) * len(shape))


def _batch_size(tree: Batch, what: str) -> int:
    leaves = jax.tree.leaves(tree)
    if not leaves or any(getattr(l, "ndim", 0) < 1 for l in leaves):
        raise ValueError(f"{what}: expected arrays with a leading batch axis, got {tree!r:.80}.")
    sizes = {l.shape[0] for l in leaves}
    if len(sizes) != 1:
        raise ValueError(
            f"{what}: all arrays must have the same batch size, got leading sizes {sorted(sizes)}."
        )
    return sizes.pop()


def split_batch(batch: Batch, n_devices: int | None = None) -> Batch:
    """Reshape every array of a batch from ``(B, ...)`` to ``(n_devices, B // n_devices, ...)``,
    the layout ``jax.pmap`` expects: one leading slice per device.

    Args:
        batch: one array or a pytree of arrays with the same leading size ``B``.
        n_devices: how many slices (default: ``jax.device_count()``).

    Returns:
        The batch with every array reshaped.

    Raises:
        TypeError: ``n_devices`` is not an int.
        ValueError: ``n_devices < 1``, arrays without a common leading size, or a
            ``B`` that does not divide by ``n_devices``.

    Example:
        >>> import numpy as np
        >>> x, y = split_batch((np.zeros((8, 3)), np.zeros(8)), n_devices=4)
        >>> x.shape, y.shape
        ((4, 2, 3), (4, 2))
    """

    if n_devices is None:
        n = jax.device_count()
    else:
        n = _checks.positive_int("split_batch", "n_devices", n_devices, example=8)
    size = _batch_size(batch, "split_batch")
    _checks.divides("split_batch", "batch", size, n)
    return jax.tree.map(lambda a: a.reshape(n, size // n, *a.shape[1:]), batch)


def shard_batch(batch: Batch, mesh: jax.sharding.Mesh, axis: str | tuple[str, ...] = "x") -> Batch:
    """Put every array of a batch on ``mesh``, split along its first axis over the mesh
    axis ``axis`` (or a tuple of axes) and replicated over the others.

    Args:
        batch: one array or a pytree of arrays with the same leading size.
        mesh: a ``jax.sharding.Mesh``.
        axis: the mesh axis (or tuple of axes) to split the leading axis over.

    Returns:
        The batch as ``jax.Array``s sharded ``P(axis)`` on ``mesh``.

    Raises:
        TypeError: ``mesh`` is not a ``jax.sharding.Mesh``, or ``axis`` is not a
            name or a tuple of names.
        ValueError: ``axis`` is not an axis of ``mesh``, or the batch does not divide
            across it.

    Example:
        >>> import jax, numpy as np
        >>> mesh = make_mesh((jax.device_count(),), "x")
        >>> x = shard_batch(np.zeros((2 * jax.device_count(), 3)), mesh)
        >>> x.sharding.spec
        P('x',)
    """
    _checks.mesh("shard_batch", "mesh", mesh)
    axes = _checks.mesh_axes("shard_batch", "axis", axis, mesh)
    parts = math.prod(mesh.shape[a] for a in axes)
    _checks.divides("shard_batch", "batch", _batch_size(batch, "shard_batch"), parts)
    return _shard_batch(batch, mesh, axes)


def _shard_batch(batch: Batch, mesh: jax.sharding.Mesh, axes: tuple[str, ...]) -> Batch:
    """:func:`shard_batch` with its arguments already checked: ``train.fit`` checks the
    mesh, the axes and the batch size once, not at every step."""

    return jax.device_put(batch, NamedSharding(mesh, P(axes[0] if len(axes) == 1 else axes)))


def show(arr: jax.Array, name: str = "A", *, indices: str | Sequence[str] | None = None) -> None:
    """Show a sharding three ways: the book's notation with ``jax.typeof``, JAX's own
    text picture (``jax.debug.visualize_array_sharding``) and :func:`plot_sharding`.

    Returns nothing, so that a notebook cell ending in ``show(x)`` displays the figure
    and not the ``Axes`` object's repr; use :func:`plot_sharding` for the ``Axes``.
    ``name`` and ``indices`` choose the array's name and index letters, as in
    :func:`notation`.

    Args:
        arr: a 1-D or 2-D ``jax.Array``.
        name, indices: as in :func:`notation`.

    Returns:
        Nothing; it prints and draws.

    Raises:
        TypeError: ``arr`` is not a ``jax.Array``.
        ValueError: ``arr`` has neither 1 nor 2 dimensions.

    Example:
        >>> import jax, jax.numpy as jnp, matplotlib.pyplot as plt
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = make_mesh((jax.device_count(),), ("x",))
        >>> a = jax.device_put(jnp.zeros((jax.device_count(), 2)), NamedSharding(mesh, P("x")))
        >>> show(a)  # doctest: +ELLIPSIS
        A[I_x, J]    jax.typeof: float32[...
        >>> plt.close("all")
    """

    _as_array(arr, "show")
    print(f"{notation(arr, name, indices=indices)}    jax.typeof: {jax.typeof(arr)}")
    # Each block in its device's colour, as in the picture below (DEVICE_COLORS).
    jax.debug.visualize_array_sharding(arr, color_map=_TextPictureColors(shard_blocks(arr)))
    plot_sharding(arr, name=name, indices=indices)
