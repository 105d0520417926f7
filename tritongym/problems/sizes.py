"""Read, override and shrink a problem's module-level integer size constants.

A size constant is a module-level assignment whose value is an integer expression of literals and
earlier constants: ``batch_size = 4096``, ``N = 2048 * 2``, ``dim = batch * 4``, the chained
``height = width = 128``, or ``dim: int = 8192``. Overrides are textual rewrites of exactly those
statements, so the rest of the source (comments, formatting, line numbers) is untouched and a model
shown the shrunk problem sees ordinary code. Nothing here executes the problem's code.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import operator
import random
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from tritongym.errors import ConfigError, ProblemError

INPUT_BUDGET = 1 << 14
"""Default budget of ``shrink_sizes``: total elements of the tensors ``get_inputs()`` creates."""
MIN_SIZE = 16
"""``shrink_sizes`` never takes a constant below this (nor touches one already at or below it), so
convolution windows, pooling kernels and small channel counts keep fitting."""
MIN_BATCH = 2
"""The floor of a constant that is the leading (batch) dimension of an input: any batch works."""

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_MAX_BITS = 64


@dataclass(frozen=True)
class SizeConstant:
    """One module-level integer constant and where its statement is."""

    name: str
    value: int
    depends_on: tuple[str, ...]
    """Earlier constants its expression refers to (empty for ``4096`` or ``2048 * 2``)."""
    statement: ast.Assign | ast.AnnAssign
    node: ast.expr
    """The expression an override replaces: the statement's value, or one element of a shape tuple."""


@dataclass
class _Module:
    constants: dict[str, SizeConstant]
    """Integer constants; the integer elements of a shape tuple ``input_shape = (4096, 3)`` are
    constants named ``input_shape[0]``, ``input_shape[1]``."""
    tuples: dict[str, list[int | None]]
    """Module-level tuples of integers (None where an element is not one), for ``*input_shape``."""


def _eval_int(node: ast.expr, env: Mapping[str, int]) -> int | None:
    """The value of an integer expression of literals and names in ``env``; None if not one."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval_int(node.operand, env)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _eval_int(node.left, env), _eval_int(node.right, env)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow | ast.LShift) and (right < 0 or right > _MAX_BITS):
            return None
        if isinstance(node.op, ast.FloorDiv | ast.Mod) and right == 0:
            return None
        value = _OPS[type(node.op)](left, right)
        return value if abs(value).bit_length() <= _MAX_BITS else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" and len(node.args) == 1:
        return _eval_int(node.args[0], env)
    return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _parse(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise ProblemError(f"reference source does not parse: line {exc.lineno}: {exc.msg}") from exc


def _targets(node: ast.stmt) -> list[str] | None:
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return [t.id for t in node.targets]
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return [node.target.id]
    return None


def _unpacking(node: ast.stmt) -> bool:
    """``D, H, W = 32, 32, 32``: names unpacked from a literal tuple of the same length."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Tuple)
        and all(isinstance(t, ast.Name) for t in node.targets[0].elts)
        and isinstance(node.value, ast.Tuple)
        and len(node.value.elts) == len(node.targets[0].elts)
        and not any(isinstance(e, ast.Starred) for e in node.value.elts)
    )


