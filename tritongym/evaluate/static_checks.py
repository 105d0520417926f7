"""Static checks of a candidate's source: constructs a kernel solution has no use for and that serve
to tamper with the judge, read what it must not, or escape the sandbox.

Each is reported with its line. These checks see what is written, not what runs. Obfuscated access
(``getattr(os, "fo" + "rk")``) is left to the runtime guards and the sandbox.

A forbidden path counts wherever it appears in a dotted name, also behind a re-export
(``nn.functional.torch._C``), and an attribute named after a forbidden module on any object
(``np.ctypeslib.ctypes``, ``a.ctypes._ctypes``: ctypes itself). A few read-only helpers under
forbidden paths, which the code torch.compile generates (and so KernelBook) calls, are allowed by
their exact path (``SAFE_PATHS``), and so are the Inductor runtime modules that compile and launch
the candidate's own kernels (``SAFE_MODULES``). ``setattr``/``delattr`` are judged by their target,
like an assignment: on the candidate's own objects (``setattr(self, name, nn.Parameter(...))``) they
are fine; on a module, an imported name, a builtin or a computed object they patch something that
is not the candidate's.
"""

from __future__ import annotations

import ast
import builtins

FORBIDDEN_MODULES = {
    "gc": "inspects the judge's objects",
    "inspect": "inspects the judge's frames",
    "ctypes": "reaches raw memory",
    "threading": "starts threads",
    "_thread": "starts threads",
    "multiprocessing": "starts processes",
    "subprocess": "starts processes",
    "concurrent": "starts threads or processes",
    "signal": "installs signal handlers",
    "importlib": "imports dynamically",
    "builtins": "replaces builtins",
    "pathlib": "reads files",
    "shutil": "touches files",
    "socket": "opens network connections",
    "pickle": "runs arbitrary code",
    "fcntl": "takes the judge's locks",
    "tritongym": "reaches the judge's own code (the guards that watch it in its process)",
}
FORBIDDEN_NAMES = {
    "__import__": "imports dynamically",
    "eval": "runs generated code",
    "exec": "runs generated code",
    "compile": "runs generated code",
    "globals": "reaches module state",
    "open": "reads or writes files",
    "breakpoint": "debugger hook",
}
FORBIDDEN_ATTRIBUTES = {
    ("sys", "_getframe"): "reads the judge's frames",
    ("sys", "modules"): "reaches other modules",
    ("sys", "settrace"): "installs a trace hook",
    ("sys", "setprofile"): "installs a profile hook",
    ("os", "environ"): "reads the environment",
    ("os", "getenv"): "reads the environment",
    ("os", "fork"): "starts processes",
    ("os", "kill"): "signals processes",
    ("os", "system"): "runs commands",
    ("os", "popen"): "runs commands",
    ("os", "_exit"): "ends the process",
    ("os", "write"): "writes to raw file descriptors",
    ("os", "open"): "opens raw file descriptors",
    ("os", "dup"): "duplicates file descriptors",
    ("os", "dup2"): "duplicates file descriptors",
    ("torch", "library"): "re-registers PyTorch's kernels",
    ("torch", "_C"): "reaches PyTorch's internals",
    ("torch", "overrides"): "intercepts PyTorch calls",
    ("torch.utils", "_python_dispatch"): "intercepts PyTorch calls",
    ("torch.cuda", "Stream"): "launches work outside the timed stream",
    ("torch.cuda", "stream"): "launches work outside the timed stream",
    ("torch.cuda", "Event"): "manipulates timing events",
    ("torch.cuda", "graph"): "replays work outside the timed stream",
    ("torch.cuda", "CUDAGraph"): "replays work outside the timed stream",
    ("torch", "profiler"): "interferes with the profiler",
    ("torch.autograd", "profiler"): "interferes with the profiler",
    ("torch", "_dynamo"): "changes how PyTorch compiles (the torch.compile baseline)",
    ("torch", "_inductor"): "changes how PyTorch compiles (the torch.compile baseline)",
}
SAFE_PATHS = {
    "torch._C._dynamo.guards.assert_size_stride": "raises unless a tensor has the given sizes and strides",
    "torch._C._dynamo.guards.assert_alignment": "raises unless a tensor's storage is aligned",
    "torch._C._dynamo.guards._empty_strided_cuda": "allocates an uninitialised CUDA tensor",
    "torch._C._dynamo.guards._empty_strided_cpu": "allocates an uninitialised CPU tensor",
    "torch._C._dynamo.guards._reinterpret_tensor": "makes a strided view of a tensor",
    "torch._C._cuda_getCurrentRawStream": "reads the handle of the current CUDA stream",
    "torch._dynamo.testing.rand_strided": "makes a random tensor of given sizes and strides",
    "torch.library.triton_op": "a function of Triton kernels as an operator (in a runner: the function itself)",
    "torch.library.wrap_triton": "a kernel for triton_op (in a runner: the kernel itself)",
}
"""Read-only helpers under forbidden paths, allowed by their exact path (what Inductor's generated code
calls, its benchmark stub's ``rand_strided`` included; ``triton_op`` and ``wrap_triton``, which the
zygote replaces with their eager behaviour without the dispatcher: torch_library.py). Anything reached
through them (``get_raw_stream.__self__`` is ``torch._C``) stays forbidden."""
SAFE_MODULES = {
    "torch._inductor.runtime.triton_heuristics": "compiles and launches the candidate's @triton.jit kernels",
    "torch._inductor.runtime.triton_helpers": "device functions for Triton kernels (libdevice, math)",
    "torch._inductor.runtime.hints": "plain data classes for the launchers' metadata",
    "torch._inductor.select_algorithm.extern_kernels": "PyTorch's library calls (mm, addmm, convolution)",
}
"""Inductor runtime modules allowed with everything they define: they launch kernels, they change no
dispatch, no setting and no other compilation. The rest of torch._inductor (config, lowerings,
decompositions) and torch._dynamo (config, reset) change how the torch.compile baseline compiles."""


