"""Read and override a problem's module-level integer size constants (``batch_size = 4096``).

The rewrite is textual at the exact span of each constant, so the rest of the source (comments,
formatting) is untouched and a model shown the shrunk problem sees ordinary code.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tritongym.errors import ProblemError


def _int_constant_nodes(source: str) -> dict[str, ast.Constant]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemError(f"reference source does not parse: line {exc.lineno}: {exc.msg}") from exc
    found: dict[str, ast.Constant] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and type(value.value) is int:
            found[target.id] = value
    return found


def int_constants(source: str) -> dict[str, int]:
    """The module-level ``NAME = <int literal>`` assignments of ``source``, in order."""
    return {name: node.value for name, node in _int_constant_nodes(source).items()}


def override_int_constants(source: str, overrides: Mapping[str, int]) -> str:
    """Return ``source`` with the named module-level integer constants replaced.

    Raises ProblemError when a name is not such a constant (a typo must not pass silently).
    """
    nodes = _int_constant_nodes(source)
    unknown = sorted(set(overrides) - set(nodes))
    if unknown:
        known = ", ".join(nodes) or "none"
        raise ProblemError(
            f"cannot override {', '.join(unknown)}: not a module-level integer constant "
            f"of this problem (its constants: {known})"
        )
    lines = source.splitlines(keepends=True)
    # Replace from the end so earlier offsets stay valid.
    for name in sorted(overrides, key=lambda n: (nodes[n].lineno, nodes[n].col_offset), reverse=True):
        node, value = nodes[name], overrides[name]
        if type(value) is not int:
            raise ProblemError(f"size override {name}={value!r} is not an integer")
        if node.lineno != node.end_lineno:
            raise ProblemError(f"constant {name} spans several lines; cannot override it")
        i = node.lineno - 1
        line = lines[i].encode()
        lines[i] = (line[: node.col_offset] + str(value).encode() + line[node.end_col_offset :]).decode()
    return "".join(lines)