def _evaluate(tree: ast.Module, overrides: Mapping[str, int] = {}) -> _Module:
    """Module-level integer constants in order, with ``overrides`` standing in for their expressions."""
    found: dict[str, SizeConstant] = {}
    tuples: dict[str, list[int | None]] = {}
    env: dict[str, int] = {}

    def forget(name: str) -> None:
        found.pop(name, None)
        env.pop(name, None)
        for element in [n for n in found if n.startswith(f"{name}[")]:
            found.pop(element)
        tuples.pop(name, None)

    for node in tree.body:
        names = _targets(node)
        if _unpacking(node):  # D, H, W = 32, 32, 32: each name its own element
            for target, element in zip(node.targets[0].elts, node.value.elts, strict=True):
                forget(target.id)
                value = overrides.get(target.id, _eval_int(element, env))
                if value is not None:
                    depends = tuple(sorted(_names(element) & set(env)))
                    env[target.id] = value
                    found[target.id] = SizeConstant(target.id, value, depends, node, element)
            continue
        if names is None:
            rebound = getattr(node, "targets", None) or [getattr(node, "target", None)]
            for target in filter(None, rebound):  # a name rebound to something else is no constant
                for name in _names(target):
                    forget(name)
            continue
        for name in names:
            forget(name)
        if isinstance(node.value, ast.Tuple | ast.List) and len(names) == 1:
            values: list[int | None] = []
            for index, element in enumerate(node.value.elts):
                key = f"{names[0]}[{index}]"
                value = None if isinstance(element, ast.Starred) else _eval_int(element, env)
                value = overrides.get(key, value)
                if value is not None:
                    depends = tuple(sorted(_names(element) & set(env)))
                    found[key] = SizeConstant(key, value, depends, node, element)
                values.append(value)
            tuples[names[0]] = values
            continue
        value = _eval_int(node.value, env)
        depends = tuple(sorted(_names(node.value) & set(env)))
        for name in names:
            value_here = overrides.get(name, value)
            if value_here is None:
                continue
            env[name] = value_here
            found[name] = SizeConstant(name, value_here, depends, node, node.value)
    return _Module(found, tuples)


def size_constants(source: str) -> dict[str, SizeConstant]:
    """The module-level integer constants of ``source``, in order (the last assignment of a name wins)."""
    return _evaluate(_parse(source)).constants


def int_constants(source: str, overrides: Mapping[str, int] = {}) -> dict[str, int]:
    """Name -> value of the module-level integer constants of ``source`` (as if ``overrides`` applied)."""
    return {name: c.value for name, c in _evaluate(_parse(source), overrides).constants.items()}


def _offset(line_starts: list[int], lineno: int, col: int) -> int:
    return line_starts[lineno - 1] + col


def _literal(value: int, newlines: int) -> str:
    """``value`` as source, spanning ``newlines`` extra lines (in parentheses) to keep line numbers."""
    return str(value) if newlines == 0 else f"({value}" + "\n" * newlines + ")"


def override_int_constants(source: str, overrides: Mapping[str, int]) -> str:
    """Return ``source`` with the named module-level integer constants set to new values.

    Constants derived from an overridden one (``dim = batch * 4``) follow it. Raises ProblemError
    when a name is not such a constant (a typo must not pass silently) or a value is not an integer.
    """
    tree = _parse(source)
    constants = _evaluate(tree).constants
    unknown = [name for name in overrides if name not in constants]
    if unknown:
        known = ", ".join(constants) or "none"
        raise ProblemError(
            f"cannot override {', '.join(sorted(unknown))}: not a module-level integer constant "
            f"of this problem (its constants: {known})"
        )
    for name, value in overrides.items():
        if type(value) is not int:
            raise ProblemError(f"size override {name}={value!r} is not an integer")
    encoded = source.encode()
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line.encode()))
    edits: dict[int, tuple[int, str]] = {}
    for name in overrides:
        statement, value_node = constants[name].statement, constants[name].node
        span = value_node.end_lineno - value_node.lineno
        if value_node is not statement.value or len(_targets(statement)) == 1:  # one expression of its own
            node, text = value_node, _literal(overrides[name], span)
        else:  # chained: one assignment per name, the first one left keeps the expression
            node, parts, kept = statement, [], None
            last_target = statement.targets[-1]
            begin = _offset(starts, last_target.end_lineno, last_target.end_col_offset)
            end = _offset(starts, statement.end_lineno, statement.end_col_offset)
            expression = encoded[begin:end].decode().strip().removeprefix("=").strip()  # parentheses included
            span = statement.end_lineno - statement.lineno
            for target in _targets(statement):
                if target in overrides:
                    parts.append(f"{target} = {overrides[target]}")
                elif kept is None:
                    parts.append(f"{target} = ({expression})")
                    kept = target
                else:
                    parts.append(f"{target} = {kept}")
            if kept is None:  # every name has a new value: keep the statement's lines in the last one
                last = _targets(statement)[-1]
                parts[-1] = f"{last} = {_literal(overrides[last], span)}"
            text = "; ".join(parts)
        edits[_offset(starts, node.lineno, node.col_offset)] = (
            _offset(starts, node.end_lineno, node.end_col_offset),
            text,
        )
    for begin in sorted(edits, reverse=True):  # from the end, so earlier offsets stay valid
        end, text = edits[begin]
        encoded = encoded[:begin] + text.encode() + encoded[end:]
    return encoded.decode()


