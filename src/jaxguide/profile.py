"""Read a ``jax.profiler`` trace: which compiled operations ran, when, and for how long.

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

from jaxguide import _checks

__all__ = [
    "Allocation",
    "Event",
    "find_trace",
    "read_events",
    "read_memory_profile",
    "scopes",
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
    """

    name: str
    start_us: float
    duration_us: float
    thread: int
    hlo_op: str | None = None
    hlo_module: str | None = None

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
        events.append(
            Event(
                name=str(e.get("name", "")),
                start_us=float(e.get("ts", 0.0)),
                duration_us=float(e.get("dur", 0.0)),
                thread=int(e.get("tid", 0)),
                hlo_op=args.get("hlo_op"),
                hlo_module=args.get("hlo_module"),
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
    """
    _checks.string("scopes", "hlo", hlo, example="jax.jit(f).lower(x).compile().as_text()")
    from jaxguide import compiled

    found = {}
    for name, instruction in compiled._parse(hlo)[1].items():
        op_name = compiled._op_name(instruction.attrs)
        if op_name is not None:
            found[name] = re.sub(r"^(?:jit|pjit)\([^)]*\)/", "", op_name)
    return found


def time_by(events: Iterable[Event], key: Callable[[Event], str]) -> dict[str, float]:
    """Total duration (microseconds) of ``events`` grouped by ``key(event)``, largest first.

    Args:
        events: the events to add up (for instance the operations of one program).
        key: the group of an event, e.g. ``lambda e: e.name``.

    Returns:
        Group to summed ``duration_us``, ordered from the largest total.

    Raises:
        TypeError: ``key`` is not callable.
    """
    _checks.function("time_by", "key", key)
    totals: dict[str, float] = {}
    for e in events:
        k = key(e)
        totals[k] = totals.get(k, 0.0) + e.duration_us
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


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
