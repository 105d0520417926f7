"""What a candidate changed in its runner: a snapshot of the runner's state taken before the
candidate is imported, compared after each call (replaced functions of torch, triton, builtins or
the runner; added class attributes; changed global settings; threads still running).

A runner serves one candidate and is killed, so nothing here protects a later candidate; it catches
candidates that patch what the comparison or the guards rely on. It runs in the candidate's process,
so it is the runner's word, not a check the candidate cannot evade (docs/environment.md).
"""

from __future__ import annotations

import functools
import operator
import sys
import threading
import types
from collections.abc import Callable
from importlib import import_module

WATCHED_MODULES = (
    "builtins", "copy", "gc", "importlib", "inspect", "json", "math", "os", "random", "time", "traceback",
    "numpy", "torch", "torch.nn", "torch.nn.functional", "torch.cuda", "torch.testing", "torch.backends.cuda",
    "torch.backends.cudnn", "triton", "triton.language", "triton.runtime.jit",
    "statistics", "torch.profiler", "torch.autograd.profiler", "tritongym.evaluate.compare",
    "tritongym.evaluate.guards", "tritongym.evaluate.judge.runner", "tritongym.evaluate.judge.protocol",
    "tritongym.evaluate.judge.tree", "tritongym.evaluate.profiling",
    "tritongym.evaluate.taint", "tritongym.evaluate.timing", "tritongym.evaluate.interpreter_libdevice",
    "tritongym.evaluate.races", "tritongym.evaluate.tf32", "tritongym.evaluate.placement",
    "tritongym.evaluate.frontend", "tritongym.evaluate.triton_compat",
)  # fmt: skip
WATCHED_CLASSES = ("torch.Tensor", "torch._C.TensorBase", "torch.nn.Module", "torch.cuda.Event", "threading.Thread")
"""Classes whose attributes are watched; unlike a module, a class must not even gain one (an added
``torch.Tensor.__sub__`` shadows the operator inherited from TensorBase)."""
LOADED_CLASSES = ("triton.runtime.interpreter.InterpreterBuilder",)
"""Classes watched where their module was loaded before the baseline (the zygote imports Triton's
interpreter on the CPU): what the interpreter computes for each operation of an interpreted kernel
(``create_exp``; ``create_extern_elementwise``, libdevice's, interpreter_libdevice.py), which a
method of the candidate's would turn into host code inside its own launches."""
_VOLATILE = {("sys", "last_type"), ("sys", "last_value"), ("sys", "last_traceback"), ("sys", "last_exc")}


def _resolve(dotted: str):
    module, _, attr = dotted.rpartition(".")
    return getattr(import_module(module), attr)


def _classes() -> dict[str, type]:
    """The watched classes: every one of WATCHED_CLASSES, and those of LOADED_CLASSES whose module is loaded."""
    classes = {dotted: _resolve(dotted) for dotted in WATCHED_CLASSES}
    for dotted in LOADED_CLASSES:
        module, _, attr = dotted.rpartition(".")
        found = getattr(sys.modules.get(module), attr, None)
        if isinstance(found, type):
            classes[dotted] = found
    return classes


def _attribute_ids() -> dict[tuple[str, str], int]:
    ids: dict[tuple[str, str], int] = {}
    for name in WATCHED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            ids.update({(name, k): id(v) for k, v in list(vars(module).items())})
    for dotted, cls in _classes().items():
        ids.update({(dotted, k): id(v) for k, v in list(vars(cls).items())})
    return {k: v for k, v in ids.items() if k not in _VOLATILE}


LIBRARY_SETTING_WORDS = ("allow", "enabled", "deterministic", "benchmark", "precision", "preferred", "backend",
                         "sdp", "qengine", "immediate", "depthwise", "carveout")  # fmt: skip
