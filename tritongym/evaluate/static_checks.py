"""Static checks of a candidate's source: constructs a kernel solution has no use for and that serve
to tamper with the judge, read what it must not, or escape the sandbox.

Each is reported with its line. These checks see what is written, not what runs. Obfuscated access
(``getattr(os, "fo" + "rk")``) is left to the runtime guards and the sandbox.
"""

from __future__ import annotations

import ast

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
}
FORBIDDEN_NAMES = {
    "__import__": "imports dynamically",
    "eval": "runs generated code",
    "exec": "runs generated code",
    "compile": "runs generated code",
    "globals": "reaches module state",
    "setattr": "may patch modules",
    "delattr": "may patch modules",
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
}


_FORBIDDEN_PATHS = {f"{owner}.{attr}": why for (owner, attr), why in FORBIDDEN_ATTRIBUTES.items()}


def _forbidden_path(full: str) -> tuple[str, str] | None:
    """The forbidden dotted path that ``full`` is, or lies under (``torch.library.Library``)."""
    parts = full.split(".")
    for end in range(len(parts), 1, -1):
        path = ".".join(parts[:end])
        if path in _FORBIDDEN_PATHS:
            return path, _FORBIDDEN_PATHS[path]
    return None


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def forbidden_constructs(source: str) -> list[tuple[int, str]]:
    """(line, message) for every forbidden construct of ``source`` (which must parse)."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> module it stands for
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

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                names = [f"{node.module}.{a.name}" for a in node.names] if node.module else []
            for name in names:
                root = name.split(".")[0]
                if root in FORBIDDEN_MODULES:
                    found.append((node.lineno, f"imports {name} ({FORBIDDEN_MODULES[root]})"))
                elif hit := _forbidden_path(name):
                    found.append((node.lineno, f"imports {hit[0]} ({hit[1]})"))
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES and node.id not in aliases:
            found.append((node.lineno, f"uses {node.id} ({FORBIDDEN_NAMES[node.id]})"))
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted and (hit := _forbidden_path(resolve(dotted))):
                found.append((node.lineno, f"uses {hit[0]} ({hit[1]})"))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                dotted = _dotted(target) if isinstance(target, ast.Attribute) else None
                if dotted and dotted.split(".")[0] in aliases:
                    found.append((node.lineno, f"assigns {resolve(dotted)} (patches a module)"))
    return sorted(set(found))