# Shrinking to a budget

_SHAPE_ARGS = {"randn", "rand", "zeros", "ones", "empty", "normal"}
"""Tensor factories whose positional arguments (or one tuple argument) are the shape."""
_SHAPE_FIRST = {"full", "randperm", "arange"}
"""Tensor factories whose first argument is the shape (or the length)."""


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return node.func.id if isinstance(node.func, ast.Name) else None


def _shape_of(call: ast.Call) -> list[ast.expr] | None:
    """The dimension expressions of a tensor-creating call, or None if it creates no sized tensor."""
    name = _call_name(call)
    keywords = {k.arg: k.value for k in call.keywords}
    if name in _SHAPE_ARGS:
        if name == "normal":
            shape = keywords.get("size")
            args = [shape] if shape is not None else []
        else:
            args = [keywords["size"]] if "size" in keywords else list(call.args)
    elif name == "randint":
        shape = keywords.get("size")
        if shape is None and call.args and isinstance(call.args[-1], ast.Tuple | ast.List):
            shape = call.args[-1]
        args = [shape] if shape is not None else []
    elif name in _SHAPE_FIRST:
        args = call.args[:1]
    else:
        return None
    if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
        args = list(args[0].elts)
    return args or None


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _locals(function: ast.FunctionDef, env: dict[str, int]) -> dict[str, set[str]]:
    """Evaluate a function's top-level integer assignments (``n = batch_size * 2``) into ``env``;
    returns each local name's dependencies."""
    local: dict[str, set[str]] = {}
    for statement in function.body:
        names = _targets(statement)
        if names:
            value = _eval_int(statement.value, env)
            for name in names:
                if value is None:
                    env.pop(name, None)
                else:
                    env[name] = value
                    local[name] = _names(statement.value)
    return local


def _closure(names: set[str], local: Mapping[str, set[str]], module: _Module) -> set[str]:
    """The module constants ``names`` depend on, through local and module assignments (a shape
    tuple stands for its integer elements)."""
    constants = module.constants
    used, pending = set(names), list(names)
    while pending:
        name = pending.pop()
        dependencies = local.get(name, set()) | set(constants[name].depends_on if name in constants else ())
        dependencies |= {f"{name}[{i}]" for i in range(len(module.tuples.get(name, [])))}
        for dependency in dependencies:
            if dependency not in used:
                used.add(dependency)
                pending.append(dependency)
    return used & set(constants)


def _dims(dims: list[ast.expr], module: _Module) -> list[ast.expr | int | None]:
    """Dimension expressions with shape tuples expanded (``*input_shape``, or the tuple as the shape)."""
    expanded: list[ast.expr | int | None] = []
    for dim in dims:
        name = dim.value if isinstance(dim, ast.Starred) else dim
        if isinstance(name, ast.Name) and name.id in module.tuples and (isinstance(dim, ast.Starred) or len(dims) == 1):
            expanded.extend(module.tuples[name.id])
        elif isinstance(dim, ast.Starred):
            expanded.append(None)
        else:
            expanded.append(dim)
    return expanded