"""Every getter of torch's C module (``torch._C._get_*``) whose name has one of these words is read as a
setting: the numeric and library switches behind ``torch.backends`` (cuBLAS's fp16 accumulation, the
math attention's fp16/bf16 reduction, cuDNN and oneDNN on or off, their preferred libraries), each
spelled in Python in its own way (properties, a module's ``__getattr__``, setter functions), so that
a switch this list never named (red team 13 #3: ``allow_fp16_accumulation``,
``allow_fp16_bf16_reduction_math_sdp``) is read all the same, and a torch that adds one has it read."""
FP32_PRECISION_OPS = ("all", "matmul", "conv", "rnn")
"""The operations of ``torch._C._get_fp32_precision_getter`` (per backend: generic, cuda, mkldnn)."""
FP32_PRECISIONS = ("fp32_precision", "cuda.matmul.fp32_precision", "cudnn.fp32_precision",
                   "cudnn.conv.fp32_precision", "cudnn.rnn.fp32_precision", "mkldnn.fp32_precision")  # fmt: skip
"""torch.backends' TF32 settings of the API that torch 2.9 added beside ``allow_tf32``."""


def _read(read: Callable[[], object]) -> object:
    """A setting's value, or what reading it raised: torch refuses to read ``cudnn.allow_tf32`` once
    its conv and RNN settings were made to differ through the newer API. Either way a change from the
    baseline is seen, and the runner's check never fails on it."""
    try:
        return read()
    except Exception as exc:
        return f"unreadable ({type(exc).__name__})"


def _plain(getter: Callable[[], object]) -> object:
    """A getter's value, as a plain value (an enum or a list by its text)."""
    value = getter()
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)


def _flushes_denormals() -> bool:
    """Whether the CPU flushes float32 subnormals to zero (``torch.set_flush_denormal``, which has no
    getter): a subnormal's product is zero."""
    import torch

    return float(torch.tensor([1e-38], dtype=torch.float32).mul_(0.01).item()) == 0.0


DETERMINISM_SETTINGS = frozenset(
    ["deterministic", "torch._C._get_deterministic_algorithms", "torch._C._get_cudnn_deterministic",
     "torch._C._get_mkldnn_deterministic"]
)  # fmt: skip
"""Settings that make PyTorch's own ops deterministic (``torch.use_deterministic_algorithms(True)``,
the reproducibility line real code carries): switched on, they change no precision and make nothing
faster, so that is no tampering (honest4: ``deterministic_algorithms.py`` was ``hack_tampering``);
switched off from on, or their ``warn_only`` and fill settings changed, they are."""


def _determinism(key: str, value: object) -> bool:
    """Whether ``value`` of the setting ``key`` is only a determinism switch turned on."""
    return key in DETERMINISM_SETTINGS and value is True


