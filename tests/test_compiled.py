"""jaxguide.compiled: what it reads from compiled programs, checked against bytes and
counts computed by hand for small programs on 8 devices (set in conftest.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxguide.compiled import COLLECTIVES, analyze, format_bytes


@pytest.fixture(scope="module")
def mesh():
    assert jax.device_count() == 8
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def rows(mesh, shape=(64, 16), dtype=jnp.float32):
    x = jnp.arange(shape[0] * shape[1], dtype=dtype).reshape(shape)
    return jax.device_put(x, NamedSharding(mesh, P("x")))


def smap(mesh, f, in_specs, out_specs):
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)


def test_psum_of_a_known_array(mesh):
    # Each device holds an (8, 16) float32 block: 8 * 16 * 4 = 512 bytes to all-reduce.
    r = analyze(smap(mesh, lambda a: jax.lax.psum(a, "x"), P("x"), P()), rows(mesh))
    (c,) = r.collectives
    assert (c.kind, c.shapes, c.dtypes) == ("all-reduce", ((8, 16),), ("f32",))
    assert c.operand_bytes == c.result_bytes == 8 * 16 * 4
    assert c.group_size == 8 and not c.in_loop
    assert r.counts() == {"all-reduce": 1} and r.collective_bytes() == 512
    assert r.collective_bytes("all-gather") == 0
    assert "all-reduce of f32[8,16] (512 B per device) over 8 devices" in str(r)


def test_gather_scatter_permute_bytes(mesh):
    x = rows(mesh)
    gather = analyze(
        jax.shard_map(
            lambda a: jax.lax.all_gather(a, "x", tiled=True),
            mesh=mesh,
            in_specs=P("x"),
            out_specs=P(),
            check_vma=False,
        ),
        x,
    )
    (c,) = gather.collectives
    assert c.kind == "all-gather" and c.operand_bytes == 512 and c.result_bytes == 64 * 16 * 4
    scatter = analyze(
        smap(mesh, lambda a: jax.lax.psum_scatter(a, "x", tiled=True), P(), P("x")),
        jnp.ones((64, 16)),
    )
    (c,) = scatter.collectives
    assert c.kind == "reduce-scatter" and c.operand_bytes == 4096 and c.result_bytes == 512
    ring = [(i, (i + 1) % 8) for i in range(8)]
    permute = analyze(smap(mesh, lambda a: jax.lax.ppermute(a, "x", ring), P("x"), P("x")), x)
    (c,) = permute.collectives
    assert c.kind == "collective-permute" and c.operand_bytes == 512 and c.group_size == 8
    a2a = analyze(
        smap(mesh, lambda a: jax.lax.all_to_all(a, "x", 1, 0, tiled=True), P("x"), P("x")), x
    )
    (c,) = a2a.collectives
    assert c.kind == "all-to-all" and c.operand_bytes == 512
    assert {k for r in (gather, scatter, permute, a2a) for k in r.counts()} == set(COLLECTIVES) - {
        "all-reduce"
    }


def test_dtype_sizes_and_groups_on_a_2d_mesh():
    mesh = jax.make_mesh((2, 4), ("d", "m"), axis_types=(AxisType.Auto,) * 2)
    z = jax.device_put(jnp.ones((16, 32), jnp.float32), NamedSharding(mesh, P("d", "m")))
    # Summing over columns reduces across the 4 devices of 'm' only; each holds 8 rows.
    (c,) = analyze(lambda a: a.sum(1), z).collectives
    assert c.kind == "all-reduce" and c.group_size == 4
    assert c.operand_bytes == 8 * 4 and c.shapes == ((8,),)
    # Gathering int8 blocks of (8, 8) along 'm': 8 * 8 bytes sent by each device. (XLA's CPU
    # backend widens bf16 collectives to f32, so a 1-byte integer type shows the size.)
    zb = z.astype(jnp.int8)
    g = jax.shard_map(
        lambda a: jax.lax.all_gather(a, "m", axis=1, tiled=True),
        mesh=mesh,
        in_specs=P("d", "m"),
        out_specs=P("d", None),
        check_vma=False,
    )
    (c,) = analyze(g, zb).collectives
    assert (c.kind, c.dtypes, c.group_size) == ("all-gather", ("s8",), 4)
    assert c.operand_bytes == 8 * 8 and c.result_bytes == 8 * 32


def test_elementwise_needs_no_communication(mesh):
    r = analyze(lambda a: jnp.sin(a) * 2.0, rows(mesh))
    assert r.collectives == () and r.counts() == {} and "collectives: 0" in str(r)
    assert r.argument_bytes == r.output_bytes == 512  # per device


def test_fusions_list_the_fused_ops():
    r = analyze(lambda x: jnp.sin(x) * 2.0 + 1.0, jnp.ones((4, 256)))
    assert len(r.fusions) == 1 and r.fusions[0].ops == ("sine", "multiply", "add")
    assert r.flops is not None and r.flops >= 4 * 256 * 2


def test_donation_shows_as_aliased_bytes():
    x = jnp.zeros(1024)
    assert analyze(jax.jit(lambda x: x + 1.0), x).alias_bytes == 0
    assert analyze(jax.jit(lambda x: x + 1.0, donate_argnums=0), x).alias_bytes == 4096


def test_collective_in_a_loop_is_marked(mesh):
    def body(c, _):
        return c + jax.lax.pmean(c, "x"), None

    f = smap(mesh, lambda a: jax.lax.scan(body, a, None, length=3)[0], P("x"), P("x"))
    (c,) = analyze(f, rows(mesh)).collectives
    assert c.in_loop and c.kind == "all-reduce"


def test_reduction_after_a_loop_is_not_in_it(mesh):
    """Gradient accumulation's pattern: sum in a scan, all-reduce once after it."""

    def per_device(a):
        total, _ = jax.lax.scan(lambda c, row: (c + row, None), jnp.zeros_like(a[0]), a)
        return jax.lax.psum(total, "x")

    (c,) = analyze(smap(mesh, per_device, P("x"), P()), rows(mesh)).collectives
    assert c.kind == "all-reduce" and not c.in_loop
    assert c.shapes == ((16,),) and c.operand_bytes == 16 * 4


