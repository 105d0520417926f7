"""Triton's frontend on interpreted kernels (evaluate/frontend.py): what Triton's compiler rejects fails
on the CPU too, at the launch, while honest kernels (helpers, language functions, constexprs,
do_not_specialize, autotuning) run as before, and each specialization pays once."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import torch
import triton
from triton.compiler.errors import CompilationError
from triton.runtime.errors import InterpreterError

from helpers import eval_config, small_problem
from tritongym.evaluate import Verdict, frontend, guards
from tritongym.evaluate.guards import LaunchMonitor

ROOT = Path(__file__).resolve().parent.parent
KERNELS = """
import triton
import triton.language as tl

STASH = []


def host_add():
    a, b, out = STASH
    out.numpy()[...] = a.numpy() + b.numpy()


@triton.jit
def numpy_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    host_add()


@triton.jit
def breaking_kernel(out_ptr, n):
    for i in range(n):
        if i == 2:
            break
        tl.store(out_ptr + i, 1.0)


@triton.jit
def double(x):
    return x * 2


@triton.jit
def scaled_kernel(a_ptr, out_ptr, n, BLOCK: tl.constexpr, ACT: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(a_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, ACT(x), mask=mask)


@triton.jit
def grouped_kernel(out_ptr, M, GROUP: tl.constexpr):
    groups = (M + 3) // 4
    tl.store(out_ptr, min(groups - 1, GROUP) + max(groups, GROUP))


@triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=1)], key=["n"])
@triton.jit(do_not_specialize=["n"])
def tuned_kernel(a_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, double(tl.load(a_ptr + offsets, mask=mask)), mask=mask)
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The kernels above, made by ``triton.jit`` under the interpreter (as in a CPU sandbox)."""
    path = tmp_path_factory.mktemp("frontend") / "interpreted_kernels.py"
    path.write_text(KERNELS)
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        spec = importlib.util.spec_from_file_location("interpreted_kernels", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET")
        else:
            os.environ["TRITON_INTERPRET"] = before
    yield module
    sys.modules.pop("interpreted_kernels", None)


@pytest.fixture
def monitored(monkeypatch):
    """Launches watched as in a CPU runner: Triton's frontend first."""
    monkeypatch.setattr(guards, "INTERPRETED", True)
    with LaunchMonitor("") as monitor:
        yield monitor


def _release(version: str) -> tuple[int, int]:
    return tuple(int(part) for part in version.split(".")[:2])


LOOPS_BROKEN = _release(triton.__version__) < (3, 7) and _release(numpy.__version__) >= (2, 4)
"""Triton 3.4-3.6's interpreter under numpy >= 2.4 fails in a loop over a runtime bound
(triton-lang/triton#9171); a CPU sandbox's self-test refuses such a machine (selftest.py)."""


def test_the_interpreter_alone_runs_what_the_compiler_rejects(kernels):
    a, b, out = torch.ones(4), torch.full((4,), 2.0), torch.zeros(4)
    kernels.STASH[:] = [a, b, out]
    kernels.numpy_kernel[(1,)](a, b, out, 4, BLOCK=4)
    assert out.tolist() == [3.0] * 4, "NumPy wrote the output from inside the kernel"
    out = torch.zeros(4)
    if LOOPS_BROKEN:  # ``break`` cannot be shown to run here: the loop itself fails
        with pytest.raises(InterpreterError, match="0-dimensional arrays"):
            kernels.breaking_kernel[(1,)](out, 4)
        return
    kernels.breaking_kernel[(1,)](out, 4)
    assert out.tolist() == [1.0, 1.0, 0.0, 0.0], "the loop ran until its break"


def test_a_kernel_calling_numpy_is_rejected_before_it_runs(kernels, monitored):
    a, b, out = torch.ones(4), torch.full((4,), 2.0), torch.zeros(4)
    kernels.STASH[:] = [a, b, out]
    with pytest.raises((RuntimeError, CompilationError), match="host_add") as first:
        kernels.numpy_kernel[(1,)](a, b, out, 4, BLOCK=4)
    assert out.tolist() == [0.0] * 4, "the body never ran"
    runs = frontend.runs[0]
    with pytest.raises((RuntimeError, CompilationError), match="host_add") as again:
        kernels.numpy_kernel[(1,)](a, b, out, 4, BLOCK=4)
    assert frontend.runs[0] == runs + 1, "a rejected specialization is not remembered: it fails again"
    assert str(again.value) == str(first.value), "the same way (a failed hash is not kept)"


def test_python_the_compiler_does_not_support_is_a_compile_error(kernels, monitored):
    out = torch.zeros(4)
    with pytest.raises(CompilationError, match="Break"):
        kernels.breaking_kernel[(1,)](out, 4)
    assert out.tolist() == [0.0] * 4


def test_honest_kernels_run_and_each_specialization_pays_once(kernels, monitored):
    a = torch.arange(40, dtype=torch.float32)
    out = torch.zeros(40)
    kernels.scaled_kernel[(3,)](a, out, 40, BLOCK=16, ACT=kernels.double)
    assert torch.equal(out, 2 * a)
    runs = frontend.runs[0]
    kernels.scaled_kernel[(3,)](a, out, 40, BLOCK=16, ACT=kernels.double)
    assert frontend.runs[0] == runs, "the same specialization: no second frontend run"
    kernels.scaled_kernel[(2,)](a, out, 40, BLOCK=32, ACT=kernels.double)
    assert frontend.runs[0] == runs + 1, "a new constexpr: a new specialization"
    out = torch.zeros(40)
    kernels.tuned_kernel[lambda meta: (triton_cdiv(40, meta["BLOCK"]),)](a, out, 40)
    assert torch.equal(out, 2 * a)
    assert monitored.launches == 0 and sum(monitored.foreign.values()) >= 4


