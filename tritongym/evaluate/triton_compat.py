"""What the guards need from Triton's interpreter that differs between the releases tritongym supports
(3.4 to 3.9), in one place: where an interpreted kernel's launches can be seen and what its grid
runs, the options a kernel was made with, and which objects the interpreter's patch of
``triton.language`` changes.

Launches. Triton 3.6 and later launch every interpreted kernel through the class attribute
``InterpretedFunction.run`` (``kernel[grid](...)`` is ``KernelInterface.__getitem__`` calling it; an
autotuner calls it too), which runs the grid in a ``GridExecutor``. Triton 3.4 and 3.5 have no class
attribute ``run``: ``__init__`` gives each instance a ``run`` closure of its own, and ``__getitem__``
returns a ``GridExecutor`` directly, so no class attribute sees a launch. There, ``interpreter_run_point``
gives the class the later shape once per process: a class-level launch function (``RUN``, what the
launch monitor wraps), reached through a data descriptor named ``run`` (which takes precedence over the
instances' own closures, those of kernels made before it too, and ignores ``__init__``'s assignment),
and a ``__getitem__`` that calls ``run`` with the grid, as later releases do. Under every release a
``GridExecutor`` can also be made and called directly, bypassing ``run``: ``executor_call_point`` is
``GridExecutor.__call__``, where the launch monitor sees each grid that runs. The grid a checked
launch runs is the rewrite of the checked function that ``rewrite`` made and keeps (every release's
interpreter runs whatever its class-level cache, writable by any code in the process, maps the
kernel's function to), put into the executor by ``retarget``, which knows 3.6's extra argument.

Language patches. Triton 3.6 and later record their replacements of ``triton.language``'s attributes
in a ``_LangPatchScope`` that can be undone (and that lists what it changed), and undo them when a
grid ends; 3.4 and 3.5 replace them for good at each launch, so a runner's baseline (taint.py) would
find the language changed after every launch. The reshaped 3.4/3.5 interpreter puts the language back
when the outermost grid, or device function called on the host, returns. ``language_patch_objects``
asks the interpreter only where its patch can be undone, and otherwise names the objects that 3.4/3.5
patch (``triton.language``, its ``core``, ``math``, ``tensor``, ``dtype`` and ``tensor_descriptor_base``).

Options. Triton 3.4's ``InterpretedFunction`` keeps the options it was made with on its rewriter,
later releases in ``kwargs`` (``interpreted_options``).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import types

RUN = "_tritongym_run"
"""Where Triton 3.4/3.5's ``InterpretedFunction`` holds its class-level launch function once
``interpreter_run_point`` reshaped it (``run`` is then a descriptor that calls it)."""


class _ClassRun:
    """``InterpretedFunction.run`` on Triton 3.4/3.5: the class's launch function (``RUN``) bound to the
    instance. A data descriptor, so that the per-instance closure ``__init__`` assigns (ignored here) or
    one a kernel made earlier holds in its ``__dict__`` never shadows it."""

    def __get__(self, kernel, owner=None):
        if kernel is None:
            return self
        return types.MethodType(getattr(type(kernel), RUN), kernel)

    def __set__(self, kernel, value) -> None:
        pass  # the interpreter's own per-instance closure: the class's launch function replaces it


def _launch(kernel, *args, grid, warmup=False, **kwargs):
    """Triton 3.6's ``InterpretedFunction.run`` for 3.4/3.5: the grid in a ``GridExecutor`` of the
    rewritten function."""
    from triton.runtime.interpreter import GridExecutor

    if warmup:
        return None
    return GridExecutor(kernel.rewrite(), kernel.arg_names, grid)(*args, **kwargs)


def _getitem(kernel, grid):
    """``KernelInterface.__getitem__`` of later releases: a launcher through ``run``."""
    return lambda *args, **kwargs: kernel.run(*args, grid=grid, warmup=False, **kwargs)


def interpreter_run_point() -> tuple[type, str] | None:
    """The interpreter's class and the name of its class attribute that every launch of an interpreted
    kernel goes through (reshaping Triton 3.4/3.5's class first, once); None where this Triton has no
    interpreter."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return None
    state = InterpretedFunction.__dict__.get("run")
    if isinstance(state, _ClassRun):
        return InterpretedFunction, RUN
    if callable(state):  # Triton 3.6 and later
        return InterpretedFunction, "run"
    from triton.runtime.interpreter import GridExecutor

    setattr(InterpretedFunction, RUN, _launch)
    InterpretedFunction.run = _ClassRun()
    InterpretedFunction.__getitem__ = _getitem
    InterpretedFunction.__call__ = _restoring(InterpretedFunction.__dict__["__call__"])
    GridExecutor.__call__ = _restoring(GridExecutor.__dict__["__call__"])
    return InterpretedFunction, RUN


_patched_depth = [0]
"""How many of the interpreter's patching calls (a grid, a device function called) are in progress."""


def _restoring(original):
    """``original`` (Triton 3.4/3.5's ``GridExecutor.__call__`` or ``InterpretedFunction.__call__``,
    which patch ``triton.language`` and leave it so) with ``triton.language`` put back as it was when
    the outermost such call returns, as later releases' patch scopes do: the language a runner's
    baseline saw (taint.py) stays the language between launches."""

    def call(self, *args, **kwargs):
        if _patched_depth[0]:
            return original(self, *args, **kwargs)
        saved = [(obj, dict(vars(obj))) for obj in language_patch_objects()]
        _patched_depth[0] += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _patched_depth[0] -= 1
            restore_language(saved)

    call.__wrapped__ = original
    return call


def restore_language(saved: list[tuple[object, dict]]) -> None:
    """Put each object's attributes back to a snapshot of its ``vars`` (added ones removed)."""
    absent = object()
    for obj, before in saved:
        now = vars(obj)
        for name in now.keys() | before.keys():
            value, original = now.get(name, absent), before.get(name, absent)
            if value is original:
                continue
            if original is absent:
                delattr(obj, name)
            else:
                setattr(obj, name, original)


def executor_call_point() -> tuple[type, str] | None:
    """``GridExecutor.__call__``: where every release runs an interpreted kernel's grid (None where
    this Triton has no interpreter)."""
    if interpreter_run_point() is None:  # reshapes Triton 3.4/3.5's executor first
        return None
    from triton.runtime.interpreter import GridExecutor

    return GridExecutor, "__call__"


def interpreted(kernel) -> bool:
    """Whether ``kernel`` is an interpreted kernel (an ``InterpretedFunction``, a subclass's too)."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return False
    return isinstance(kernel, InterpretedFunction)


def rewritten(kernel):
    """The function whose grid Triton's interpreter runs for an interpreted kernel: the rewrite of its
    Python function that every release caches, by that function, in ``InterpretedFunction``'s own
    ``rewritten_fn`` (made at the kernel's first launch; a subclass's ``rewrite`` is not asked). None
    before that, or for anything else."""
    if not interpreted(kernel):
        return None
    from triton.runtime.interpreter import InterpretedFunction

    try:
        return InterpretedFunction.__dict__["rewritten_fn"].get(kernel.fn)
    except Exception:  # a kernel whose function is unhashable, a cache that is not Triton's
        return None


_rewrites: dict[int, tuple[object, object]] = {}
"""id(function) -> (the function, kept alive so that its id is not reused; its rewrite)."""


def rewrite(fn, options: dict):
    """The function Triton's interpreter runs for the grid of a kernel of Python function ``fn``: its
    rewriter's output (the same ``FunctionRewriter`` in every release), made here once per function and
    kept here. The interpreter's own cache (``rewritten_fn``) is a class attribute any code in the
    process can write: a kernel the frontend accepted could otherwise run any function as its grid."""
    from triton.runtime.interpreter import FunctionRewriter

    held = _rewrites.get(id(fn))
    if held is None or held[0] is not fn:
        held = _rewrites[id(fn)] = (fn, FunctionRewriter(fn, **options).rewrite_ast())
    return held[1]


def retarget(executor, fn) -> None:
    """Make a ``GridExecutor`` run ``fn`` (its constexpr parameters read from ``fn``'s annotations, as
    the executor's own ``__init__`` does), keeping its grid, argument names and, from Triton 3.6 on,
    its pre-run hooks."""
    from triton.runtime.interpreter import GridExecutor

    hooks = [executor.pre_run_hooks] if "pre_run_hooks" in vars(executor) else []
    GridExecutor.__init__(executor, fn, executor.arg_names, executor.grid, *hooks)


def interpreted_options(kernel) -> dict:
    """The keyword options (``do_not_specialize``, ``debug``...) an interpreted kernel was made with:
    its ``kwargs`` (3.5 and later), else its rewriter's (3.4)."""
    options = getattr(kernel, "kwargs", None)
    if not isinstance(options, dict):
        options = getattr(getattr(kernel, "rewriter", None), "kwargs", None)
    return dict(options) if isinstance(options, dict) else {}


def language_patch_objects() -> list:
    """The objects of ``triton.language`` whose attributes the interpreter replaces while a kernel runs."""
    import triton.language as tl

    objects = [tl, tl.core, tl.math, tl.core.tensor, tl.core.dtype]
    objects += [getattr(tl.core, name) for name in ("condition", "tensor_descriptor_base") if hasattr(tl.core, name)]
    with contextlib.suppress(Exception):  # no interpreter, or a patch that failed: the objects above
        from triton.runtime import interpreter

        if hasattr(interpreter, "_LangPatchScope"):  # 3.6 and later: a patch that lists and undoes itself

            def probe():
                pass

            scope = types.FunctionType(probe.__code__, {"tl": tl, "core": tl.core})
            patches = interpreter._patch_lang(scope)
            objects += [obj for obj, _, _ in patches._changes]
            patches.restore()
    unique = {id(obj): obj for obj in objects}
    return list(unique.values())


def definition_line(jit_fn) -> int:
    """The line of a JIT function's ``def`` in its file, where its ``src`` starts (Triton 3.8 and later
    keep it as ``def_file_line_number``; earlier releases only the first line of its decorators)."""
    line = getattr(jit_fn, "def_file_line_number", None)
    if isinstance(line, int):
        return line
    try:
        lines, start = inspect.getsourcelines(jit_fn.fn)
    except (OSError, TypeError):
        return jit_fn.fn.__code__.co_firstlineno
    return start + next((i for i, text in enumerate(lines) if text.strip().startswith("def ")), 0)


def _run_once(kernel_call, quantiles=None, **_):
    """An autotuner's benchmark under the interpreter: the config's launch runs once (one that fails to
    compile fails here, as it would on a GPU); no time is measured, so every config ties and the first
    is chosen at the first call."""
    kernel_call()
    return [0.0] * len(quantiles) if quantiles else 0.0


def _ran(timing) -> bool:
    """Whether a config's benchmark timing is one of a config that ran (a failed one's is infinite)."""
    values = timing if isinstance(timing, (list, tuple)) else [timing]
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def interpreter_autotuning() -> bool:
    """Let ``@triton.autotune`` choose among several configs under the interpreter with no GPU. Triton's
    ``Autotuner`` asks the GPU driver for its benchmark (``driver.active.get_benchmarker()``) as soon
    as more than one config remains, which fails with "0 active drivers" where there is none: an
    honest autotuned kernel could not run on the CPU. There, an autotuner given no benchmark of its
    own (``do_bench=``) gets ``_run_once``: at its first call for a key every config runs once and the
    first is chosen; at each later call the next config that ran is, in turn, with no benchmark run
    (as on a GPU, where only the chosen config runs once the key is tuned). A GPU picks the config it
    measures fastest, which the CPU cannot know: a kernel right under its first config only (a grid
    sized for one ``BLOCK`` of several) was ``ok`` on the CPU and wrong wherever a GPU chose another
    (red team 11 #3); now the trials see every config where they are at least as many.
    Returns whether it was installed: not where a driver is active or Triton's autotuner reads its
    benchmark another way. Installed once, in the zygote."""
    from triton.runtime import autotuner, driver

    try:  # a GPU's driver: its own benchmark (3.4's driver is made when an attribute is first read)
        driver.active.get_current_target  # noqa: B018
        return False
    except RuntimeError:
        pass
    cls = getattr(autotuner, "Autotuner", None)
    if not isinstance(cls, type) or "do_bench" not in cls.__dict__ or not callable(cls.__dict__.get("run")):
        return False
    if getattr(cls.run, "_tritongym_in_turn", False):
        return True

    def do_bench(tuner):
        own = tuner.__dict__.get("_do_bench")
        return own if own is not None else _run_once

    original_run = cls.run

    def run(tuner, *args, **kwargs):
        state = tuner.__dict__
        cache, ours = state.get("cache"), state.get("_do_bench") is None
        if not (ours and isinstance(cache, dict)):
            return original_run(tuner, *args, **kwargs)
        choices = state.setdefault("_tritongym_choices", {})
        turn = state["_tritongym_turn"] = state.get("_tritongym_turn", -1) + 1
        for key, ran in choices.items():  # tuned keys: the next config in turn, as if a GPU chose it
            if key in cache and ran:
                cache[key] = ran[turn % len(ran)]
        tuned = set(cache)
        try:
            return original_run(tuner, *args, **kwargs)
        finally:
            timings = state.get("configs_timings")
            for key in set(cache) - tuned:
                ran = [c for c, t in timings.items() if _ran(t)] if isinstance(timings, dict) else []
                choices[key] = ran or [cache[key]]

    run._tritongym_in_turn = True
    cls.do_bench = property(do_bench)
    cls.run = run
    return True


class _InterpreterDriver:
    """The driver Triton's interpreter has none of, as far as forward's code asks it which device is its
    own (``get_active_torch_device``): the CPU judge's device memory. Anything else raises what Triton
    raises with no driver ("0 active drivers"), as before."""

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def __getattr__(self, name: str):
        raise RuntimeError("0 active drivers ([]). There should only be one. (tritongym: Triton's interpreter, no GPU)")


def interpreter_device() -> bool:
    """Let ``triton.runtime.driver.active.get_active_torch_device()`` (Triton's tutorials name their device
    by it) answer under the interpreter with no GPU, where it raised "0 active drivers" at the
    candidate's import (red team 15's "naming the host"): the device it gives is a ``torch.device``,
    which the CPU's runner places on the device (placement.py), as a GPU's is. Returns whether it was
    installed: not where a driver is active. Installed once, in the zygote."""
    from triton.runtime import driver

    try:
        driver.active.get_current_target  # noqa: B018
        return False
    except RuntimeError:
        pass
    if not callable(getattr(driver, "set_active", None)):
        return False
    driver.set_active(_InterpreterDriver())
    return True