def _torch_settings() -> dict[str, object]:
    import torch

    backends = torch.backends
    readers: dict[str, Callable[[], object]] = {
        "default_dtype": torch.get_default_dtype,
        "grad_enabled": torch.is_grad_enabled,
        "float32_matmul_precision": torch.get_float32_matmul_precision,
        "deterministic": torch.are_deterministic_algorithms_enabled,
        "num_threads": torch.get_num_threads,
        "cudnn.allow_tf32": lambda: backends.cudnn.allow_tf32,
        "cudnn.benchmark": lambda: backends.cudnn.benchmark,
        "matmul.allow_tf32": lambda: backends.cuda.matmul.allow_tf32,
        "matmul.allow_fp16_reduced": lambda: backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul.allow_bf16_reduced": lambda: backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "dispatch_modes": torch._C._len_torch_dispatch_stack,
        "function_modes": torch._C._len_torch_function_stack,
    }
    for dotted in FP32_PRECISIONS:  # absent from an older torch: unreadable before and after alike
        readers[dotted] = functools.partial(functools.reduce, getattr, dotted.split("."), backends)
    native = torch._C
    for name in dir(native):
        if name.startswith("_get_") and any(word in name for word in LIBRARY_SETTING_WORDS):
            readers[f"torch._C.{name}"] = functools.partial(_plain, getattr(native, name))
    precision = getattr(native, "_get_fp32_precision_getter", None)
    if precision is not None:
        for backend in ("generic", "cuda", "mkldnn"):
            for op in FP32_PRECISION_OPS:
                readers[f"fp32_precision({backend}, {op})"] = functools.partial(precision, backend, op)
    readers["flush_denormal"] = _flushes_denormals
    for device in ("cpu", "cuda"):  # autocast runs forward's PyTorch ops in bf16/fp16 (red team 13 #3)
        readers[f"autocast({device})"] = functools.partial(torch.is_autocast_enabled, device)
        readers[f"autocast_dtype({device})"] = functools.partial(
            _plain, functools.partial(torch.get_autocast_dtype, device)
        )
    readers["autocast_cache"] = torch.is_autocast_cache_enabled
    if hasattr(torch, "get_default_device"):
        readers["default_device"] = lambda: str(torch.get_default_device())
    if torch.cuda.is_initialized():
        readers["cuda.current_stream"] = lambda: torch.cuda.current_stream() == torch.cuda.default_stream()
    return {key: _read(read) for key, read in readers.items()}


def _class_keys() -> dict[str, frozenset[str]]:
    return {dotted: frozenset(vars(cls)) for dotted, cls in _classes().items()}


INTERPRETER_PACKAGES = ("triton.runtime.interpreter", "triton.language")
"""What an interpreted kernel's operations run through: the interpreter (its builder, values, grid
executor and C module of loads and stores) and every module of ``triton.language`` (the kernel's
``x + y`` is ``tensor.__add__``, then ``TritonSemantic.add``, then the builder), each module's
attributes and the attributes of every class it defines. A replaced method of any of them runs host
code inside the candidate's own launch (red team 13 #1: ``TritonSemantic.add`` and
``GridExecutor._restore_args_dev``, neither watched while the builder was, computed a softmax with
NumPy). NumPy and the judge's libdevice table (interpreter_libdevice.py) are watched beside them."""
INTERPRETER_OBJECTS = ("interpreter_builder", "interpreter_semantic")
"""The interpreter's builder and semantic objects: an attribute set on one shadows its class's method
(or, ``builder``, swaps the builder every operation goes to). Their plain data (the grid's index, a
tuple) changes as grids run and is not compared."""
_PLAIN = (int, float, complex, bool, str, bytes, tuple, type(None))
_CACHES = frozenset({"__warningregistry__", "__slotnames__"})
"""What Python itself adds to a namespace as it runs: a module's record of the warnings its code raised,
a class's slot names, cached by ``copy`` the first time one of its objects is copied."""
_interpreter_baseline: dict[str, tuple[tuple, tuple]] = {}
"""``interpreter_ids()`` of the runner before its candidate was imported (ProcessState)."""
_ABSENT = object()
_language_allowed: dict[tuple[str, str], set] = {}
"""For each attribute of ``triton.language`` that the interpreter replaces while a kernel runs (and
does not always put back: a kernel calling a JIT function of the language leaves ``triton.language
.core``'s replaced, Triton 3.4 and 3.5 every one; frontend._PRISTINE), the keys (``_key``) of what it
may hold: the value as imported and the interpreter's replacement."""