def _inputs(source: str, overrides: Mapping[str, int] = {}) -> tuple[int, set[str], set[str]]:
    """Total input elements, the constants the shapes depend on, and the constants that are the
    leading (batch) dimension of an input."""
    tree = _parse(source)
    module = _evaluate(tree, overrides)
    env = {name: c.value for name, c in module.constants.items()}
    function = _function(tree, "get_inputs")
    if function is None:
        return 0, set(), set()
    local = _locals(function, env)
    total, used, leading = 0, set(), set()
    for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
        dims = _shape_of(call)
        if dims is None:
            continue
        size = 1
        for dim in _dims(dims, module):
            value = dim if not isinstance(dim, ast.expr) else _eval_int(dim, env)
            size *= max(value, 1) if value is not None else 1
        for dim in dims:
            used |= _names(dim)
        if len(dims) > 1 and isinstance(dims[0], ast.Name):
            leading.add(dims[0].id)
        total += size
    return total, _closure(used, local, module), leading & set(module.constants)


def input_elements(source: str, overrides: Mapping[str, int] = {}) -> tuple[int, set[str]]:
    """Total elements of the tensors ``get_inputs()`` creates (a dimension it cannot read counts 1),
    and the module constants those shapes depend on. Static: nothing is run."""
    total, used, _ = _inputs(source, overrides)
    return total, used


def init_constants(source: str) -> set[str]:
    """The module constants ``get_init_inputs()`` passes to the model (``in_features`` ...)."""
    tree = _parse(source)
    module = _evaluate(tree)
    function = _function(tree, "get_init_inputs")
    if function is None:
        return set()
    local = _locals(function, {name: c.value for name, c in module.constants.items()})
    returned = set().union(*(_names(n.value) for n in ast.walk(function) if isinstance(n, ast.Return) and n.value))
    return _closure(returned, local, module)


