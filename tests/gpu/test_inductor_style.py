"""KernelBook/Inductor-style code end to end (tests/candidates/inductor_linear_relu.py): Inductor's
pointwise launcher, get_raw_stream, empty_strided_cuda, assert_size_stride and a ``call(args)``.
It needs CUDA (the launcher compiles for the device in its metadata). Run through the device tool."""

import pytest

from helpers import CANDIDATES
from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.evaluate.result import Category
from tritongym.problems import find_problem

pytestmark = pytest.mark.gpu
SOURCE = (CANDIDATES / "inductor_linear_relu.py").read_text()


def _evaluate():
    return evaluate(find_problem("linear_relu"), SOURCE, EvalConfig(device="cuda", trials=2, timing_budget_s=2.0))


def test_inductor_style_code_passes_the_static_checks_imports_and_runs():
    result = _evaluate()
    assert result.verdict is not Verdict.HACK_FORBIDDEN_API, result.feedback
    assert result.verdict.category is not Category.FAILED, result.feedback + result.detail


def test_inductor_style_code_is_ok_with_its_kernel_as_its_own_and_cublas_as_not():
    """The launch monitor wraps Inductor's CachingAutotuner.run as well as JITFunction.run: the
    pointwise kernel's launches are the candidate's, the cuBLAS GEMM of extern_kernels.mm is not."""
    result = _evaluate()
    assert result.verdict is Verdict.OK, result.feedback
    assert any(k.own and k.name.startswith("triton_poi_fused_addmm_relu_0") for k in result.kernels)
    assert any(not k.own for k in result.kernels), result.kernels
