"""Finds chapter tests that restate a claim (CONTRIBUTING.md, "One home for every
claim"): :func:`claim_conditions` reads a chapter's claims, :func:`restatements` reads a
test against them. ``tests/test_chapters.py`` runs it on every chapter's test.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterator
from typing import cast

import numpy as np

# A claim's condition lives in its hidden cell, and the strict build checks it; a chapter
# test that compares the glued value with the same operator and the same literal
# (``claim("gap", gap, gap < 1e-5, ...)`` and ``assert float(g["gap"]) < 1e-5``) says it
# a second time, and the two drift apart when one of them changes. The check reads both
# by their syntax trees. A claim's conditions are the comparisons in its ``holds`` of the
# claimed value (of an expression holding it, or of a part of it) with a literal or with
# a name the chapter binds once, to a literal (``TOL = 1e-5``; a literal is a constant,
# arithmetic on them, or a tuple, list, set or dict of them); a claim whose ``holds``
# is its value (``claim(k, ok, ok, ...)``) has the condition ``is True``. A test restates
# one when an ``assert`` compares an expression that reads ``...["key"]`` (directly,
# through a name the test bound from it, or in a comprehension over it) with the same
# operator and literal, or asserts ``...["key"]`` itself (``is True``, ``== True``, bare)
# for a condition ``is True``. In a chain of ``==`` the literal is every side's
# (``g["total"] == blocks.sum() == 120`` restates ``total == 120``). A tolerance is one
# form however it is written: ``abs(x - c) < t`` (or ``<=``), ``x == pytest.approx(c,
# abs=t)`` and ``np.isclose(x, c, atol=t)`` are all ``near (c, "abs", t)``, and ``rel=``
# and ``rtol=`` give ``near (c, "rel", r)``; the centre may be ``np``/``math`` arithmetic
# on literals (``0.5 / np.sqrt(2)``), or a name a test function binds once to one.
# Also read: a ``holds`` that is a name the cell binds once (``ok = r <= 1 and ...``);
# a tuple of values compared with a tuple of literals, pair by pair; a test's one-line
# helper that reads a glued value (``def num(g, key): return float(g[key])``); and a
# relation between two glued values, which a claim writes with the other's name
# (``remat > 0.9 * full``) and a test with its key (``g["remat"] > 0.9 * g["full"]``).

_OPS = {
    ast.Lt: "<",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
}
_FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!=", "is": "is"}
_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_SYMBOLS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Pow: "**",
}
_NOT_LITERAL = object()
TRUE = ("is", True)


def _literal(node: ast.AST, names: dict[str, object]) -> object:
    """The value of a literal (a constant, ``-x``, arithmetic on numbers, a tuple, list,
    set or dict of literals, a name in ``names``), or ``_NOT_LITERAL``; lists read as
    tuples, as glued JSON lists and a chapter's tuples compare equal, and a dict reads as
    its sorted items and a set as its sorted elements (hashable, so that conditions can be
    kept in a set, and printed the same in every run)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id, _NOT_LITERAL)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_literal(e, names) for e in node.elts]
        return _NOT_LITERAL if _NOT_LITERAL in items else tuple(items)
    if isinstance(node, ast.Set):
        items = [_literal(e, names) for e in node.elts]
        return _NOT_LITERAL if _NOT_LITERAL in items else ("set", tuple(sorted(items, key=repr)))
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):  # {**other}
            return _NOT_LITERAL
        pairs = [
            (_literal(k, names), _literal(v, names))
            for k, v in zip(node.keys, node.values)
            if k is not None
        ]
        if any(_NOT_LITERAL in pair for pair in pairs):
            return _NOT_LITERAL
        return ("dict", tuple(sorted(pairs, key=repr)))
    numbers: list[object] = []
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        numbers = [_literal(node.operand, names)]
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        numbers = [_literal(node.left, names), _literal(node.right, names)]
    if numbers and all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        if isinstance(node, ast.UnaryOp):
            number = cast(float, numbers[0])
            return -number if isinstance(node.op, ast.USub) else number
        try:
            return _ARITHMETIC[type(cast(ast.BinOp, node).op)](*numbers)
        except ArithmeticError:
            return _NOT_LITERAL
    return _NOT_LITERAL


