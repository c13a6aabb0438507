"""The package's one reader of HLO text (private; :mod:`jaxguide.compiled` is the public
face): each instruction line as an :class:`Instruction`, the computations they belong
to, and the attributes the readers of a program need (an ``op_name``, a permute's
pairs, a collective's group). :mod:`jaxguide.compiled`, :mod:`jaxguide.pipeline` and
:mod:`jaxguide.profile` read programs through it."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

BITS = {
    "pred": 8,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "s32": 32,
    "u32": 32,
    "s64": 64,
    "u64": 64,
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "f8e4m3fn": 8,
    "f8e5m2": 8,
    "f8e4m3": 8,
    "f8e3m4": 8,
    "f8e4m3b11fnuz": 8,
    "f8e4m3fnuz": 8,
    "f8e5m2fnuz": 8,
    "f4e2m1fn": 4,
    "f8e8m0fnu": 8,
    "token": 0,
}


ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\]")


INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+) = (.*)$")


COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%([\w.\-]+) .*\{\s*$")


def arrays(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    """``'(f32[8,16]{1,0}, bf16[])'`` -> ``[('f32', (8, 16)), ('bf16', ())]``."""
    return [
        (dtype, tuple(int(d) for d in dims.split(",") if d))
        for dtype, dims in ARRAY.findall(shape)
        if dtype in BITS
    ]


def nbytes(arrays: list[tuple[str, tuple[int, ...]]]) -> int:
    return sum(math.ceil(BITS[dt] * math.prod(dims) / 8) for dt, dims in arrays)


def spell(dtype: str, dims: tuple[int, ...]) -> str:
    return f"{dtype}[{','.join(map(str, dims))}]"


def split_instruction(rest: str) -> tuple[str, str, str, str] | None:
    """``'f32[16]{0} all-reduce(%a), channel_id=1, ...'`` -> (shape, op, args, attrs)."""
    if rest.startswith("("):  # a tuple shape: up to its matching parenthesis
        depth = 0
        for i, ch in enumerate(rest):  # noqa: B007 (i is used after the loop)
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                break
        shape, rest = rest[: i + 1], rest[i + 1 :].lstrip()
    else:
        shape, _, rest = rest.partition(" ")
    match = re.match(r"([a-z][\w\-]*)\(", rest)
    if not match:
        return None
    op = match.group(1)
    depth, start = 0, match.end() - 1
    for i in range(start, len(rest)):
        depth += rest[i] == "("
        depth -= rest[i] == ")"
        if depth == 0:
            return shape, op, rest[start + 1 : i], rest[i + 1 :]
    return None


@dataclass(frozen=True)
class Instruction:
    """One instruction of HLO text: ``%name = shape op(operands), attrs``.

    Attributes:
        name: the instruction's name, without ``%``.
        shape: its result type as printed, layout included (``'f32[8,16]{1,0}'``, or a
            tuple ``'(f32[8]{0}, s32[])'``).
        op: the operation (``'dot'``, ``'fusion'``, ``'all-reduce-start'``, ...).
        operands: the names of the instructions it reads, in order, without ``%``.
        attrs: everything after the operand list (``calls=``, ``metadata=``, ...).
        computation: the computation it belongs to (``''`` for a line on its own).
        entry: whether that computation is the program's ENTRY.
    """

    name: str
    shape: str
    op: str
    operands: tuple[str, ...]
    attrs: str
    computation: str
    entry: bool = False

    @property
    def arrays(self) -> list[tuple[str, tuple[int, ...]]]:
        """The result's arrays as ``(dtype, dims)``: one, or one per tuple element."""
        return arrays(self.shape)

    @property
    def dtype(self) -> str:
        """The result's element type (``'f32'``); a tuple result gives its first."""
        arrays = self.arrays
        return arrays[0][0] if arrays else ""

    @property
    def dims(self) -> tuple[int, ...]:
        """The result's dimensions (``(8, 16)``); a tuple result gives its first."""
        arrays = self.arrays
        return arrays[0][1] if arrays else ()

    @property
    def nbytes(self) -> int:
        """Bytes of the result (every element of a tuple), per device."""
        return nbytes(self.arrays)

    def attr(self, key: str) -> str | None:
        """One attribute's value as printed, or None: ``attr('calls')`` is the fused
        computation's name (without ``%``), ``attr('kind')`` a fusion's kind."""
        match = re.search(rf"(?:^|[\s,]){re.escape(key)}=(\{{[^}}]*\}}|[^,\s]+)", self.attrs)
        return match.group(1).lstrip("%") if match else None


def parse(hlo: str) -> tuple[dict[str, list[Instruction]], dict[str, Instruction]]:
    """Instructions by computation, and every instruction by name (``compiled``'s
    readers, ``compiled.instructions``, ``profile.scopes`` and ``entry_instructions``
    all start here). Instruction lines outside a computation (a line quoted on its own) belong to ``""``."""
    computations: dict[str, list[Instruction]] = {}
    by_name: dict[str, Instruction] = {}
    current, entry = None, False
    for line in hlo.splitlines():
        if current is None:
            match = COMPUTATION.match(line)
            if match:
                current, entry = match.group(1), line.startswith("ENTRY")
                computations[current] = []
                continue
        elif line.strip() == "}":
            current = None
            continue
        match = INSTRUCTION.match(line)
        if not match:
            continue
        parts = split_instruction(match.group(2))
        if parts is None:
            continue
        shape, op, args, attrs = parts
        operands = tuple(re.findall(r"%([\w.\-]+)", args))
        ins = Instruction(
            match.group(1), shape, op, operands, attrs, current or "", current is not None and entry
        )
        computations.setdefault(current or "", []).append(ins)
        by_name[ins.name] = ins
    return computations, by_name


OP_NAME = re.compile(r'op_name="([^"]*)"')


def op_name(attrs: str) -> str | None:
    """The ``op_name`` of an instruction's metadata, or None."""
    match = OP_NAME.search(attrs)
    return match.group(1) if match else None


def pairs(attrs: str) -> tuple[tuple[int, int], ...]:
    """A collective-permute's ``source_target_pairs={{0,1},{1,2}}``: ``((0, 1), (1, 2))``."""
    match = re.search(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}", attrs)
    if not match:
        return ()
    return tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", match.group(1)))


def group_size(attrs: str, devices: int | None = None) -> int | None:
    """Devices taking part in each group of a collective, from its replica groups
    (``devices``: the program's partition count, for groups that mean "all")."""
    if re.search(r"replica_groups=\{\}", attrs) or (
        "replica_groups=" not in attrs and "source_target_pairs" not in attrs
    ):
        return devices  # no groups listed: one group of every device
    match = re.search(r"replica_groups=\{(\{[\d,]*\})", attrs)
    if match:  # explicit groups: {{0,1,2,3},{4,5,6,7}}
        return len([d for d in match.group(1).strip("{}").split(",") if d])
    match = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", attrs)
    if match:  # iota groups: [n_groups, group_size]<=[devices]
        return int(match.group(2))
    match = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", attrs)
    if match:  # mesh groups: mesh['axis_0'=8,'axis_1'=1] {'axis_0'}
        sizes = dict(re.findall(r"'([^']+)'=(\d+)", match.group(1)))
        return math.prod(int(sizes[a]) for a in re.findall(r"'([^']+)'", match.group(2)))
    permuted = pairs(attrs)
    if permuted:  # collective-permute: the devices that send or receive
        return len({d for pair in permuted for d in pair})
    return None
