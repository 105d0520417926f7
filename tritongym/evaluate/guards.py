"""Runtime guards around the candidate's forward (sandbox side).

* LaunchMonitor wraps Triton's launch path (``JITFunction.run``, the interpreter's, and Inductor's
  ``CachingAutotuner.run`` where candidate code imported it; under the interpreter also
  ``GridExecutor.__call__``, where a grid run around every ``run`` is caught; triton_compat.py says
  where these are on each Triton release) for the duration of a forward. It
  counts launches of kernels compiled from the candidate's own ``@triton.jit`` functions (identity: the function's
  source file is the candidate's, never a name match), and those made on a CUDA stream other than
  the one forward was called on. Op recording goes on inside launches: under the interpreter a
  kernel's body is Python that could call PyTorch (the interpreter's own tensor handling is glue).
  On request it makes every such launch fail, to expose forwards that route around a failed Triton
  path, or wraps each in a profiler annotation (profiling.py attributes GPU time by it). Under the
  interpreter it first runs Triton's frontend on every kernel launched (frontend.py): what Triton's
  compiler rejects fails there as on a GPU. It also records each interpreted grid's memory accesses
  (races.py): programs that share an element without atomics, harmless when the interpreter runs them
  one after another, race on a GPU, and the launch fails; and a ``tl.dot`` of float32 blocks in TF32
  (Triton's default input precision) rounds its operands to TF32 as a GPU does (tf32.py). A kernel of
  the candidate's that reaches host code, or reaches code by a route its names do not show
  (``getattr`` with a computed name, a namespace read as a dict, data holding a callable, an object
  whose class runs Python), is not its own (``HOST_CODE``: red team 8 #5).
* OpRecorder (a TorchDispatchMode) records the aten ops that forward runs outside Triton launches.
  Allocation, views, copies and fills are glue; everything else is PyTorch doing compute. On a GPU
  it also counts ops issued on another stream than forward's.
* OpWitness records forward's aten ops a second way, with PyTorch's profiler (the dispatcher's own
  hooks), so that compute run with the Python dispatch key switched off, which the op recorder
  never sees, is still reported.
* count_thread_starts() counts every Python thread started in the process (installed in the zygote,
  before any candidate): PyTorch's dispatch modes, the op recorder included, are per thread, so work
  on a thread that forward starts and joins would go unrecorded; the runner reports such a thread.
* aliasing() says whether an output shares memory with an input, a parameter or a buffer.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import os
import re
import secrets
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.autograd.profiler import record_function
from torch.utils._python_dispatch import TorchDispatchMode

from tritongym.evaluate import frontend, placement, races, taint, tf32, triton_compat
from tritongym.evaluate.judge.tree import tensor_leaves
from tritongym.evaluate.placement import HostTensors

GLUE_OPS = frozenset(
    [
        "empty",
        "empty_like",
        "new_empty",
        "empty_strided",
        "new_empty_strided",
        "empty_permuted",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "fill_",
        "zero_",
        "view",
        "_unsafe_view",
        "reshape",
        "as_strided",
        "t",
        "transpose",
        "permute",
        "expand",
        "expand_as",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "clone",
        "copy_",
        "_to_copy",
        "to",
        "contiguous",
        "detach",
        "detach_",
        "alias",
        "slice",
        "select",
        "split",
        "split_with_sizes",
        "chunk",
        "narrow",
        "unbind",
        "set_",
        "lift_fresh",
        "resize_",
        "cat",
        "stack",
        "view_as",
        "_reshape_alias",
        "numpy_T",
        "movedim",
        "unfold",
        "_local_scalar_dense",
        "arange",
        "is_pinned",
    ]
)
"""aten ops that move, shape or allocate memory (or, ``is_pinned``, tell what memory a tensor is in: a
host tensor's DLPack export asks it): allowed glue around the candidate's kernels."""


class LaunchBlocked(RuntimeError):
    """Raised instead of launching a candidate kernel during the fallback check."""


_cuda_initialized = torch.cuda.is_initialized
_current_stream = torch.cuda.current_stream


def current_stream_handle() -> int | None:
    """The raw handle of the current CUDA stream, or None before CUDA is initialised (CPU)."""
    return _current_stream().cuda_stream if _cuda_initialized() else None


def _allocates_unwritten(name: str) -> bool:
    """Whether an aten op returns memory it did not write: every op of the ``empty`` family by its name
    (``empty``, ``empty_like``, ``new_empty_strided``, ``empty_permuted``, the quantized ones: a rule,
    not a list, red team 11 #4). ``resize_`` leaves what it grows unwritten too (``_grown``)."""
    return "empty" in name.split("_")


RESIZE_OPS = frozenset(["resize_", "resize_as_", "_resize_output_"])
"""aten ops that grow a tensor's storage in place, leaving what they add unwritten."""


class OpRecorder(TorchDispatchMode):
    def __init__(self, poison_empty: bool = False, moved: Callable | None = None) -> None:
        super().__init__()
        self.moved = moved
        """If set, called with each op (``func, args, kwargs``) before it runs; what it returns, if
        anything, with the op's output after (a trial's ``handed.FirstHanded.moved``: whose work glue
        moves)."""
        self.compute: collections.Counter[str] = collections.Counter()
        self.off_stream: collections.Counter[str] = collections.Counter()
        self.stream = current_stream_handle()
        self.poison_empty = poison_empty
        """Fill what the ``empty`` family returns with POISON_BYTE (the CPU's stand-in for the poison a
        GPU's free memory holds before every trial: red team 10 #5)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name not in GLUE_OPS:
            self.compute[name] += 1
        if self.stream is not None and current_stream_handle() != self.stream:
            self.off_stream[name] += 1
        grown = self.poison_empty and name in RESIZE_OPS and args and isinstance(args[0], torch.Tensor)
        before = args[0].untyped_storage().nbytes() if grown else 0
        after = self.moved(func, args, kwargs or {}) if self.moved is not None else None
        out = func(*args, **(kwargs or {}))
        if after is not None:
            after(out)
        if not (self.poison_empty and type(out) is torch.Tensor and out.device.type == "cpu"):
            return out
        if _allocates_unwritten(name) or grown:
            storage = out.untyped_storage()  # resize_ keeps what the storage held: only what it added
            start = before if grown else 0
            if storage.nbytes() > start:
                torch.empty(0, dtype=torch.uint8).set_(storage)[start:].fill_(POISON_BYTE)
        return out


class OpWitness:
    """A second record of forward's aten ops, from PyTorch's profiler (CPU activity only), which hooks
    the dispatcher itself (RecordFunction) rather than the Python dispatch key. The op recorder is
    skipped wherever that key is switched off: ``torch._C._DisableTorchDispatch()``, an
    ``_ExcludeDispatchKeyGuard`` of the Python key, the dispatch-mode stack popped for a block. The
    profiler sees those ops. Its innermost compute ops (those that ran no other op but glue, such as
    the allocation of their output) are what the recorder would have seen; composites that returned
    without dispatching anything (``to`` or ``resolve_conj`` on a tensor that needs no change) never
    reach the Python key and are not compute. ``compute`` holds those innermost compute ops.

    The profiler is started through its low-level API, which leaves ``torch.autograd.profiler``'s
    Python flag alone, so that library code that asks that flag (Inductor's launcher) runs as it
    would without the witness. It runs in the candidate's process: stopping it, or replacing its
    session with another, is reported (``stopped``) rather than prevented."""

    def __init__(self) -> None:
        self.compute: collections.Counter[str] = collections.Counter()
        self.stopped = False
        """The profiler was no longer running when forward returned, or the session running then is
        not the one started here (the candidate stopped it, and maybe started one of its own)."""
        self._mark = f"tritongym-witness-{secrets.token_hex(8)}"

    def __enter__(self) -> OpWitness:
        from torch._C._profiler import _ExperimentalConfig
        from torch.autograd import ProfilerActivity, ProfilerConfig, ProfilerState

        config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
        torch.autograd._prepare_profiler(config, {ProfilerActivity.CPU})
        torch.autograd._enable_profiler(config, {ProfilerActivity.CPU})
        with record_function(self._mark):  # a session without it at the end is not this one
            pass
        self._switches = profiler_switches()
        return self

    def __exit__(self, *exc) -> None:
        # the end mark is missing where the candidate left the profiler's callbacks off or cleared
        with record_function(self._mark + "-end"):
            pass
        if not torch.autograd._profiler_enabled() or profiler_switches() != self._switches:
            self.stopped = True  # stopped, or collection paused and resumed inside forward
        try:
            roots = torch.autograd._disable_profiler().experimental_event_tree()
        except Exception:  # a profiler whose state the candidate broke
            self.stopped = True
            return
        marks: set[str] = set()
        for root in roots:
            _innermost_compute(root, self.compute, marks, self._mark)
        self.stopped |= marks != {self._mark, self._mark + "-end"}


def _innermost_compute(root, compute: collections.Counter, marks: set[str], mark: str) -> None:
    """Count in ``compute`` every aten op under ``root`` that computes and ran no other op that does
    (its children are glue at most: a CUDA kernel's host code allocates its output through the
    dispatcher, ``_softmax`` -> ``empty_like``); collect the witness's marks. Iterative: the tree's
    depth is the candidate's to choose."""
    below: dict[int, bool] = {}
    """id(event) -> whether some op beneath it computes."""
    todo = [(root, False)]
    while todo:
        event, children_done = todo.pop()
        if not children_done:
            if event.name.startswith(mark):
                marks.add(event.name)
            todo.append((event, True))
            todo += [(child, False) for child in event.children]
            continue
        name = event.name.removeprefix("aten::")
        computes = event.name.startswith("aten::") and _computes(name)
        deeper = any(below.pop(id(child), False) for child in event.children)
        if computes and not deeper:
            compute[name] += 1
        below[id(event)] = computes or deeper


PROFILER_SWITCHES = ("_toggle_collection_dynamic", "_enable_record_function")
"""The profiler's native controls that pause its collection (or every RecordFunction callback)
without stopping it: a forward could pause the witness around hidden work and resume it."""
_profiler_switches = [0]


def count_profiler_switches() -> None:
    """Count every call of the profiler's pausing switches from now on, under every name a loaded
    module holds them by (``torch.autograd._toggle_collection_dynamic`` is ``torch._C._autograd``'s).
    Installed in the zygote, like the thread counter; the runner's word like it."""
    native = torch._C._autograd
    for name in PROFILER_SWITCHES:
        original = getattr(native, name, None)
        if original is None or getattr(original, "_tritongym_counted", False):
            continue

        def switch(*args, _original=original, **kwargs):
            _profiler_switches[0] += 1
            return _original(*args, **kwargs)

        switch._tritongym_counted = True
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if isinstance(namespace, dict) and namespace.get(name) is original:
                setattr(module, name, switch)


def profiler_switches() -> int:
    """Calls of the profiler's pausing switches since count_profiler_switches()."""
    return _profiler_switches[0]


@functools.cache
def _computes(name: str) -> bool:
    """Whether an innermost aten op is compute: not glue, and not an op whose every overload is a
    composite (which, innermost, returned without running anything)."""
    if name in GLUE_OPS:
        return False
    packet = getattr(torch.ops.aten, name, None)
    overloads = []
    with contextlib.suppress(Exception):
        overloads = [getattr(packet, overload).name() for overload in packet.overloads()]
    composite = []
    for qualified in overloads:
        with contextlib.suppress(RuntimeError):  # overloads TorchScript knows but the dispatcher does not
            composite.append(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd"))
    return not (composite and all(composite))


def unrecorded_compute(recorder: OpRecorder, witness: OpWitness) -> collections.Counter:
    """The compute the witness saw where the op recorder saw none: ops run with the Python dispatch
    key switched off. (Where the recorder saw compute, the forward already reports some; the witness's
    innermost ops include those that the recorder's ops run inside their kernels, so the two are not
    compared op by op.)"""
    if recorder.compute:
        return collections.Counter()
    return collections.Counter({f"{name} (hidden from the op recorder)": n for name, n in witness.compute.items()})


INDUCTOR_LAUNCHER = "torch._inductor.runtime.triton_heuristics"
"""Inductor's launcher module: its ``CachingAutotuner.run`` compiles and launches a ``@triton.jit``
kernel through a launcher of its own (or, under the interpreter, through the kernel's ``run``)."""


INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
"""Whether kernels run under Triton's interpreter here (read once, when the runner starts)."""


def _launch_points() -> list[tuple[type, str]]:
    """The class attributes through which a kernel launches, as (class, name): Triton's
    ``JITFunction.run``, the interpreter's (``triton_compat``: Triton 3.4/3.5's interpreter is given
    one), and, on a GPU, Inductor's ``CachingAutotuner.run`` where candidate code imported it
    (KernelBook and ``tritongym solutions inductor`` code launch through it, bypassing
    ``JITFunction.run``). Under the interpreter Inductor launches through the kernel's own ``run``,
    which is counted: counting ``CachingAutotuner.run`` too would count a hand-made one whose
    launcher runs no kernel at all."""
    from triton.runtime.jit import JITFunction

    points = [(JITFunction, "run")]
    interpreted = triton_compat.interpreter_run_point()
    if interpreted is not None:
        points.append(interpreted)
    inductor = sys.modules.get(INDUCTOR_LAUNCHER)
    autotuner = getattr(inductor, "CachingAutotuner", None)
    if not INTERPRETED and isinstance(autotuner, type) and "run" in autotuner.__dict__:
        points.append((autotuner, "run"))
    return points


FOREIGN = "(Triton kernel not of the solution)"
"""How a launch of a Triton kernel compiled from a function outside the candidate's file is named
among forward's PyTorch compute (red team 4 #8: Inductor's kernels inside ``torch.compile``)."""
HOST_CODE = "(Triton kernel of the solution that runs host code: {})"
"""How a launch of a kernel of the candidate's text is named among forward's compute where it, or a
function it calls, reaches host code (a plain Python function, NumPy's) or reaches code by a route
the ownership rule cannot follow (a ``getattr`` whose name is data, a namespace read as a dict,
``exec``: red team 8 #5): the launch is not the candidate's own. The braces hold why."""
BYPASS = "(interpreted grid run without its kernel's run)"


NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-+]?(0x[0-9a-fA-F]+|\d+(\.\d*)?([eE][-+]?\d+)?)")
"""A number in an error's message (not a digit inside a name: ``int32``, ``x_1``)."""


def _valueless(arg: object) -> object:
    return NUMBER.sub("#", arg) if isinstance(arg, str) else f"<{type(arg).__name__}>"


def forget_frames(error: BaseException, valueless: bool = False) -> None:
    """Drop the local variables of the frames an error raised out of an interpreted grid passed through
    (its traceback's, and its causes' and contexts'), keeping their code and lines (the feedback's
    location). They are the kernel's state: the interpreter's tensors hold the values it loaded as NumPy
    arrays, and a forward that caught the error read them there (red team 21 #13: NumPy's divide-by-zero
    warning, made an error by ``warnings.simplefilter("error")``, raised out of a kernel that had loaded
    a row). A GPU kernel has no Python frames, and a warning is not an error there. The frames still
    running (the launch's callers) keep theirs. ``valueless``: the messages of these errors (their
    arguments and text attributes) lose their numbers too (``#``), and any argument that is not text:
    an error of the interpreter or NumPy names values a kernel computed (red team 25 #5: ``tl.gather``
    with a loaded value as its index raised ``index 1078984704 is out of bounds``, the value's bits, one
    per launch). A GPU's kernel raises nothing with a message; the words stay for the feedback."""
    pending, seen = [error], set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        if valueless:
            with contextlib.suppress(Exception):  # arguments an error class fixes: no values of a kernel
                current.args = tuple(_valueless(arg) for arg in current.args)
            for name, value in list(getattr(current, "__dict__", {}).items()):  # InterpreterError.error_message
                if isinstance(value, str):
                    setattr(current, name, _valueless(value))
        pending += [current.__cause__, current.__context__]


@contextlib.contextmanager
def no_host_hooks():
    """While an interpreted grid runs: no hook of the process calls Python (forward's) from inside it.
    A GPU kernel calls no host code, but under the interpreter the kernel is Python, and code that runs
    while it runs reads its frames (``tb_frame.f_back`` of an error it raises and catches itself: no
    forbidden name), whose locals hold what the kernel loaded as NumPy arrays (red team 21 #14, #15):
    NumPy's floating-point error handling (a callback set by ``np.errstate(call=...)``; a warning, which
    ``warnings``' hooks show) is off, as a GPU's arithmetic reports nothing; Python's warnings are
    ignored; and the garbage collector, which runs the ``__del__`` of forward's cyclic garbage wherever
    the interpreter's allocations trigger it, is paused (reference counting still frees the grid's own
    objects)."""
    import gc
    import warnings

    import numpy as np

    collecting = gc.isenabled()
    gc.disable()
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if collecting:
            gc.enable()


def _refuse(event: str, args: tuple, own=None, error=None) -> None:
    """The runner's audit hook: refuses (raises at) the events that would put code of the candidate's
    where it reads frames it must not, or that would disarm this hook. ``own`` is this hook's own code
    and ``error`` the exception it raises, bound as defaults (replacing them is refused): it looks up no
    name, in a module or in builtins, that a candidate could rebind."""
    hooks = ("sys.addaudithook", "sys.setprofile", "sys.settrace", "sys._setprofileallthreads",
             "sys._settraceallthreads", "sys.monitoring.register_callback")  # fmt: skip
    if event in hooks:
        raise error(f"a runner refuses {event}")
    rewrites = event == "object.__setattr__" and args[1] in ("__code__", "__defaults__", "__kwdefaults__")
    if rewrites and args[0].__code__ is own:  # only a function's setters raise this event for these names
        raise error("a runner's audit hook is not rewritten")


def refuse_audit_hooks() -> None:
    """From now on, no audit hook, profile hook or trace hook can be added to this process (red team 23
    #1, red team 25 #1, #2): the runner's own audit hook, added before the candidate's import, refuses
    every later ``sys.addaudithook`` (Python then adds nothing and the call returns as if it had), every
    ``sys.setprofile`` and ``sys.settrace`` (the C routes, ``PyEval_SetProfile``, and ``threading``'s
    per-thread hooks raise the same events) and, on Python 3.12, their all-threads forms
    (``threading.setprofile_all_threads``) and ``sys.monitoring``'s callbacks. Each
    runs Python wherever Python raises an event, calls or returns from a function, and under the
    interpreter that is inside a running kernel: a candidate's hook read the values a kernel loaded in
    its frame (a profile or trace hook is handed the frame itself). :func:`no_host_hooks` keeps every
    other hook from running there. A GPU kernel runs no Python; outside the kernels a hook would see
    the runner's own objects and frames. It also refuses its own rewriting (its ``__code__`` or
    defaults replaced: the candidate can reach this module's function through ``sys.modules``). Hooks
    cannot be removed, so this one stays for the runner's life; it costs a Python call per audited
    event (a fraction of a microsecond), on the host only."""
    hook = types.FunctionType(_refuse.__code__, {"__builtins__": {}}, "_refuse", (None, RuntimeError))
    hook.__defaults__ = (hook.__code__, RuntimeError)
    sys.addaudithook(hook)


STANDARD_STREAMS = (sys.stdout, sys.stderr)
"""The process's own standard output and error as its guards were imported (a runner's are pipes the
judge drains), where every interpreted grid prints (``LaunchMonitor._wrap_executor``). A GPU kernel's
``tl.device_print`` (and ``print`` in a kernel, which Triton's compiler makes one) is CUDA's ``printf``
to the process's standard output, which forward cannot read back; the interpreter prints them with
Python's ``print``, to ``sys.stdout`` as forward set it, so that forward captured a kernel's print of
its input (``contextlib.redirect_stdout``) and computed on the host from the text with no read of device
memory counted (red team 21 #2)."""
"""How a grid that Triton's interpreter ran outside every kernel's ``run`` (a ``GridExecutor`` the
candidate made and called itself) is named among forward's PyTorch compute: its kernel is unknown,
so it is never the candidate's own launch."""


def kernel_name(kernel) -> str:
    """The name of the function a launchable kernel (a JITFunction, or a launcher holding one) was
    compiled from."""
    fn = kernel
    for _ in range(4):
        code = getattr(fn, "__code__", None)
        if code is not None:
            return code.co_name
        fn = getattr(fn, "fn", None)
    return type(kernel).__name__


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _flat(text: str) -> str:
    return "".join(text.split())


@dataclass(frozen=True)
class CandidateText:
    """The candidate's file as its runner read it before any of it ran: the code objects compiled from
    it and its text. A kernel is the candidate's own only where both came from there: the function's
    code (what Triton's interpreter runs) equals one compiled from the text, and the kernel's source
    (what Triton compiles on a GPU, ``JITFunction.src``, read through ``linecache``) is in the text.
    A file name proves nothing: a runner owns its file and may write another program over it, a
    bundled solution read from the package say, and run that under the same name (red team 5 #12)."""

    codes: frozenset
    flat: str
    """The text without whitespace (a kernel's source is dedented and starts at its ``def``)."""

    @classmethod
    def read(cls, path: str, code=None) -> CandidateText:
        """``code``: how the runner compiles the text (``compile`` where None; on the CPU
        ``placement.candidate_code``)."""
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        try:
            made = code(text, path) if code is not None else compile(text, path, "exec", dont_inherit=True)
            codes = frozenset(_code_objects(made))
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # it will not import either
            codes = frozenset()
        return cls(codes, _flat(text))

    def owns(self, code: types.CodeType, source: object) -> bool:
        """Whether a function's code, and its kernel's source where it has one, come from the text."""
        try:
            if code not in self.codes:
                return False
        except TypeError:  # a code object holding unhashable constants: none of the text's
            return False
        return not isinstance(source, str) or _flat(source) in self.flat


def _function(kernel) -> tuple[types.FunctionType, str | None] | None:
    """The Python function a kernel (a JIT function, or a launcher holding one) was made from, and its
    kernel source where it has one (``JITFunction.src``: what a GPU compiles; under the interpreter the
    frontend's mirror's source, which is what runs: frontend.py). None where an object on the way is
    not of a launcher class of Triton's or Inductor's own: a subclass's methods are the candidate's,
    and decide what is compiled or run (``parse``, ``rewrite``, ``__call__``: red team 7 #1)."""
    fn, source = kernel, None
    for _ in range(4):
        if isinstance(fn, types.FunctionType):
            return fn, source
        if not _library_class(type(fn)):
            return None
        if INTERPRETED and type(fn).__name__ == "InterpretedFunction":
            try:
                source = frontend.mirror(fn).src
            except Exception:  # no source to read: nothing the interpreter could be checked against
                return None
        elif isinstance(getattr(fn, "src", None), str):
            source = fn.src
        fn = getattr(fn, "fn", None)
    return None


def _hooks_passable(kernel) -> bool:
    """Whether the pre-run hooks of a kernel (and of the JIT function a launcher holds) are a library's
    functions only: Triton runs them inside the launch, before the kernel (``add_pre_run_hook``), so
    a hook of the candidate's is host code in an own launch (red team 7 #4: NumPy there)."""
    for obj in (kernel, getattr(kernel, "fn", None)):
        hooks = getattr(obj, "__dict__", {}).get("pre_run_hooks") or []
        if not isinstance(hooks, list) or not all(frontend.library_function(hook) for hook in hooks[:64]):
            return False
        if len(hooks) > 64:
            return False
    return True


def _passable(value) -> bool:
    """Whether a launch's argument may be called by its kernel as device code: not callable at all, a
    JIT function (checked by ownership), a library's function or object; not a plain Python function
    or an object of the candidate's class with a ``__call__``."""
    for _ in range(8):  # a tl.constexpr calls what it holds: judge that (a global constexpr of an object)
        if type(value).__name__ != "constexpr" or not _library_class(type(value)):
            break
        value = getattr(value, "value", None)
    if isinstance(value, types.FunctionType):
        return frontend.library_function(value)
    if isinstance(value, type):  # what the class's metaclass does (``K[0]``, ``K + 1``) runs too
        return _constructs_no_code(value) and _runs_no_python(type(value))
    if isinstance(value, _jit_classes()) or _library_class(type(value)) or _plain_enum_member(value):
        return True
    # an object's class decides what a kernel's operations on it run (``HELD[0]``: its ``__getitem__``;
    # ``if HELD``, ``HELD + 1``, a property read): an object of a class with Python of its own is host code,
    # and so is one whose C type hands the operation on to what it holds (``_plain_layout``)
    return not callable(value) and _runs_no_python(type(value)) and _plain_layout(value)


def _plain_enum_member(value) -> bool:
    """Whether ``value`` is a member of an enum class of the candidate's that holds nothing of its own
    but its members and the bookkeeping ``enum`` gives every such class (an ``IntEnum`` flag passed as
    a ``tl.constexpr``): what a kernel does with it (compare it, do arithmetic, hash it) runs
    ``enum``'s or the mixed-in data type's code only. Every class of its method resolution order is
    ``enum``'s own, a data type or such a class, whose Python functions (``__new__``,
    ``_generate_next_value_``) are the very ones an ``enum`` base holds under that name, and the
    member's own attributes (``_value_``, ``_name_``) are plain values. Read statically."""
    import enum

    cls = type(value)  # never ``__class__``, which an object of the candidate's may fake
    if type(cls) is not enum.EnumType:
        return False
    try:
        mro = type.__dict__["__mro__"].__get__(cls)
        bases = [k for k in mro if _enum_class(k)]
        own = [k for k in mro if not (k is object or k in _DATA_TYPES or _enum_class(k))]
        namespaces = [(k, type.__dict__["__dict__"].__get__(k)) for k in own]
    except Exception:  # not a class of CPython's making
        return False
    for k, namespace in namespaces:
        if type(k) is not enum.EnumType:
            return False  # a mixin of the candidate's
        for name, attr in list(namespace.items()):
            if type(attr) is k or type(attr) in (str, int, bool, type(None), list, dict):
                continue  # a member; enum's bookkeeping (names, maps of members)
            if type(attr) is tuple and all(type(item) is str for item in attr):
                continue  # names (``__static_attributes__``, Python 3.13)
            if isinstance(attr, type) and (attr is object or attr in _DATA_TYPES):
                continue  # ``_member_type_``
            function = _unwrapped(attr)
            if isinstance(function, types.FunctionType) and any(_unwrapped(vars(b).get(name)) is function
                                                                for b in bases):  # fmt: skip
                # ``enum`` sets ``Enum.__new__`` (its static method's function) on every enum class, and
                # from Python 3.12 ``_generate_next_value_`` as the static method itself
                continue
            if _type_slot(attr) or (
                isinstance(attr, types.MethodDescriptorType) and any(attr.__objclass__ is t for t in _DATA_TYPES)
            ):
                continue  # a data type's own method (``_value_repr_``, ``__format__``)
            return False
    plain = (str, int, float, bool, type(None))
    try:
        held = list(vars(value).values())
    except TypeError:  # no instance dict (``__slots__``)
        return False
    return all(type(v) in plain or v is cls for v in held)


def _unwrapped(attr):
    """The function a static or class method holds (of those exact C types: a subclass's ``__get__``
    would be Python), else ``attr``."""
    return attr.__func__ if type(attr) in (staticmethod, classmethod) else attr


def _enum_class(cls: type) -> bool:
    """Whether ``cls`` is one of the ``enum`` module's own classes (``Enum``, ``IntEnum``, ...)."""
    import enum

    return vars(enum).get(type.__dict__["__qualname__"].__get__(cls)) is cls


@functools.cache
def _plain_layouts() -> tuple[type, ...]:
    """C types whose operations work on the value itself: data, a module (a namespace read by name)."""
    return (object, *_DATA_TYPES, type(None), slice, range, type(Ellipsis), type(NotImplemented), types.ModuleType)


def _plain_layout(value) -> bool:
    """Whether the C type an object is laid out as (its class's first base that is not a Python class)
    is plain data, a module, or PyTorch's or a library's own: not a C wrapper that hands a kernel's
    operation on to an object or a callable it holds, which ``_runs_no_python`` never sees (a
    ``types.MappingProxyType`` over a mapping whose ``__getitem__`` is Python; a
    ``collections.defaultdict`` whose ``default_factory``, a ``functools.partial`` of NumPy's, runs
    on a missing key; ``map`` and ``itertools`` iterators; weak proxies)."""
    try:
        mro = type.__dict__["__mro__"].__get__(type(value))
    except Exception:  # not a class of CPython's making
        return False
    layout = next((k for k in mro if not type.__dict__["__flags__"].__get__(k) & _HEAP_TYPE), object)
    return layout in _plain_layouts() or _trusted_class(layout)


def _runs_no_python(cls: type, depth: int = 0) -> bool:
    """Whether no operation on an object of ``cls`` (indexing, arithmetic, comparison, truth, attribute
    reads through a property or a descriptor) runs Python but a library's: no class of its method
    resolution order (bar library classes) holds a Python function, a static, class or property
    method of one, or a descriptor of such a class. Read statically (the type's own slots), so that
    no candidate code runs while it is judged."""
    try:
        mro = type.__dict__["__mro__"].__get__(cls)
        namespaces = [type.__dict__["__dict__"].__get__(k) for k in mro if not (k is object or _trusted_class(k))]
    except Exception:  # not a class of CPython's making: not judged harmless
        return False
    for namespace in namespaces:
        for attr in list(namespace.values()):
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            parts = (attr.fget, attr.fset, attr.fdel) if isinstance(attr, property) else (attr,)
            for part in parts:
                if isinstance(part, types.FunctionType) and not frontend.library_function(part):
                    return False
            # an object of a Python class among the attributes: a descriptor runs its ``__get__``
            descriptor = (
                not isinstance(attr, (type, types.FunctionType, property)) and type(attr).__flags__ & _HEAP_TYPE
            )
            if descriptor and (depth >= 2 or not _runs_no_python(type(attr), depth + 1)):
                return False
    return True


def _trusted_class(cls: type) -> bool:
    """A library's class (Triton's, Inductor's), or PyTorch's own (a tensor, a ``Parameter``: what
    their methods compute is PyTorch's, which the op recorder sees inside launches too)."""
    if _library_class(cls):
        return True
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    return (
        isinstance(getattr(module, "__file__", None), str)
        and module.__file__.startswith(os.path.dirname(torch.__file__) + os.sep)
        and vars(module).get(getattr(cls, "__qualname__", "")) is cls
    )


_HEAP_TYPE = 1 << 9
"""``Py_TPFLAGS_HEAPTYPE``: a class made at run time (by a ``class`` statement), not a C type."""


def _constructs_no_code(cls: type) -> bool:
    """Whether calling a class runs no Python but a library's: a class is callable, and calling it
    runs its metaclass's ``__call__``, its ``__new__`` and its ``__init__`` (red team 8 #4: a class of
    the candidate's passed as a constexpr, whose ``__new__`` ran NumPy inside an own launch). Looked
    up statically (``inspect.getattr_static``), so that no candidate code runs while it is judged."""
    if _library_class(cls):
        return True
    for owner, name in ((type(cls), "__call__"), (cls, "__new__"), (cls, "__init__")):
        try:
            found = inspect.getattr_static(owner, name, None)
        except Exception:  # a hostile metaclass: not judged harmless
            return False
        if isinstance(found, (staticmethod, classmethod)):
            found = found.__func__
        if not (found is None or _type_slot(found) or frontend.library_function(found)):
            return False
    return True


def _type_slot(found) -> bool:
    """Whether a class attribute is a C type's own slot (``object.__init__``, ``type.__call__``,
    ``int.__new__``), not a module's builtin a class can name (NumPy's, say)."""
    if isinstance(found, types.WrapperDescriptorType):
        return True
    return isinstance(found, types.BuiltinFunctionType) and isinstance(getattr(found, "__self__", None), type)


def _library_class(cls: type) -> bool:
    """Whether ``cls`` is a class of a library's (Triton's JIT function classes, ``ConstexprFunction``,
    Inductor's launchers): defined by a module of Triton's package or Inductor's runtime, as that
    module holds it."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    return (
        isinstance(getattr(module, "__file__", None), str)
        and module.__file__.startswith(_library_dirs())
        and vars(module).get(getattr(cls, "__qualname__", "")) is cls
    )


@functools.cache
def _jit_classes() -> tuple[type, ...]:
    from triton.runtime import jit

    classes = [
        getattr(jit, name) for name in ("JITCallable", "JITFunction") if isinstance(getattr(jit, name, None), type)
    ]
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    return tuple(classes)


def _callee(value) -> tuple[types.FunctionType, str | None] | None:
    """A function a kernel may call (a Python function, under the interpreter; a JIT function), else None."""
    if isinstance(value, types.FunctionType):
        return value, None
    if isinstance(value, _jit_classes()):
        return _function(value)
    return None


_library_dirs = frontend.library_dirs


@functools.lru_cache(maxsize=4096)
def _code_chains(code: types.CodeType) -> frozenset[tuple[str, ...]]:
    """The global, closure and attribute chains (``tl.sum`` -> ``("tl", "sum")``) a code object and the
    code nested in it read, from their bytecode (what the interpreter runs)."""
    import dis

    chains, free = set(), set(code.co_freevars)
    for nested in _code_objects(code):
        chain = None
        for ins in dis.get_instructions(nested):
            if chain and ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                chain.append(ins.argval)
                continue
            if chain:
                chains.add(tuple(chain))
            chain = None
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") or (
                ins.opname == "LOAD_DEREF" and nested is code and ins.argval in free
            ):
                chain = [ins.argval]
        if chain:
            chains.add(tuple(chain))
    return frozenset(chains)


@functools.lru_cache(maxsize=4096)
def _code_strings(code: types.CodeType) -> frozenset[str]:
    """The string constants of a code object and the code nested in it (``getattr(tl, "name")``)."""
    return frozenset(c for nested in _code_objects(code) for c in nested.co_consts if isinstance(c, str))


@functools.lru_cache(maxsize=4096)
def _source_strings(source: str) -> frozenset[str]:
    """The string literals of a kernel's source (a GPU resolves ``getattr(tl, "name")`` when it compiles)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))


@functools.lru_cache(maxsize=4096)
def _source_chains(source: str) -> frozenset[tuple[str, ...]]:
    """The names and attribute chains (``tl.sum`` -> ``("tl", "sum")``) a kernel's source reads, less
    its parameters and the names it assigns (Triton's compiler resolves the rest in the function's
    globals and closure)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    local = {
        a.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.arguments)
        for a in (*node.posonlyargs, *node.args, *node.kwonlyargs)
    }
    local |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    chains = set()
    for node in ast.walk(tree):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id not in local:
            chains.add((node.id, *reversed(parts)))
    return frozenset(chains)


NAMED_LOOKUPS = ("getattr", "hasattr")
"""Builtins a kernel of the candidate's may call only as ``getattr(obj, "name")``, the name a string
literal: the ownership rule resolves that attribute (``_source_strings``); a name that is data (an
item of a constexpr list, a constexpr argument) it cannot (red team 8 #5)."""
REFLECTIVE_BUILTINS = (
    "eval",
    "exec",
    "compile",
    "__import__",
    "vars",
    "globals",
    "locals",
    "dir",
    "breakpoint",
    "open",
    "input",
    "setattr",
    "delattr",
)
"""Builtins a kernel of the candidate's may not reach at all: they run code held as data, read a
namespace as a dict, or change or act on the host; none is device code."""
_DATA_TYPES = (int, float, complex, bool, str, bytes, tuple, list, dict, set, frozenset)
"""Types whose C methods (a constexpr tuple's ``index``) a kernel may reach: they work on the value."""
ITEMS_CHECKED = 4096
"""The most values (items of the data a kernel of the candidate's reaches, and attributes its source
names on them) looked at for one function; a function reaching more is not judged its own (an honest
kernel's constexpr data is a few numbers)."""


def _describe(value) -> str:
    """What a value is, for feedback, read statically (no attribute hook of the candidate's runs)."""
    for _ in range(8):
        if type(value).__name__ != "constexpr" or not _library_class(type(value)):
            break
        value = getattr(value, "value", None)
    if issubclass(type(value), type):
        return f"{type.__dict__['__qualname__'].__get__(value)} (a class whose construction runs Python)"
    if type(value) in (types.FunctionType, types.BuiltinFunctionType):
        return f"{value.__qualname__} (a function that is not device code)"
    kind = type.__dict__["__qualname__"].__get__(type(value))
    if callable(value):
        return f"a callable {kind} (not device code)"
    if not _plain_layout(value):
        return f"an object of {kind} (a C type that hands operations on to what it holds)"
    return f"an object of {kind} (a class that runs Python)"


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _spelled(node) -> str | None:
    """The name an expression ends in (``getattr``, ``tl.core.builtins.getattr``), else None."""
    import ast

    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


@functools.lru_cache(maxsize=4096)
def _source_reflection(source: str) -> str | None:
    """Why a kernel source of the candidate's reaches what the ownership rule cannot resolve from it,
    else None: ``getattr``/``hasattr`` other than called with a string literal for the name
    (``getattr(np, HELD[2])``: the name is data), or a dunder name or attribute (``np.__dict__[...]``,
    ``().__class__``: namespaces and the object graph, walked by data). Triton's own code generator
    evaluates such a call while it compiles, and the interpreter at every launch, as host code."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "has a source that does not parse"
    nodes = list(ast.walk(tree))
    called = set()
    for node in nodes:
        if isinstance(node, ast.Call) and _spelled(node.func) in NAMED_LOOKUPS:
            args, name = node.args, node.args[1] if len(node.args) > 1 else None
            literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if not (
                literal and len(args) <= 3 and not node.keywords and not any(isinstance(a, ast.Starred) for a in args)
            ):
                return f"calls {_spelled(node.func)} with a name that is not a string literal"
            if _dunder(name.value):
                return f"calls {_spelled(node.func)} with the name {name.value}"
            called.add(id(node.func))
    for node in nodes:
        spelled = _spelled(node)
        if (
            spelled in NAMED_LOOKUPS
            and id(node) not in called
            and not isinstance(getattr(node, "ctx", None), ast.Store)
        ):
            return f"uses {spelled} other than called with a string literal"
        if isinstance(node, ast.Attribute) and _dunder(node.attr):
            return f"reads the attribute {node.attr}"
        if isinstance(node, ast.Name) and _dunder(node.id):
            return f"reads the name {node.id}"
    return None


@functools.lru_cache(maxsize=4096)
def _source_attributes(source: str) -> frozenset[str]:
    """The attribute names a kernel's source reads anywhere (``HELD[0].copyto`` -> ``copyto``)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))


@functools.cache
def _reflective() -> dict[int, str]:
    """id -> name of what a kernel of the candidate's may not reach: ``REFLECTIVE_BUILTINS``, and the
    library's routes to the same (an attribute or method named by data, a function made from a code
    object, every module by name)."""
    import builtins
    import operator

    found = {name: getattr(builtins, name) for name in REFLECTIVE_BUILTINS}
    found |= {"operator.attrgetter": operator.attrgetter, "operator.methodcaller": operator.methodcaller}
    found |= {"types.FunctionType": types.FunctionType, "types.MethodType": types.MethodType}
    found |= {"types.CodeType": types.CodeType, "sys.modules": sys.modules, "the builtins' namespace": vars(builtins)}
    return {id(value): name for name, value in found.items()}


@functools.cache
def _lookups() -> dict[int, str]:
    """id -> name of ``NAMED_LOOKUPS``."""
    import builtins

    return {id(getattr(builtins, name)): name for name in NAMED_LOOKUPS}


def _builtin_passable(value) -> bool:
    """Whether a C function a kernel of the candidate's reaches is harmless: a builtin (``min``,
    ``len``, ``getattr``, whose names ``_source_reflection`` checks) but the reflective ones, ``math``'s,
    or a method of a plain value (a constexpr tuple's ``index``). Any other module's C function
    (NumPy's ``copyto`` under another name, ``gc``'s, ``sys._getframe``) is host code."""
    import builtins
    import math

    kind = type(value)  # never ``__class__``, which an object of the candidate's may fake
    if kind is types.BuiltinFunctionType:
        owner = value.__self__
        if owner is builtins:
            return id(value) not in _reflective()
        if owner is math:
            return True
        return issubclass(type(owner), _DATA_TYPES) or any(owner is t for t in _DATA_TYPES)
    if kind in (types.MethodDescriptorType, types.ClassMethodDescriptorType):
        return any(value.__objclass__ is t for t in _DATA_TYPES)
    return False


def _items(value) -> list:
    """The items of a container a kernel may index or iterate (a ``tl.constexpr`` of a list, a tuple,
    a dict's keys and values), read through the C types' own methods (a subclass's ``__iter__`` is
    not called); [] for anything else."""
    cls = type(value)  # never ``__class__``, which an object of the candidate's may fake
    if cls.__name__ == "constexpr" and _library_class(cls):
        return [getattr(value, "value", None)]
    for kind in (list, tuple, set, frozenset):
        if issubclass(cls, kind):
            return list(kind.__iter__(value))
    if issubclass(cls, dict):
        return [part for pair in dict.items(value) for part in pair]
    return []


def _attribute(value, name: str):
    """An attribute as stored on a module, or on an object, its class and their bases
    (``inspect.getattr_static``: no descriptor, property or ``__getattr__`` runs), static and class
    methods unwrapped; None where there is none. Where the attribute would be made at run time, by a
    module's ``__getattr__`` (PEP 562) that is not its own file's or by an object's ``__getattr__``
    or ``__getattribute__``, that function instead: it is what a kernel reading the name runs (red
    team 7 #8: a module of the candidate's whose attribute, after the frontend's check, came from a
    ``__getattr__`` handing out host code)."""
    if type(value) is types.ModuleType:
        namespace = value.__dict__
        if name in namespace:
            return namespace[name]
        hook = namespace.get("__getattr__")
        if isinstance(hook, types.FunctionType) and hook.__code__.co_filename != namespace.get("__file__"):
            return hook
        return None
    if value is None or isinstance(value, (int, float, str, bytes, torch.Tensor, types.BuiltinFunctionType)):
        return None
    try:
        found = inspect.getattr_static(value, name, None)
        mro = type(value).__mro__
    except Exception:  # a hostile object's metaclass: nothing found
        return None
    hooks = [vars(k).get("__getattribute__") for k in mro if k is not object] + [
        None if found is not None else next((vars(k)["__getattr__"] for k in mro if "__getattr__" in vars(k)), None)
    ]
    hook = next((h for h in hooks if isinstance(h, types.FunctionType)), None)
    if hook is not None:
        return hook
    return found.__func__ if isinstance(found, (staticmethod, classmethod)) else found


def _referenced(fn: types.FunctionType, source: str | None, own: bool = False) -> tuple[list, str | None]:
    """What a function's names reach: each global, closure or builtin name and attribute chain its code
    reads (the interpreter runs the code) or its kernel source does (a GPU compiles the source), each
    attribute its string constants name on those, and its parameters' defaults (red team 6 #5). For
    a function of the candidate's (``own``) also what it reaches through data: the items of the
    containers it reaches (``HELD[4]``) and the attributes its source names on any of them
    (``HELD[3].f``), to ``ITEMS_CHECKED`` values. With it, why the function reaches what the rule
    cannot judge (``getattr`` under another name, a reflective builtin, ``sys.modules``), else None."""
    scopes = []
    if fn.__closure__:
        with contextlib.suppress(ValueError):  # an empty cell
            scopes.append({n: c.cell_contents for n, c in zip(fn.__code__.co_freevars, fn.__closure__, strict=False)})
    scopes.append(fn.__globals__)
    builtins = fn.__globals__.get("__builtins__")
    scopes.append(builtins if isinstance(builtins, dict) else getattr(builtins, "__dict__", {}))

    def lookup(name: str):
        return next((scope[name] for scope in scopes if name in scope), None)

    found, renamed = [], []
    for chain in _code_chains(fn.__code__) | (_source_chains(source) if source else frozenset()):
        value = lookup(chain[0])
        found.append(value)
        renamed.append((value, chain[0]))
        for attribute in chain[1:]:
            value = _attribute(value, attribute)
            found.append(value)
            renamed.append((value, attribute))
    # an attribute named by a string (``getattr(tl, "name")``), and the defaults of the parameters
    strings = _code_strings(fn.__code__) | (_source_strings(source) if source else frozenset())
    by_string = [_attribute(value, string) for value in found for string in strings]
    defaults = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    found += by_string + defaults
    found = [v for v in found if v is not None]
    if not own:
        return found, None
    lookups = _lookups()
    for value, name in renamed:
        if id(value) in lookups and lookups[id(value)] != name:
            return found, f"reaches {lookups[id(value)]} under another name ({name})"
    names = strings | frozenset(fn.__code__.co_names) | (_source_attributes(source) if source else frozenset())
    unnamed = "reaches {} as a value (a string's attribute, an item of data), not by its name"
    held = next((lookups[id(v)] for v in by_string + defaults if id(v) in lookups), None)
    if held is not None:  # what reaches getattr this way calls it where no name shows
        return found, unnamed.format(held)
    reflective = _reflective()
    hit = next((reflective[id(v)] for v in found if id(v) in reflective), None)
    seen, todo = {id(v) for v in found}, list(found) if hit is None else []
    while todo:
        value = todo.pop()
        items = _items(value)
        # a library's object (a JIT function, a constexpr) or a function is judged by what its own
        # chains reach: its attributes (a JIT function's ``fn``) are not what a kernel's names read
        named = not (isinstance(value, (types.FunctionType, *_jit_classes())) or _library_class(type(value)))
        for new in items + ([_attribute(value, name) for name in names] if named else []):
            if id(new) in lookups:
                return found, unnamed.format(lookups[id(new)])
            if id(new) in reflective:  # found before it is looked into (``sys.modules``: every module)
                return found, f"reaches {reflective[id(new)]}"
            if new is None or id(new) in seen:
                continue
            if len(seen) >= ITEMS_CHECKED:
                return found, f"reaches more than {ITEMS_CHECKED} values through its data"
            seen.add(id(new))
            found.append(new)
            todo.append(new)
    return found, None if hit is None else f"reaches {hit}"


class LaunchMonitor:
    """Counts (and optionally blocks) launches of the candidate's own kernels while active, and counts
    launches of every other Triton kernel (``foreign``): a kernel compiled from a function that is not
    in the candidate's file (Inductor's, a library's) does work that is not the candidate's, like a
    PyTorch op. Both use one rule of identity, ``_own``, which coverage attribution uses too
    (profiling.py: a GPU record is the candidate's only inside one of its own launches)."""

    def __init__(
        self,
        candidate_path: str,
        recorder: OpRecorder | None = None,
        block: bool = False,
        annotate: str = "",
        skip: Callable[[tuple, dict], None] | None = None,
        text: CandidateText | None = None,
        host: HostTensors | None = None,
        handed: Callable[[tuple, dict], Callable[[list], None] | None] | None = None,
    ):
        self.candidate_path, self.recorder, self.block, self.annotate = candidate_path, recorder, block, annotate
        self.handed = handed
        """If set, called with each own launch's arguments before it runs (a trial's ``FirstHanded``);
        what it returns, if anything, is called once the launch returned or failed (on a GPU: queued), with
        the accesses its grids made where the interpreter ran them (``races.GridAccesses``; none on a GPU)."""
        self.grids: list[races.GridAccesses] = []
        """The accesses of each grid the launch running now ran (under the interpreter)."""
        self.text = text
        """Where given, an own kernel's code and source must come from the candidate's text too."""
        self.host = host
        """Where given (the CPU), a launch with a tensor a GPU would hold in host memory fails as there."""
        self.skip = skip
        """If set, called with each own launch's arguments instead of running it (the launch returns None)."""
        self.launches = 0
        self.refusal: str | None = None
        """Why the last kernel judged was not the candidate's own where it is the text's but reaches
        what the rule cannot judge, or host code (``HOST_CODE``), else None."""
        self.foreign: collections.Counter[str] = collections.Counter()
        """Launches of kernels not of the candidate's file, as ``<function> (Triton kernel not of the
        solution)``."""
        self.off_stream = 0
        self.race: Exception | None = None
        """The first data race (races.py), or other error, a grid run under this monitor raised. It holds
        whether or not forward caught it: on a GPU a race raises nothing, and the racy kernel's answer is
        what forward gets (a ``try`` around it, with a second kernel in its ``except``, was ``ok`` on the
        CPU: red team 11 #1); a kernel that fails on a GPU (an assertion, an address out of bounds) ends
        its process's CUDA context, so nothing forward does after it counts, and an error caught by
        forward is a channel out of the kernel, a bit per launch at least (red team 25 #5, #6). The
        runner fails the call with it once forward returned."""
        self.stream = current_stream_handle()
        self._saved: list[tuple[type, str, object]] = []
        """(class, attribute, what it held) for each launch point wrapped while active."""
        self.tampered: list[str] = []
        """Parts of Triton's interpreter or NumPy found replaced while active (taint.interpreter_changes):
        before its wrappers went in, at each grid's start and end, and before they came out."""
        self._interpreter: dict[tuple[str, str], int] = {}
        """The interpreter as this monitor left it once its wrappers were in."""
        self._launching: object | None = None
        """The own launch in progress (its launcher may run the kernel's own ``run`` inside it)."""
        self._grid_due: tuple[object, object] | None = None
        """(the interpreted kernel whose ``run`` is in progress and has not run its grid yet, the
        rewrite of the function it was launched with): the next ``GridExecutor`` call of that kernel's
        rewritten function is that launch's own, and runs that rewrite."""

    def _own(self, kernel) -> bool:
        """Whether ``kernel`` (a JITFunction, or a launcher holding one, as Inductor's CachingAutotuner
        does) was compiled from a function defined in the candidate's file, and every function it calls
        is the candidate's too or Triton's (red team 6 #3: a kernel of the text that only calls another,
        rebound among its globals to the bundled solution's, did the solution's work as its own)."""
        self.refusal = None
        found = _function(kernel)
        if found is None or not _hooks_passable(kernel):
            return False
        return self._from_text(*found) and self._calls_only_own(*found, set())

    def _from_text(self, fn: types.FunctionType, source: str | None) -> bool:
        code = fn.__code__
        if code.co_filename != self.candidate_path:
            return False
        return self.text is None or self.text.owns(code, source)

    def _calls_only_own(self, fn: types.FunctionType, source: str | None, seen: set, library: bool = False) -> bool:
        """Whether every function ``fn`` reaches through its globals, closure and builtins (by the names
        its code reads and the names and attribute chains of its kernel source, what Triton's compiler
        resolves) is the candidate's own or a library's (Triton's, Inductor's runtime helpers), and
        calls only such functions in turn. In a ``library`` function only JIT functions are looked at
        (what a GPU would inline into the candidate's kernel): its Python helpers may be anyone's."""
        found, problem = _referenced(fn, source, own=not library)
        if not library:
            problem = problem or (_source_reflection(source) if source else None)
            if problem is not None:
                self.refusal = f"{fn.__name__} {problem}"
                return False
        for value in found:
            if not self._callable_own(value, seen, library):
                if not library and self.refusal is None and not isinstance(value, _jit_classes()):
                    self.refusal = f"{fn.__name__} reaches {_describe(value)}"
                return False
        return True

    def _callable_own(self, value, seen: set, jit_only: bool = False) -> bool:
        """Whether ``value``, where it is a function a kernel may call (a JIT function only, with
        ``jit_only``), is the candidate's own or a library's, and calls only such functions (anything
        else: True)."""
        if (id(value), jit_only) in seen:
            return True
        seen.add((id(value), jit_only))
        if isinstance(value, _jit_classes()) and not _library_class(type(value)):
            return False  # a subclass of Triton's: its methods, not its source, decide what runs
        found = _callee(value)
        if found is None:  # no function: harmless unless it is an object of the candidate's a kernel can call
            return jit_only or _builtin_passable(value) or _passable(value)
        if jit_only and isinstance(value, types.FunctionType):
            return True
        callee, source = found
        library = frontend.library_function(callee)
        if isinstance(value, types.FunctionType):
            # a library's own Python (Triton's builtins, the interpreter's stand-ins); any other plain
            # function a kernel reaches is host code: a GPU's compiler refuses it, while the interpreter
            # runs it (red team 7 #6: a global rebound to one after the frontend's check)
            return library
        if not library and not self._from_text(callee, source):
            return False
        return self._calls_only_own(callee, source, seen, library)

    def _arguments_own(self, args: tuple, kwargs: dict) -> bool:
        """Whether every function passed to a launch (Triton inlines a JIT function given as a
        ``tl.constexpr`` argument where the kernel calls it; red team 6 #4) is own or a library's, and
        nothing else passed is callable: a plain Python function or an object with ``__call__`` that a
        kernel calls is host code (Triton's code generator calls it while it compiles, the interpreter
        at every launch: NumPy inside an own launch, red team 7 #3)."""
        todo, seen, looked = [*args, *kwargs.values()], set(), 0
        while todo:
            value = todo.pop()
            looked += 1
            if looked > ITEMS_CHECKED:
                self.refusal = f"its launch passes more than {ITEMS_CHECKED} values"
                return False
            if isinstance(value, (tuple, list, dict, set, frozenset)) and _plain_layout(value):
                todo += _items(value)  # a kernel indexes what it is given
                continue
            if not (_passable(value) and self._callable_own(value, seen)):
                self.refusal = self.refusal or f"its launch passes {_describe(value)}"
                return False
        return True

    def __enter__(self) -> LaunchMonitor:
        points = [(cls, name, self._wrap) for cls, name in _launch_points()]
        executor = triton_compat.executor_call_point() if INTERPRETED else None
        if executor is not None:
            points.append((*executor, self._wrap_executor))
            points += races.builder_points()  # every grid's memory accesses, for its race check
            points += tf32.builder_points()  # tl.dot of float32 in TF32 where a GPU would use it
            points += placement.builder_points()  # addresses cast as data_ptr gives them (red team 15 #2)
        self._check_interpreter(None)  # replaced since the candidate was imported (its import, constructor)
        for cls, name, wrap in points:
            original = cls.__dict__[name]
            self._saved.append((cls, name, original))
            setattr(cls, name, wrap(original))
        if INTERPRETED and frontend.pinned():  # a JIT function called from a kernel runs its checked source
            from triton.runtime.interpreter import InterpretedFunction

            self._saved.append((InterpretedFunction, "__call__", InterpretedFunction.__dict__["__call__"]))
            InterpretedFunction.__call__ = _interpreted_call
        if INTERPRETED:
            self._interpreter = taint.interpreter_ids()
        return self

    def _check_interpreter(self, expected: dict[tuple[str, str], int] | None) -> None:
        """Record what of the interpreter differs from ``expected`` (None: the runner's baseline). Only
        under the interpreter: a GPU's compiled kernels call none of it."""
        if INTERPRETED:
            changed = [name for name in taint.interpreter_changes(expected) if name not in self.tampered]
            self.tampered += changed

    def __exit__(self, *exc) -> None:
        if self._interpreter:  # a wrapped method replaced during forward is put back below: seen first
            self._check_interpreter(self._interpreter)
        for cls, name, original in reversed(self._saved):
            setattr(cls, name, original)
        self._saved.clear()

    def _run(self, original, kernel, args: tuple, kwargs: dict, fn=None, pinned: bool = False):
        """A launch's own ``run``, whose grid (under the interpreter) is this launch's and runs the
        rewrite of ``fn``, the function the launch was checked with; ``pinned`` (an own launch where
        ``frontend.pinned()``): the rewrite of the source the frontend checked, with the globals it
        checked (``frontend.run``)."""
        due = self._grid_due
        self._grid_due = None
        try:
            if pinned:
                self._grid_due = (kernel, frontend.rewritten(kernel))
                return frontend.run(kernel, args, kwargs)
            if fn is not None and triton_compat.interpreted(kernel):
                self._grid_due = (kernel, triton_compat.rewrite(fn, triton_compat.interpreted_options(kernel)))
            return original(kernel, *args, **kwargs)
        finally:
            self._grid_due = due

    def _wrap_executor(self, original):
        """``GridExecutor.__call__`` under the interpreter: the grid that a wrapped ``run`` is due to
        run is part of its launch; any other (an executor called directly) is a launch of a kernel that
        is not the candidate's own (``BYPASS``), its function's name among the foreign launches."""
        monitor = self

        def call(executor, *args, **kwargs):
            due = monitor._grid_due
            running = getattr(executor, "fn", None)
            name = kernel_name(getattr(executor, "fn", executor))
            if due is not None and (running is due[1] or running is triton_compat.rewritten(due[0])):
                monitor._grid_due = None
                if executor.fn is not due[1]:  # the checked function's code, whatever the interpreter's cache holds
                    triton_compat.retarget(executor, due[1])
            else:
                monitor.foreign[f"{name} {BYPASS}"] += 1
            monitor._check_interpreter(monitor._interpreter)  # host code in this grid's operations
            try:
                with (
                    races.recorded(name) as accesses,  # programs that share memory without atomics: wrong on a GPU
                    contextlib.redirect_stdout(STANDARD_STREAMS[0]),  # what a kernel prints: not forward's to read
                    contextlib.redirect_stderr(STANDARD_STREAMS[1]),
                    no_host_hooks(),  # nothing of forward's runs inside the kernel, as on a GPU
                ):
                    monitor.grids.append(accesses)
                    return original(executor, *args, **kwargs)
            except races.DataRace as race:
                monitor.race = monitor.race or race
                forget_frames(race)
                raise
            except BaseException as error:
                forget_frames(error, valueless=True)
                if isinstance(error, Exception):
                    monitor.race = monitor.race or error
                raise
            finally:
                monitor._check_interpreter(monitor._interpreter)

        return call

    def _wrap(self, original):
        monitor = self

        def run(kernel, *args, **kwargs):
            outer = monitor._launching
            if outer is not None and getattr(outer, "fn", None) is kernel:
                return monitor._run(original, kernel, args, kwargs)  # Inductor's launcher running its own kernel
            hollow = monitor.skip is not None  # the grid runs after the skipped launch's poison
            if not hollow:
                kwargs = _grid_resolved(kernel, args, kwargs)  # forward's host code, before any check
            fn = getattr(kernel, "fn", None) if INTERPRETED else None
            if INTERPRETED:  # Triton's frontend first, as a GPU's first launch compiles (frontend.py)
                frontend.check(kernel, args, kwargs)
            if monitor.host is not None:  # a GPU's launcher refuses a tensor in host memory (placement.py)
                monitor.host.refuse(kernel_name(kernel), args, kwargs)
            passed = {k: v for k, v in kwargs.items() if k not in LAUNCH_KEYWORDS}
            own = monitor._own(kernel) and monitor._arguments_own(args, passed)
            if fn is not None and getattr(kernel, "fn", None) is not fn:  # code run by the checks changed it
                raise RuntimeError("tritongym: the kernel's function was replaced during its launch")
            if not own:
                tag = FOREIGN if monitor.refusal is None else HOST_CODE.format(monitor.refusal)
                monitor.foreign[f"{kernel_name(kernel)} {tag}"] += 1
                monitor._launching = kernel  # its launcher's own kernel run inside it is this launch
                if hollow:
                    kwargs = _grid_resolved(kernel, args, kwargs)
                try:
                    return monitor._run(original, kernel, args, kwargs, fn)
                finally:
                    monitor._launching = outer
            monitor.launches += 1
            if monitor.block:
                raise LaunchBlocked("tritongym blocked this launch to check for fallbacks")
            after = monitor.handed(args, kwargs) if monitor.handed is not None else None
            grids, monitor.grids = monitor.grids, []
            try:
                if monitor.skip is not None:
                    monitor.skip(args, kwargs)
                    _grid_resolved(kernel, args, kwargs)  # host code: what it writes must show in the output
                    return None
                if monitor.stream is not None and current_stream_handle() != monitor.stream:
                    monitor.off_stream += 1
                monitor._launching = kernel
                pinned = fn is not None and triton_compat.interpreted(kernel) and frontend.pinned()
                if monitor.annotate:
                    with record_function(monitor.annotate):
                        return monitor._run(original, kernel, args, kwargs, fn, pinned)
                return monitor._run(original, kernel, args, kwargs, fn, pinned)
            finally:
                monitor._launching = outer
                ran, monitor.grids = monitor.grids, grids
                if callable(after):
                    after(ran)

        return run


LAUNCH_KEYWORDS = ("grid", "warmup")
"""Keywords of a JIT function's ``run`` that are the launch's, not the kernel's arguments: the grid
(resolved on the host by ``_grid_resolved`` before the launch) and the compile-only flag."""


def _grid_resolved(kernel, args: tuple, kwargs: dict) -> dict:
    """A JIT function's launch keywords with its grid resolved on the host now, as a tuple of ints:
    a callable grid (``lambda meta: (triton.cdiv(n, meta["BLOCK"]),)``, a ``functools.partial``) is
    called with the launch's arguments by name, constexpr defaults included, as Triton calls it (and
    the launch's options, ``num_warps`` say, which some releases pass too).
    The grid is forward's host code, not the kernel's: resolved here it runs outside the own launch,
    before the checks of the launch (nothing it changes can follow them), and in the fallback
    check's blocked launches and the hollow forward's skipped ones too, there after the launch's
    buffers are poisoned, so that work done in it shows as work done without the kernels (a grid
    writing the answer with NumPy beside a kernel that does nothing). Each of its items is read
    through ``operator.index``: Triton indexes the grid inside the launch, where an object's
    ``__index__`` would be host code. A compile-only launch (``warmup``) and a launcher's run
    (Inductor's) are left as they are."""
    import operator

    if kwargs.get("warmup") or "grid" not in kwargs or not isinstance(kernel, _jit_classes()):
        return kwargs
    grid = kwargs["grid"]
    if callable(grid):
        fn = getattr(kernel, "fn", None)
        code = getattr(fn, "__code__", None)
        if not isinstance(fn, types.FunctionType) or code is None:
            return kwargs  # not a launch Triton could run either: its own error follows
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        defaults = fn.__defaults__ or ()
        meta = dict(zip(names[code.co_argcount - len(defaults) : code.co_argcount], defaults, strict=True))
        meta |= fn.__kwdefaults__ or {}
        meta |= dict(zip(names, args, strict=False))
        meta |= {k: v for k, v in kwargs.items() if k not in LAUNCH_KEYWORDS}  # options too (``num_warps``)
        grid = grid({name: meta.pop(name) for name in names if name in meta} | meta)
    return {**kwargs, "grid": tuple(operator.index(size) for size in grid)}


def _interpreted_call(kernel, *args, **kwargs):
    """A JIT function called from a kernel under the interpreter runs its checked source (frontend.call)."""
    return frontend.call(kernel, args, kwargs)


_thread_starts = [0]


def count_thread_starts() -> None:
    """Count every thread start from now on: each way the standard library starts a thread
    (``_thread.start_new_thread`` and, on newer Pythons, ``start_joinable_thread``) goes through the
    counter, under every name the threading module holds it by."""
    import _thread
    import threading

    for name in ("start_new_thread", "start_joinable_thread"):
        original = getattr(_thread, name, None)
        if original is None or getattr(original, "_tritongym_counted", False):
            continue

        def start(*args, _original=original, **kwargs):
            _thread_starts[0] += 1
            return _original(*args, **kwargs)

        start._tritongym_counted = True
        setattr(_thread, name, start)
        for alias in (f"_{name}", name):
            if getattr(threading, alias, None) is original:
                setattr(threading, alias, start)


def thread_starts() -> int:
    """Threads started since count_thread_starts()."""
    return _thread_starts[0]


def aliasing(output, inputs: list, module: torch.nn.Module) -> str | None:
    """Which input, parameter or buffer an output shares memory with, if any. Where several share
    one storage (views of one tensor: tied weights, a module's buffers), the one whose bytes the
    output overlaps is named (else the first). A GPU's inputs in the judge's shared slots each have a
    storage of their own (speed.own_storage)."""
    owners: dict[int, list[tuple[tuple[int, int], str]]] = {}
    named = [(t, f"input argument {i}") for i, t in enumerate(tensor_leaves(inputs))]
    named += [(t, f"{name!r} of the module") for name, t in [*module.named_parameters(), *module.named_buffers()]]
    for t, name in named:
        owners.setdefault(t.untyped_storage().data_ptr(), []).append((_byte_range(t), name))
    for t in tensor_leaves(output):
        sharing = owners.get(t.untyped_storage().data_ptr())
        if sharing is None or not t.numel():
            continue
        start, end = _byte_range(t)
        overlapping = [name for (first, last), name in sharing if first < end and start < last]
        return (overlapping or [sharing[0][1]])[0]
    return None


def _byte_range(t: torch.Tensor) -> tuple[int, int]:
    """[first, last) addresses of the bytes a tensor covers (its data pointer to its furthest element)."""
    if not t.numel():
        return t.data_ptr(), t.data_ptr()
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride(), strict=True))
    return t.data_ptr(), t.data_ptr() + span * t.element_size()


POISON_BYTE = 0xFF
"""Free GPU memory is filled with this byte before each forward: NaN in every float format, -1 in
integers. An output element still holding it was never written."""
_memory_snapshot = torch.cuda.memory_snapshot
_mem_get_info = torch.cuda.mem_get_info


def poison_free_memory(device: torch.device, sizes: list[int]) -> None:
    """Fill the CUDA caching allocator's free blocks with POISON_BYTE, after making sure blocks of
    ``sizes`` bytes (the outputs' and inputs') are among them, so that an ``empty`` the candidate
    leaves partly unwritten shows the poison instead of stale data (a freed reference result, say).
    A block is primed only where the GPU keeps as much again free: on a GPU that a large problem
    fills, priming must not be what runs it out of memory (an output's block then comes unpoisoned
    from the driver: an element left unwritten there is still compared with the reference, and is
    reported as a mismatch rather than as uninitialized)."""
    primed = []
    for size in sizes:
        for _ in range(2):
            free, _ = _mem_get_info(device)
            if free < 2 * size:
                break
            primed.append(torch.empty(size, dtype=torch.uint8, device=device))
    del primed
    index = device.index if device.index is not None else torch.cuda.current_device()
    pieces = []
    for segment in _memory_snapshot():
        if segment["device"] != index:
            continue
        small = segment.get("segment_type") == "small"
        for block in segment["blocks"]:
            if block["state"] == "inactive":
                pieces += _pieces(block["size"], small)
    held = [torch.empty(size, dtype=torch.uint8, device=device) for size in pieces]
    for tensor in held:
        tensor.fill_(POISON_BYTE)
    del held


SMALL_ALLOCATION = 1 << 20
"""The caching allocator serves requests up to this size from its small pool (2 MiB segments) and
larger ones from its large pool: a free block of the small pool is refilled only by small requests."""


def _pieces(size: int, small: bool) -> list[int]:
    """Request sizes that take a free block of ``size`` bytes back from the pool it belongs to."""
    if not small:
        return [size]
    return [min(SMALL_ALLOCATION, size - start) for start in range(0, size, SMALL_ALLOCATION)]


def unwritten_elements(got: torch.Tensor, expected: torch.Tensor) -> int:
    """Elements of ``got`` that still hold the poison where the expected value is something else."""
    if got.shape != expected.shape or got.dtype != expected.dtype or got.dtype == torch.bool or not got.numel():
        return 0
    size = got.element_size()

    def poisoned(t: torch.Tensor) -> torch.Tensor:
        return t.contiguous().reshape(-1).view(torch.uint8).reshape(-1, size).eq(POISON_BYTE).all(dim=1)

    return int((poisoned(got) & ~poisoned(expected.to(got.device))).sum())
