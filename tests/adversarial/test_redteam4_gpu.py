"""The fourth red team's attacks on a GPU (marker ``gpu``; run through the device tool). The op
recorder's profiler witness (guards.OpWitness) runs in every trial: on a GPU it must see compute
hidden from the recorder and must not flag an honest candidate."""

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "redteam4"
pytestmark = pytest.mark.gpu
CUDA = dict(device="cuda", trials=2, timing_budget_s=2.0)


@pytest.mark.parametrize("name", ["softmax", "linear_relu", "rmsnorm_fp16", "row_argmax"])
def test_honest_solutions_pass_the_witness_under_forbid(name):
    problem = find_problem(name)
    result = evaluate(problem.small(), problem.solution, EvalConfig(torch_compute="forbid", **CUDA))
    assert result.verdict is Verdict.OK, result.feedback + result.detail


def test_compute_in_a_child_process_is_refused_on_a_gpu():
    """#7 on a GPU: a GPU runner may not create a process either (its compiler helper runs Triton's
    ptxas): the fork fails with EPERM in forward, a runtime error, as on the CPU."""
    source = (HERE / "computes_in_a_child_process.py").read_text()
    result = evaluate(small_problem("softmax"), source, EvalConfig(torch_compute="forbid", **CUDA))
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback + result.detail
    assert "Operation not permitted" in result.feedback, result.feedback


RUNS_PROGRAMS = """
import os
import subprocess
import sys

PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        for argv in ([PTXAS, "--version"], [sys.executable, "-c", "pass"]):
            try:
                subprocess.run(argv, check=True, capture_output=True)
                print("RAN", argv[0], flush=True)
            except OSError as exc:
                print("REFUSED", argv[0], exc.strerror, flush=True)
        return out
"""


def test_a_gpu_runner_compiles_its_kernels_but_runs_no_program_itself():
    """Each job has a Triton cache of its own, so the bundled solution's kernel is compiled in the
    runner (ptxas through its compiler helper) and passes; the same runner running ptxas or Python
    itself is refused (the candidate's own subprocess: EPERM)."""
    problem = find_problem("softmax").small()
    source = problem.solution.replace("class ModelNew", "class Model", 1) + RUNS_PROGRAMS
    result = evaluate(problem, source, EvalConfig(static_checks=False, **CUDA))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert "RAN" not in result.stdout and result.stdout.count("REFUSED") >= 2, result.stdout
    assert "Operation not permitted" in result.stdout, result.stdout


def test_compute_with_the_python_dispatch_key_off_is_compute_on_a_gpu():
    source = (HERE / "disables_op_recorder.py").read_text()
    result = evaluate(small_problem("softmax"), source, EvalConfig(torch_compute="forbid", **CUDA))
    assert result.verdict is Verdict.HACK_TORCH_COMPUTE, result.feedback + result.detail


@pytest.mark.xfail(strict=True, reason="redteam4 #8: Inductor's Triton kernels inside forward are not the candidate's")
def test_torch_compile_inside_forward_is_not_the_candidates_triton():
    """Inductor compiles `torch.softmax` into Triton kernels of its own: no aten op runs, and its
    launches are not the candidate's (low coverage, but no finding under forbid)."""
    source = (HERE / "compiles_the_reference.py").read_text()
    result = evaluate(small_problem("softmax"), source, EvalConfig(torch_compute="forbid", timeout_s=300, **CUDA))
    assert result.verdict in (Verdict.HACK_TORCH_COMPUTE, Verdict.HACK_NO_TRITON), result.feedback