_FORBIDDEN_PATHS = {f"{owner}.{attr}": why for (owner, attr), why in FORBIDDEN_ATTRIBUTES.items()}


def _safe(path: str) -> bool:
    return path in SAFE_PATHS or any(path == m or path.startswith(m + ".") for m in SAFE_MODULES)


def _forbidden_path(full: str) -> tuple[str, str] | None:
    """The forbidden dotted path that ``full`` is, or lies under (``torch.library.Library``), also
    behind a re-export (``torch.nn.functional.torch._C``); None for a safe helper."""
    parts = full.split(".")
    for start in range(len(parts) - 1):
        if _safe(".".join(parts[start:])):
            continue
        for end in range(len(parts), start + 1, -1):
            path = ".".join(parts[start:end])
            if path in _FORBIDDEN_PATHS:
                return path, _FORBIDDEN_PATHS[path]
    return None


NAMESAKES = {"torch.signal": "PyTorch's signal processing (torch.signal.windows), not Python's signal"}
"""Library modules named as a forbidden module is, by their full path: what they hold is not the
forbidden module's (``torch.signal.windows.hann``: window functions)."""


def _forbidden_module(full: str) -> str | None:
    """The forbidden module that a part of the imported dotted path ``full`` names, or None
    (``ctypes.util``; ``numpy.ctypeslib.ctypes``, the module itself behind a re-export; not a namesake's
    part, ``torch.signal.windows``)."""
    parts = full.split(".")
    named = [part for i, part in enumerate(parts) if ".".join(parts[: i + 1]) not in NAMESAKES]
    return next(
        (MODULE_ATTRIBUTES.get(part, part) for part in named if part in FORBIDDEN_MODULES or part in MODULE_ATTRIBUTES),
        None,
    )