def _bound_once(trees: list[ast.Module]) -> dict[str, object]:
    """The names the code binds exactly once, at module level and to a literal
    (``TOL = 1e-5``); a name bound again anywhere (``x = 0.0`` then ``x = max(x, d)``
    in a loop) is a variable."""
    bindings: dict[str, int] = {}
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                bindings[n.id] = bindings.get(n.id, 0) + 1
    values: dict[str, object] = {}
    for tree in trees:
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and bindings[target.id] == 1:
                    values[target.id] = _literal(stmt.value, {})
    return {name: v for name, v in values.items() if v is not _NOT_LITERAL}


def _comparisons(
    node: ast.Compare, names: dict[str, object]
) -> Iterator[tuple[ast.expr, str, object]]:
    """(the other side, operator, literal) for each link of a comparison that has a
    literal on exactly one side, the literal put on the right. In a chain of ``==``
    (``g["total"] == blocks.sum() == 120``) every side equals the literal, so each side
    that is not one is paired with it, not only its neighbour."""
    sides = [node.left, *node.comparators]
    if len(sides) > 2 and all(isinstance(op, ast.Eq) for op in node.ops):
        values = [_literal(side, names) for side in sides]
        literals = [v for v in values if v is not _NOT_LITERAL]
        if len(literals) == 1:
            for side, value in zip(sides, values):
                if value is _NOT_LITERAL:
                    yield side, "==", literals[0]
            return
    for a, op, b in zip(sides, node.ops, sides[1:]):
        if type(op) not in _OPS:
            continue
        left, right = _literal(a, names), _literal(b, names)
        if isinstance(op, ast.Eq):  # (g["a"], g["b"]) == (4, 16): each pair alone
            for tup, other in ((a, right), (b, left)):
                if (
                    isinstance(tup, ast.Tuple | ast.List)
                    and isinstance(other, tuple)
                    and len(other) == len(tup.elts)
                    and _literal(tup, names) is _NOT_LITERAL
                ):
                    for elt, lit in zip(tup.elts, other):
                        if _literal(elt, names) is _NOT_LITERAL:
                            yield elt, "==", lit
        if right is not _NOT_LITERAL and left is _NOT_LITERAL:
            yield a, _OPS[type(op)], right
        elif left is not _NOT_LITERAL and right is _NOT_LITERAL:
            yield b, _FLIPPED[_OPS[type(op)]], left


def _number(node: ast.AST, names: dict[str, object]) -> float | None:
    """A number a literal states, or one ``np``/``math`` constants and functions of
    literals state (``np.pi``, ``0.5 / np.sqrt(2)``): a centre or a tolerance."""
    value = _literal(node, names)
    if value is _NOT_LITERAL:
        allowed = {"np", "numpy", "math"}
        loads = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
        if not loads or any(n.id not in allowed for n in loads):
            return None
        if any(not isinstance(n, _PURE) for n in ast.walk(node)):
            return None
        try:
            expression = ast.Expression(cast(ast.expr, node))
            value = eval(compile(expression, "<centre>", "eval"), _MATH)  # noqa: S307
        except Exception:
            return None
    try:
        return float(f"{float(value):.12g}")  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


_PURE = (
    ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load,
    ast.operator, ast.unaryop,
)  # fmt: skip
_MATH = {"np": np, "numpy": np, "math": math, "__builtins__": {}}


def _name(call: ast.AST) -> str:
    return getattr(
        getattr(call, "func", None), "attr", getattr(getattr(call, "func", None), "id", "")
    )


Near = tuple[ast.AST, tuple[str, object]]


def _args(node: ast.AST) -> tuple[list[ast.expr], list[ast.keyword]]:
    """A call's positional and keyword arguments; none for anything else."""
    return (node.args, node.keywords) if isinstance(node, ast.Call) else ([], [])