def test_abstract_arguments(mesh):
    spec = jax.ShapeDtypeStruct((64, 16), jnp.float32, sharding=NamedSharding(mesh, P("x")))
    r = analyze(smap(mesh, lambda a: jax.lax.psum(a, "x"), P("x"), P()), spec)
    assert r.collective_bytes("all-reduce") == 512


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"analyze\(f=.*\): f must be a function"):
        analyze(3, jnp.ones(3))
    r = analyze(lambda x: x, jnp.ones(3))
    with pytest.raises(
        ValueError, match=r"collective_bytes\(kind=.allreduce.\): kind must be one of .all-reduce."
    ):
        r.collective_bytes("allreduce")


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (512, "512 B"), (4096, "4 KiB"), (1536, "1.5 KiB"), (3 * 2**20, "3 MiB")],
)
def test_format_bytes(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf")])
def test_format_bytes_rejects(bad):
    with pytest.raises(
        ValueError, match=r"format_bytes\(n=(-1.0|nan|inf)\): n must be (a finite number|>= 0)"
    ):
        format_bytes(bad)
    with pytest.raises(
        TypeError, match=r"format_bytes\(n='12'\): n must be a real number, got str"
    ):
        format_bytes("12")


def test_group_size_formats():
    from jaxguide._hlo import group_size as _group_size

    assert _group_size("replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}") == 4
    assert _group_size("replica_groups=[2,4]<=[8], dimensions={0}") == 4
    assert _group_size("replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}") == 2
    assert _group_size("replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, x") == 4
    assert _group_size("replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_0','axis_1'}, x") == 8
    assert _group_size("source_target_pairs={{0,1},{1,2},{2,0}}") == 3
    assert _group_size("replica_groups={}, to_apply=%add", devices=8) == 8  # one group: all
    assert _group_size("channel_id=1, to_apply=%add", devices=8) == 8


def test_instructions_reads_a_loop_body_and_refuses_a_missing_computation():
    from jaxguide.compiled import instructions

    def body(i, c):
        return jnp.tanh(c) @ c

    hlo = (
        jax.jit(lambda x: jax.lax.fori_loop(0, 3, body, x))
        .lower(jnp.ones((4, 4)))
        .compile()
        .as_text()
    )
    (loop,) = instructions(hlo, op="while")
    inside = instructions(hlo, computation=loop.attr("body"))
    assert [i.dims for i in inside if i.op == "dot"] == [(4, 4)]
    assert all(i.computation == loop.attr("body") for i in inside)
    assert not loop.entry and all(not i.entry for i in inside)
    entry = instructions(hlo, computation="ENTRY")
    assert entry and all(i.entry for i in entry)
    assert len(instructions(hlo)) > len(entry) + len(inside)
    with pytest.raises(ValueError, match="no such computation"):
        instructions(hlo, computation="nowhere")
    with pytest.raises(TypeError, match="op"):
        instructions(hlo, op=3)
    with pytest.raises(TypeError, match="hlo"):
        instructions(None)