def _scaled(value: int, factor: float, floor: int) -> int:
    """``value * factor``, not below ``floor``, rounded to a multiple of ``gcd(value, 48)`` (halved
    while larger than the result), so that 4096 stays a multiple of 16 and 240 of 3."""
    target = value * factor
    granule = math.gcd(value, 48)
    while granule > 1 and granule > max(target, floor):
        granule //= 2
    lowest = -(-floor // granule) * granule
    return min(value, max(lowest, round(target / granule) * granule))


def shrink_sizes(
    source: str, budget: int = INPUT_BUDGET, floor: int = MIN_SIZE, batch_floor: int = MIN_BATCH
) -> dict[str, int]:
    """Overrides that bring the elements ``get_inputs()`` creates within ``budget``.

    The constants shrunk are the independent ones (literal expressions) that the input shapes or the
    model's init inputs depend on and that are above their floor: ``batch_floor`` for a constant that
    is the leading (batch) dimension of an input, ``floor`` for the others. All are scaled by one
    factor (halved until the inputs fit, so their ratios hold until a floor is reached) and rounded
    to keep their divisibility by powers of two (up to 16) and by 3. Constants derived from them
    follow. Returns {} when the inputs already fit; best effort (every constant at its floor) when
    they cannot.
    """
    total, used, leading = _inputs(source)
    if total <= budget:
        return {}
    constants = size_constants(source)
    used |= init_constants(source)
    floors = {n: batch_floor if n in leading else floor for n in used}
    roots = {n: constants[n].value for n in used if not constants[n].depends_on and constants[n].value > floors[n]}
    overrides: dict[str, int] = {}
    for step in range(1, _MAX_BITS):
        overrides = {name: _scaled(value, 2.0**-step, floors[name]) for name, value in roots.items()}
        if input_elements(source, overrides)[0] <= budget or all(v == floors[n] for n, v in overrides.items()):
            break
    return {name: value for name, value in overrides.items() if value != roots[name]}


# A second size for a shrunk problem

SECOND_SIZE_GROWTH = 4
"""``second_sizes`` keeps the inputs at its sizes within this many times the elements at the small
sizes (one trial there: the interpreter's cost grows with them). Two dimensions doubled fit."""


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


SECOND_SIZE_REACH = 4
"""``second_values`` draws from values up to this many times the smallest power of two at or above
the small value (and never above the full one)."""


def second_values(full: int, small: int, reach: int = SECOND_SIZE_REACH) -> list[int]:
    """The values a constant shrunk from ``full`` to ``small`` may take at the second size, smallest
    first: each above every power of two a block covering ``small`` would be (so that a block, a
    grid or a constant sized for ``small`` does not cover it), at most ``reach`` times that power of
    two and never above ``full``, and sharing what ``small`` and ``full`` share, so that a kernel right
    at both is right at each: both powers of two, a power of two (``2 * small``, ``4 * small``); else
    a multiple of their greatest common divisor by an odd factor prime to ``small``'s (no divisibility
    ``small`` has and ``full`` lacks: 100 of 4096 gives 132, 140, 148, ... 508). Where none is within
    reach, the smallest such value (or ``full``). ``[small]`` where it was not shrunk."""
    if small <= 0 or full <= small:
        return [small]
    above = 1 << (small - 1).bit_length()  # the smallest power of two at or above small
    top = min(full, reach * above)
    if _power_of_two(full) and _power_of_two(small):
        return [small << k for k in range(1, top.bit_length()) if small << k <= top] or [2 * small]
    common = math.gcd(full, small)
    factors = range(above // common + 1, top // common + 1)
    values = [common * f for f in factors if f % 2 and math.gcd(f, small // common) == 1]
    if values:
        return values
    factor = above // common + 1
    while factor % 2 == 0 or math.gcd(factor, small // common) != 1:
        factor += 1
    return [min(common * factor, full)]


def second_value(full: int, small: int) -> int:
    """The smallest of ``second_values``: the second size a judge that draws none would take."""
    return second_values(full, small)[0]


SECOND_SIZE_COVER_FREE = 2.0
"""A block reaching at most this many times the tensor (``second_sizes``' ``cover``) is one fitted to
it (``cdiv(n, BLOCK)`` programs, a ``next_power_of_2`` row): the second size is drawn as for any."""
SECOND_SIZE_COVER_MAX = 256
"""``second_sizes`` grows the inputs for a ``cover`` to at most this many times their elements at the
small sizes (4 Mi elements for the default budget of 16 Ki), drawn from past half as many: a reach
beyond half of it is not covered. The interpreter runs every lane, so a kernel whose lanes reached
that far paid about as much at the small size."""


def second_sizes(
    source: str,
    shrunk: Mapping[str, tuple[int, int]],
    growth: int = SECOND_SIZE_GROWTH,
    draw: random.Random | None = None,
    cover: float = 0.0,
    grow: Collection[str] = (),
) -> dict[str, int]:
    """Overrides of ``source`` (a problem at its small sizes) that give it a second size: each
    independent constant of ``shrunk`` (name -> (full, small)) at one of its ``second_values``;
    constants derived from them follow. Constants of one full and one small value are one group:
    equal at both sizes (a depthwise convolution's ``in_channels`` and ``out_channels``, a square
    input's ``height`` and ``width``), they are equal at the second, as a kernel written for what the
    problem states may assume. The inputs hold at most ``growth`` times their elements at the small
    sizes: with every constant at its smallest second value, groups go back to their small value (the
    leading, batch ones first, then the one grown most, then the one declared first) until they fit or
    one is left. Where ``draw`` is given (the judge's: no kernel can be written for a size it cannot
    know), each group left is then drawn, in an order drawn too, among its values that keep the inputs
    within the bound with the others as they stand.

    ``cover``, above ``SECOND_SIZE_COVER_FREE``, is how far the kernel's blocks reached past a tensor
    at the small sizes (a multiple of it: one block of 4096 over 1000 elements, 4.1): the inputs then
    hold more than ``cover`` times their elements at the small sizes (at most half
    ``SECOND_SIZE_COVER_MAX``), so that the blocks no longer cover them, and at most twice that
    (within ``SECOND_SIZE_COVER_MAX`` times, and the full sizes):
    the groups of ``grow`` (the constants that size the tensor reached past), else those that are no
    batch, grow together first (every group where those alone do not reach it), to the smallest
    values that do, and each is drawn from there up. {} where nothing was shrunk."""
    constants = size_constants(source)
    total, _, leading = _inputs(source)
    total = max(total, 1)
    covering = cover > SECOND_SIZE_COVER_FREE
    least = min(cover, SECOND_SIZE_COVER_MAX / 2) * total if covering else 0
    bound = min(max(growth, 2 * cover), SECOND_SIZE_COVER_MAX) * total if covering else growth * total
    choices: dict[str, list[int]] = {}
    for name, (full, small) in shrunk.items():
        constant = constants.get(name)
        if constant is None or constant.depends_on or constant.value != small:
            continue  # derived (it follows its roots), or not the small value any more (set explicitly)
        reach = max(SECOND_SIZE_REACH, math.ceil(bound / total) + 1) if covering else SECOND_SIZE_REACH
        values = [v for v in second_values(full, small, reach) if v != small]
        if values:
            choices[name] = values
    if not choices:
        return {}
    overrides = {name: values[0] for name, values in choices.items()}
    equal: dict[tuple[int, int], list[str]] = {}
    for name in overrides:
        equal.setdefault(tuple(shrunk[name]), []).append(name)
    if covering:
        first = [g for g in equal.values() if set(g) & set(grow)] or [g for g in equal.values() if not set(g) & leading]
        return _covering(source, choices, list(equal.values()), first, least, bound, draw)
    place = {name: i for i, name in enumerate(constants)}  # ties in the problem's order, whatever the dict's
    order = sorted(
        equal.values(),
        key=lambda g: (not set(g) & leading, -overrides[g[0]] / constants[g[0]].value, min(place[n] for n in g)),
    )
    while len(order) > 1 and input_elements(source, overrides)[0] > bound:
        for name in order.pop(0):
            overrides.pop(name)
    if draw is not None:
        _drawn(source, choices, order, overrides, bound, draw)
    return overrides


def _drawn(
    source: str,
    choices: Mapping[str, list[int]],
    groups: list[list[str]],
    overrides: dict[str, int],
    bound: float,
    draw: random.Random,
) -> None:
    """Draw each group of ``groups``, in an order drawn too, among its values from the one it holds in
    ``overrides`` (or its smallest) up to the largest that keeps the inputs within ``bound`` with the
    others as they stand."""
    groups = list(groups)
    draw.shuffle(groups)
    for group in groups:
        values = choices[group[0]]
        first = values.index(overrides[group[0]]) if group[0] in overrides else 0
        fits, low, high = first, first + 1, len(values) - 1  # the largest index keeping the inputs within
        while low <= high:
            middle = (low + high) // 2
            if input_elements(source, overrides | dict.fromkeys(group, values[middle]))[0] <= bound:
                fits, low = middle, middle + 1
            else:
                high = middle - 1
        overrides |= dict.fromkeys(group, draw.choice(values[first : fits + 1]))


def _covering(
    source: str,
    choices: Mapping[str, list[int]],
    groups: list[list[str]],
    first: list[list[str]],
    least: float,
    bound: float,
    draw: random.Random | None,
) -> dict[str, int]:
    """``second_sizes`` for a ``cover``: the smallest common growth of the groups ``first`` (then of every
    group) that takes the inputs past ``least`` elements (every one at its largest value where
    none does), then each group drawn from there up, within ``bound``."""

    def grown(names: list[list[str]], factor: float) -> dict[str, int]:
        out = {}
        for group in names:
            values, small = choices[group[0]], input_small[group[0]]
            value = next((v for v in values if v >= small * factor), values[-1])
            out |= dict.fromkeys(group, value)
        return out

    input_small = {name: int_constants(source)[name] for group in groups for name in group}
    for growing in (first or groups, groups):
        low, high = 1.0, max(values[-1] / input_small[name] for name, values in choices.items())
        if input_elements(source, grown(growing, high))[0] <= least:
            continue
        for _ in range(30):  # the smallest growth that takes the inputs past ``least``
            middle = (low + high) / 2
            if input_elements(source, grown(growing, middle))[0] > least:
                high = middle
            else:
                low = middle
        overrides = grown(growing, high)
        break
    else:
        overrides = grown(groups, math.inf)  # nothing reaches past the cover: every group at its largest
    if draw is not None:
        kept = [g for g in groups if g[0] in overrides]  # a group left at its small value stays there
        _drawn(source, choices, kept, overrides, max(bound, input_elements(source, overrides)[0]), draw)
    return overrides


# Packages a problem needs


def _guarded_imports(tree: ast.Module) -> set[int]:
    """ids of import statements inside ``try: ... except ImportError`` (optional imports)."""
    guarded = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set()
        for handler in node.handlers:
            caught |= _names(handler.type) if handler.type is not None else {"ImportError"}
        if caught & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
            guarded |= {id(n) for statement in node.body for n in ast.walk(statement)}
    return guarded


def imported_packages(source: str) -> list[str]:
    """Top-level packages the source imports (anywhere, optional ``try`` imports excluded), in order."""
    tree = _parse(source)
    guarded = _guarded_imports(tree)
    packages: dict[str, None] = {}
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            packages.update((alias.name.split(".")[0], None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            packages[node.module.split(".")[0]] = None
    return list(packages)


def missing_packages(source: str) -> list[str]:
    """The packages the source imports that this Python environment cannot find."""
    missing = []
    for package in imported_packages(source):
        try:
            found = importlib.util.find_spec(package) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(package)
    return missing


def module_names(source: str) -> set[str] | None:
    """The names the source binds at module level (definitions, assignments, imports, under ``if``,
    ``try``, ``with`` and loops too), or None where that cannot be told (a ``from x import *``)."""
    names: set[str] = set()
    pending = list(_parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            continue
        targets = {
            ast.Assign: lambda n: n.targets,
            ast.AnnAssign: lambda n: [n.target],
            ast.AugAssign: lambda n: [n.target],
            ast.For: lambda n: [n.target],
            ast.AsyncFor: lambda n: [n.target],
            ast.With: lambda n: [item.optional_vars for item in n.items if item.optional_vars is not None],
            ast.AsyncWith: lambda n: [item.optional_vars for item in n.items if item.optional_vars is not None],
        }.get(type(node), lambda n: [])(node)
        names.update(name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name))
        for field in ("body", "orelse", "finalbody"):
            pending.extend(getattr(node, field, []))
        pending.extend(statement for handler in getattr(node, "handlers", []) for statement in handler.body)
    return names


def changed_sizes(before: Mapping[str, int], after: Mapping[str, int], skip: Iterable[str] = ()) -> dict:
    """name -> (before, after) for the constants whose value differs (``skip`` left out)."""
    skip = set(skip)
    return {n: (before[n], after[n]) for n in before if n in after and before[n] != after[n] and n not in skip}


def describe_changes(changes: Mapping[str, tuple[int, int]]) -> str:
    """``batch_size 4096->16, dim 8192->32``."""
    return ", ".join(f"{name} {old}->{new}" for name, (old, new) in changes.items())


def parse_size_overrides(items: Iterable[str]) -> dict[str, int]:
    """``["batch_size=4", "input_shape[0]=64"]`` -> ``{"batch_size": 4, "input_shape[0]": 64}`` (the
    ``--size`` options of the CLI); ConfigError for an item of another form."""
    parsed: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*(\[\d+\])?", name):
            raise ConfigError(f"--size expects NAME=INTEGER or NAME[INDEX]=INTEGER, got {item!r}")
        try:
            parsed[name] = int(value)
        except ValueError:
            raise ConfigError(f"--size {name}: {value!r} is not an integer") from None
    return parsed
