"""Triton solutions from torch.compile: Inductor's generated code made into a standalone ``ModelNew``.

For one problem (:func:`capture`, run in a child process of its own): the reference ``Model`` is built
with its init inputs, its forward is compiled by ``torch.compile`` (Inductor, one graph:
``fullgraph=True``, static shapes) on the problem's inputs, and Inductor's output code is captured
when it is written (``GraphLowering.save_output_code``). Compilation stops there: the kernels are
never compiled or run, so no Triton driver is needed (on the CPU, ``cpu_backend = "triton"`` makes
Inductor emit Triton for the CPU; the hash of a missing driver is stubbed).

The order of ``call(args)``'s arguments is read from the graphs, not guessed: Inductor's graph has one
placeholder per argument of the graph AOT autograd was given, which is the graph module's own
parameters and buffers, then Dynamo's example inputs; each of those is matched *by identity* to a
parameter, buffer or plain tensor attribute of the model, or to a tensor of the forward's inputs,
and its shape checked against the placeholder's.

:func:`standalone` then rewrites the output code (:func:`render`): each ``async_compile.triton(name,
'''source''')`` becomes the kernel's decorated ``@triton.jit`` function at module level, the
asynchronous compilation machinery, the benchmark harness and every header line ``call`` does not
need are dropped, and the result must pass the environment's static checks. Library calls
(``extern_kernels.mm``, convolutions) stay as Inductor wrote them. The solution file holds the
reference source (its ``Model`` builds the state), that code and a ``ModelNew`` with ``Model``'s
constructor, whose parameters, buffers and submodules are those of a ``Model`` it builds, and whose
forward calls ``call`` with them and the inputs in the graph's order.

:func:`generate` runs one child process per problem (``python -m tritongym.solutions.inductor``),
``jobs`` at once, and writes ``<out>/<problem name>.py`` for each problem it could make, with a
summary (``summary.json``); a problem Inductor cannot compile as one graph, or whose code is not
plain Triton, is skipped with its reason. Problems that ran out of memory beside others are retried
alone.
"""

from __future__ import annotations

import ast
import builtins
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tritongym.errors import TritonGymError
from tritongym.problems import Problem

log = logging.getLogger(__name__)

SUMMARY = "summary.json"
CHILD_TIMEOUT_S = 600.0
"""Longest a problem's compilation may take before it is skipped."""


class Unsupported(TritonGymError):
    """Inductor's code for a problem cannot be made into a standalone Triton solution (says why)."""


@dataclass
class Outcome:
    """What became of one problem."""

    problem: str
    status: str
    """``written`` or ``skipped``."""
    reason: str = ""
    """Why it was skipped."""
    kernels: int = 0
    """Triton kernels in the solution."""
    extern_calls: int = 0
    """Library calls (``extern_kernels.*``, aten fallbacks) left in ``call``."""
    bytes: int = 0
    """Size of the solution file (the environment refuses sources over ``max_source_bytes``)."""
    seconds: float = 0.0
    path: str = ""


@dataclass
class Argument:
    """Where one argument of ``call`` comes from in ``ModelNew.forward``."""

    kind: str
    """``parameter``, ``buffer``, ``attribute`` (a plain tensor attribute of the model) or ``input``."""
    name: str = ""
    """The dotted name of a parameter, buffer or attribute."""
    path: tuple[int, ...] = ()
    """An input's position: the forward argument, then indices into nested lists or tuples."""
    size: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    """An input's layout when it was compiled: ``call`` assumes it (the judge's copies may differ)."""


@dataclass
class Capture:
    """Inductor's output code for one graph and how to call it."""

    code: str
    arguments: list[Argument]
    """The arguments of ``call``, in its order."""
    outputs: int
    """How many of ``call``'s results are the forward's outputs (the first ones)."""
    structure: str
    """The forward's output: ``tensor``, ``tuple`` or ``list``."""
    versions: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str | None] = field(default_factory=dict)
    """Constant tensors Inductor gives its module from outside the code (``_tensor_constant0 = None``
    in the text): name -> an expression that rebuilds it, or None when it is too large to embed."""


# ---------------------------------------------------------------------------------------------------
# The output code made standalone (pure functions of the text).