def _near(node: ast.AST, names: dict[str, object]) -> Iterator[Near]:
    """(the value, ``("near", (centre, "abs" or "rel", tolerance))``) for a tolerance
    written as ``abs(x - c) < t`` (or ``<=``, ``np.abs``), ``x == pytest.approx(c,
    abs=t)`` (or ``rel=``) or ``np.isclose(x, c, atol=t)`` (or ``rtol=``): one form, so
    that a test's ``approx`` restates a claim's ``abs(x - c) < t``."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        (op,), left, right = node.ops, node.left, node.comparators[0]
        if isinstance(op, ast.Gt | ast.GtE):
            left, right = right, left
        elif not isinstance(op, ast.Lt | ast.LtE | ast.Eq):
            return
        if not isinstance(op, ast.Eq) and _name(left) == "abs" and len(_args(left)[0]) == 1:
            diff, tol = _args(left)[0][0], _number(right, names)
            if isinstance(diff, ast.BinOp) and isinstance(diff.op, ast.Sub) and tol is not None:
                for side, centre in ((diff.left, diff.right), (diff.right, diff.left)):
                    c = _number(centre, names)
                    if c is not None and _number(side, names) is None:
                        yield side, ("near", (c, "abs", tol))
        if isinstance(op, ast.Eq):
            for side, call in ((left, right), (right, left)):
                args, keywords = _args(call)
                if _name(call) == "approx" and len(args) == 1:
                    yield from _tolerances(side, args[0], keywords, names)
    elif isinstance(node, ast.Call) and _name(node) == "isclose" and len(node.args) >= 2:
        yield from _tolerances(node.args[0], node.args[1], node.keywords, names)


def _tolerances(
    side: ast.AST, centre: ast.AST, keywords: list[ast.keyword], names: dict[str, object]
) -> Iterator[Near]:
    c = _number(centre, names)
    if c is None:
        return
    for kw in keywords:
        kind = {"abs": "abs", "atol": "abs", "rel": "rel", "rtol": "rel"}.get(kw.arg or "")
        tol = _number(kw.value, names)
        if kind and tol is not None:
            yield side, ("near", (c, kind, tol))


def _condition(op: str, value: object) -> tuple[str, object]:
    """A comparison in a form where equal conditions are equal: ``== True`` is ``is
    True``, and numbers compare as floats (``1`` and ``1.0``, ``1e-5`` and ``0.00001``)."""
    if op in ("==", "is") and value is True:
        return TRUE
    if isinstance(value, int | float) and not isinstance(value, bool):
        return op, float(value)
    return op, value


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _in_comprehensions(
    node: ast.AST, top: ast.AST, parents: dict[ast.AST, ast.AST]
) -> Iterator[ast.AST]:
    """``node`` and the iterables of the comprehensions around it, up to ``top``."""
    yield node
    while node is not top and node in parents:
        node = parents[node]
        if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp):
            yield from (g.iter for g in node.generators)


def _is_claim(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or len(node.args) < 3:
        return False
    name = getattr(node.func, "attr", getattr(node.func, "id", ""))  # jaxguide.claim, claim
    key = node.args[0]
    return name == "claim" and isinstance(key, ast.Constant) and isinstance(key.value, str)


_GLUE_CALLS = {"claim", "glue"}


def _glued_names(trees: list[ast.Module]) -> dict[str, str]:
    """The chapter's names whose value it glues (``claim("k", x, ...)`` and ``glue("k",
    x)``), to their keys: a condition comparing a claim's value with another glued value
    (``remat > 0.9 * full``) is a relation between two glues, which a test restates as
    ``g["remat"] > 0.9 * g["full"]``."""
    found: dict[str, set[str]] = {}
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and _name(n) in _GLUE_CALLS and len(n.args) >= 2:
                key, value = n.args[0], n.args[1]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    if isinstance(value, ast.Name):
                        found.setdefault(value.id, set()).add(key.value)
    return {name: next(iter(keys)) for name, keys in found.items() if len(keys) == 1}


def _canonical(node: ast.AST, glued: Callable[[ast.AST], str | None]) -> str | None:
    """Arithmetic on numbers and glued values, written the same however it is spelled
    (``0.9 * flops_full`` in a chapter, ``0.9 * float(g["flops_full"])`` in a test):
    ``'(0.9*G(flops_full))'``; None for anything else."""
    key = glued(node)
    if key is not None:
        return f"G({key})"
    if isinstance(node, ast.Call) and _name(node) in {"float", "int"} and len(node.args) == 1:
        return _canonical(node.args[0], glued)
    number = _literal(node, {})
    if isinstance(number, int | float) and not isinstance(number, bool):
        return repr(float(number))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _canonical(node.operand, glued)
        return None if inner is None else f"(-{inner})"
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _canonical(node.left, glued), _canonical(node.right, glued)
        if left is None or right is None:
            return None
        return f"({left}{_SYMBOLS[type(node.op)]}{right})"
    return None


def _relations(
    node: ast.Compare, glued: Callable[[ast.AST], str | None]
) -> Iterator[tuple[ast.expr, tuple[str, object]]]:
    """(a side, ``(op, ("glues", other side))``) for each link of a comparison whose
    other side is arithmetic on glued values (:func:`_canonical`)."""
    sides = [node.left, *node.comparators]
    for a, op, b in zip(sides, node.ops, sides[1:]):
        if type(op) not in _OPS:
            continue
        for side, other, name in ((a, b, _OPS[type(op)]), (b, a, _FLIPPED[_OPS[type(op)]])):
            canon = _canonical(other, glued)
            if canon is not None and "G(" in canon:
                yield side, (name, ("glues", canon))


def _bound_in(tree: ast.AST) -> dict[str, ast.expr]:
    """The names a cell binds exactly once, to what (``ok = dtype == bf16 and r <= 1``):
    a claim whose ``holds`` is such a name states that expression's conditions."""
    stores: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    bound: dict[str, ast.expr] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = n.targets[0]
            if isinstance(target, ast.Name) and stores.get(target.id) == 1:
                bound[target.id] = n.value
    return bound


