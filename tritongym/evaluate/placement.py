"""Tensors forward makes in host memory, seen on the CPU as a GPU would see them (red team 10 #3).

On a GPU, forward's inputs are on the device, and a tensor forward makes with a factory function
(``torch.empty(n)``, ``torch.zeros``, ``torch.arange``, ``torch.tensor``...) without ``device=`` is in
host memory: Triton refuses to launch a kernel with it ("Pointer argument (at 2) cannot be accessed
from Triton (cpu tensor?)"), a ``runtime_error``. Under the CPU judge every tensor is on the host, so
the same forward ran and was `ok`: the CPU's verdict differed from the GPU's, and RL on the CPU never
taught where a kernel's output must live.

On the CPU a runner watches the candidate's import and every trial's forward with :class:`HostTensors`,
a TorchFunctionMode that marks what a GPU would hold on the host (the constructor runs in a
``torch.device`` context of the runner's device, on a GPU too): the result of any call given no
tensor and no device (a factory of whatever name: ``torch.empty``, ``asarray``, ``normal``,
``hann_window``; in a ``torch.device`` context or after ``torch.set_default_device`` the device is
given: not marked; ``device="cpu"`` written out is the host everywhere: marked, red team 13 #4,
except in the branch of a ``torch.cuda.is_available()`` test that a GPU does not take:
``candidate_code``), and
of any operation whose tensor arguments are all marked (``.float()``,
``.contiguous()``, arithmetic on them); ``.to`` with a device (or another tensor) and ``.type_as``
place their result. ``torch.from_numpy``, ``torch.frombuffer``, DLPack's ``from_dlpack`` and
Inductor's ``empty_strided_cpu`` helper (it allocates below the dispatcher) reach no mode: while it
watches, they are wrapped (red team 11 #2), and what they return is marked (``from_dlpack`` of a tensor
not marked excepted: an alias of device memory); Inductor's
``empty_strided_cuda`` makes the CPU's device memory instead (its GPU code runs as on a GPU).
``torch.UntypedStorage``'s constructor is wrapped too: a storage made with no device named is host
memory (storages ignore device contexts), and so is every tensor ``set_`` on it; so is
``torch.TypedStorage``'s, which the legacy typed storages (``torch.FloatStorage(n)``) make theirs with
(``_typed_storage_init``). What no
torch function makes reaches no TorchFunctionMode either, and ignores every device context: the
legacy constructors (``torch.Tensor(n)``, ``torch.FloatTensor(data)``, which on a GPU make host
tensors or refuse a CUDA device). A TorchDispatchMode (:class:`_Allocations`) sees every operation
PyTorch runs, and what one makes while no torch function is in progress is marked as host memory
(red team 12 #2), in the constructor too
(``watching(factories=False)``: there the runner's ``torch.device`` context places what the factories
make, on a GPU too, but not these), except the model's parameters and buffers, which the runner's
``model.to(device)`` moves (``placed_state``). ``.cpu()`` or ``.to("cpu")`` (a device named by a
string) of a tensor that is not marked makes a marked copy, as on a GPU (red team 12 #4); NumPy's view
of a tensor that is not marked (``x.numpy()``, ``np.asarray(x)``: one a GPU holds in device memory) is
refused with PyTorch's GPU error, as there (``x.cpu().numpy()`` and ``x.numpy(force=True)`` copy, and
are allowed; tests/adversarial/cpusize/README.md), and so is a DLPack capsule of it for another
library (``np.from_dlpack(x)``; PyTorch's own ``from_dlpack`` of a device tensor is an alias of
device memory, not marked).
The launch monitor (guards.py) asks :meth:`HostTensors.refuse` before every launch, which raises
Triton's error for an argument that a GPU would have in host memory. Marks are by storage and hold
a weak reference to the storage itself (PyTorch keeps a storage's Python object while any tensor
holds the storage), so every alias of it is marked however it was made (``nn.Parameter(t)`` of a
marked ``t``, which no torch function sees: red team 12), and a storage freed and reused later is
not.
Mixing a marked tensor with a device tensor in a PyTorch op is not checked (a GPU accepts some
mixes: a 0-dim host tensor, an index); only kernel arguments are.

Forward's copies of device memory to the host (red team 14 #2) are counted by one decision,
:func:`host_read_bytes`, on every machine: a GPU's runner watches forward with :class:`HostReads`
(device memory is a CUDA tensor), the CPU's with its subclass ``HostTensors`` (device memory is what
it does not mark).
"""

from __future__ import annotations

import ast
import contextlib
import dis
import functools
import os
import secrets
import sys
import types
import weakref

import numpy as np
import torch
import torch.utils._device
import torch.utils.dlpack
import triton
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

_GUARDS = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
_WRAPPING = [(torch, "from_numpy"), (torch, "frombuffer"), (torch, "from_dlpack"), (torch.utils.dlpack, "from_dlpack")]
_WRAPPING += [(_GUARDS, "_empty_strided_cpu")] if hasattr(_GUARDS, "_empty_strided_cpu") else []
"""Functions whose result is host memory whatever the default device, and that reach no mode: those
that wrap memory PyTorch did not allocate, and Inductor's ``empty_strided_cpu`` helper (its CPU code's
buffers, allocated below the dispatcher: red team 12, open until the CPU's Inductor solutions made
their buffers on their inputs' device, ``output_code.PLACED_HELPER``)."""
_DEVICE_HELPERS = [(_GUARDS, "_empty_strided_cuda")] if hasattr(_GUARDS, "_empty_strided_cuda") else []
"""Inductor's GPU code's buffer helper (KernelBook's rows call it): device memory, which the CPU's
PyTorch cannot make ("compiled without support for the specified device"); while a HostTensors
watches it makes the CPU judge's device memory instead (unmarked, poisoned as ``empty`` is), so GPU
code runs on the CPU as on a GPU."""
_CAPSULES = [(torch, "to_dlpack"), (torch.utils.dlpack, "to_dlpack")]
"""Where a DLPack capsule of a tensor is made without a torch function (``DeviceCapsule``)."""
_watching: list[HostTensors] = []
"""The HostTensors watching now, innermost last."""


_TORCH_DLPACK = [0]
"""PyTorch's own ``from_dlpack`` calls in progress: the ``__dlpack__`` they ask for is PyTorch's import
of a tensor, right on a GPU too (not NumPy's view of device memory)."""


def _host_memory(original, name: str):
    dlpack = name.endswith("from_dlpack")

    def wrapped(*args, **kwargs):
        _TORCH_DLPACK[0] += dlpack
        try:
            out = original(*args, **kwargs)
        finally:
            _TORCH_DLPACK[0] -= dlpack
        if _watching and isinstance(out, torch.Tensor):
            source = args[0] if args else kwargs.get("ext_tensor")
            device = isinstance(source, DeviceCapsule) or (
                isinstance(source, torch.Tensor) and not _watching[-1].made(source)
            )
            if not (dlpack and device):
                _watching[-1]._mark(out, f"torch.{name.removeprefix('torch.')}")  # a device tensor's stays placed
        return out

    wrapped._tritongym_host = True
    wrapped.__name__ = wrapped.__qualname__ = getattr(original, "__name__", name)
    wrapped.__doc__ = getattr(original, "__doc__", None)
    return wrapped