def _bound(node: ast.stmt) -> set[str]:
    """The module-level names a statement binds."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name.split(".")[0]) for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _free(node: ast.AST) -> set[str]:
    """The global names a module-level statement reads: its loads, less each function's own locals."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        local |= {
            n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        for b in body:
            for n in ast.walk(b):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
                    local |= _bound(n)
                elif isinstance(n, ast.ExceptHandler) and n.name:
                    local.add(n.name)
                elif isinstance(n, (ast.Global, ast.Nonlocal)):
                    local |= set(n.names)
        outer = set().union(*(_free(d) for d in node.decorator_list)) if hasattr(node, "decorator_list") else set()
        defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        outer |= set().union(*(_used(d) for d in defaults))
        return outer | (set().union(*(_free(b) for b in body)) - local)
    if isinstance(node, ast.ClassDef):
        return set().union(*(_free(b) for b in [*node.bases, *node.decorator_list, *node.body]))
    found = set()
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            found.add(child.id)
        else:
            found |= _free(child)
    return found


def _async_compile_call(node: ast.stmt) -> ast.Call | None:
    """The ``async_compile.<kind>(...)`` call a statement makes, if any."""
    value = node.value if isinstance(node, (ast.Assign, ast.Expr)) else None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "async_compile"
    ):
        return value
    return None


_HARNESS = {"get_args", "benchmark_compiled_module"}
"""Functions of the output code that only its benchmark harness uses."""


def _kernel_statements(name: str, source: str) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """A kernel's imports and its other statements (the decorated function), without the calls it
    makes at import (``triton_helpers.set_driver_to_gpu()``: the judge's process has its driver)."""
    tree = ast.parse(source)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom, ast.Expr))]
    if not any(isinstance(n, ast.FunctionDef) and n.name == name for n in body):
        raise Unsupported(f"the source of kernel {name} defines no function of that name")
    return imports, body


def standalone(code: str) -> tuple[str, int, int]:
    """Inductor's output code as a standalone module: its Triton kernels as module-level ``@triton.jit``
    functions, ``call`` and what ``call`` needs. Returns the text, the number of kernels and of
    library calls. Raises :class:`Unsupported` for code that is not plain Triton and Python."""
    tree = ast.parse(code)
    statements: list[ast.stmt] = []
    kernel_imports: dict[str, ast.stmt] = {}
    kernels = 0
    for node in tree.body:
        call = _async_compile_call(node)
        if call is not None:
            kind = call.func.attr
            if kind == "wait" or (isinstance(node, ast.Assign) and kind == "AsyncCompile"):
                continue
            if kind != "triton":
                raise Unsupported(f"Inductor made a non-Triton kernel (async_compile.{kind})")
            name, source = (a.value if isinstance(a, ast.Constant) else None for a in call.args[:2])
            if not isinstance(name, str) or not isinstance(source, str):
                raise Unsupported("a kernel of the output code has no literal name and source")
            imports, body = _kernel_statements(name, source)
            for imp in imports:
                kernel_imports.setdefault(ast.unparse(imp), imp)
            statements.extend(body)
            kernels += 1
            continue
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _used(node.value) == {"AsyncCompile"}:
            continue
        if isinstance(node, (ast.Delete, ast.If)):  # del async_compile; the __main__ block
            continue
        if isinstance(node, ast.FunctionDef) and node.name in _HARNESS:
            continue
        if isinstance(node, ast.Expr):  # docstrings and the compile-time autotuning block
            continue
        statements.append(node)
    if not any("call" in _bound(n) for n in statements):
        raise Unsupported("the output code defines no call()")
    statements = list(kernel_imports.values()) + statements
    needed, keep = {"call"}, set()
    changed = True
    while changed:
        changed = False
        for i, node in enumerate(statements):
            if i not in keep and _bound(node) & needed:
                keep.add(i)
                needed |= _used(node)
                changed = True
    kept = [node for i, node in enumerate(statements) if i in keep]
    bound = set().union(*(_bound(n) for n in kept)) | set(dir(builtins)) | {"__file__"}
    missing = sorted(set().union(*(_free(n) for n in kept)) - bound)
    if missing:
        raise Unsupported(f"call() uses names the output code does not define: {', '.join(missing)}")
    imports = list({ast.unparse(n): n for n in kept if isinstance(n, (ast.Import, ast.ImportFrom))}.values())
    rest = [n for n in kept if not isinstance(n, (ast.Import, ast.ImportFrom))]
    text = "\n".join(ast.unparse(n) for n in imports) + "\n\n" + "\n\n\n".join(ast.unparse(n) for n in rest) + "\n"
    extern = sum(
        1
        for n in ast.walk(ast.Module(body=rest, type_ignores=[]))
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in ("extern_kernels", "aten")
    )
    return text, kernels, extern