def _wrappers(tree: ast.Module) -> dict[str, int]:
    """A test module's one-line helpers that read a glued value (``def num(g, key):
    return float(g[key])``), to the position of their key argument: ``num(g, "k")``
    reads ``"k"`` as ``g["k"]`` does."""
    found: dict[str, int] = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        body = [
            s
            for s in fn.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            continue
        params = [a.arg for a in fn.args.args]
        for n in ast.walk(body[0].value):
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Name):
                if n.slice.id in params:
                    found[fn.name] = params.index(n.slice.id)
    return found


def claim_conditions(cells: list[str]) -> dict[str, set[tuple[str, object]]]:
    """Each claim's key in a chapter's code cells, with the conditions its ``holds``
    states of its value (see the comment above)."""
    trees = []
    for cell in cells:
        try:
            trees.append(ast.parse(cell))
        except SyntaxError:
            continue
    names = _bound_once(trees)
    glued_names = _glued_names(trees)
    conditions: dict[str, set[tuple[str, object]]] = {}
    for tree in trees:
        bound = _bound_in(tree)
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or not _is_claim(call):
                continue
            key = str(cast(ast.Constant, call.args[0]).value)
            value, holds = call.args[1], call.args[2]
            found = conditions.setdefault(key, set())
            if ast.dump(holds) == ast.dump(value):
                found.add(TRUE)
            elif isinstance(holds, ast.Name) and holds.id in bound:
                holds = bound[holds.id]  # claim(k, ratio, ok) with ok = ratio <= 1 ...

            def sibling(node: ast.AST, key: str = key) -> str | None:
                other = glued_names.get(getattr(node, "id", ""))
                return other if other != key else None

            parents = _parents(holds)
            for compare in ast.walk(holds):
                stated = [(side, cond) for side, cond in _near(compare, names)]
                if isinstance(compare, ast.Compare):
                    stated += [
                        (side, _condition(op, literal))
                        for side, op, literal in _comparisons(compare, names)
                    ]
                    stated += list(_relations(compare, sibling))
                for side, condition in stated:
                    reads = {
                        ast.dump(n)
                        for part in _in_comprehensions(side, holds, parents)
                        for n in ast.walk(part)
                    }
                    parts = {ast.dump(n) for n in ast.walk(value)}
                    if ast.dump(value) in reads or ast.dump(side) in parts:
                        found.add(condition)
    return conditions