class DeviceCapsule:
    """A DLPack capsule of device memory (``torch.utils.dlpack.to_dlpack`` of a tensor not marked as
    host memory, while a ``HostTensors`` watches): PyTorch's own ``from_dlpack`` takes it (an alias of
    device memory, on a GPU too), another library's (NumPy's ``from_dlpack``) is refused as a GPU's
    capsule is there. The bare capsule was NumPy's view of the input on the CPU, with no torch function
    (red team 15 #2, as ``Tensor.__dlpack__`` was before)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor
        """The tensor (not its capsule, which would be NumPy's for the asking)."""

    def __dlpack__(self, *args, **kwargs):
        if not _TORCH_DLPACK[0]:
            raise BufferError(
                "Unsupported device in DLTensor: this capsule holds device memory, which only PyTorch's own "
                "from_dlpack takes (tritongym: the CPU judge does as a GPU does). Use Tensor.cpu() first."
            )
        return _TO_DLPACK(self.tensor)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # the CPU judge's device memory, as PyTorch's capsule names it


_TO_DLPACK = torch.utils.dlpack.to_dlpack


def _device_capsule(original, name: str):
    def wrapped(tensor, *args, **kwargs):
        if (
            _watching
            and isinstance(tensor, torch.Tensor)
            and not args
            and not kwargs
            and not _watching[-1].made(tensor)
        ):
            return DeviceCapsule(tensor)
        return original(tensor, *args, **kwargs)

    wrapped._tritongym_host = True
    wrapped.__name__ = wrapped.__qualname__ = getattr(original, "__name__", name)
    wrapped.__doc__ = getattr(original, "__doc__", None)
    return wrapped


def _device_memory(original, name: str):
    def wrapped(size, stride, dtype):
        return torch.empty_strided(size, stride, dtype=dtype, device=torch.device("cpu"))  # the CPU judge's device

    wrapped._tritongym_host = True
    wrapped.__name__ = wrapped.__qualname__ = getattr(original, "__name__", name)
    wrapped.__doc__ = getattr(original, "__doc__", None)
    return wrapped


POISON_BYTE = 0xFF
"""What a storage made without data holds on the CPU (runner.poison's byte): uninitialised memory, as a
GPU's is."""


def _storage_new(original):
    """``torch.UntypedStorage``'s constructor, watched: a storage made with no device named, or with
    the CPU named by a string, is host memory on a GPU too (storages ignore ``torch.device``
    contexts); one made by size holds the poison (uninitialised memory)."""

    def __new__(cls, *args, **kwargs):
        storage = original(cls, *args, **kwargs)
        if _watching and isinstance(storage, torch.UntypedStorage):
            if args and type(args[0]) is int and storage.nbytes():
                storage.fill_(POISON_BYTE)
            if _storage_on_host(kwargs.get("device")):
                _watching[-1]._mark_storage(storage, "torch.UntypedStorage without a device (host memory)")
        return storage

    __new__._tritongym_host = True
    return __new__


def _storage_on_host(device: object) -> bool:
    """Whether a storage constructor's ``device`` makes host memory on a GPU too: none named, or the CPU
    named by a string."""
    return device is None or (isinstance(device, str) and device.split(":")[0] == "cpu")


def _typed_storage_init(original):
    """``torch.TypedStorage.__init__``, watched. The legacy typed storages (``torch.FloatStorage(n)``,
    ``torch.FloatStorage(data)``, every ``torch.<dtype>Storage``) are host memory on every machine: their
    constructor passes ``TypedStorage`` its module's device as a string (``"cpu"``), as does a
    ``torch.TypedStorage`` made with no device or the CPU named by a string. ``TypedStorage`` then makes
    its ``UntypedStorage`` with ``torch.device(device)``, which that constructor's watch cannot tell from
    an input's device; so the mark is made here, where the device is still as the caller named it (by
    size, the storage holds the poison: the UntypedStorage constructor's). One that wraps a storage
    (``wrap_storage=``) is where that storage is."""

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if _watching and kwargs.get("wrap_storage") is None and _storage_on_host(kwargs.get("device")):
            storage = getattr(self, "_untyped_storage", None)
            if isinstance(storage, torch.UntypedStorage):
                _watching[-1]._mark_storage(
                    storage, "a typed storage (torch.FloatStorage...) without a device (host memory)"
                )

    __init__._tritongym_host = True
    return __init__


_PLACING = frozenset([torch.Tensor.to, torch.Tensor.type_as])
"""Methods whose result is on the device they name, or of the tensor they are given."""


_HOST = sys.intern("cpu")
"""The string ``"cpu"`` as a literal of the candidate's code holds it (Python interns such constants)."""


def _names_the_host(device: object) -> bool:
    """Whether a ``device=`` argument names host memory on every machine: ``"cpu"`` written as a
    literal (``"cpu:0"`` too), which a GPU's run passes unchanged. What forward reads from a tensor
    names the tensor's device, the GPU's there: ``x.device`` (a ``torch.device``, which cannot be told
    from ``torch.device("cpu")``: both stay placed) and ``x.device.type`` or ``str(x.device)``, strings
    PyTorch makes anew (never the interned literal: they stay placed too)."""
    return isinstance(device, str) and (device is _HOST or device.startswith("cpu:"))


def _cuda_test(node: ast.AST) -> bool | None:
    """For a condition that is ``torch.cuda.is_available()`` (or its ``not``): whether it is true where
    CUDA is; None for any other condition."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _cuda_test(node.operand)
        return None if inner is None else not inner
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        func = node.func
        dotted = []
        while isinstance(func, ast.Attribute):
            dotted.append(func.attr)
            func = func.value
        if isinstance(func, ast.Name) and [func.id, *reversed(dotted)] == ["torch", "cuda", "is_available"]:
            return True
    return None


class _HostBranches(ast.NodeTransformer):
    """The branches a GPU does not take of a test of ``torch.cuda.is_available()``, with each ``"cpu"``
    there a fresh string (``_HOST`` no more): ``HostTensors`` places what it names on the device."""

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        cuda = _cuda_test(node.test)
        if cuda is not None:
            setattr(node, "orelse" if cuda else "body", _fresh_host(node.orelse if cuda else node.body))
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        cuda = _cuda_test(node.test)
        if cuda is not None:
            setattr(node, "orelse" if cuda else "body", [_fresh_host(n) for n in (node.orelse if cuda else node.body)])
        return node


class _FreshHost(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if node.value != "cpu":
            return node
        pieces = ast.Tuple([ast.Constant("c"), ast.Constant("pu")], ast.Load())
        join = ast.Call(ast.Attribute(ast.Constant(""), "join", ast.Load()), [pieces], [])
        return ast.copy_location(join, node)


def _fresh_host(node: ast.AST) -> ast.AST:
    return ast.fix_missing_locations(_FreshHost().visit(node))


def candidate_code(text: str, path: str) -> types.CodeType:
    """The candidate's module as the CPU's runner compiles it: the device a GPU's run would name where
    the code asks CUDA which to name. ``"cuda" if torch.cuda.is_available() else "cpu"`` (PyTorch's and
    Triton's tutorials' idiom, in a ``torch.device``, an ``if`` statement or ``not``'s form) names the
    GPU on a GPU; on the CPU it gave the interned ``"cpu"`` that names the host (red team 13 #4), and
    an honest tutorial's tensors were host memory its kernels could not be handed (a ``runtime_error``
    on the CPU only: red team 15's "naming the host"). There each ``"cpu"`` a GPU's run does not reach is
    a fresh string, which names the device as ``x.device.type`` does; the rest of the code, positions
    included, is as written. Raises what ``compile`` raises."""
    tree = _HostBranches().visit(ast.parse(text, path))
    return compile(tree, path, "exec", dont_inherit=True)


def _to_host(func, args: tuple, kwargs: dict, names_host=None) -> bool:
    """Whether a call copies a tensor to host memory on a GPU: ``.cpu()``, ``.to(device)`` of a device
    ``names_host`` says is the host (``_names_the_host`` where None: the CPU's rule)."""
    if not args or not isinstance(args[0], torch.Tensor):
        return False
    if func is torch.Tensor.cpu:
        return True
    named = [kwargs.get("device"), *args[1:2]] if func is torch.Tensor.to else []
    return any((names_host or _names_the_host)(d) for d in named)


def on_host(device: object) -> bool:
    """Whether a ``device=`` argument (or ``.to``'s, a tensor's included) names host memory on a
    machine whose device memory PyTorch tells from the host's (a GPU): ``"cpu"``, ``torch.device("cpu")``,
    a tensor in host memory, however spelled (``"".join("cpu")``, ``"CPU".lower()``)."""
    if isinstance(device, torch.Tensor):
        return device.device.type == "cpu"
    if isinstance(device, (str, torch.device)):
        try:
            return torch.device(device).type == "cpu"
        except (RuntimeError, TypeError, ValueError):  # not a device: the call itself raises
            return False
    return False


_NUMPY = frozenset([torch.Tensor.numpy, torch.Tensor.__array__])
"""NumPy's view of a tensor (``x.numpy()``, and ``np.asarray(x)``/``np.array(x)`` through
``__array__``): PyTorch refuses it for a tensor in device memory."""


_CPU_ONLY = frozenset([torch.Tensor.apply_, torch.Tensor.map_, torch.Tensor.map2_])
"""Methods that run a Python function over a tensor's elements: PyTorch refuses them for a tensor in
device memory (red team 14 #2d: Python saw every value of the input through them, and no op was
recorded)."""


def _numpy_of_device_memory(func, args: tuple, kwargs: dict) -> bool:
    """Whether a call asks NumPy's view of a tensor without a copy (``force=True`` copies, on a GPU too)."""
    return func in _NUMPY and bool(args) and isinstance(args[0], torch.Tensor) and not kwargs.get("force")


def _dlpack_of_device_memory(func, args: tuple) -> bool:
    """Whether a call hands a tensor to another library by DLPack (NumPy's ``from_dlpack``), not to
    PyTorch's own ``from_dlpack``."""
    return func is torch.Tensor.__dlpack__ and bool(args) and isinstance(args[0], torch.Tensor) and not _TORCH_DLPACK[0]


_HOST_READS = frozenset(
    [
        torch.Tensor.tolist,
        torch.Tensor.item,
        torch.Tensor.numpy,
        torch.Tensor.__array__,
        torch.Tensor.__float__,
        torch.Tensor.__int__,
        torch.Tensor.__index__,
        torch.Tensor.__bool__,
        torch.Tensor.__complex__,
        torch.Tensor.__format__,
        torch.Tensor.__repr__,
    ]
)
"""What reads a tensor's values into host memory: Python's numbers (``tolist``, ``item``, ``float(x)``,
``f"{x}"``, ``repr``), NumPy's copy (``numpy(force=True)``; a view is refused). On a GPU each is a
copy from device memory to the host."""


_CANONICAL = 1 << 47
"""Where x86-64's and AArch64's user addresses end: from here on, an address faults on the host."""


def _new_disguise() -> int:
    """A secret shift of at least ``_CANONICAL`` that keeps a page's alignment (``address % 4096``)."""
    return ((secrets.randbelow(1 << 14) + 1) << 47) | (secrets.randbelow(1 << 35) << 12)


ADDRESS_SHIFT = [_new_disguise()]
"""What the address of device memory is shifted by where forward's code asks for it on the CPU
(``Tensor.data_ptr``, ``UntypedStorage.data_ptr``; ``HostTensors`` draws it anew for its runner), and
what an interpreted kernel's pointer-to-integer casts add and integer-to-pointer casts take off
(``builder_points``). On a GPU such an address is device memory, which the host cannot read: NumPy
over it (an ``__array_interface__``) faults there. On the CPU it was the input itself in host memory,
read with no torch function (red team 15 #2). Shifted past the canonical range, it faults on the CPU
too; its differences, equality and alignment (to 4096 bytes) are kept, which is all an honest
forward does with an address."""


def _shifted(address: int) -> int:
    return address + ADDRESS_SHIFT[0] if address else 0


_STORAGES = frozenset([torch.Tensor.untyped_storage, torch.Tensor.storage, torch.Tensor._typed_storage])
"""What hands Python a tensor's storage, whose values it then reads with no torch function
(``x.untyped_storage().tolist()``, indexing, ``bytes()``): taken as a read of the whole storage
where code other than Triton's and the judge's asks (Triton's interpreter and the judge's checks
ask for storages of every launch's arguments)."""
_STORAGE_FACTS = frozenset(["data_ptr", "nbytes", "size", "element_size", "is_shared", "is_pinned", "resizable"])
"""A storage's methods that read no value of it: what honest code asks a storage for (an aliasing check
by ``x.untyped_storage().data_ptr()``)."""


@functools.lru_cache(maxsize=1024)
def _instructions(code: types.CodeType) -> tuple[dict[int, int], tuple]:
    """A code object's instructions (caches left out) and where each offset is among them."""
    found = tuple(i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "PRECALL", "EXTENDED_ARG"))
    return {i.offset: n for n, i in enumerate(found)}, found


def _fact_only(frame: types.FrameType | None) -> bool:
    """Whether the call ``frame`` is making (a storage request) is followed at once by a call, with no
    argument, of one of ``_STORAGE_FACTS`` on its result (``x.untyped_storage().data_ptr()``): the storage
    is never bound to a name, and what forward's code keeps is a number. A method taken without its call
    (``x.untyped_storage().data_ptr``) is a bound method that holds the storage (``__self__``): not this."""
    while frame is not None and frame.f_code is _DEVICE_MODE:
        frame = frame.f_back
    if frame is None:
        return False
    where, found = _instructions(frame.f_code)
    at = where.get(frame.f_lasti)
    if at is None or at + 2 >= len(found) or found[at].opname != "CALL":
        return False
    method, call = found[at + 1], found[at + 2]
    return (
        method.opname in ("LOAD_METHOD", "LOAD_ATTR")
        and method.argval in _STORAGE_FACTS
        and call.opname == "CALL"
        and call.arg == 0
    )


_TRITON = os.path.dirname(triton.__file__) + os.sep
_DEVICE_MODE = torch.utils._device.DeviceContext.__torch_function__.__code__
"""The frame a ``torch.device`` context (or ``torch.set_default_device``) runs between a call and the
modes under it: the caller is the frame past it (an Inductor solution's ``with torch.device(device)``
made Triton's interpreter, asking for its launch's addresses, look like that context's caller)."""
_OWN_CODE = (_TRITON, os.path.dirname(sys.modules["tritongym"].__file__) + os.sep)
"""Where the code is whose requests for a storage are not forward's reads."""


def _own_class(cls: type, roots: tuple[str, ...] = _OWN_CODE) -> bool:
    path = getattr(sys.modules.get(getattr(cls, "__module__", None) or ""), "__file__", None)
    return isinstance(path, str) and path.startswith(roots)


_HEAP_TYPE = 1 << 9
"""``Py_TPFLAGS_HEAPTYPE``: a class made by a ``class`` statement (or ``type(...)``), not one of C's."""


def _signature(code: types.CodeType) -> tuple:
    """What a code object does, whatever its identity: its name, place, bytecode, names and plain
    constants (two code objects alike in all of these run alike)."""
    consts = tuple(repr(c) for c in code.co_consts if not isinstance(c, types.CodeType))
    return code.co_name, code.co_firstlineno, code.co_code, code.co_names, consts


@functools.cache
def _compiled(path: str) -> frozenset:
    """The signatures of every code object the source file at ``path`` compiles to (empty where it
    cannot be read or compiled)."""
    try:
        with open(path, encoding="utf-8") as file:
            top = compile(file.read(), path, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return frozenset()
    found, todo = set(), [top]
    while todo:
        code = todo.pop()
        found.add(_signature(code))
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return frozenset(found)


class OwnCode:
    """The code objects of Triton's and the judge's modules (or those under other ``roots``) as loaded
    when taken (before the candidate's import), and those modules' namespaces: a frame is theirs only
    where its code object is one of these, by identity, and its globals one of these namespaces. A file
    name proves nothing: a candidate's function may carry a code object renamed after Triton's file
    (``__code__.replace(co_filename=...)``), and be built over a Triton module's globals (``type(f)(code,
    triton.jit.__globals__)``); neither makes its code one of those loaded (red team 14 #2d)."""

    def __init__(self, roots: tuple[str, ...] = _OWN_CODE) -> None:
        self.roots = roots
        """Directories (and files) whose modules' code this holds."""
        self._codes: dict[int, types.CodeType] = {}
        """id -> code object (held, so that no other object takes its id)."""
        self._namespaces: dict[int, dict] = {}
        self._classes: dict[int, type] = {}
        """id -> a class these modules define (held)."""
        self.take()

    def take(self) -> None:
        """Add what Triton's and the judge's modules now loaded hold (their functions, their classes'
        methods and properties, what decorators wrap, and the functions nested in each)."""
        seen: set[int] = set()
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if not isinstance(path, str) or not path.startswith(self.roots):
                continue
            namespace = vars(module)
            self._namespaces[id(namespace)] = namespace
            for value in list(namespace.values()):
                self._collect(value, seen, 0)

    def _collect(self, value, seen: set[int], depth: int) -> None:
        if id(value) in seen or depth > 6:
            return
        seen.add(id(value))
        if isinstance(value, types.FunctionType):
            self._code(value.__code__)
            for cell in value.__closure__ or ():
                with contextlib.suppress(ValueError):  # an empty cell
                    self._collect(cell.cell_contents, seen, depth + 1)
        elif isinstance(value, type):
            if not _own_class(value, self.roots):
                return
            self._classes[id(value)] = value
            for member in list(vars(value).values()):
                self._collect(member, seen, depth + 1)
            return
        elif isinstance(value, (staticmethod, classmethod)):
            self._collect(value.__func__, seen, depth + 1)
        elif isinstance(value, property):
            for accessor in (value.fget, value.fset, value.fdel):
                self._collect(accessor, seen, depth + 1)
        elif isinstance(value, (dict, types.MappingProxyType)) and depth < 2:  # a module's table of functions
            for member in list(value.values())[:4096]:
                self._collect(member, seen, depth + 1)
            return
        elif not _own_class(type(value), self.roots):
            return
        for name in ("__wrapped__", "fn"):  # a decorator's original, a JIT function's
            inner = vars(value).get(name) if hasattr(value, "__dict__") else None
            if isinstance(inner, types.FunctionType):
                self._collect(inner, seen, depth + 1)

    def _code(self, code: types.CodeType) -> None:
        if code.co_filename.startswith(self.roots):
            self._codes[id(code)] = code
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._code(const)

    def runs(self, frame: types.FrameType | None) -> bool:
        """Whether ``frame`` runs code of Triton's or the judge's, over its own module's globals."""
        return (
            frame is not None
            and self._codes.get(id(frame.f_code)) is frame.f_code
            and self._namespaces.get(id(frame.f_globals)) is frame.f_globals
        )

    def asks(self, frame: types.FrameType | None) -> bool:
        """Whether the code asking (``frame``, the caller) is the judge's: past the frames of Triton's own
        code (``runs``, in Triton's package), the first frame runs the judge's. Triton's functions run
        for the judge (its launch, the interpreter's copies of a grid's arguments) and for the candidate
        (``triton.reinterpret(x, ...).data_ptr()``, red team 15 #2); who called them decides."""
        for _ in range(64):
            if frame is not None and frame.f_code is _DEVICE_MODE:  # a torch.device context passing a call on
                frame = frame.f_back
                continue
            if not self.runs(frame):
                return False
            if not frame.f_code.co_filename.startswith(_TRITON):
                return True
            frame = frame.f_back
        return False

    def function(self, fn: object, depth: int = 0) -> bool:
        """Whether ``fn`` is a function of these modules' (red team 15 #3): its code object one they
        hold, or, for a module first imported after the last ``take``, one its file compiles to (by
        what it does: a code object renamed after that file does other things); its globals that
        module's namespace; and nothing it holds (closure cells, defaults) a function of another's
        or an object of another's class that can be called (``type(f)(code, globals, name, defaults,
        closure)`` rebuilds one of theirs around the candidate's code)."""
        if not isinstance(fn, types.FunctionType) or depth > 4:
            return False
        code, namespace = fn.__code__, fn.__globals__
        if self._namespaces.get(id(namespace)) is not namespace:
            name = namespace.get("__name__")
            module = sys.modules.get(name) if isinstance(name, str) else None
            path = getattr(module, "__file__", None)
            if not (isinstance(path, str) and path.startswith(self.roots) and vars(module) is namespace):
                return False
        loaded = self._codes.get(id(code)) is code
        if not loaded and (
            not code.co_filename.startswith(self.roots) or _signature(code) not in _compiled(code.co_filename)
        ):
            return False
        held = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
        for cell in fn.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell
                held.append(cell.cell_contents)
        return len(held) <= 64 and all(self._harmless(value, namespace, depth + 1) for value in held)

    def _harmless(self, value: object, namespace: dict, depth: int) -> bool:
        """Whether a library function's cell or default runs nothing of another's when called: data,
        a builtin, a function or class of these modules (one of its own module's names, for a module
        imported after the last ``take``)."""
        if isinstance(value, types.FunctionType):
            return self.function(value, depth)
        if isinstance(value, type):
            return (
                not value.__flags__ & _HEAP_TYPE
                or self._classes.get(id(value)) is value
                or any(v is value for v in list(namespace.values()))
            )
        builtin = isinstance(value, types.BuiltinFunctionType)
        return not callable(value) or builtin or self._harmless(type(value), namespace, depth)


_DATA_PTR = torch.Tensor.data_ptr
_STORAGE_DATA_PTR = torch._C.StorageBase.data_ptr


def storage_address(storage) -> int:
    """Where ``storage``'s memory is, whoever asks (the judge's own view: never shifted)."""
    return _STORAGE_DATA_PTR(storage)


def _storage_address(storage) -> int:
    """``UntypedStorage.data_ptr`` while a ``HostTensors`` watches: the address shifted (``ADDRESS_SHIFT``)
    for a storage of device memory (one not marked as host memory) asked for by code other than
    Triton's and the judge's, as ``Tensor.data_ptr`` is (else the distance from a tensor's shifted
    address to its storage's would give the shift away)."""
    address = _STORAGE_DATA_PTR(storage)
    if not _watching or not address or _watching[-1].own_code.asks(sys._getframe(1)):
        return address
    mark = _watching[-1]._marked.get(address)
    return address if mark is not None and mark[0]() is storage else _shifted(address)


def _to_integer(original):
    def create_ptr_to_int(builder, src, *args, **kwargs):
        out = original(builder, src, *args, **kwargs)
        data = getattr(out, "data", None)
        if isinstance(data, np.ndarray) and data.dtype.kind in "iu":
            out.data = np.where(data != 0, data + data.dtype.type(ADDRESS_SHIFT[0]), data).astype(data.dtype)
        return out

    return create_ptr_to_int


_FAULT = 1 << 62
"""Set on a nonzero integer below the shifted range that a kernel casts to a pointer: past the canonical
range, so that loading from or storing to it faults."""


def _to_pointer(original):
    def create_int_to_ptr(builder, src, *args, **kwargs):
        data = getattr(src, "data", None)
        if isinstance(data, np.ndarray) and data.dtype.kind in "iu":
            wide = data.astype(np.uint64)
            shift, fault = np.uint64(ADDRESS_SHIFT[0]), np.uint64(_FAULT)
            named = np.where(wide >= _CANONICAL, wide - shift, np.where(wide != 0, wide | fault, wide))
            src = type(src)(named.astype(data.dtype), src.dtype)
        return original(builder, src, *args, **kwargs)

    return create_int_to_ptr


def builder_points() -> list[tuple[object, str, object]]:
    """(class, attribute, wrapper) for the interpreter's casts between pointers and integers: a
    pointer cast to an integer is its address as ``data_ptr`` gives it to forward (``ADDRESS_SHIFT``,
    as on a GPU a kernel's pointer is the address the host was given), and an integer in the shifted
    range cast to a pointer is the memory it names (a table of ``data_ptr()`` values a kernel loads
    pointers from, as Triton's grouped GEMM does); any other nonzero integer is no device memory (a host
    address, ``id(obj)`` or a NumPy array's, which a GPU's kernel faults on), and is cast past the
    canonical range (``_FAULT``), where the interpreter's access faults too (red team 16's "raw
    addresses in an interpreted kernel"); empty without an interpreter."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return []
    builder = interpreter.InterpreterBuilder
    wraps = (("create_ptr_to_int", _to_integer), ("create_int_to_ptr", _to_pointer))
    return [(builder, name, wrap) for name, wrap in wraps if name in vars(builder)]


_DATA_COPIES = frozenset([torch.tensor, torch.as_tensor, torch.asarray])
"""What makes a tensor of the data it is given, where ``device=`` says (on the data's device without it)."""


def _legacy_host_type(named: object) -> bool:
    """Whether ``Tensor.type``'s argument is a legacy tensor type of host memory (``torch.FloatTensor``,
    ``"torch.FloatTensor"``; ``torch.cuda.FloatTensor`` is device memory, a dtype keeps the device)."""
    if isinstance(named, str):
        return named.startswith("torch.") and not named.startswith("torch.cuda.")
    legacy = isinstance(named, type) and named is not torch.Tensor and named.__name__.endswith("Tensor")
    return legacy and getattr(named, "__module__", None) == "torch"


def _listed_bytes(data: object, made, depth: int = 0) -> int:
    """The bytes of device memory in a (nested) list or tuple of tensors, which ``torch.tensor`` and its
    kin read one element at a time into host memory, wherever they put the result
    (``torch.tensor([x[0], x[1]])``); a list of Python numbers is told by its first element."""
    if isinstance(data, torch.Tensor):
        return 0 if made(data) else data.nbytes
    if isinstance(data, (list, tuple)) and data and depth < 8 and isinstance(data[0], (torch.Tensor, list, tuple)):
        return sum(_listed_bytes(item, made, depth + 1) for item in data)
    return 0


def host_read_bytes(func, args: tuple, kwargs: dict, made, own: bool = False, names_host=None) -> int:
    """The bytes of device memory (a tensor ``made`` does not call host memory) that a call copies to
    the host on a GPU: a read of its values (``_HOST_READS``), ``.cpu()`` or ``.to(device)`` of a device
    ``names_host`` says is the host (``_names_the_host`` where None: the CPU's rule), a ``copy_`` or an
    assignment (``h[i] = x``) into host memory, a tensor made of its data where ``device=`` names the
    host (``torch.tensor``, ``as_tensor``, ``asarray``, ``new_tensor``; ``new_tensor`` of a host tensor
    without it) or of a list of its elements (``_listed_bytes``), a legacy host type
    (``x.type(torch.FloatTensor)``), or its storage handed to the caller (``_STORAGES``), unless
    ``own`` (the caller is Triton's or the judge's: ``OwnCode``); 0 for any other call. The same
    decision on every machine; what tells host memory from device memory is the runner's (``made``,
    ``names_host``: marks on the CPU, the device on a GPU)."""
    names_host = names_host or _names_the_host
    if func in _DATA_COPIES:
        data = args[0] if args else kwargs.get("data", kwargs.get("obj"))
        if not isinstance(data, torch.Tensor):  # a list of tensors is read element by element on the host
            return _listed_bytes(data, made)
        device = kwargs.get("device", args[2] if func is torch.as_tensor and len(args) > 2 else None)
        return data.nbytes if names_host(device) and not made(data) else 0
    if not args or not isinstance(args[0], torch.Tensor):
        return 0
    if func in _STORAGES:
        return 0 if own or made(args[0]) else args[0].untyped_storage().nbytes()
    if func is torch.Tensor.copy_ or func is torch.Tensor.__setitem__:
        at = 2 if func is torch.Tensor.__setitem__ else 1  # copy_(src), __setitem__(index, value)
        source = args[at] if len(args) > at else kwargs.get("src")
        return source.nbytes if isinstance(source, torch.Tensor) and made(args[0]) and not made(source) else 0
    if func is torch.Tensor.new_tensor:
        data = args[1] if len(args) > 1 else kwargs.get("data")
        if not isinstance(data, torch.Tensor):
            return _listed_bytes(data, made)
        device = kwargs.get("device")
        to_host = names_host(device) if device is not None else bool(made(args[0]))
        return data.nbytes if to_host and not made(data) else 0
    if made(args[0]):
        return 0
    if func is torch.Tensor.type and _legacy_host_type(args[1] if len(args) > 1 else kwargs.get("dtype")):
        return args[0].nbytes
    if func in _HOST_READS or _to_host(func, args, kwargs, names_host):
        return args[0].element_size() if func is torch.Tensor.item else args[0].nbytes
    return 0


def _tensors(value, found: list, depth: int = 0) -> list:
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)) and depth < 4:
        for item in value[:64]:
            _tensors(item, found, depth + 1)
    elif isinstance(value, dict) and depth < 4:
        for item in list(value.values())[:64]:
            _tensors(item, found, depth + 1)
    return found


def _storages(value, found: list, depth: int = 0) -> list:
    """The untyped storages in a (nested) tuple, list or dict, a typed storage's own included."""
    if isinstance(value, torch.UntypedStorage):
        found.append(value)
    elif isinstance(value, torch.TypedStorage):
        found.append(value._untyped_storage)
    elif isinstance(value, (list, tuple)) and depth < 6:
        for item in value[:64]:
            _storages(item, found, depth + 1)
    elif isinstance(value, dict) and depth < 6:
        for item in list(value.values())[:64]:
            _storages(item, found, depth + 1)
    return found


def _names_device(args: tuple, kwargs: dict) -> bool:
    """Whether a ``Tensor.to`` call names a device (or a tensor whose device it takes)."""
    if kwargs.get("device") is not None:
        return True
    return any(isinstance(a, (str, torch.device, torch.Tensor)) for a in args)


_reading: list[HostReads] = []
"""The host-read counts watching now, innermost last."""


def _storage_copy(original):
    def copy_(storage, source, *args, **kwargs):
        if _reading and isinstance(source, torch.UntypedStorage):
            reads = _reading[-1]
            if reads.storage_made(storage) and not reads.storage_made(source):
                reads.count_storage(source.nbytes(), sys._getframe(1))
        return original(storage, source, *args, **kwargs)

    copy_._tritongym_read = True
    return copy_


def _storage_item(original):
    def __getitem__(storage, index, *args, **kwargs):
        if _reading and isinstance(index, int) and not _reading[-1].storage_made(storage):
            _reading[-1].count_storage(1, sys._getframe(1))
        return original(storage, index, *args, **kwargs)

    __getitem__._tritongym_read = True
    return __getitem__


def _storage_file(original):
    def _write_file(storage, *args, **kwargs):
        if _reading and not _reading[-1].storage_made(storage):
            _reading[-1].count_storage(storage.nbytes(), sys._getframe(1))
        return original(storage, *args, **kwargs)

    _write_file._tritongym_read = True
    return _write_file


def _storage_record(original):
    def write_record(writer, name, data, *args, **kwargs):
        if _reading and isinstance(data, torch.UntypedStorage) and not _reading[-1].storage_made(data):
            _reading[-1].count_storage(data.nbytes(), sys._getframe(1))
        return original(writer, name, data, *args, **kwargs)

    write_record._tritongym_read = True
    return write_record


_READERS = {"copy_": _storage_copy, "__getitem__": _storage_item, "_write_file": _storage_file}
"""A storage's own methods that read its values into host memory, counted while a ``HostReads``
watches: a copy into a host storage (``cpu()``, ``to("cpu")``: on a GPU a device-to-host copy), an
element's value (``tolist``, ``bytes()``, iteration and NumPy's sequence protocol read through it) and a
file's write (``torch.save``'s legacy format). A storage reached Python with no request of forward's
(``_STORAGES``): ``copy.deepcopy(x, memo)`` kept the input's own in the caller's memo, taken inside
``Tensor.__deepcopy__`` (red team 16 #3); so its reads are counted where they happen. These wrappers
shadow C methods of ``torch._C.StorageBase`` (an immutable type), which ``super()`` still reaches
(red team 17 #2): what they count is a second line; the first is that no storage of device memory
reaches forward's code uncounted (``HostReads.deepcopy_args`` closes the memo)."""
_WRITERS = {"write_record": _storage_record}
"""What writes a storage's bytes from its address into an archive (``torch.save``'s zip writer, a C++
class whose methods can be replaced: ``torch._C.PyTorchFileWriter``). On a GPU ``torch.save`` copies a
device storage to the host first (``cpu()``: its ``copy_``, counted); on the CPU the device's storage
says ``cpu``, and its bytes went into the archive with no reader counting them (red team 17 #1)."""
_FILE_WRITER = getattr(torch._C, "PyTorchFileWriter", None)


class HostReads(TorchFunctionMode):
    """Counts the bytes of device memory forward copies to the host (``host_read_bytes``; red team 14
    #2): on a GPU a tensor is in device memory where PyTorch says so (``made``: a CUDA tensor is, a
    host tensor is not, whoever made it), and a device is the host where it is one (``on_host``). The
    CPU's runner counts with :class:`HostTensors`, which tells the tensors a GPU would hold on the host
    by its marks instead. A read inside another counted call is that call's (``x.storage()`` asks for
    the untyped one; ``repr`` reads through ``item``); a storage handed to Triton's or the judge's code
    (``OwnCode``) is not forward's read.

    Triton's own code in a launch reads no device memory on a GPU (its autotuner times with events,
    restores its arguments with device copies, and summarises host lists; its launcher and tensor
    descriptors read sizes, strides and addresses). A host sync that copies only a size or an answer
    PyTorch computes (``nonzero``, ``unique``, ``torch.equal``) is not counted, and a flag read
    (``if x.any():``) counts its byte: a few bytes, under ``judge.HOST_READ_FLOOR``; what forward
    reads of their results is counted where read."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        """Torch functions in progress under this mode (what PyTorch runs inside one is that call's)."""
        self.host_bytes = 0
        """Bytes of device memory copied to the host since the runner last set it to 0 (``host_read_bytes``:
        on a GPU, device-to-host copies; red team 14 #2)."""
        self.own_code = OwnCode()
        """Triton's and the judge's code, whose requests for a storage are not forward's (taken again
        before the candidate's import: ``OwnCode.take``)."""
        self._readers: list[tuple[type, str, object]] = []
        """The storage readers this one replaced (``_READERS``, ``_WRITERS``), as they were."""
        self._memos: dict[int, tuple[object, dict]] = {}
        """id of a memo forward handed ``Tensor.__deepcopy__`` -> (that memo, the one PyTorch was handed
        instead: ``deepcopy_args``)."""

    def made(self, t: torch.Tensor) -> str:
        """How ``t`` came to be in host memory, or '' for device memory: a GPU's host tensors."""
        return "host memory" if t.device.type == "cpu" else ""

    def names_host(self, device: object) -> bool:
        """Whether a ``device=`` (or ``.to``'s argument) names the host: ``on_host``, a tensor where it is
        host memory (``made``)."""
        return bool(self.made(device)) if isinstance(device, torch.Tensor) else on_host(device)

    def count(self, func, args: tuple, kwargs: dict, caller: types.FrameType | None) -> None:
        """Add what a torch function called from ``caller`` copies to the host (``host_read_bytes``),
        outside any other torch function in progress."""
        if self._depth == 0:
            own = func in _STORAGES and (self.own_code.asks(caller) or _fact_only(caller))
            self.host_bytes += host_read_bytes(func, args, kwargs, self.made, own, self.names_host)

    def storage_made(self, storage: torch.UntypedStorage) -> bool:
        """Whether ``storage`` is host memory (on a GPU: a CPU storage)."""
        return storage.device.type == "cpu"

    def count_storage(self, nbytes: int, caller: types.FrameType | None) -> None:
        """Add a read of ``nbytes`` of a device storage's values by a storage's own method (``_READERS``)
        called from ``caller``, outside any torch function in progress and unless Triton's or the
        judge's code asks."""
        if self._depth == 0 and not self.own_code.asks(caller):
            self.host_bytes += nbytes

    def count_handed(self, func, out: object, caller: types.FrameType | None) -> None:
        """Count, as a request (``_STORAGES``) is counted, each storage of device memory that a torch
        function called by forward's code returns inside a tuple, a list or a dict: PyTorch asked for it
        inside that call, where no request is forward's. ``Tensor.__reduce_ex__`` of a tensor with
        Python state (a view given an attribute) returns its rebuild arguments, the input's storage
        among them (red team 17 #6)."""
        if self._depth or func in _STORAGES or not isinstance(out, (tuple, list, dict)):
            return
        found = _storages(out, [])
        if found and not self.own_code.asks(caller):
            for storage in {id(s): s for s in found}.values():
                if not self.storage_made(storage):
                    self.host_bytes += storage.nbytes()

    def deepcopy_args(self, func, args: tuple, caller: types.FrameType | None) -> tuple:
        """``Tensor.__deepcopy__``'s arguments as PyTorch is handed them: for a tensor of device memory
        copied by forward's code, a memo of the judge's in place of forward's. PyTorch's deep copy puts
        the tensor's own storage (and its device copy) into the memo it is given, which
        ``copy.deepcopy(x, memo)`` leaves to its caller: the input's storage in forward's hands with no
        request (``_STORAGES``) counting it (red team 16 #3), then read past the counting readers
        (``super(torch.UntypedStorage, host).copy_``: the C method they wrap, on a class PyTorch keeps
        immutable; red team 17 #2). The memo PyTorch gets is one per memo of forward's, so that views of
        one storage copied with one memo still share their copy's storage; the copy itself is forward's,
        as ``copy.deepcopy`` puts it in forward's memo."""
        if (
            func is not torch.Tensor.__deepcopy__
            or self._depth
            or len(args) < 2
            or not isinstance(args[0], torch.Tensor)
            or self.made(args[0])
            or self.own_code.asks(caller)
        ):
            return args
        memo = args[1]
        entry = self._memos.get(id(memo))
        if entry is None or entry[0] is not memo:
            entry = self._memos[id(memo)] = (memo, {})
        return (args[0], entry[1], *args[2:])

    def __enter__(self):
        _reading.append(self)
        readers = [(torch.UntypedStorage, name, wrap) for name, wrap in _READERS.items()]
        readers += [(_FILE_WRITER, name, wrap) for name, wrap in _WRITERS.items() if hasattr(_FILE_WRITER, name)]
        for owner, name, wrap in readers:
            if name not in vars(owner) or not getattr(vars(owner)[name], "_tritongym_read", False):
                self._readers.append((owner, name, vars(owner).get(name, _UNSET)))
                setattr(owner, name, wrap(getattr(owner, name)))
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            for owner, name, original in reversed(self._readers):
                if original is _UNSET:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)
            self._readers.clear()
            self._memos.clear()
            _reading.remove(self)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.count(func, args, kwargs, sys._getframe(1))
        args = self.deepcopy_args(func, args, sys._getframe(1))
        self._depth += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self._depth -= 1
        self.count_handed(func, out, sys._getframe(1))
        return out


class _Allocations(TorchDispatchMode):
    """What PyTorch makes while no torch function of a watched region is in progress (the legacy
    constructors, a C function without torch-function handling): host memory on every machine, whatever
    device context holds, since no device-aware layer saw the call."""

    def __init__(self, host: HostTensors) -> None:
        super().__init__()
        self.host = host

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.host._depth == 0:
            given = [t for t in _tensors(args, []) + _tensors(kwargs, []) if _address(t)]
            made = [self.host.made(t) for t in given]
            if func is torch.ops.aten.lift_fresh.default or all(made):  # lift_fresh: of data, below dispatch
                how = made[0] if given and made[0] else f"{func} outside any torch function ({LEGACY})"
                for t in _tensors(out, []):
                    if not self.host.made(t):
                        self.host._mark(t, how)
        return out


_UNSET = object()

LEGACY = "a legacy constructor such as torch.Tensor(n) or torch.FloatTensor(data), host memory on every machine"


class HostTensors(HostReads):
    """Marks the tensors forward makes where a GPU would make them in host memory (module docstring),
    and counts forward's reads of the rest (``HostReads``) as a GPU's runner does."""

    def __init__(self) -> None:
        super().__init__()
        self._marked: dict[int, tuple[weakref.ref, str]] = {}
        """Storage address -> (a weak reference to the storage, how it was made)."""
        self._saved: list[tuple[object, str, object]] = []
        self._factories = True
        """Whether a factory given no device makes host memory (not in the runner's device context)."""
        self._allocations: _Allocations | None = None
        self._storage_new: object = _UNSET
        """``torch.UntypedStorage``'s own ``__new__`` (None: inherited) while this one watches its constructor."""
        self._typed_init: object = _UNSET
        """``torch.TypedStorage``'s own ``__init__`` while this one watches its constructor."""
        ADDRESS_SHIFT[0] = _new_disguise()  # this runner's own

    @contextlib.contextmanager
    def watching(self, factories: bool = True):
        """Watch the block inside: ``with host:`` is ``with host.watching():``; ``factories=False`` where a
        ``torch.device`` context outside places what factories make (the runner's constructor), so
        that only what ignores that context is marked (legacy constructors, NumPy's memory)."""
        outer, self._factories = self._factories, factories
        try:
            with self:
                yield self
        finally:
            self._factories = outer

    def placed_state(self, model: torch.nn.Module) -> None:
        """Unmark the model's parameters and buffers: ``model.to(device)`` moves them on a GPU."""
        for t in [*model.parameters(), *model.buffers()]:
            self._marked.pop(_address(t), None)

    def __enter__(self):
        """Watch too what wraps memory PyTorch did not allocate (``torch.from_numpy``,
        ``torch.frombuffer``, DLPack): host memory on every machine, made by calls that reach no
        TorchFunctionMode (red team 11 #2). Their wrappers stay where the candidate's import put
        them; they mark for the HostTensors watching when they run."""
        _watching.append(self)
        for helpers, wrap in (
            (_WRAPPING, _host_memory),
            (_DEVICE_HELPERS, _device_memory),
            (_CAPSULES, _device_capsule),
        ):
            for owner, name in helpers:
                original = getattr(owner, name, None)
                if original is not None and not getattr(original, "_tritongym_host", False):
                    self._saved.append((owner, name, original))
                    setattr(owner, name, wrap(original, f"{owner.__name__}.{name}"))
        if "data_ptr" not in vars(torch.UntypedStorage):
            torch.UntypedStorage.data_ptr = _storage_address
        if not getattr(torch.UntypedStorage.__dict__.get("__new__"), "_tritongym_host", False):
            self._storage_new = torch.UntypedStorage.__dict__.get("__new__")
            torch.UntypedStorage.__new__ = staticmethod(_storage_new(torch.UntypedStorage.__new__))
        if not getattr(torch.TypedStorage.__dict__.get("__init__"), "_tritongym_host", False):
            self._typed_init = torch.TypedStorage.__dict__["__init__"]
            torch.TypedStorage.__init__ = _typed_storage_init(self._typed_init)
        self._allocations = _Allocations(self)
        self._allocations.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            allocations, self._allocations = self._allocations, None
            if allocations is not None:
                allocations.__exit__(None, None, None)
            for owner, name, original in reversed(self._saved):
                setattr(owner, name, original)
            self._saved.clear()
            if vars(torch.UntypedStorage).get("data_ptr") is _storage_address and len(_watching) == 1:
                del torch.UntypedStorage.data_ptr
            if self._storage_new is not _UNSET:  # the constructor as it was: inherited, or the class's own
                if self._storage_new is None:
                    del torch.UntypedStorage.__new__
                else:
                    torch.UntypedStorage.__new__ = self._storage_new
                self._storage_new = _UNSET
            if self._typed_init is not _UNSET:
                torch.TypedStorage.__init__ = self._typed_init
                self._typed_init = _UNSET
            _watching.remove(self)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _dlpack_of_device_memory(func, args) and not self.made(args[0]):
            raise BufferError(
                "Unsupported device in DLTensor: NumPy's from_dlpack takes host memory only, and on a GPU this "
                "tensor is in device memory (tritongym: the CPU judge does as a GPU does). Use Tensor.cpu() first."
            )
        if func in _CPU_ONLY and args and isinstance(args[0], torch.Tensor) and not self.made(args[0]):
            raise TypeError(
                f"{_name(func)} is only implemented on CPU tensors (tritongym: on a GPU this tensor is in device "
                "memory, where PyTorch refuses to run a Python function over its elements; the CPU judge does as a "
                "GPU does)."
            )
        if _numpy_of_device_memory(func, args, kwargs) and not self.made(args[0]):
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                "memory first. (tritongym: on a GPU this tensor is in device memory, and PyTorch refuses NumPy "
                "a view of it; the CPU judge does as a GPU does.)"
            )
        if func is _DATA_PTR and self._depth == 0 and args and isinstance(args[0], torch.Tensor):
            address = func(*args, **kwargs)  # device memory's address, shifted where forward's code asks
            return address if self.made(args[0]) or self.own_code.asks(sys._getframe(1)) else _shifted(address)
        self.count(func, args, kwargs, sys._getframe(1))
        args = self.deepcopy_args(func, args, sys._getframe(1))
        self._depth += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self._depth -= 1
        self.count_handed(func, out, sys._getframe(1))
        if _to_host(func, args, kwargs) and isinstance(out, torch.Tensor) and not self.made(args[0]):
            if _address(out) == _address(args[0]):  # a GPU's copy to the host: another storage
                out = out.clone()
            self._mark(out, f"{_name(func)} (a copy in host memory)")
            return out
        if func is not torch.Tensor.to and _names_the_host(kwargs.get("device")):
            # made where the candidate named the host (``torch.empty(n, device="cpu")``, ``empty_like(x,
            # device="cpu")``): host memory on a GPU, in the constructor too (red team 13 #4)
            for t in _tensors(out, []):
                self._mark(t, f'{_name(func)} with device="cpu"')
            return out
        given = _tensors(args, []) + _tensors(kwargs, [])
        if not given and kwargs.get("device") is None:
            if not self._factories:  # the runner's device context places it
                return out
            # made from no tensor and on no device named: a factory of any name (torch.empty, asarray,
            # normal, hann_window...), whose result is on the default device, the host (red team 11 #2)
            for t in _tensors(out, []):
                self._mark(t, f"{_name(func)} without device=")
        elif func in _PLACING and _names_device(args[1:], kwargs):
            for t in _tensors(out, []):
                self._marked.pop(_address(t), None)
        else:
            made = [self.made(t) for t in given]
            if given and all(made):
                for t in _tensors(out, []):
                    if not self.made(t):
                        self._mark(t, made[0])
        return out

    def _mark(self, t: torch.Tensor, how: str) -> None:
        address = _address(t)
        if t.device.type == "cpu" and address:
            self._marked[address] = (weakref.ref(t.untyped_storage()), how)

    def _mark_storage(self, storage: torch.UntypedStorage, how: str) -> None:
        """Mark a storage made without a tensor: every tensor later ``set_`` on it is host memory."""
        if storage.device.type == "cpu" and storage.data_ptr():
            self._marked[storage.data_ptr()] = (weakref.ref(storage), how)

    def names_host(self, device: object) -> bool:
        """Whether a ``device=`` names host memory on every machine (``_names_the_host``): on the CPU a
        ``torch.device("cpu")`` or a tensor's device is the judge's device memory too."""
        return _names_the_host(device)

    def storage_made(self, storage: torch.UntypedStorage) -> bool:
        """Whether ``storage`` was made in host memory (marked, as ``made`` tells a tensor's)."""
        mark = self._marked.get(_STORAGE_DATA_PTR(storage)) if self._marked else None
        return mark is not None and mark[0]() is storage

    def made(self, t: torch.Tensor) -> str:
        """How ``t``'s storage was made in host memory (a GPU's too), or ''."""
        mark = self._marked.get(_address(t)) if self._marked else None
        if mark is None:
            return ""
        storage = mark[0]()
        if storage is None or t.untyped_storage() is not storage:  # freed: the address may be another's now
            self._marked.pop(_address(t), None)
            return ""
        return mark[1]

    def refuse(self, kernel_name: str, args: tuple, kwargs: dict) -> None:
        """Raise Triton's own error for a launch argument a GPU would hold in host memory."""
        named = [(str(i), a) for i, a in enumerate(args)] + [(repr(k), v) for k, v in kwargs.items()]
        for where, value in launch_pointers(named):
            if self.made(value):
                raise ValueError(
                    f"Pointer argument (at {where}) cannot be accessed from Triton (cpu tensor?): launching "
                    f"{kernel_name} on a GPU fails, since that tensor would be in host memory (made by "
                    f"{self.made(value)}, at import or in forward). Make it on the inputs' device: device=x.device, "
                    "or torch.empty_like(x)."
                )


def launch_pointers(named: list, depth: int = 0) -> list[tuple[str, torch.Tensor]]:
    """(where, tensor) for every tensor a GPU's launcher turns into a pointer: an argument, one inside
    a tuple or list argument (Triton flattens them: red team 11 #6), a tensor descriptor's base."""
    found = []
    for where, value in named:
        if isinstance(value, torch.Tensor):
            found.append((where, value))
        elif isinstance(value, (tuple, list)) and depth < 4:
            found += launch_pointers([(f"{where}[{i}]", v) for i, v in enumerate(value[:256])], depth + 1)
        elif type(value) in _descriptor_types():
            base = vars(value).get("base")
            if isinstance(base, torch.Tensor):
                found.append((f"{where}.base", base))
    return found


@functools.cache
def _descriptor_types() -> tuple[type, ...]:
    """Triton's host-side tensor descriptor (its launcher passes its base as a pointer); none where
    this Triton has none."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return ()
    return (TensorDescriptor,)


def _address(t: torch.Tensor) -> int:
    """The address of ``t``'s storage; 0 for a tensor that has none to give (sparse, nested, meta)."""
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # a layout without a plain storage: never marked, never refused
        return 0


def _name(func) -> str:
    """How a torch function is written: ``torch.empty``, ``torch.Tensor.new_empty``."""
    name = getattr(func, "__name__", repr(func))
    owner = getattr(func, "__objclass__", None) or getattr(func, "__self__", None)
    if owner is torch.Tensor or owner is torch._C.TensorBase:
        return f"torch.Tensor.{name}"
    module = getattr(func, "__module__", None) or "torch"
    return f"{'torch' if module.startswith('torch._C') else module}.{name}"