def _key(value, depth: int = 0) -> object:
    """What an attribute is compared by: its id, except for what Triton's interpreter makes while a
    kernel runs (a function of its file, a ``functools.partial`` or a ``property`` of one), which it
    makes anew for each kernel: that is compared by its code and, recursively, by what its defaults
    and closure hold (the interpreter's wrapper of a builtin holds the builtin as a default: the same
    code wrapping a function of the candidate's is another key)."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    if depth > 4 or interpreter is None:
        return id(value)
    if isinstance(value, types.FunctionType) and value.__code__.co_filename == interpreter.__file__:
        cells = tuple(_key(c.cell_contents, depth + 1) for c in value.__closure__ or ())
        return ("function", id(value.__code__), tuple(_key(d, depth + 1) for d in value.__defaults__ or ()), cells)
    if isinstance(value, functools.partial):
        keywords = tuple(sorted((k, _key(v, depth + 1)) for k, v in value.keywords.items()))
        return ("partial", _key(value.func, depth + 1), tuple(_key(a, depth + 1) for a in value.args), keywords)
    if isinstance(value, property):
        return ("property", *(_key(f, depth + 1) for f in (value.fget, value.fset, value.fdel)))
    return id(value)


def _part(obj) -> str:
    """The part name (as interpreter_ids names it) of a module or class of ``triton.language``."""
    if isinstance(obj, types.ModuleType):
        return _short(obj.__name__)
    return f"{_short(obj.__module__)}.{obj.__qualname__}"


def _language_patches() -> dict[tuple[str, str], set]:
    """``_language_allowed`` as this process's interpreter makes it (empty without one, or on a Triton
    whose interpreter does not list its replacements)."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    frontend = sys.modules.get("tritongym.evaluate.frontend")
    if interpreter is None or not hasattr(interpreter, "_LangPatchScope"):
        return {}
    import triton.language as tl

    def probe():
        pass

    allowed: dict[tuple[str, str], set] = {}
    try:
        scope = interpreter._patch_lang(types.FunctionType(probe.__code__, {"tl": tl, "core": tl.core}))
        patched = [(obj, name, getattr(obj, name)) for obj, name, _ in scope._changes]
        scope.restore()
    except Exception:  # an interpreter of another shape: every attribute compared by its id
        return {}
    pristine = {id(obj): values for obj, values in getattr(frontend, "_PRISTINE", [])}
    for obj, name, value in patched:
        keys = allowed.setdefault((_part(obj), name), set())
        keys.add(_key(value))
        if name in pristine.get(id(obj), {}):
            keys.add(_key(pristine[id(obj)][name]))
        elif name in vars(obj):
            keys.add(_key(vars(obj)[name]))
    return allowed


def _short(module: str) -> str:
    """A part's name in a report: the interpreter's as ``interpreter`` (``interpreter.InterpreterBuilder``)."""
    return "interpreter" + module.removeprefix("triton.runtime.interpreter") if module.startswith(
        "triton.runtime.interpreter") else module  # fmt: skip


NAMESPACE, OBJECT, REACHED, TABLE = "namespace", "object", "reached", "table"
"""How a part is read: a module's or class's attributes (every one), an object's (what is not plain
data), a reached module's (its functions and classes: its data may change as it runs, warnings'
filters), a mapping's entries."""
_UNWATCHED = frozenset({"_frozen_importlib", "sys"})
"""Modules an interpreted grid reaches whose attributes are the import system's or the process's state."""
_parts: list[tuple[str, object, str]] = []
"""(part, namespace, kind) of everything watched, found once, when the runner's baseline is taken
(``_found``, ProcessState): a module loaded later has nothing to compare."""


def _in_packages(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in INTERPRETER_PACKAGES)


def _reached_modules() -> list[str]:
    """The modules besides INTERPRETER_PACKAGES whose functions an interpreted grid calls: every module
    of NumPy (the builder computes with it: ``np.sum`` calls ``numpy._core.fromnumeric._wrapreduction``,
    ``np.broadcast_to`` calls ``numpy.lib._stride_tricks_impl._broadcast_to``; red team 13 #5 replaced
    the latter) and each module that the interpreter's and ``triton.language``'s modules hold or hold a
    function of (``inspect``, ``functools``, ``math``, ``builtins``, ``warnings``, Triton's own)."""
    names = {name for name in list(sys.modules) if name.startswith("numpy.")}
    for name, module in list(sys.modules.items()):
        if module is None or not _in_packages(name):
            continue
        for value in list(vars(module).values()):
            held = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
            if isinstance(held, str) and (callable(value) or isinstance(value, types.ModuleType)):
                names.add(held)
    return sorted(n for n in names if n in sys.modules and n not in _UNWATCHED and n != "numpy" and not _in_packages(n))


