"""Read what a profile or a compiled program says about a step: a ``jax.profiler``
trace (which compiled operations ran, when, and for how long), the compiled program's
schedule, the lowered matmuls, the residuals a gradient keeps, a device memory profile.

- Traces: :func:`find_trace`, :func:`read_events`, :func:`scopes`, :func:`time_by`, and
  :func:`step_gaps` (when the device worked on each step of a loop, and waited between).
- Programs: :func:`schedule_order` (the collectives and matmuls of a compiled program,
  in its schedule's order), :func:`lowered_dots` (a lowered program's matmuls and
  dtype conversions).
- Gradients: :func:`saved_residuals` (what ``jax.grad`` keeps from the forward pass).
- Memory: :func:`read_memory_profile` (what ``jax.profiler.save_device_memory_profile``
  wrote).

``jax.profiler.trace(folder)`` writes ``plugins/profile/<run>/<host>.trace.json.gz``
(Chrome trace format, which Perfetto opens) next to the raw ``.xplane.pb``. Every
operation a compiled program executes is one complete event (``"ph": "X"``) whose
``args`` name the HLO instruction (``hlo_op``) and its program (``hlo_module``).
:func:`scopes` reads, from the compiled program's text, the ``jax.named_scope`` path
of every instruction, so that time can be added up per scope with :func:`time_by`.

Example:
    >>> import gzip, json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> events = [
    ...     {"ph": "X", "pid": 1, "tid": 2, "ts": 0.0, "dur": 5.0, "name": "dot",
    ...      "args": {"hlo_op": "dot.1", "hlo_module": "jit_step"}},
    ...     {"ph": "X", "pid": 1, "tid": 2, "ts": 6.0, "dur": 1.0, "name": "tanh",
    ...      "args": {"hlo_op": "tanh.2", "hlo_module": "jit_step"}},
    ... ]
    >>> path = folder / "host.trace.json.gz"
    >>> _ = path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    >>> ops = [e for e in read_events(path) if e.hlo_op]
    >>> time_by(ops, lambda e: e.name)
    {'dot': 5.0, 'tanh': 1.0}
    >>> hlo = '%dot.1 = f32[2] dot(%a, %b), metadata={op_name="jit(step)/dense/dot_general"}'
    >>> scopes(hlo)
    {'dot.1': 'dense/dot_general'}
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from jaxguide import _checks, _hlo
from jaxguide.compiled import COLLECTIVES

__all__ = [
    "Allocation",
    "Event",
    "LoweredDot",
    "Residual",
    "StepGaps",
    "autodiff_phase",
    "entry_instructions",
    "find_trace",
    "lowered_dots",
    "read_events",
    "read_memory_profile",
    "saved_residuals",
    "schedule_order",
    "scopes",
    "step_gaps",
    "time_by",
]


@dataclass(frozen=True)
class Event:
    """One complete event of a trace (times in microseconds).

    Attributes:
        name: what ran (an HLO instruction, a runtime step, a Python function).
        start_us, duration_us: when it started (from the trace's origin) and how long it took.
        thread: the trace's thread id (one row in Perfetto).
        hlo_op, hlo_module: the HLO instruction and its program, for compiled
            operations; ``None`` for everything else.
        device: the device that ran a compiled operation (the event's
            ``device_ordinal``); ``None`` where the trace does not say.
    """

    name: str
    start_us: float
    duration_us: float
    thread: int
    hlo_op: str | None = None
    hlo_module: str | None = None
    device: int | None = None

    @property
    def end_us(self) -> float:
        """When the event ended."""
        return self.start_us + self.duration_us


def find_trace(folder: str | os.PathLike[str]) -> Path:
    """The newest ``*.trace.json.gz`` that ``jax.profiler.trace(folder)`` wrote.

    Args:
        folder: the folder given to ``jax.profiler.trace``.

    Returns:
        The path of the trace, under ``folder/plugins/profile/<run>/``.

    Raises:
        FileNotFoundError: ``folder`` holds no trace (was the profiler run with it?).

    Example:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> run = folder / "plugins" / "profile" / "2026_01_01_12_00_00"
        >>> run.mkdir(parents=True)
        >>> _ = (run / "host.trace.json.gz").write_bytes(b"")  # as the profiler names it
        >>> find_trace(folder).relative_to(folder).as_posix()
        'plugins/profile/2026_01_01_12_00_00/host.trace.json.gz'
    """
    root = Path(_checks.path("find_trace", "folder", folder))
    if not root.is_dir():
        raise FileNotFoundError(f"find_trace(folder={str(root)!r}): no such folder.")
    traces = sorted(root.glob("plugins/profile/*/*.trace.json.gz"))
    if not traces:
        raise FileNotFoundError(
            f"find_trace(folder={str(root)!r}): no plugins/profile/*/*.trace.json.gz in it; "
            "capture one with `with jax.profiler.trace(folder): ...` first."
        )
    return max(traces, key=lambda p: p.stat().st_mtime)


def read_events(path: str | os.PathLike[str]) -> list[Event]:
    """Every complete event of a (gzipped or plain) Chrome-format trace, by start time.

    Args:
        path: a ``.trace.json.gz`` (or ``perfetto_trace.json.gz``, or plain JSON) file.

    Returns:
        One :class:`Event` per ``"ph": "X"`` event, sorted by start time.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not a trace (no ``traceEvents`` list).

    Example:
        >>> import json, pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "trace.json"
        >>> _ = path.write_text(json.dumps({"traceEvents": [
        ...     {"ph": "X", "ts": 3.0, "dur": 2.0, "tid": 7, "name": "add",
        ...      "args": {"hlo_op": "add.1", "device_ordinal": 0}},
        ...     {"ph": "M", "name": "thread_name"},  # not a complete event: left out
        ... ]}))
        >>> [(e.name, e.hlo_op, e.start_us, e.end_us, e.device) for e in read_events(path)]
        [('add', 'add.1', 3.0, 5.0, 0)]
    """
    file = Path(_checks.path("read_events", "path", path))
    if not file.is_file():
        raise FileNotFoundError(f"read_events(path={str(file)!r}): no such file.")
    raw = file.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise ValueError(f"read_events(path={str(file)!r}): not JSON ({err}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(
            f"read_events(path={str(file)!r}): no 'traceEvents' list; pass a trace.json(.gz) "
            "written by jax.profiler."
        )
    events = []
    for e in data["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        ordinal = args.get("device_ordinal")
        events.append(
            Event(
                name=str(e.get("name", "")),
                start_us=float(e.get("ts", 0.0)),
                duration_us=float(e.get("dur", 0.0)),
                thread=int(e.get("tid", 0)),
                hlo_op=args.get("hlo_op"),
                hlo_module=args.get("hlo_module"),
                device=int(str(ordinal)) if str(ordinal).isdigit() else None,
            )
        )
    return sorted(events, key=lambda e: e.start_us)


def scopes(hlo: str) -> dict[str, str]:
    """Each instruction's ``op_name`` in a compiled program's text, without the outer
    ``jit(...)/`` part: ``'dense/dot_general'`` for an op traced in
    ``jax.named_scope('dense')``.

    Args:
        hlo: a compiled program's text, ``jax.jit(f).lower(...).compile().as_text()``.

    Returns:
        Instruction name (the trace's ``hlo_op``) to its ``op_name``; instructions
        without metadata are left out.

    Raises:
        TypeError: ``hlo`` is not a string (pass ``compiled.as_text()``).
        ValueError: ``hlo`` is empty.

    Example:
        >>> hlo = ('%tanh.3 = f32[8]{0} tanh(f32[8]{0} %p), '
        ...        'metadata={op_name="jit(step)/mlp/layer1/tanh"}')
        >>> scopes(hlo)
        {'tanh.3': 'mlp/layer1/tanh'}
    """
    _checks.string("scopes", "hlo", hlo, example="jax.jit(f).lower(x).compile().as_text()")
    found = {}
    for name, instruction in _hlo.parse(hlo)[1].items():
        op_name = _hlo.op_name(instruction.attrs)
        if op_name is not None:
            found[name] = re.sub(r"^(?:jit|pjit)\([^)]*\)/", "", op_name)
    return found


def autodiff_phase(op_name: str) -> str:
    """The scope an instruction was traced in, and whether in the forward or the
    backward pass: ``'jvp(layer1)/dot_general'`` -> ``'layer1 forward'``,
    ``'transpose(jvp(layer1))/...'`` -> ``'layer1 backward'``.

    Args:
        op_name: an instruction's ``op_name``, as :func:`scopes` returns it. A fusion
            may list several, separated by ``;``: the first is read.

    Returns:
        ``'<scope> forward'`` or ``'<scope> backward'`` for an op traced in a named
        scope under ``jax.grad``; otherwise the first element of the path (``'sgd'``,
        ``'add'``, or ``''`` for an empty ``op_name``).

    Raises:
        TypeError: ``op_name`` is not a string.

    Example:
        >>> autodiff_phase("jvp(layer1)/tanh"), autodiff_phase("transpose(jvp(layer1))/dot_general")
        ('layer1 forward', 'layer1 backward')
        >>> autodiff_phase("sgd/mul")
        'sgd'
    """
    _checks.instance("autodiff_phase", "op_name", op_name, str, what="a str")
    first = op_name.split(";")[0].split("/")[0]
    match = re.fullmatch(r"(transpose\()?jvp\((\w+)\)\)?", first)
    if match:
        return f"{match.group(2)} {'backward' if match.group(1) else 'forward'}"
    return first


def entry_instructions(hlo: str) -> dict[str, tuple[str, str, str]]:
    """The instructions of a compiled program's entry computation, in program order:
    what the trace's ``hlo_op`` names (the insides of fusions are left out).

    Args:
        hlo: a compiled program's text, ``jax.jit(f).lower(...).compile().as_text()``.

    Returns:
        Instruction name to ``(opcode, shape, attributes)``: ``('dot', 'f32[512,16]',
        'lhs_contracting_dims={0}, ...')``; the shape without its layout.

    Raises:
        TypeError: ``hlo`` is not a string (pass ``compiled.as_text()``).
        ValueError: ``hlo`` is empty, or has no ``ENTRY`` computation.

    Example:
        >>> hlo = '''ENTRY %main (x: f32[4]) -> f32[4] {
        ...   %x = f32[4]{0} parameter(0)
        ...   ROOT %tanh.1 = f32[4]{0} tanh(f32[4]{0} %x)
        ... }'''
        >>> entry_instructions(hlo)["tanh.1"][:2]
        ('tanh', 'f32[4]')
    """
    _checks.string(
        "entry_instructions", "hlo", hlo, example="jax.jit(f).lower(x).compile().as_text()"
    )
    entry = re.search(r"^ENTRY\s+%([\w.\-]+)", hlo, re.MULTILINE)
    if entry is None:
        raise ValueError("entry_instructions: hlo has no ENTRY computation (pass compiled text)")
    return {
        ins.name: (ins.op, ins.shape.split("{")[0], ins.attrs)
        for ins in _hlo.parse(hlo)[0].get(entry.group(1), [])
    }


def time_by(events: Iterable[Event], key: Callable[[Event], str]) -> dict[str, float]:
    """Total duration (microseconds) of ``events`` grouped by ``key(event)``, largest first.

    Args:
        events: the events to add up (for instance the operations of one program).
        key: the group of an event, e.g. ``lambda e: e.name``.

    Returns:
        Group to summed ``duration_us``, ordered from the largest total.

    Raises:
        TypeError: ``key`` is not callable.

    Example:
        >>> ops = [Event("fusion", 0.0, 3.0, 1, "fusion.1", "jit_step", 0),
        ...        Event("dot", 3.0, 5.0, 1, "dot.2", "jit_step", 0),
        ...        Event("fusion", 8.0, 4.0, 1, "fusion.3", "jit_step", 0)]
        >>> time_by(ops, lambda e: e.name)
        {'fusion': 7.0, 'dot': 5.0}
    """
    _checks.function("time_by", "key", key)
    totals: dict[str, float] = {}
    for e in events:
        k = key(e)
        totals[k] = totals.get(k, 0.0) + e.duration_us
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


@dataclass(frozen=True)
class StepGaps:
    """When the device worked on each step of a loop, and waited between steps.

    Attributes:
        busy: each step's stretch on the device, (first operation's start, last
            operation's end), in microseconds.
        idle_us: the time between one step's last operation and the next one's first,
            summed.
        span_us: from the first step's first operation to the last step's end.
        ahead: how many steps the host began (its mark started) before the device had
            finished the step before.
    """

    busy: list[tuple[float, float]]
    idle_us: float
    span_us: float
    ahead: int

    @property
    def busy_per_step_us(self) -> float:
        """The device's mean busy stretch per step."""
        return sum(b - a for a, b in self.busy) / len(self.busy)


def step_gaps(events: Iterable[Event], *, module: str, mark: str) -> StepGaps:
    """The device's busy stretches and idle gaps over a loop of steps in a trace.

    Each step is one ``mark`` event on the host (a ``StepTraceAnnotation`` name), and
    runs the same operations of the compiled program ``module``, one step at a time.

    Args:
        events: a trace's events, from :func:`read_events`.
        module: the step's program, the events' ``hlo_module`` (``'jit_train_step'``).
        mark: the name of the host's step marks (``'train'``).

    Returns:
        A :class:`StepGaps`.

    Raises:
        TypeError: ``module`` or ``mark`` is not a string.
        ValueError: no mark or no operation was found, or the operations do not split
            evenly over the marks.

    Example:
        >>> ev = [Event("train", 0.0, 1.0, 1), Event("train", 10.0, 1.0, 1),
        ...       Event("dot", 2.0, 3.0, 2, "dot.1", "jit_step"),
        ...       Event("dot", 12.0, 3.0, 2, "dot.1", "jit_step")]
        >>> g = step_gaps(ev, module="jit_step", mark="train")
        >>> g.busy, g.idle_us, g.span_us, g.ahead
        ([(2.0, 5.0), (12.0, 15.0)], 7.0, 13.0, 0)
    """
    _checks.string("step_gaps", "module", module, example="'jit_train_step'")
    _checks.string("step_gaps", "mark", mark, example="'train'")
    events = sorted(events, key=lambda e: e.start_us)
    host = [e.start_us for e in events if e.name == mark]
    ops = [e for e in events if e.hlo_module == module]
    if not host or not ops:
        raise ValueError(
            f"step_gaps: found {len(host)} {mark!r} marks and {len(ops)} operations of "
            f"{module!r}; check the names against the trace's events"
        )
    if len(ops) % len(host):
        raise ValueError(
            f"step_gaps: {len(ops)} operations of {module!r} do not split evenly over "
            f"{len(host)} {mark!r} marks; trace only whole steps, waited for"
        )
    n = len(ops) // len(host)
    busy = [
        (ops[k * n].start_us, max(o.end_us for o in ops[k * n : (k + 1) * n]))
        for k in range(len(host))
    ]
    idle = sum(b[0] - a[1] for a, b in zip(busy, busy[1:]))
    ahead = sum(h < b[1] for h, b in zip(host[1:], busy))
    return StepGaps(busy, idle, busy[-1][1] - busy[0][0], ahead)


_COLLECTIVES = "|".join(COLLECTIVES)


def schedule_order(hlo: str) -> list[tuple[str, str]]:
    """The collectives and matmuls of a compiled program's entry computation, in the
    order its schedule lists them.

    A scheduled module lists each computation's instructions in one order that
    respects their data dependencies; a trace says when each one actually ran.

    Args:
        hlo: a compiled program's text, ``jax.jit(f).lower(...).compile().as_text()``.

    Returns:
        ``(kind, instruction)`` pairs: ``kind`` is the collective's opcode (with its
        ``-start``/``-done`` suffix, if asynchronous) or ``'matmul'``, for a ``dot``
        or a fusion that holds one (XLA:CPU's ``ynn_fusion`` included).

    Raises:
        TypeError: ``hlo`` is not a string.
        ValueError: ``hlo`` has no ``ENTRY`` computation.

    Example:
        >>> hlo = (
        ...     "ENTRY %main {\\n"
        ...     "  %cp = f32[4] collective-permute(f32[4] %x)\\n"
        ...     "  %dot.1 = f32[4,4] dot(f32[4,4] %a, f32[4,4] %b)\\n"
        ...     "}"
        ... )
        >>> schedule_order(hlo)
        [('collective-permute', 'cp'), ('matmul', 'dot.1')]
    """
    _checks.string("schedule_order", "hlo", hlo, example="jax.jit(f).lower(x).compile().as_text()")
    start = re.search(r"^ENTRY ", hlo, re.M)
    if start is None:
        raise ValueError(
            "schedule_order: hlo has no ENTRY computation; pass the compiled "
            "program's text, jax.jit(f).lower(x).compile().as_text()"
        )
    order = []
    for line in hlo[start.start() :].splitlines():
        m = re.match(
            rf"\s*(?:ROOT )?%([\w.\-]+) = .*? ((?:{_COLLECTIVES})(?:-start|-done)?|dot|fusion)\(",
            line,
        )
        if m is None:
            continue
        if m[2] in ("dot", "fusion"):
            if m[2] == "dot" or "dot" in line or m[1].startswith("ynn"):
                order.append(("matmul", m[1]))
        else:
            order.append((m[2], m[1]))
    return order


# --- Matmuls in a lowered program (StableHLO) -----------------------------------------

_TENSOR = r"tensor<(?:[\d?]+x)*(\w+)>"  # a tensor type; the group is its dtype


@dataclass(frozen=True)
class LoweredDot:
    """One ``stablehlo.dot_general`` of a lowered program.

    Attributes:
        operands: the two operands' dtypes, as StableHLO writes them (``'bf16'``, ``'f32'``).
        result: the result's dtype.
        precision: the operands' precision (``'DEFAULT'``, ``'HIGHEST'``, ...).
        converted_from: for each operand made by a ``stablehlo.convert``, the dtype it
            was converted from; ``None`` for an operand made otherwise.
    """

    operands: tuple[str, str]
    result: str
    precision: str | None
    converted_from: tuple[str | None, str | None]


def lowered_dots(stablehlo: str) -> tuple[list[LoweredDot], dict[tuple[str, str], int]]:
    """The matmuls of a lowered program, and its dtype conversions.

    Reads the text of ``jax.jit(f).lower(...).as_text()``: what JAX hands to XLA,
    before any backend compiles it.

    Args:
        stablehlo: a lowered program's StableHLO text.

    Returns:
        Every ``dot_general``, in program order, and the number of ``convert`` ops for
        each (from, to) pair of dtypes.

    Raises:
        TypeError: ``stablehlo`` is not a string (pass ``lowered.as_text()``).
        ValueError: ``stablehlo`` is empty, or holds no StableHLO operation.

    Example:
        >>> text = (
        ...     "%0 = stablehlo.convert %arg0 : (tensor<4x8xbf16>) -> tensor<4x8xf32>\\n"
        ...     "%1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0], "
        ...     "precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x2xf32>) "
        ...     "-> tensor<4x2xf32>\\n"
        ... )
        >>> dots, converts = lowered_dots(text)
        >>> dots[0].operands, dots[0].result, dots[0].precision
        (('f32', 'f32'), 'f32', 'DEFAULT')
        >>> dots[0].converted_from, converts
        (('bf16', None), {('bf16', 'f32'): 1})
    """
    _checks.string("lowered_dots", "stablehlo", stablehlo, example="jax.jit(f).lower(x).as_text()")
    if "stablehlo." not in stablehlo:
        raise ValueError(
            "lowered_dots: stablehlo holds no StableHLO operation; pass "
            "jax.jit(f).lower(x).as_text(), not the compiled program's HLO text"
        )
    made_from: dict[str, str] = {}
    converts: dict[tuple[str, str], int] = {}
    for name, src, dst in re.findall(
        rf"(%[\w#]+) = stablehlo\.convert [^:]*: \({_TENSOR}\) -> {_TENSOR}", stablehlo
    ):
        made_from[name] = src
        converts[src, dst] = converts.get((src, dst), 0) + 1
    dots = []
    for lhs, rhs, attrs, a, b, out in re.findall(
        rf"stablehlo\.dot_general (%[\w#]+), (%[\w#]+)([^:]*): "
        rf"\({_TENSOR}, {_TENSOR}\) -> {_TENSOR}",
        stablehlo,
    ):
        precision = re.search(r"precision = \[(\w+)", attrs)
        dots.append(
            LoweredDot(
                operands=(a, b),
                result=out,
                precision=precision[1] if precision else None,
                converted_from=(made_from.get(lhs), made_from.get(rhs)),
            )
        )
    return dots, converts


@dataclass(frozen=True)
class Residual:
    """One value that reverse-mode autodiff keeps for the backward pass.

    Attributes:
        dtype: its dtype as JAX prints it (``'bf16'``, ``'f32'``).
        shape: its shape.
        nbytes: its size in bytes.
        source: what made it (``'output of tanh ...'``, ``'from the argument x'``).
    """

    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    source: str

    @property
    def is_argument(self) -> bool:
        """Whether it is one of the function's arguments (kept anyway, not a copy)."""
        return self.source.startswith("from the argument")


def _itemsize(dtype: str) -> int:
    if dtype == "pred":
        return 1
    bits = re.fullmatch(r"(?:bf|f|s|u|c)(\d+)", dtype)
    if bits is None:
        raise ValueError(f"saved_residuals: unknown dtype {dtype!r}")
    return int(bits[1]) // 8


def saved_residuals(fun: Callable[..., object], *args: object) -> list[Residual]:
    """What ``jax.grad(fun)`` keeps from the forward pass, as
    ``jax.ad_checkpoint.print_saved_residuals`` lists it, one :class:`Residual` each.

    This is JAX's list, made before any compiler runs: a backend may store more
    (or fuse some away); ``memory_analysis`` of the compiled step says what it does.

    Args:
        fun: a function of ``args`` with a scalar result.
        *args: its arguments (arrays or ``jax.ShapeDtypeStruct``).

    Returns:
        The residuals, in JAX's order.

    Raises:
        TypeError: ``fun`` is not callable.
        RuntimeError: JAX printed a line this reader does not know (its format
            changed): nothing is dropped silently.

    Example:
        >>> import jax.numpy as jnp
        >>> kept = saved_residuals(lambda x: jnp.sin(x).sum(), jnp.ones(3))
        >>> [(r.dtype, r.shape, r.nbytes, r.is_argument) for r in kept]
        [('f32', (3,), 12, False)]
    """
    _checks.function("saved_residuals", "fun", fun)
    import contextlib
    import io

    from jax.ad_checkpoint import print_saved_residuals

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(fun, *args)
    kept = []
    for line in out.getvalue().splitlines():
        if not line.strip():
            continue
        m = re.match(r"(\w+)\[([\d,]*)\] (.*)", line)
        if m is None:
            raise RuntimeError(
                f"saved_residuals: print_saved_residuals printed {line!r}, not "
                "'<dtype>[<shape>] <source>' as in JAX 0.10: its format changed; "
                "update this reader (jaxguide/profile.py)"
            )
        shape = tuple(int(d) for d in m[2].split(",") if d)
        size = _itemsize(m[1])
        for d in shape:
            size *= d
        kept.append(Residual(m[1], shape, size, m[3]))
    return kept


# --- Device memory profiles (pprof) ---------------------------------------------------


@dataclass(frozen=True)
class Allocation:
    """One sample of a device memory profile: live allocations sharing a stack.

    Attributes:
        kind: ``"buffer"`` (an array) or ``"executable"`` (a compiled program).
        count, bytes: how many allocations, and their total size.
        device: the device holding them (``"cpu:0"``...).
        stack: ``(function, file)`` of each Python frame that made them, innermost
            first.
    """

    kind: str
    count: int
    bytes: int
    device: str
    stack: tuple[tuple[str, str], ...]


def _fields(buf: bytes) -> Iterable[tuple[int, int | bytes]]:
    """(field number, value) of each field of one protobuf message: an int for a
    varint, bytes for a length-delimited field; fixed-width fields are skipped."""
    i = 0

    def varint() -> int:
        nonlocal i
        n = shift = 0
        while True:
            b = buf[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return n

    while i < len(buf):
        key = varint()
        wire = key & 7
        if wire == 0:
            yield key >> 3, varint()
        elif wire == 2:
            n = varint()
            yield key >> 3, buf[i : i + n]
            i += n
        else:  # 64-bit (1) or 32-bit (5)
            i += 8 if wire == 1 else 4


def _ints(values: list[int | bytes]) -> list[int]:
    """A repeated integer field, packed (bytes) or not."""
    out: list[int] = []
    for v in values:
        if isinstance(v, int):
            out.append(v)
        else:
            out += _packed(v)
    return out


def _packed(buf: bytes) -> list[int]:
    out, n, shift = [], 0, 0
    for b in buf:
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            out.append(n)
            n = shift = 0
    return out


def _message(buf: bytes) -> dict[int, list[int | bytes]]:
    fields: dict[int, list[int | bytes]] = {}
    for number, value in _fields(buf):
        fields.setdefault(number, []).append(value)
    return fields


def _int(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise ValueError("read_memory_profile: a pprof field that holds a number holds bytes")
    return value


def _sub(value: int | bytes) -> dict[int, list[int | bytes]]:
    if not isinstance(value, bytes):
        raise ValueError("read_memory_profile: a pprof field that holds a message holds a number")
    return _message(value)


def read_memory_profile(path: str | os.PathLike[str]) -> list[Allocation]:
    """Read what ``jax.profiler.save_device_memory_profile`` wrote (gzipped pprof).

    Args:
        path: the file written by ``save_device_memory_profile``.

    Returns:
        One :class:`Allocation` per sample, largest ``bytes`` first.

    Raises:
        FileNotFoundError: there is no file at ``path``.

    Example:
        >>> import jax.numpy as jnp, jax, pathlib, tempfile
        >>> big = jnp.ones((256, 1024))  # 1 MiB of float32
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "memory.prof"
        >>> jax.profiler.save_device_memory_profile(path)
        >>> any(a.kind == "buffer" and a.bytes >= 2**20 for a in read_memory_profile(path))
        True
    """
    data = Path(path).read_bytes()
    profile = _message(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    strings = [v.decode() if isinstance(v, bytes) else "" for v in profile.get(6, [])]
    functions = {}
    for f in profile.get(5, []):
        m = _sub(f)
        name, file = _int(m.get(2, [0])[0]), _int(m.get(4, [0])[0])
        functions[_int(m[1][0])] = (strings[name], strings[file])
    locations = {}
    for loc in profile.get(4, []):
        m = _sub(loc)
        lines = [_sub(line) for line in m.get(4, [])]
        locations[_int(m[1][0])] = [
            functions.get(_int(line.get(1, [0])[0]), ("?", "")) for line in lines
        ]
    # The values' order is sample_type's: (allocations, count) and (space, bytes).
    types = [strings[_int(_sub(t)[1][0])] for t in profile.get(1, [])]
    found = []
    for sample in profile.get(2, []):
        m = _sub(sample)
        values = dict(zip(types, _ints(m.get(2, []))))
        labels = {}
        for label in m.get(3, []):
            lab = _sub(label)
            labels[strings[_int(lab[1][0])]] = strings[_int(lab.get(2, [0])[0])]
        stack = tuple(frame for loc in _ints(m.get(1, [])) for frame in locations.get(loc, []))
        found.append(
            Allocation(
                kind=labels.get("kind", "?"),
                count=values.get("allocations", 0),
                bytes=values.get("space", 0),
                device=labels.get("device", "?"),
                stack=stack,
            )
        )
    return sorted(found, key=lambda a: -a.bytes)