def _with_constants(code: str, constants: dict[str, str | None]) -> str:
    """The output code with each constant's ``NAME = None`` placeholder set to its value."""
    lines = code.splitlines()
    for name, expression in constants.items():
        placeholder = re.compile(rf"{re.escape(name)} = None(\s*#.*)?")
        for i, line in enumerate(lines):
            if placeholder.fullmatch(line):
                if expression is None:
                    raise Unsupported(f"the code uses constant {name}, a tensor too large to write into the solution")
                lines[i] = f"{name} = {expression}"
    return "\n".join(lines) + "\n"


def _call_order(text: str) -> list[str]:
    """The names ``call`` unpacks its ``args`` into, in order."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and isinstance(stmt.value, ast.Name)
                    and stmt.value.id == "args"
                    and isinstance(stmt.targets[0], (ast.Tuple, ast.List, ast.Name))
                ):
                    target = stmt.targets[0]
                    elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                    return [e.id for e in elements if isinstance(e, ast.Name)]
            return []
    return []


def _signature(source: str, entry_point: str, method: str) -> ast.arguments | None:
    """The arguments of ``entry_point.method`` in the reference source (None where it defines none)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == entry_point:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return item.args
    return None


def _without_self(args: ast.arguments) -> ast.arguments:
    positional = [*args.posonlyargs, *args.args][1:]
    posonly = max(len(args.posonlyargs) - 1, 0)
    return ast.arguments(
        posonlyargs=positional[:posonly], args=positional[posonly:], vararg=args.vararg,
        kwonlyargs=args.kwonlyargs, kw_defaults=args.kw_defaults, kwarg=args.kwarg, defaults=args.defaults,
    )  # fmt: skip


def _pass_through(args: ast.arguments) -> str:
    """The call arguments that pass a signature's parameters on unchanged."""
    parts = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    parts += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return ", ".join(parts)


def _input_expression(path: tuple[int, ...], forward: ast.arguments) -> str:
    positional = [a.arg for a in forward.posonlyargs + forward.args]
    first, rest = path[0], path[1:]
    if first < len(positional):
        base = positional[first]
    elif forward.vararg:
        base = f"{forward.vararg.arg}[{first - len(positional)}]"
    else:
        raise Unsupported(f"forward takes no input {first}")
    return base + "".join(f"[{i}]" for i in rest)


def _argument_expression(argument: Argument, forward: ast.arguments) -> str:
    if argument.kind == "parameter":
        return f"self.get_parameter({argument.name!r})"
    if argument.kind == "buffer":
        return f"self.get_buffer({argument.name!r})"
    if argument.kind == "attribute":
        owner, _, attr = argument.name.rpartition(".")
        return f"self.get_submodule({owner!r}).{attr}" if owner else f"self.{attr}"
    expression = _input_expression(argument.path, forward)
    return f"_laid_out({expression}, {argument.size}, {argument.stride})" if argument.size else expression


LAID_OUT = '''

def _laid_out(tensor, size, stride):
    """The input in the layout the compiled code assumes (a copy only where its strides differ)."""
    if all(have == want for n, have, want in zip(tensor.shape, tensor.stride(), stride) if n > 1):
        return tensor
    laid_out = torch.empty_strided(size, stride, dtype=tensor.dtype, device=tensor.device)
    laid_out.copy_(tensor)
    return laid_out
'''