def _keys_read(
    node: ast.AST, aliases: dict[str, set[str]], wrappers: dict[str, int] | None = None
) -> set[str]:
    """The string keys ``node`` subscripts with, directly, through ``aliases`` or
    through a one-line helper in ``wrappers`` (:func:`_wrappers`)."""
    keys: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant):
            if isinstance(n.slice.value, str):
                keys.add(n.slice.value)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            keys |= aliases.get(n.id, set())
        elif isinstance(n, ast.Call) and getattr(n.func, "id", None) in (wrappers or {}):
            at = (wrappers or {})[getattr(n.func, "id", "")]
            arg = n.args[at] if len(n.args) > at else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                keys.add(arg.value)
    return keys


def restatements(
    test_source: str, conditions: dict[str, set[tuple[str, object]]]
) -> list[tuple[int, str, str]]:
    """(line, key, condition) for each assertion in a chapter's test module that compares
    a claim's glued value the way the claim does."""
    tree = ast.parse(test_source)
    names = _bound_once([tree])
    wrappers = _wrappers(tree)
    parents = _parents(tree)
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        aliases: dict[str, set[str]] = {}  # a name bound from a glued value, in order
        local = dict(names)  # with the names the function binds once to a number
        stores = [
            n.id
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        ]
        for stmt in function.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and stores.count(target.id) == 1:
                    number = _number(stmt.value, local)
                    if number is not None:
                        local[target.id] = number
        for node in ast.walk(function):
            if isinstance(node, ast.Assign):
                read = _keys_read(node.value, aliases, wrappers)
                for target in node.targets:
                    for n in ast.walk(target):
                        if isinstance(n, ast.Name):
                            aliases[n.id] = aliases.get(n.id, set()) | read

        def glued(node: ast.AST, aliases: dict[str, set[str]] = aliases) -> str | None:
            keys = _keys_read(node, aliases, wrappers)
            whole = isinstance(node, ast.Subscript | ast.Name | ast.Call)
            if whole and not isinstance(node, ast.Call) or _name(node) in wrappers:
                return next(iter(keys)) if len(keys) == 1 else None
            return None

        for statement in ast.walk(function):
            if not isinstance(statement, ast.Assert):
                continue
            checked: list[tuple[list[ast.AST], tuple[str, object], int]] = []
            test = statement.test
            for part in test.values if isinstance(test, ast.BoolOp) else [test]:
                if isinstance(part, ast.Call) and getattr(part.func, "id", "") == "bool":
                    part = part.args[0] if part.args else part
                if isinstance(part, ast.Subscript | ast.Name):
                    checked.append(([part], TRUE, part.lineno))
            for compare in ast.walk(test):
                line = getattr(compare, "lineno", statement.lineno)
                for side, condition in _near(compare, local):
                    parts = list(_in_comprehensions(side, statement, parents))
                    checked.append((parts, condition, line))
                if isinstance(compare, ast.Compare):
                    for side, op, literal in _comparisons(compare, names):
                        parts = list(_in_comprehensions(side, statement, parents))
                        checked.append((parts, _condition(op, literal), compare.lineno))
                    for side, relation in _relations(compare, glued):
                        parts = list(_in_comprehensions(side, statement, parents))
                        checked.append((parts, relation, compare.lineno))
            for parts, condition, line in checked:
                keys = (_keys_read(p, aliases, wrappers) for p in parts)
                for key in sorted(set().union(*keys)):
                    if condition in conditions.get(key, ()):
                        op, literal = condition
                        found.append((line, key, f"{op} {literal!r}"))
    return sorted(set(found))
