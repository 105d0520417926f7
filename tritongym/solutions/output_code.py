"""Inductor's output code made standalone: pure functions of the text (no torch needed).

:func:`standalone` rewrites the module Inductor writes for one graph: each ``async_compile.triton(name,
'''source''')`` becomes the kernel's decorated ``@triton.jit`` function at module level, the
asynchronous compilation machinery, the benchmark harness and every header line ``call`` does not
need are dropped (what is left must define every name it reads), and library calls
(``extern_kernels.mm``, convolutions) stay as Inductor wrote them. :func:`render` makes the solution
file of a problem from a :class:`Capture` (tritongym/solutions/inductor.py makes one): the reference
source (its ``Model`` builds the state), that code, and a ``ModelNew`` with ``Model``'s constructor
whose forward calls ``call`` with the parameters, buffers and inputs in the graph's order. The file
must pass the environment's static checks.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

from tritongym.errors import TritonGymError
from tritongym.problems import Problem


class Unsupported(TritonGymError):
    """Inductor's code for a problem cannot be made into a standalone Triton solution (says why)."""


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
    sizes: dict[str, int] = field(default_factory=dict)
    """``input_bytes``, ``output_bytes`` and ``param_bytes`` of the problem as compiled."""


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


def call_order(text: str) -> list[str]:
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


CPU_HELPER = "empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu"
"""The header line of Inductor's CPU code that names its buffer helper: it allocates host memory below
PyTorch's dispatcher, whatever device forward runs on."""
PLACED_HELPER = '''def empty_strided_cpu(size, stride, dtype):
    """Inductor's buffer helper, made on the device forward runs on (its torch.device context): Inductor's
    own allocates host memory, which a GPU's Triton launch refuses (and the CPU judge too, as a GPU)."""
    return torch.empty_strided(size, stride, dtype=dtype)'''


def _placed(wrapper: str) -> tuple[str, bool]:
    """Inductor's CPU code with its buffers made where forward runs (``PLACED_HELPER``), and whether
    it had the CPU helper (then forward runs ``call`` in its inputs' device context)."""
    if CPU_HELPER not in wrapper:
        return wrapper, False
    return wrapper.replace(CPU_HELPER, PLACED_HELPER), True


def render(problem: Problem, capture: Capture) -> tuple[str, int, int]:
    """The solution file of ``problem`` from its capture: the reference source, Inductor's code made
    standalone, and ``ModelNew``. Returns the text, the number of kernels and of library calls."""
    from tritongym.evaluate.static_checks import forbidden_constructs

    wrapper, kernels, extern = standalone(_with_constants(capture.code, capture.constants))
    wrapper, placed = _placed(wrapper)
    if not kernels:
        raise Unsupported(f"Inductor made no Triton kernel: the forward is {extern} library call(s)")
    if len(call_order(wrapper)) != len(capture.arguments):
        raise Unsupported(
            f"call() unpacks {len(call_order(wrapper))} arguments but the graph has {len(capture.arguments)} inputs"
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
    body = f"""        with torch.no_grad():  # Inductor's inference code: library calls write into out= buffers
            outputs = call([{arguments}])"""
    if placed:  # its buffers on the device of its arguments, as Inductor's GPU code makes them
        body = f"""        arguments = [{arguments}]
        device = next((a.device for a in arguments if isinstance(a, torch.Tensor)), torch.get_default_device())
        with torch.no_grad(), torch.device(device):  # library calls write into out= buffers
            outputs = call(arguments)"""
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
{body}
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