def _found() -> list[tuple[str, object, str]]:
    """Every namespace watched, by part name: the loaded modules under INTERPRETER_PACKAGES and the
    classes each defines, the interpreter's C module (``interpreter._interpreter``) and objects, NumPy,
    the modules an interpreted grid reaches, the judge's libdevice module and its table."""
    if _parts:
        return _parts
    interpreter = sys.modules.get("triton.runtime.interpreter")
    if interpreter is None:
        return _parts
    found: list[tuple[str, object, str]] = []
    for name, module in list(sys.modules.items()):
        if module is None or not _in_packages(name):
            continue
        found.append((_short(name), module, NAMESPACE))
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                found.append((f"{_short(name)}.{value.__qualname__}", value, NAMESPACE))
    native = getattr(interpreter, "_interpreter", None)
    if native is not None:
        found.append(("interpreter._interpreter", native, NAMESPACE))
    for name in INTERPRETER_OBJECTS:
        obj = getattr(interpreter, name, None)
        if obj is not None and hasattr(obj, "__dict__"):
            found.append((f"interpreter.{name}", obj, OBJECT))
    if "numpy" in sys.modules:
        found.append(("numpy", sys.modules["numpy"], NAMESPACE))
    found += [(name, sys.modules[name], REACHED) for name in _reached_modules()]
    libdevice = sys.modules.get("tritongym.evaluate.interpreter_libdevice")
    if libdevice is not None:
        found.append(("interpreter_libdevice", libdevice, NAMESPACE))
        table = getattr(libdevice, "SYMBOLS", None)  # read-only, and its mapping reachable through gc
        if table is not None:
            found.append(("interpreter_libdevice.SYMBOLS", table, TABLE))
    _parts[:] = found
    return _parts


def _entries(obj: object, kind: str) -> dict:
    return dict(obj.items()) if kind == TABLE else vars(obj)


def interpreter_ids() -> dict[str, tuple[tuple, tuple]]:
    """A snapshot of Triton's interpreter and language modules and their classes, NumPy, what an
    interpreted grid reaches and the judge's libdevice table: per part, its names and their values
    (held, compared by identity in ``interpreter_changes``); empty where the interpreter is not loaded.
    About 7,000 values in 0.7 ms (red team 13: a dictionary per value took 5 ms, at each grid's start
    and end). No ``id()``: each call raises an audit event, which the runner's own audit hook (guards.
    refuse_audit_hooks) is called for, and ``operator.is_`` compares without running any ``__eq__``."""
    snapshot = {}
    for part, obj, kind in _found():
        entries = _entries(obj, kind)
        snapshot[part] = (tuple(entries), tuple(entries.values()))
    return snapshot


def _same(now: tuple, before: tuple) -> bool:
    return len(now) == len(before) and all(map(operator.is_, now, before))


def _ignored(part: str, kind: str, name: str, now: dict, before: dict) -> bool:
    """Whether a name whose value differs between two snapshots changed nothing an interpreted grid runs."""
    absent = object()
    value = now.get(name, absent)
    if name in _CACHES:
        return True
    if value is absent:  # removed
        return False
    if name not in before and (isinstance(value, types.ModuleType) or part == "numpy"):
        return True  # a submodule imported since (NumPy's are loaded lazily)
    if kind == REACHED and not callable(value):
        return True
    if kind == OBJECT and isinstance(value, _PLAIN):
        return True
    return _key(value) in _language_allowed.get((part, name), ())