def triton_cdiv(n: int, block: int) -> int:
    return -(-n // block)


def test_the_frontend_works_after_the_interpreter_left_the_language_patched():
    """Triton 3.9's interpreter leaves ``triton.language.core``'s builtins replaced by its own after a
    kernel that calls ``tl.zeros`` (the self-test's); the frontend runs with the language as imported."""
    code = (
        "import triton.language as tl\n"
        "from tritongym.evaluate import frontend\n"
        "from tritongym.evaluate.selftest import interpreter_problem\n"
        "assert interpreter_problem() is None\n"
        "patched = tl.core.program_id\n"
        "frontend.warm()\n"
        "assert tl.core.program_id is patched, 'the interpreter finds what it left'\n"
        "print('warm', frontend.runs[0])\n"
    )
    env = dict(os.environ) | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "warm 1" in done.stdout, done.stderr[-3000:]


def test_python_min_and_max_of_tensors_use_the_code_generators_builtins_as_imported(kernels, monitored, monkeypatch):
    """Triton 3.4/3.5 import their code generator at the first compile, and its table of Python's builtins
    (``min`` -> ``tl.minimum``) takes what ``triton.language`` holds then: after an interpreted launch,
    the interpreter's builtins, which fail on the code generator's values (kb_gemm_autotune's ``min`` was
    a compile error there). The table stands in for one built that way; the frontend uses its own."""
    from triton.compiler.code_generator import CodeGenerator

    def interpreters(*args, **kwargs):
        raise AttributeError("'triton._C.libtriton.ir.value' object has no attribute 'data'")

    stale = dict(CodeGenerator.builtin_namespace) | {"min": interpreters, "max": interpreters}
    monkeypatch.setattr(CodeGenerator, "builtin_namespace", stale)
    out = torch.zeros(1, dtype=torch.int32)
    kernels.grouped_kernel[(1,)](out, 17, GROUP=8)  # groups = 5: min(4, 8) + max(5, 8)
    assert out.tolist() == [12] and CodeGenerator.builtin_namespace is stale  # the table is put back


def test_min_of_tensors_passes_the_frontend_after_the_zygotes_first_interpreted_launch(tmp_path):
    """The zygote's order (the self-test's launch, then the frontend's first run), on the installed Triton."""
    script = tmp_path / "zygote_order.py"
    script.write_text(
        "import torch, triton, triton.language as tl\n"
        "from tritongym.evaluate import frontend\n"
        "from tritongym.evaluate.selftest import interpreter_problem\n"
        "assert interpreter_problem() is None\n"
        "@triton.jit\n"
        "def k(out_ptr, M, GROUP: tl.constexpr):\n"
        "    tl.store(out_ptr, min((M + 3) // 4 - 1, GROUP))\n"
        "out = torch.zeros(1, dtype=torch.int32)\n"
        "frontend.check(k, (out, 17), {'GROUP': 8})\n"
        "print('checked', frontend.runs[0])\n"
    )
    env = dict(os.environ) | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "checked 1" in done.stdout, done.stderr[-3000:]


BREAKING_VECTOR_ADD = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    for _ in range(2):
        total = tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, total, mask=mask)
        break


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
"""


def test_a_correct_kernel_the_compiler_rejects_gets_the_same_verdict_on_every_device(warm_env):
    """Under the interpreter the kernel adds correctly (``break`` is plain Python); Triton's compiler
    refuses ``break``: compile_error on a GPU, and on the CPU too."""
    result = warm_env.submit(small_problem("vector_add"), BREAKING_VECTOR_ADD, eval_config()).result()
    assert result.verdict is Verdict.COMPILE_ERROR, result.feedback
    assert "Break" in result.feedback and "add_kernel[" in result.feedback, result.feedback


def test_a_kernel_launched_by_the_constructor_passes_the_frontend_too(warm_env):
    construct_and_add = BREAKING_VECTOR_ADD.replace(
        "class ModelNew(nn.Module):\n",
        "class ModelNew(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        x = torch.ones(4)\n"
        "        add_kernel[(1,)](x, x, x, 4, BLOCK=4)\n\n",
    )
    result = warm_env.submit(small_problem("vector_add"), construct_and_add, eval_config()).result()
    assert result.verdict is Verdict.COMPILE_ERROR, result.feedback
    assert "while constructing" in result.feedback and "Break" in result.feedback, result.feedback


CACHE_SWAP = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction

STASH = []


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=offsets < n), mask=offsets < n)


def host_add(a_ptr, b_ptr, out_ptr, n, BLOCK):
    a, b, out = STASH
    out.numpy()[...] = a.numpy() + b.numpy()


InterpretedFunction.rewritten_fn[add_kernel.fn] = host_add


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        STASH[:] = [a, b, out]
        add_kernel[(1,)](a, b, out, a.numel(), BLOCK=1024)
        return out
"""


def test_an_accepted_kernel_runs_its_own_code_whatever_the_interpreters_cache_holds(warm_env):
    """The interpreter runs what its class-level cache maps a kernel's function to: a kernel the frontend
    accepted (which only copies ``a``) had NumPy add on the host instead, and was judged ok. Its own
    code runs now, and is wrong."""
    result = warm_env.submit(small_problem("vector_add"), CACHE_SWAP, eval_config()).result()
    assert result.verdict is Verdict.MISMATCH, result.feedback
