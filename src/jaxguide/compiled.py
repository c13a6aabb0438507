"""Read what the compiler made of a jitted function.

``jax.jit(f).lower(*args).compile()`` is the program XLA will run: after sharding
propagation, SPMD partitioning (every shape in it is *per device*), fusion and
scheduling. :func:`analyze` compiles ``f`` for example arguments and reports, from that
program,

* every collective (all-reduce, all-gather, reduce-scatter, all-to-all,
  collective-permute) with its operand shapes, dtypes and bytes per device;
* every fusion, with the operations XLA fused into it;
* FLOPs and bytes accessed from ``cost_analysis()``;
* argument, output, temporary and aliased bytes per device from ``memory_analysis()``.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxguide.compiled import analyze
    >>> report = analyze(lambda x: jnp.sin(x) * 2.0 + 1.0, jnp.ones((4, 256)))
    >>> report.collectives       # one device: nothing to communicate
    ()
    >>> [f.ops for f in report.fusions]
    [('sine', 'multiply', 'add')]
    >>> report.argument_bytes, report.output_bytes
    (4096, 4096)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jaxguide import _checks, _hlo
from jaxguide._hlo import Instruction

__all__ = [
    "Collective",
    "Fusion",
    "ProgramReport",
    "analyze",
    "format_bytes",
    "COLLECTIVES",
    # Where a collective comes from: its HLO line, the jax call that made it, the pass.
    "hlo_line",
    "op_name",
    "pass_of",
    "scopes_of",
    "parameter_of",
    # Every instruction of a program's HLO text, for chapters that read it.
    "Instruction",
    "instructions",
    "collectives",
]

#: The collective operations :func:`analyze` reports, by their HLO names.
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")

# Bits per element of each HLO element type.
# Operations that carry no computation of their own inside a fusion.
_NOT_WORK = {"parameter", "constant"}


def format_bytes(n: float) -> str:
    """Format a byte count with a binary unit: ``'512 B'``, ``'4 KiB'``, ``'1.5 MiB'``.

    Args:
        n: a number of bytes, ``>= 0``.

    Returns:
        The count with three significant digits and a unit (B, KiB, MiB, GiB, TiB).

    Raises:
        TypeError: ``n`` is not a number.
        ValueError: ``n`` is negative, NaN or infinite.

    Example:
        >>> format_bytes(512), format_bytes(4096), format_bytes(3 * 2**20 / 2)
        ('512 B', '4 KiB', '1.5 MiB')
    """
    n = _checks.real("format_bytes", "n", n, minimum=0)
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}" if n < 100 else f"{n:.0f} {unit}"
    raise AssertionError("unreachable")


def instructions(
    hlo: str, *, computation: str | None = None, op: str | None = None
) -> list[Instruction]:
    """Every instruction of a program's HLO text, in order, optionally filtered.

    Args:
        hlo: HLO text, for instance ``jax.jit(f).lower(x).compile().as_text()``.
        computation: keep one computation's instructions: its name (from
            :meth:`Instruction.attr`, e.g. a fusion's ``calls`` or a loop's ``body``), or
            ``"ENTRY"`` for the program's entry computation.
        op: keep only instructions of this operation (``"dot"``, ``"fusion"``, ...).

    Returns:
        The instructions, in program order.

    Raises:
        TypeError: ``hlo`` is not a string, or a filter is not a string.
        ValueError: ``hlo`` is empty, or ``computation`` names no computation in it.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> hlo = jax.jit(lambda x: jnp.sin(x) * 2.0).lower(
        ...     jnp.ones((8, 4))).compile().as_text()
        >>> [(i.op, i.dims) for i in instructions(hlo, computation="ENTRY")]
        [('parameter', (8, 4)), ('fusion', (8, 4))]
        >>> fused = instructions(hlo, op="fusion")[0]
        >>> fused.dtype, fused.nbytes, fused.attr("kind")
        ('f32', 128, 'kLoop')
        >>> [i.op for i in instructions(hlo, computation=fused.attr("calls"))]
        ['parameter', 'sine', 'constant', 'broadcast', 'multiply']
    """
    _checks.string("instructions", "hlo", hlo, example="jax.jit(f).lower(x).compile().as_text()")
    for arg, value in (("computation", computation), ("op", op)):
        if value is not None and not isinstance(value, str):
            raise _checks.wrong_type(
                "instructions", arg, value, "a string or None", f"pass {arg}='...'"
            )
    computations, _ = _hlo.parse(hlo)
    if computation is not None:
        name = computation.lstrip("%")
        if name == "ENTRY":
            found = [c for c, ins in computations.items() if ins and ins[0].entry]
        else:
            found = [name] if name in computations else []
        if not found:
            raise ValueError(
                f"instructions(computation={computation!r}): no such computation in hlo "
                f"(it has {len(computations)}, e.g. {sorted(computations)[:3]}); pass "
                "'ENTRY' or a name from Instruction.attr('calls') or attr('body')"
            )
        chosen = computations[found[0]]
    else:
        chosen = [ins for group in computations.values() for ins in group]
    return [ins for ins in chosen if op is None or ins.op == op]


@dataclass(frozen=True)
class Collective:
    """One collective operation in a compiled program. Sizes are per device.

    Attributes:
        kind: one of :data:`COLLECTIVES`.
        shapes: the shape of each operand, as this device holds it.
        dtypes: the element type of each operand (HLO names: ``f32``, ``bf16``, ...).
        operand_bytes: bytes of all operands on one device (what it contributes).
        result_bytes: bytes of the result on one device.
        group_size: devices in each communicating group (for a collective-permute,
            the devices that send or receive); ``None`` if the program does not say.
        name: the instruction's name in the HLO text.
        in_loop: the collective sits in the body of a loop (``while``, from
            ``scan``/``fori_loop``), so it runs once per iteration, not once.
        source_target_pairs: for a collective-permute, the ``(source, target)``
            device pairs it sends along, in HLO's order; ``()`` for the other kinds.
    """

    kind: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    operand_bytes: int
    result_bytes: int
    group_size: int | None
    name: str
    in_loop: bool = False
    source_target_pairs: tuple[tuple[int, int], ...] = ()

    @property
    def operands(self) -> str:
        """The operands as HLO spells them, repeats counted: ``'f32[8,16]'``, ``'8 × f32[8,2]'``."""
        spelled = [_hlo.spell(d, s) for d, s in zip(self.dtypes, self.shapes)]
        runs: list[list] = []
        for item in spelled:
            if runs and runs[-1][0] == item:
                runs[-1][1] += 1
            else:
                runs.append([item, 1])
        return ", ".join(item if n == 1 else f"{n} × {item}" for item, n in runs)

    def __str__(self) -> str:
        group = f" over {self.group_size} devices" if self.group_size else ""
        loop = ", in a loop" if self.in_loop else ""
        return f"{self.kind} of {self.operands} ({format_bytes(self.operand_bytes)} per device){group}{loop}"


@dataclass(frozen=True)
class Fusion:
    """One fusion: several operations XLA compiled into a single kernel.

    Attributes:
        name: the fusion instruction's name in the HLO text.
        kind: XLA's fusion kind (``kLoop``, ``kInput``, ``kOutput``, ...).
        ops: the HLO operations inside it, in program order (parameters, constants
            and broadcasts of constants left out).
    """

    name: str
    kind: str
    ops: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}): {', '.join(self.ops)}"


@dataclass(frozen=True)
class ProgramReport:
    """What :func:`analyze` read from one compiled program. Bytes are per device.

    Attributes:
        collectives: every collective, in program order.
        fusions: every fusion, in program order.
        flops: floating-point operations per device (``cost_analysis``), or ``None``.
        bytes_accessed: bytes read and written per device (``cost_analysis``), or ``None``.
        argument_bytes, output_bytes, temp_bytes, alias_bytes: from ``memory_analysis``;
            ``alias_bytes`` counts outputs that reuse an input's buffer (donation).
        hlo: the compiled program's HLO text.
    """

    collectives: tuple[Collective, ...]
    fusions: tuple[Fusion, ...]
    flops: float | None
    bytes_accessed: float | None
    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    hlo: str

    def counts(self) -> dict[str, int]:
        """How many collectives of each kind: ``{'all-reduce': 1}``."""
        return dict(Counter(c.kind for c in self.collectives))

    def collective_bytes(self, kind: str | None = None) -> int:
        """Operand bytes per device of every collective (of one ``kind`` if given).

        Raises:
            ValueError: ``kind`` is not one of :data:`COLLECTIVES`.
        """
        if kind is not None:
            _checks.one_of("collective_bytes", "kind", kind, COLLECTIVES)
        return sum(c.operand_bytes for c in self.collectives if kind in (None, c.kind))

    def collectives_table(self) -> str:
        """One aligned line per collective: kind, operands, bytes, group size."""
        if not self.collectives:
            return "no collectives"
        rows = [("collective", "operands (per device)", "bytes", "group")]
        rows += [
            (c.kind, c.operands, format_bytes(c.operand_bytes), str(c.group_size or "?"))
            for c in self.collectives
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join(
            f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:>{widths[3]}}"
            for r in rows
        )

    def __str__(self) -> str:
        n = len(self.collectives)
        lines = [
            f"collectives: {n}"
            + (f", {format_bytes(self.collective_bytes())} per device" if n else "")
        ]
        lines += [f"  {c}" for c in self.collectives]
        lines.append(f"fusions: {len(self.fusions)}")
        lines += [f"  {f}" for f in self.fusions]
        if self.flops is not None:
            lines.append(f"FLOPs per device: {self.flops:,.0f}")
        lines.append(
            "memory per device: "
            f"arguments {format_bytes(self.argument_bytes)}, outputs {format_bytes(self.output_bytes)}, "
            f"temporaries {format_bytes(self.temp_bytes)}, aliased {format_bytes(self.alias_bytes)}"
        )
        return "\n".join(lines)


def _cost(compiled: Any) -> dict[str, float]:
    try:
        cost = compiled.cost_analysis()
    except Exception:  # some backends do not implement it
        return {}
    if isinstance(cost, (list, tuple)):  # older JAX: one dict per program
        cost = cost[0] if cost else {}
    return dict(cost or {})


def collectives(hlo: str) -> tuple[Collective, ...]:
    """Every collective of a program's HLO text, in program order: what :func:`analyze`
    reports as ``collectives``, for a program you already hold as text.

    Args:
        hlo: compiled HLO text, for instance ``jax.jit(f).lower(x).compile().as_text()``.

    Returns:
        One :class:`Collective` per collective instruction.

    Raises:
        TypeError: ``hlo`` is not a string.
        ValueError: ``hlo`` is empty.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = jax.make_mesh((jax.device_count(),), ("x",),
        ...                      axis_types=(jax.sharding.AxisType.Auto,))
        >>> x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
        >>> hlo = jax.jit(lambda x: x.sum()).lower(x).compile().as_text()
        >>> [(c.kind, c.operand_bytes) for c in collectives(hlo)]
        [('all-reduce', 4)]
    """
    _checks.string("collectives", "hlo", hlo, example="jax.jit(f).lower(x).compile().as_text()")
    return _collectives(hlo, *_hlo.parse(hlo))


def _collectives(
    hlo: str, computations: dict[str, list[Instruction]], by_name: dict[str, Instruction]
) -> tuple[Collective, ...]:
    """Every collective of a program (its HLO text, and what :func:`jaxguide._hlo.parse` read from it),
    in program order."""
    partitions = re.search(r"num_partitions=(\d+)", hlo.split("\n", 1)[0])
    devices = int(partitions.group(1)) if partitions else None

    # The -done half of an async collective holds its result; map start -> done.
    done_of = {
        ins.operands[0]: ins
        for ins in by_name.values()
        if ins.op.endswith("-done") and ins.operands
    }
    # Computations that run once per loop iteration: while bodies, and what they call.
    looped: set[str] = set()
    todo = [
        m
        for ins in by_name.values()
        if ins.op == "while"
        for m in re.findall(r"(?:body|condition)=%([\w.\-]+)", ins.attrs)
    ]
    while todo:
        name = todo.pop()
        if name in looped or name not in computations:
            continue
        looped.add(name)
        for ins in computations[name]:
            todo += re.findall(r"(?:calls|to_apply|body|condition)=%([\w.\-]+)", ins.attrs)
            todo += re.findall(
                r"%([\w.\-]+)", "".join(re.findall(r"branch_computations=\{([^}]*)\}", ins.attrs))
            )

    collectives: list[Collective] = []
    for name, instructions in computations.items():
        for ins in instructions:
            op_kind = ins.op.removesuffix("-start")
            if op_kind not in COLLECTIVES:
                continue
            operands = [by_name[o] for o in ins.operands if o in by_name]
            arrays = [a for o in operands for a in _hlo.arrays(o.shape)]
            result = (
                done_of[ins.name].shape
                if ins.op.endswith("-start") and ins.name in done_of
                else ins.shape
            )
            collectives.append(
                Collective(
                    kind=op_kind,
                    shapes=tuple(dims for _, dims in arrays),
                    dtypes=tuple(dt for dt, _ in arrays),
                    operand_bytes=_hlo.nbytes(arrays),
                    result_bytes=_hlo.nbytes(_hlo.arrays(result)),
                    group_size=_hlo.group_size(ins.attrs, devices),
                    name=ins.name,
                    in_loop=name in looped,
                    source_target_pairs=_hlo.pairs(ins.attrs),
                )
            )
    return tuple(collectives)


def analyze(f: Callable[..., Any], *args: Any, **kwargs: Any) -> ProgramReport:
    """Compile ``f`` for these arguments and report what the compiled program does.

    Args:
        f: a function, or a ``jax.jit`` object (use one to pass ``static_argnums``,
            ``donate_argnums``, ``in_shardings``...). A plain function is wrapped in
            ``jax.jit``.
        *args, **kwargs: example arguments: arrays (their shardings are used) or
            ``jax.ShapeDtypeStruct`` s (give them ``sharding=`` for a sharded program).

    Returns:
        A :class:`ProgramReport`. Shapes and bytes are per device, as the partitioned
        program holds them.

    Raises:
        TypeError: ``f`` is not callable.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> step = jax.jit(lambda x: x + 1.0, donate_argnums=0)
        >>> analyze(step, jnp.zeros(1024)).alias_bytes   # the output reuses x's buffer
        4096
    """
    _checks.function("analyze", "f", f, what="a function or a jax.jit object")
    import jax

    jitted = f if hasattr(f, "lower") else jax.jit(f)
    compiled = jitted.lower(*args, **kwargs).compile()
    hlo = compiled.as_text()
    computations, by_name = _hlo.parse(hlo)
    collectives = _collectives(hlo, computations, by_name)

    fusions = []
    for instructions in computations.values():
        for ins in instructions:
            if ins.op != "fusion":
                continue
            called_at = re.search(r"calls=%([\w.\-]+)", ins.attrs)
            kind = re.search(r"kind=(\w+)", ins.attrs)
            body = computations.get(called_at.group(1), []) if called_at else []
            constants = {i.name for i in body if i.op == "constant"}
            ops = tuple(
                i.op
                for i in body
                if i.op not in _NOT_WORK
                # a scalar constant broadcast to a shape is no work of its own
                and not (i.op == "broadcast" and set(i.operands) <= constants)
            )
            fusions.append(Fusion(ins.name, kind.group(1) if kind else "?", ops))

    cost = _cost(compiled)
    try:
        memory = compiled.memory_analysis()
    except Exception:
        memory = None

    def mem(field: str) -> int:
        return int(getattr(memory, field, 0) or 0)

    return ProgramReport(
        collectives=collectives,
        fusions=tuple(fusions),
        flops=cost.get("flops"),
        bytes_accessed=cost.get("bytes accessed"),
        argument_bytes=mem("argument_size_in_bytes"),
        output_bytes=mem("output_size_in_bytes"),
        temp_bytes=mem("temp_size_in_bytes"),
        alias_bytes=mem("alias_size_in_bytes"),
        hlo=hlo,
    )


# --- Where a collective comes from: the JAX operation XLA recorded for it -------------
#
# XLA keeps, in each instruction's metadata, the name of the JAX operation it was
# lowered from (``op_name="jit(step)/transpose(jvp(mlp))/dot_general"``), with the
# ``jax.named_scope`` s it ran in; operations of a backward pass carry ``transpose(``.


def _instruction_name(fn: str, collective: Collective | str) -> str:
    if isinstance(collective, Collective):
        return collective.name
    if isinstance(collective, str) and collective:
        return collective
    raise _checks.wrong_type(
        fn, "collective", collective, "a Collective from report.collectives or an instruction name"
    )


def _check_report(fn: str, report: object) -> ProgramReport:
    return _checks.instance(fn, "report", report, ProgramReport, what="a ProgramReport")


def hlo_line(report: ProgramReport, collective: Collective | str) -> str:
    """The line of the compiled program that defines an instruction.

    Args:
        report: what :func:`analyze` returned.
        collective: one of ``report.collectives``, or an instruction's name in ``report.hlo``.

    Returns:
        The HLO line, from ``%name = ...`` to its end.

    Raises:
        TypeError: ``report`` is not a :class:`ProgramReport`, or ``collective`` is neither a
            :class:`Collective` nor a name.
        KeyError: no instruction of that name is in the program.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> report = analyze(lambda x: x * 2.0, jnp.ones(4))
        >>> name = report.fusions[0].name if report.fusions else "multiply"
        >>> hlo_line(report, name).startswith(f"%{name} = ")
        True
    """
    report = _check_report("hlo_line", report)
    name = _instruction_name("hlo_line", collective)
    match = re.search(rf"%{re.escape(name)} = [^\n]*", report.hlo)
    if match is None:
        raise KeyError(
            f"hlo_line(collective={name!r}): collective must name an instruction of "
            f"report.hlo, and there is no instruction %{name}; pass one of "
            "report.collectives, or a name from compiled.instructions(report.hlo)."
        )
    return match.group()


def op_name(report: ProgramReport, collective: Collective | str) -> str:
    """The JAX operation XLA recorded for an instruction, e.g.
    ``'jit(step)/transpose(jvp(mlp))/dot_general'``; ``''`` if none was recorded.

    Args:
        report: what :func:`analyze` returned.
        collective: one of ``report.collectives``, or an instruction's name.

    Returns:
        The ``op_name`` of the instruction's metadata (named scopes included).

    Raises:
        TypeError, KeyError: as :func:`hlo_line`.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = jax.make_mesh((jax.device_count(),), ("x",),
        ...                      axis_types=(jax.sharding.AxisType.Auto,))
        >>> x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
        >>> report = analyze(lambda x: x.sum(), x)
        >>> op_name(report, report.collectives[0]).startswith("jit(<lambda>)")
        True
    """
    match = _hlo.OP_NAME.search(hlo_line(report, collective))
    return match.group(1) if match else ""


def pass_of(report: ProgramReport, collective: Collective | str) -> str:
    """``'backward'`` if the JAX operation behind an instruction belongs to a backward pass
    (its name contains ``transpose(``, which ``grad`` adds), else ``'forward'``.

    Args:
        report: what :func:`analyze` returned.
        collective: one of ``report.collectives``, or an instruction's name.

    Returns:
        ``'forward'`` or ``'backward'``.

    Raises:
        TypeError, KeyError: as :func:`hlo_line`.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = jax.make_mesh((jax.device_count(),), ("x",),
        ...                      axis_types=(jax.sharding.AxisType.Auto,))
        >>> x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
        >>> w = jnp.ones(4)
        >>> report = analyze(jax.grad(lambda w, x: (x @ w).sum()), w, x)
        >>> [pass_of(report, c) for c in report.collectives]
        ['backward']
    """
    return "backward" if "transpose(" in op_name(report, collective) else "forward"


def scopes_of(report: ProgramReport, collective: Collective | str) -> tuple[str, ...]:
    """The ``jax.named_scope`` s an instruction's JAX operation ran in, sorted, as far as
    XLA recorded them inside ``jvp(...)``/``transpose(...)`` (the scopes of a
    differentiated function; outside ``grad`` a scope is a plain path element).

    Args:
        report: what :func:`analyze` returned.
        collective: one of ``report.collectives``, or an instruction's name.

    Returns:
        The scope names, e.g. ``('mlp',)``; ``()`` if none.

    Raises:
        TypeError, KeyError: as :func:`hlo_line`.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = jax.make_mesh((jax.device_count(),), ("x",),
        ...                      axis_types=(jax.sharding.AxisType.Auto,))
        >>> x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
        >>> @jax.named_scope("head")
        ... def head(w, x):
        ...     return (x @ w).sum()
        >>> report = analyze(jax.grad(head), jnp.ones(4), x)
        >>> scopes_of(report, report.collectives[0])
        ('head',)
    """
    return tuple(sorted(set(re.findall(r"jvp\((\w+)\)", op_name(report, collective)))))


def parameter_of(
    report: ProgramReport, collective: Collective | str, *, max_hops: int = 8
) -> str | None:
    """The argument of the jitted function whose value an instruction's first operand is
    read from, following first operands back through the program (constants and
    ``partition-id`` skipped) for at most ``max_hops`` instructions.

    Args:
        report: what :func:`analyze` returned.
        collective: one of ``report.collectives``, or an instruction's name.
        max_hops: instructions to follow back before giving up.

    Returns:
        The argument's path as JAX names it in the program (``"params['tok']"``), or
        ``None`` if no parameter is reached within ``max_hops`` or the parameter is unnamed.

    Raises:
        TypeError, KeyError: as :func:`hlo_line`.
        ValueError: ``max_hops`` is not a positive integer.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = jax.make_mesh((jax.device_count(),), ("x",),
        ...                      axis_types=(jax.sharding.AxisType.Auto,))
        >>> table = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
        >>> whole = jax.jit(lambda params: params["table"] * 2.0,
        ...                 out_shardings=NamedSharding(mesh, P()))
        >>> report = analyze(whole, {"table": table})
        >>> [(c.kind, parameter_of(report, c)) for c in report.collectives]
        [('all-gather', "params['table']")]
    """
    max_hops = _checks.positive_int("parameter_of", "max_hops", max_hops)
    name = _instruction_name("parameter_of", collective)
    for _ in range(max_hops):
        line = hlo_line(report, name)
        if " parameter(" in line:
            match = re.search(r'op_name="([^"]*?)(?:\.value)?"', line)
            return match.group(1).replace("\\'", "'") if match else None
        parts = _hlo.split_instruction(line.split(" = ", 1)[1])
        operands = re.findall(r"%([\w.\-]+)", parts[2]) if parts else []
        operands = [o for o in operands if not re.match(r"(constant|partition-id)", o)]
        if not operands:
            return None
        name = operands[0]
    return None