def _rebound(tree: ast.AST) -> set[str]:
    """Names the source binds otherwise than by a plain ``import`` (assigned, a parameter, a loop's or a
    ``with``'s target, a function or class, an exception, an ``import ... as`` or ``from`` import):
    such a name may hold any object, whatever it is called."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)):
            found.add(node.name or "")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        elif isinstance(node, ast.Import):
            found.update(a.asname for a in node.names if a.asname and a.asname != a.name)
        elif isinstance(node, ast.ImportFrom):
            found.update(a.asname or a.name for a in node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            found.add(node.name)
    return found


MODULE_ATTRIBUTES = {"_ctypes": "ctypes", "ctypeslib": "ctypes"}
"""Attributes (and parts of an imported path) that are a forbidden module under another name: NumPy's
``ndarray.ctypes._ctypes``, and ``numpy.ctypeslib``, ctypes' bridge, which hands out ctypes' own types
(``as_ctypes_type(np.uint64)`` is ``ctypes.c_uint64``, whose arrays read and write any address:
``from_address``; red team 17 #5) and loads libraries (``load_library``)."""


def _module_attribute(node: ast.Attribute, rebound: set[str] = frozenset()) -> str | None:
    """The forbidden module an attribute's name says it is, on any object (a module's re-export,
    ``np.ctypeslib.ctypes``; an array's ``a.ctypes._ctypes``; red team 16 #2), or None; the
    candidate's own ``self.signal`` is its own, and so is a namesake's path written out from a module
    imported by its own name and bound no other way (``torch.signal``; not ``t.signal`` for a ``t``
    that a parameter or an assignment may have made another module)."""
    if isinstance(node.value, ast.Name) and node.value.id == "self":
        return None
    dotted = _dotted(node)
    if dotted in NAMESAKES and dotted.split(".")[0] not in rebound:
        return None
    return node.attr if node.attr in FORBIDDEN_MODULES else MODULE_ATTRIBUTES.get(node.attr)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


_PATCHERS = {"setattr": "sets", "delattr": "deletes"}


def forbidden_constructs(source: str) -> list[tuple[int, str]]:
    """(line, message) for every forbidden construct of ``source`` (which must parse)."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # name -> the module or imported object it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    found: list[tuple[int, str]] = []

    def resolve(dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        full = aliases.get(head, head)
        return f"{full}.{rest}" if rest else full

    # A name bound to an imported name (``t = torch``, ``T = torch.Tensor``) stands for it too.
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and (dotted := _dotted(node.value)) and dotted.split(".")[0] in aliases:
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id not in aliases:
                    aliases[target.id] = resolve(dotted)

    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    rebound = _rebound(tree)
    patch_calls = {
        id(node.func): node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _PATCHERS
    }
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                names = [f"{node.module}.{a.name}" for a in node.names] if node.module else []
            for name in names:
                module = _forbidden_module(name)
                if module:
                    found.append((node.lineno, f"imports {name} ({FORBIDDEN_MODULES[module]})"))
                elif hit := _forbidden_path(name):
                    found.append((node.lineno, f"imports {hit[0]} ({hit[1]})"))
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES and node.id not in aliases:
            found.append((node.lineno, f"uses {node.id} ({FORBIDDEN_NAMES[node.id]})"))
        elif isinstance(node, ast.Name) and node.id in _PATCHERS and node.id not in aliases:
            call = patch_calls.get(id(node))
            target = _patch_target(call.args[0] if call and call.args else None, aliases, resolve)
            if target:
                found.append(
                    (node.lineno, f"{_PATCHERS[node.id]} an attribute of {target} (patches what is not its own)")
                )
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            dotted = _dotted(node)
            if dotted and (hit := _forbidden_path(resolve(dotted))):
                found.append((node.lineno, f"uses {hit[0]} ({hit[1]})"))

        if isinstance(node, ast.Attribute) and (module := _module_attribute(node, rebound)):
            found.append((node.lineno, f"reaches {module} as an attribute, .{node.attr} ({FORBIDDEN_MODULES[module]})"))
        namespace = _namespace_of(node)
        if namespace is not None and (owner := _patch_target(namespace, aliases, resolve)):
            found.append((node.lineno, f"reaches the namespace of {owner} (patches what is not its own)"))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                dotted = _dotted(target) if isinstance(target, ast.Attribute) else None
                if dotted and dotted.split(".")[0] in aliases:
                    found.append((node.lineno, f"assigns {resolve(dotted)} (patches a module)"))
    return sorted(set(found))


def _namespace_of(node: ast.AST) -> ast.AST | None:
    """The object whose attribute dictionary ``node`` reads (``vars(x)``, ``x.__dict__``), or None.
    Writing into it patches ``x`` as an assignment to its attribute would, in a spelling the
    assignment check does not see (``vars(module)["name"] = ...``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and node.args:
        return node.args[0]
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    return None


def _patch_target(target: ast.AST | None, aliases: dict[str, str], resolve) -> str | None:
    """What a ``setattr``/``delattr`` call patches that is not the candidate's own, or None.

    The candidate's own objects are plain names it bound itself (``self``, a parameter, a local) and
    their attributes. Refused: a module or imported name (``torch``, ``nn.Module``), a builtin
    (``int``, ``__builtins__``), anything computed (``type(x)``, ``getattr(torch, "nn")``), and the
    bare function handed on (``f = setattr``), whose target cannot be seen.
    """
    if target is None:
        return "an object the check cannot see"
    dotted = _dotted(target)
    if dotted is None:
        return "a computed object"
    head = dotted.split(".")[0]
    if head in aliases:
        return resolve(dotted)
    if head in _BUILTINS:
        return f"the builtin {dotted}"
    return None


_BUILTINS = frozenset(dir(builtins)) | {"__builtins__"}