def interpreter_changes(expected: dict | None = None) -> list[str]:
    """What of the interpreter and NumPy differs from ``expected`` (default: the runner's baseline): an
    attribute replaced or removed, or added (NumPy adds its lazily loaded submodules, and a package
    gains a submodule once imported, which change no function; a reached module's data and an object's
    plain data may change as they run; the interpreter's own replacements of ``triton.language`` are
    allowed: ``_language_allowed``). Code called by an interpreted kernel's operations runs inside the
    candidate's own launch: a replaced builder method would be host code computing the answer while
    the kernel appears to."""
    expected = _interpreter_baseline if expected is None else expected
    if not expected:
        return []
    changed = []
    for part, obj, kind in _found():
        if part not in expected:
            continue
        entries = _entries(obj, kind)
        names, values = tuple(entries), tuple(entries.values())
        if names == expected[part][0] and _same(values, expected[part][1]):
            continue
        before = dict(zip(*expected[part], strict=True))
        for name in before.keys() | entries.keys():
            if before.get(name, _ABSENT) is not entries.get(name, _ABSENT) and not _ignored(
                part, kind, name, entries, before
            ):
                changed.append(f"{part}.{name}")
    return sorted(changed)


def settle_lazy_settings(device: object) -> None:
    """Make torch fix, on ``device``, the settings it fixes at their first use, so that the baseline
    holds them and an honest candidate's first use is no change of its. PyTorch's attention picks its
    backends' priority order at a process's first scaled-dot-product attention on a GPU (cuDNN's
    first on Hopper and Blackwell with a recent cuDNN: ``priority_order`` in ATen's sdp_utils), and
    that changes ``torch._C._get_sdp_priority_order``: Inductor's code of a transformer layer
    (``aten._transformer_encoder_layer_fwd``) was judged ``hack_tampering`` for it (session 11,
    32_ConvolutionalVisionTransformer). Asking for the backend of a tiny attention fixes it (no
    kernel runs)."""
    import torch

    choose = getattr(torch, "_fused_sdp_choice", None)
    if choose is None:  # a torch without the choice has no order to fix
        return
    query = torch.empty(1, 1, 1, 8, device=device)  # never read: no kernel runs
    choose(query, query, query)


class ProcessState:
    """The runner's state before its candidate was imported."""

    def __init__(self, device: object = None) -> None:
        global _interpreter_baseline, _language_allowed
        if device is not None:
            settle_lazy_settings(device)
        self.settings = _torch_settings()  # first: reading a setting may import what rebinds a watched name
        _language_allowed = _language_patches()
        _parts.clear()  # found again here: the zygote's guards may have found them before it loaded all
        _interpreter_baseline = interpreter_ids()
        self.attributes = _attribute_ids()
        self.class_keys = _class_keys()
        self.threads = set(threading.enumerate())

    def tampering(self) -> list[str]:
        """Functions and settings of torch, triton, builtins or the judge that differ from the baseline."""
        reasons = []
        now = _attribute_ids()
        changed = sorted(f"{m}.{a}" for (m, a), i in self.attributes.items() if now.get((m, a)) != i)
        for dotted, keys in _class_keys().items():  # a class loaded after the baseline has none to compare
            changed += sorted(f"{dotted}.{k}" for k in keys - self.class_keys.get(dotted, keys))
        if changed:
            reasons.append(
                f"replaced, added or removed: {', '.join(changed[:5])}" + (" ..." if len(changed) > 5 else "")
            )
        settings = _torch_settings()
        drift = sorted(
            k for k in self.settings if settings.get(k) != self.settings[k] and not _determinism(k, settings.get(k))
        )
        if drift:
            reasons.append(f"changed torch settings: {', '.join(drift)}")
        return reasons

    def stray_threads(self) -> list[str]:
        """Names of Python threads started since the baseline and still running (child processes
        are the judge's to see, in /proc)."""
        return [t.name for t in threading.enumerate() if t not in self.threads and t.is_alive()]