def render(problem: Problem, capture: Capture) -> tuple[str, int, int]:
    """The solution file of ``problem`` from its capture: the reference source, Inductor's code made
    standalone, and ``ModelNew``. Returns the text, the number of kernels and of library calls."""
    from tritongym.evaluate.static_checks import forbidden_constructs

    wrapper, kernels, extern = standalone(_with_constants(capture.code, capture.constants))
    if not kernels:
        raise Unsupported(f"Inductor made no Triton kernel: the forward is {extern} library call(s)")
    if len(_call_order(wrapper)) != len(capture.arguments):
        raise Unsupported(
            f"call() unpacks {len(_call_order(wrapper))} arguments but the graph has {len(capture.arguments)} inputs"
        )
    reference = [(n, ast.unparse(n)) for n in ast.parse(problem.source).body]
    reference_names = set().union(*(_bound(n) for n, _ in reference))
    same = {text for _, text in reference}  # ``import torch`` in both binds the same thing
    clashes = sorted({
        name
        for node in ast.parse(wrapper).body
        if ast.unparse(node) not in same
        for name in _bound(node) & reference_names
    })  # fmt: skip
    if clashes:
        raise Unsupported(f"the reference source and Inductor's code both define {', '.join(clashes)}")
    init = _signature(problem.source, problem.entry_point, "__init__")
    forward = _signature(problem.source, problem.entry_point, "forward")
    if forward is None:
        raise Unsupported(f"{problem.entry_point} defines no forward of its own")
    init_args = _without_self(init) if init is not None else ast.parse("def f(*args, **kwargs): pass").body[0].args
    forward_args = _without_self(forward)
    attributes = sorted({a.name for a in capture.arguments if a.kind == "attribute" and "." not in a.name})
    arguments = ", ".join(_argument_expression(a, forward_args) for a in capture.arguments)
    result = "outputs[0]" if capture.structure == "tensor" else f"{capture.structure}(outputs[:{capture.outputs}])"
    copy_attributes = "".join(f"        self.{name} = reference.{name}\n" for name in attributes)
    model_new = f'''

class {problem.solution_class}(torch.nn.Module):
    """{problem.entry_point}'s forward as torch.compile (Inductor) generated it: its Triton kernels and
    library calls, launched by call(). The state is that of a {problem.entry_point} built alike."""

    def __init__(self, {ast.unparse(init_args)}):
        super().__init__()
        reference = {problem.entry_point}({_pass_through(init_args)})
        for name, child in reference.named_children():
            self.add_module(name, child)
        for name, parameter in reference.named_parameters(recurse=False):
            self.register_parameter(name, parameter)
        for name, buffer in reference.named_buffers(recurse=False):
            self.register_buffer(name, buffer, persistent=name not in reference._non_persistent_buffers_set)
{copy_attributes}
    def forward(self, {ast.unparse(forward_args)}):
        with torch.no_grad():  # Inductor's inference code: library calls write into out= buffers
            outputs = call([{arguments}])
        return {result}
'''
    versions = ", ".join(f"{k} {v}" for k, v in capture.versions.items())
    header = (
        f"# {problem.name}: torch.compile (Inductor) output made standalone by `tritongym solutions inductor`"
        + (f" ({versions})" if versions else "")
        + ".\n# The reference problem (its Model builds ModelNew's state):\n"
    )
    text = (
        header
        + problem.source.rstrip()
        + "\n\n# Inductor's generated code: Triton kernels and call().\n"
        + wrapper
        + (LAID_OUT if any(a.kind == "input" for a in capture.arguments) else "")
        + model_new
    )
    found = forbidden_constructs(text)
    if found:
        line, message = found[0]
        raise Unsupported(f"the generated code fails the static checks (line {line}: {message})")
    return text, kernels, extern


# ---------------------------------------------------------------------------------------------------
# Capture (in the child process: it imports and runs the reference).


