"""The launch monitor's hook points on the installed Triton (evaluate/triton_compat.py) see every way an
interpreted kernel can run: ``kernel[grid]``, ``kernel.run``, an autotuner, a kernel made before the
monitor existed, and a ``GridExecutor`` called directly (which is never the candidate's own launch).
Triton 3.4/3.5 launch through per-instance closures and return executors from ``__getitem__``; later
releases through the class's ``run``: this runs on whichever Triton is installed (CI's, and each
release of benchmarks/triton_versions.sh), in-process, without a sandbox."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys

import pytest
import torch
import triton
import triton.language as tl
from triton.compiler.errors import CompilationError

from tritongym.evaluate import Verdict, frontend, guards, triton_compat
from tritongym.evaluate.guards import BYPASS, FOREIGN, LaunchMonitor
from tritongym.evaluate.judge.feedback import classify_failure

KERNELS = """
import triton
import triton.language as tl

STASH = []


def host_fill(x_ptr, out_ptr, n, BLOCK):
    STASH[0].numpy()[...] = 7.0


@triton.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 8}, num_warps=1)], key=["n"])
@triton.jit
def tuned_add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The kernels above, made by ``triton.jit`` under the interpreter before any monitor ran (as a
    runner imports its candidate), from a file that plays the candidate's."""
    path = tmp_path_factory.mktemp("compat") / "compat_kernels.py"
    path.write_text(KERNELS)
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        spec = importlib.util.spec_from_file_location("compat_kernels", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET")
        else:
            os.environ["TRITON_INTERPRET"] = before
    yield module
    sys.modules.pop("compat_kernels", None)


@pytest.fixture
def monitor(kernels, monkeypatch):
    """A monitor for whom the kernels' file is the candidate's, as in a CPU runner."""
    monkeypatch.setattr(guards, "INTERPRETED", True)
    with LaunchMonitor(kernels.__file__) as watching:
        yield watching


def tensors(n: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.arange(n, dtype=torch.float32), torch.zeros(n)


def test_the_interpreter_has_hook_points_for_its_launches():
    from triton.runtime.interpreter import GridExecutor, InterpretedFunction

    cls, name = triton_compat.interpreter_run_point()
    assert cls is InterpretedFunction and callable(cls.__dict__[name]), f"Triton {triton.__version__}"
    assert triton_compat.executor_call_point() == (GridExecutor, "__call__")
    assert (cls, name) in guards._launch_points()


def test_each_launch_through_the_kernel_is_counted_once(kernels, monitor):
    x, out = tensors()
    kernels.add_one[(2,)](x, out, 12, BLOCK=8)
    assert torch.equal(out, x + 1)
    out.zero_()
    kernels.add_one.run(x, out, 12, BLOCK=8, grid=(2,), warmup=False)
    assert torch.equal(out, x + 1)
    out.zero_()
    kernels.tuned_add_one[(2,)](x, out, 12)  # a grid function from outside the candidate's file is foreign
    assert torch.equal(out, x + 1)
    assert monitor.launches == 3, "each launch once, its grid (a GridExecutor call) part of it"
    assert not monitor.foreign


def test_a_grid_run_around_the_kernels_run_is_counted_and_never_own(kernels, monitor):
    """A candidate that runs its kernel's rewritten function in a ``GridExecutor`` of its own made no
    launch the monitor can vouch for: counted among the foreign launches, under every release."""
    from triton.runtime.interpreter import GridExecutor

    kernels.add_one[(1,)](*tensors(8), 8, BLOCK=8)
    kernel = kernels.add_one
    fn = kernel.rewrite()  # the interpreter's rewrite of the kernel's function, as a candidate can make it
    assert fn is not None and triton_compat.rewritten(kernel) is fn
    extra = [[]] * (len(inspect.signature(GridExecutor.__init__).parameters) - 4)  # 3.6+: pre-run hooks
    x, out = tensors()
    GridExecutor(fn, kernel.arg_names, (2,), *extra)(x, out, 12, BLOCK=8)
    assert torch.equal(out, x + 1), "the grid ran"
    assert monitor.launches == 1
    assert monitor.foreign == {f"{fn.__name__} {BYPASS}": 1}


def test_the_grid_runs_the_checked_kernels_code_whatever_the_interpreters_cache_holds(kernels, monitor, monkeypatch):
    """The interpreter runs what its class-level cache maps a kernel's function to, and any code in the
    process can write there: a kernel the frontend accepted would run a host function instead."""
    from triton.runtime.interpreter import InterpretedFunction

    x, out = tensors()
    kernels.STASH[:] = [out]
    monkeypatch.setitem(InterpretedFunction.rewritten_fn, kernels.add_one.fn, kernels.host_fill)
    kernels.add_one[(2,)](x, out, 12, BLOCK=8)
    assert torch.equal(out, x + 1), "the kernel's own code ran, not the function the cache was given"
    assert monitor.launches == 1 and not monitor.foreign


def test_a_kernel_whose_function_was_replaced_is_checked_again(kernels, monitor, monkeypatch):
    x, out = tensors()
    kernels.add_one[(2,)](x, out, 12, BLOCK=8)  # accepted by the frontend
    kernels.STASH[:] = [out]
    monkeypatch.setattr(kernels.add_one, "fn", kernels.host_fill)
    out.zero_()
    with pytest.raises((RuntimeError, CompilationError)):
        kernels.add_one[(2,)](x, out, 12, BLOCK=8)
    assert not out.any(), "the replacement never ran"


def test_a_kernel_whose_function_is_replaced_during_its_launch_fails_it(kernels, monitor, monkeypatch):
    def check(kernel, args, kwargs):  # stands for Python the frontend's code generator ran at compile time
        monkeypatch.setattr(kernel, "fn", kernels.host_fill)

    monkeypatch.setattr(frontend, "check", check)
    x, out = tensors()
    kernels.STASH[:] = [out]
    with pytest.raises(RuntimeError, match="replaced during its launch"):
        kernels.add_one[(2,)](x, out, 12, BLOCK=8)
    assert not out.any() and monitor.launches == 0


def test_a_launch_of_a_kernel_not_of_the_candidate_is_foreign(kernels, monkeypatch):
    monkeypatch.setattr(guards, "INTERPRETED", True)
    x, out = tensors()
    with LaunchMonitor("elsewhere.py") as monitor:
        kernels.add_one[(2,)](x, out, 12, BLOCK=8)
        kernels.add_one.run(x, out, 12, BLOCK=8, grid=(2,), warmup=False)
    assert monitor.launches == 0
    assert monitor.foreign == {f"add_one {FOREIGN}": 2}, "one each, the grids not counted again"


def test_a_blocked_launch_runs_no_grid(kernels, monkeypatch):
    monkeypatch.setattr(guards, "INTERPRETED", True)
    x, out = tensors()
    with LaunchMonitor(kernels.__file__, block=True) as monitor:
        with pytest.raises(guards.LaunchBlocked):
            kernels.add_one.run(x, out, 12, BLOCK=8, grid=(2,), warmup=False)
        with pytest.raises(guards.LaunchBlocked):
            kernels.add_one[(2,)](x, out, 12, BLOCK=8)
    assert monitor.launches == 2 and not out.any()


def test_the_monitor_leaves_the_hook_points_as_it_found_them(kernels):
    points = [*guards._launch_points(), triton_compat.executor_call_point()]
    before = [cls.__dict__[name] for cls, name in points]
    with LaunchMonitor(kernels.__file__):
        assert [cls.__dict__[name] for cls, name in points] != before
    assert [cls.__dict__[name] for cls, name in points] == before


def test_a_launch_leaves_the_language_as_it_was(kernels):
    """The interpreter replaces ``triton.language``'s builtins while a kernel runs; a runner's baseline
    (taint.py) must find them unchanged after the launch (Triton 3.4/3.5 never put them back)."""
    triton_compat.interpreter_run_point()  # as the launch monitor's first use does
    objects = [tl, tl.core, tl.core.tensor]
    before = [{k: id(v) for k, v in vars(obj).items()} for obj in objects]
    kernels.add_one[(2,)](*tensors(), 12, BLOCK=8)
    assert [{k: id(v) for k, v in vars(obj).items()} for obj in objects] == before


class FakeCompilationError(Exception):
    """Stands for Triton's ``CompilationError`` (the feedback knows Triton's errors by their module)."""


FakeCompilationError.__module__ = "triton.compiler.errors"


@pytest.mark.parametrize("says_why", [False, True], ids=["3.4", "3.5+"])
def test_a_compile_errors_feedback_says_why_on_every_release(says_why):
    """Triton 3.4's CompilationError shows the kernel's line; the reason is only its cause."""
    reason = ValueError("arange's range must be a power of 2")
    message = "at 2:14:\n    offsets = tl.arange(0, 100)" + (f"\n{reason}" if says_why else "")
    try:
        raise FakeCompilationError(message) from reason
    except FakeCompilationError as exc:
        failure = classify_failure(exc, "candidate.py", "in forward")
    assert failure.verdict is Verdict.COMPILE_ERROR
    assert failure.feedback.count("range must be a power of 2") == 1, failure.feedback