def _load_module(source: str, directory: Path) -> Any:
    import importlib.util

    path = directory / "reference.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("tritongym_inductor_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _to_device(value: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _sources(model: Any, inputs: list) -> dict[int, Argument]:
    """Every tensor the graph may take, by identity: the model's state, its plain tensor attributes
    and the inputs' tensors (nested lists and tuples included)."""
    import torch

    found: dict[int, Argument] = {}

    def add_input(value: Any, path: tuple[int, ...]) -> None:
        if isinstance(value, torch.Tensor):
            found.setdefault(id(value), Argument("input", path=path))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                add_input(v, (*path, i))

    for i, value in enumerate(inputs):
        add_input(value, (i,))
    for name, parameter in model.named_parameters(remove_duplicate=False):
        found.setdefault(id(parameter), Argument("parameter", name))
    for name, buffer in model.named_buffers(remove_duplicate=False):
        found.setdefault(id(buffer), Argument("buffer", name))
    for prefix, module in model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                found.setdefault(id(value), Argument("attribute", f"{prefix}.{attr}" if prefix else attr))
    return found


def _output_structure(model: Any, inputs: list) -> tuple[str, int]:
    """The forward's output, run on fake tensors (no memory, no compute): tensor, tuple or list, and
    how many tensors."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True):
            output = model(*inputs)
    except Exception as exc:
        raise Unsupported(
            f"the forward does not run on fake tensors to read its outputs ({_first_line(exc)})"
        ) from None
    if isinstance(output, torch.Tensor):
        return "tensor", 1
    if isinstance(output, (tuple, list)) and output and all(isinstance(o, torch.Tensor) for o in output):
        return type(output).__name__, len(output)
    raise Unsupported(f"the forward returns {type(output).__name__}, not a tensor or a flat tuple/list of tensors")


MAX_CONSTANT_ELEMENTS = 4096
"""Largest constant tensor written into a solution as a literal."""


def _constant_expression(tensor: Any, device: str) -> str | None:
    """Python that rebuilds a small, finite, contiguous constant tensor on ``device``; None otherwise."""
    too_large = tensor.numel() > MAX_CONSTANT_ELEMENTS or not tensor.is_contiguous()
    if too_large or (tensor.is_floating_point() and not bool(tensor.isfinite().all())):
        return None
    values = tensor.detach().cpu().reshape(-1).tolist()
    dtype = str(tensor.dtype).removeprefix("torch.")
    return f"torch.tensor({values!r}, dtype=torch.{dtype}, device={device!r}).reshape({tuple(tensor.shape)!r})"


class _Captured(Exception):
    """Raised from the output-code hook: compilation stops once the code is known."""


def _no_driver() -> bool:
    try:
        from triton.runtime.driver import driver

        driver.active  # noqa: B018 - raises where Triton has no driver for this machine
    except RuntimeError:
        return True
    return False


def capture(problem: Problem, device: str, seed: int = 0) -> Capture:
    """Compile ``problem``'s reference with torch.compile on ``device`` and capture Inductor's code."""
    from contextlib import ExitStack
    from unittest import mock

    import torch
    import torch._inductor.config as inductor_config
    import triton
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory(prefix="tritongym-inductor-") as scratch:
        module = _load_module(problem.source, Path(scratch))
        cls = getattr(module, problem.entry_point, None)
        if cls is None:
            raise Unsupported(f"the problem defines no class {problem.entry_point}")
        with torch.device(device):  # made where they are used: a CPU randn of 16 GiB takes long
            model = cls(*_to_device(module.get_init_inputs(), device)).to(device).eval()
            inputs = list(_to_device(module.get_inputs(), device))
        graphs: list[tuple[Any, list]] = []
        captured: list[dict[str, Any]] = []

        def backend(gm, example_inputs):
            from torch._inductor.compile_fx import compile_fx

            lifted = [t for _, t in gm.named_parameters()] + [t for _, t in gm.named_buffers()]
            graphs.append((gm, lifted + list(example_inputs)))
            return compile_fx(gm, example_inputs)

        def save_output_code(code: str) -> None:
            graph = V.graph
            placeholders = [n for n in graph.module.graph.nodes if n.op == "placeholder"]
            captured.append({
                "code": code,
                "placeholders": [(n.name, n.meta.get("val")) for n in placeholders],
                "outputs": [getattr(o, "get_size", lambda: None)() for o in graph.graph_outputs],
                "constants": {name: _constant_expression(t, device) for name, t in graph.constants.items()},
            })  # fmt: skip
            raise _Captured

        with ExitStack() as stack:
            stack.enter_context(mock.patch.object(GraphLowering, "save_output_code", save_output_code))
            stack.enter_context(inductor_config.patch(cpu_backend="triton", freezing=False))
            if _no_driver():
                import torch.utils._triton as triton_utils

                stack.enter_context(mock.patch.object(triton_utils, "triton_hash_with_backend", lambda: "0" * 64))
            torch._dynamo.reset()
            compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
            try:
                with torch.no_grad():
                    compiled(*inputs)
            except Exception as exc:
                if not captured:
                    raise Unsupported(f"torch.compile failed: {_first_line(exc)}") from None
        torch._dynamo.reset()
        structure, outputs = _output_structure(model, inputs)
        if len(graphs) != 1 or len(captured) != 1:
            raise Unsupported(f"torch.compile made {len(graphs)} graphs and {len(captured)} output codes, not one")
        gm, flat = graphs[0]
        placeholders = captured[0]["placeholders"]
        if len(placeholders) != len(flat):
            raise Unsupported(
                f"Inductor's graph has {len(placeholders)} inputs where Dynamo's had {len(flat)} (merged inputs)"
            )
        sources = _sources(model, inputs)
        arguments = []
        for (name, value), tensor in zip(placeholders, flat, strict=True):
            if not isinstance(tensor, torch.Tensor) or id(tensor) not in sources:
                raise Unsupported(f"graph input {name} is not a parameter, buffer, attribute or input of the model")
            if value is not None and tuple(value.shape) != tuple(tensor.shape):
                raise Unsupported(
                    f"graph input {name} has shape {tuple(value.shape)}, its tensor {tuple(tensor.shape)}"
                )
            argument = sources[id(tensor)]
            if argument.kind == "input":
                argument = replace(argument, size=tuple(tensor.shape), stride=tuple(tensor.stride()))
            arguments.append(argument)
        order = _call_order(standalone(captured[0]["code"])[0])
        if order != [name for name, _ in placeholders]:
            raise Unsupported(f"call() unpacks {order}, Inductor's graph has {[n for n, _ in placeholders]}")
        graph_outputs = sum(1 for n in gm.graph.nodes if n.op == "output" for _ in _flat(n.args[0]))
        if graph_outputs != outputs or len(captured[0]["outputs"]) < outputs:
            raise Unsupported(
                f"the forward returns {outputs} tensors, Dynamo's graph {graph_outputs} and Inductor's "
                f"{len(captured[0]['outputs'])} (an output that is an input or a constant)"
            )
        versions = {"torch": torch.__version__, "triton": triton.__version__, "device": str(device)}
        return Capture(captured[0]["code"], arguments, outputs, structure, versions, captured[0]["constants"])


def _flat(value: Any) -> Iterable[Any]:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def generate_one(problem: Problem, device: str, out: Path) -> Outcome:
    """Capture, render and write one problem's solution; an :class:`Unsupported` problem is skipped."""
    started = time.monotonic()
    try:
        text, kernels, extern = render(problem, capture(problem, device))
    except Unsupported as exc:
        return Outcome(problem.name, "skipped", str(exc), seconds=round(time.monotonic() - started, 2))
    except Exception as exc:  # the reference itself fails: its error, named
        reason = f"the reference fails to build or run: {_first_line(exc)}"
        if "out of memory" in str(exc).lower():
            reason = f"out of memory: {_first_line(exc)}"
        return Outcome(problem.name, "skipped", reason, seconds=round(time.monotonic() - started, 2))
    path = out / f"{problem.name}.py"
    path.write_text(text, encoding="utf-8")
    seconds = round(time.monotonic() - started, 2)
    return Outcome(problem.name, "written", "", kernels, extern, len(text.encode()), seconds, str(path))


# ---------------------------------------------------------------------------------------------------
# Many problems: one child process each.


def _child_environment() -> dict[str, str]:
    env = dict(os.environ)
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no compile workers: the kernels are never compiled here
    env.setdefault("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    return env


def _run_child(problem: Problem, device: str, out: Path, timeout_s: float) -> Outcome:
    request = json.dumps({"problem": {**problem.to_dict(), "level": problem.level}, "device": device, "out": str(out)})
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tritongym.solutions.inductor"], input=request, capture_output=True, text=True,
            timeout=timeout_s, env=_child_environment(),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return Outcome(problem.name, "skipped", f"compilation took longer than {timeout_s:.0f} s", seconds=timeout_s)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return Outcome(**json.loads(line))
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return Outcome(
        problem.name, "skipped", f"the compiling process exited with {done.returncode}: {tail}",
        seconds=round(time.monotonic() - started, 2),
    )  # fmt: skip


def prepare_all(problems: list[Problem], small: bool) -> tuple[list[Problem], list[Outcome]]:
    """The problems as compiled (``Problem.prepare``: shrunk when ``small``), and the skipped outcome
    of each one that cannot be prepared (a package it needs is missing, say)."""
    prepared, refused = [], []
    for problem in problems:
        try:
            prepared.append(problem.prepare(small=small))
        except TritonGymError as exc:
            refused.append(Outcome(problem.name, "skipped", str(exc)))
    return prepared, refused


def generate(
    problems: list[Problem],
    out: Path,
    device: str,
    jobs: int = 1,
    timeout_s: float = CHILD_TIMEOUT_S,
    on_done: Callable[[Outcome], None] | None = None,
    refused: Iterable[Outcome] = (),
    resume: bool = False,
) -> list[Outcome]:
    """Write ``out/<name>.py`` for every problem Inductor can make a standalone solution of, ``jobs``
    compilations at once, and ``out/summary.json``, rewritten as each problem is done (the ``refused``
    problems first: those that could not be prepared). Problems that ran out of memory while others
    compiled beside them are tried again one at a time. With ``resume``, problems the summary already
    has an outcome for (other than running out of memory) are not compiled again. Returns the outcomes,
    refused ones included, in the problems' order."""
    out.mkdir(parents=True, exist_ok=True)
    refused = list(refused)
    outcomes: dict[str, Outcome] = {}
    if resume and (out / SUMMARY).exists():
        earlier = [Outcome(**row) for row in json.loads((out / SUMMARY).read_text(encoding="utf-8"))["problems"]]
        outcomes = {o.problem: o for o in earlier if not _oom(o)}
    names = {p.name for p in problems}
    lock = threading.Lock()
    memory = _DeviceMemory(device)

    def save() -> list[Outcome]:
        ordered = [*refused, *(outcomes[p.name] for p in problems if p.name in outcomes)]
        summary = {
            "device": device,
            "problems_total": len(refused) + len(problems),
            "written": sum(o.status == "written" for o in ordered),
            "skipped": sum(o.status == "skipped" for o in ordered),
            "problems": [asdict(o) for o in ordered],
        }
        (out / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        return ordered

    def run(batch: list[Problem], workers: int, final: bool) -> None:
        with ThreadPoolExecutor(max(1, workers)) as pool:
            futures = [pool.submit(memory.run, p, lambda p=p: _run_child(p, device, out, timeout_s)) for p in batch]
            for future in as_completed(futures):
                outcome = future.result()
                with lock:
                    outcomes[outcome.problem] = outcome
                    save()
                if on_done and (final or not _oom(outcome)):
                    on_done(outcome)

    if on_done:
        for outcome in outcomes.values():
            if outcome.problem in names:
                on_done(outcome)
    run([p for p in problems if p.name not in outcomes], jobs, final=jobs <= 1)
    retry = [p for p in problems if _oom(outcomes[p.name])] if jobs > 1 else []
    if retry:
        log.info("%d problems ran out of memory beside others; trying them one at a time", len(retry))
        run(retry, 1, final=True)
    return save()


CHILD_OVERHEAD_BYTES = 1 << 30
"""A compiling process's own GPU memory (its CUDA context, Inductor's workspace), beside the problem's."""
BUDGET_SHARE = 0.7
"""Share of the GPU's free memory the compiling processes may hold at once (by their estimates)."""


class _DeviceMemory:
    """Holds back a compilation while those running would need more GPU memory than the budget: each
    holds its problem's input bytes (read statically from ``get_inputs()``, as float32) plus
    :data:`CHILD_OVERHEAD_BYTES`. A problem larger than the budget runs alone. On the CPU, no limit."""

    def __init__(self, device: str):
        self.budget = None
        if device.startswith("cuda"):
            import torch

            self.budget = int(torch.cuda.mem_get_info()[0] * BUDGET_SHARE)
        self.held = 0
        self._condition = threading.Condition()

    @staticmethod
    def footprint(problem: Problem) -> int:
        from tritongym.problems.sizes import input_elements

        try:
            elements, _ = input_elements(problem.source)
        except Exception:  # a source the static reader cannot follow: count only the overhead
            elements = 0
        return 4 * elements + CHILD_OVERHEAD_BYTES

    def run(self, problem: Problem, work: Callable[[], Outcome]) -> Outcome:
        if self.budget is None:
            return work()
        need = min(self.footprint(problem), self.budget)
        with self._condition:
            self._condition.wait_for(lambda: self.held + need <= self.budget)
            self.held += need
        try:
            return work()
        finally:
            with self._condition:
                self.held -= need
                self._condition.notify_all()


def _oom(outcome: Outcome) -> bool:
    return outcome.status == "skipped" and "out of memory" in outcome.reason.lower()


def main() -> None:
    """Child entry point: one problem as JSON on stdin, its Outcome as one JSON line on stdout."""
    request = json.loads(sys.stdin.read())
    problem = Problem(**request["problem"])
    outcome = generate_one(problem, request["device"], Path(request["out"]))
    sys.stdout.write(json.dumps(asdict(outcome)) + "\n")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main()
