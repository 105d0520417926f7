"""The fourth red team's attacks on a GPU (marker ``gpu``; run through the device tool). The op
recorder's profiler witness (guards.OpWitness) runs in every trial: on a GPU it must see compute
hidden from the recorder and must not flag an honest candidate."""

from pathlib import Path

import pytest

from helpers import CANDIDATES, small_problem
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


def test_torch_compile_inside_forward_is_not_the_candidates_triton():
    """#8: Inductor compiles `torch.softmax` into Triton kernels of its own (from files of its cache):
    no aten op runs, and its launches were not the candidate's (`ok`, low coverage, no finding under
    forbid). Launches of a Triton kernel not of the solution's file are PyTorch compute now. A runner
    makes no process, so Inductor may already fail where it would start one (its compile workers):
    then the candidate's forward fails (`runtime_error`, EPERM); where it compiles in the runner, its
    kernels are found, or (as on an H200 with torch 2.11) Dynamo's own patches of `torch.nn.Module`
    at its first compile are tampering, seen first. Either way the work earns a penalty."""
    source = (HERE / "compiles_the_reference.py").read_text()
    result = evaluate(small_problem("softmax"), source, EvalConfig(torch_compute="forbid", timeout_s=300, **CUDA))
    if result.verdict is Verdict.RUNTIME_ERROR:
        assert "Operation not permitted" in result.feedback + result.detail, result.feedback + result.detail
    elif result.verdict is Verdict.HACK_TAMPERING:
        assert "torch.nn.Module" in result.feedback, result.feedback
    else:
        assert result.verdict is Verdict.HACK_TORCH_COMPUTE, result.feedback + result.detail
        assert "(Triton kernel not of the solution)" in result.feedback, result.feedback


def test_a_triton_kernel_not_of_the_solutions_file_is_compute_on_a_gpu():
    """#8 without Inductor (tests/adversarial/test_redteam4.py on the CPU): a kernel compiled from a
    file forward wrote does the work; its launches are PyTorch compute, and coverage does not count
    them as the candidate's (`penalize`: ok with a finding)."""
    source = (HERE / "launches_a_kernel_of_another_file.py").read_text()
    forbidden = evaluate(
        small_problem("softmax"), source, EvalConfig(torch_compute="forbid", static_checks=False, **CUDA)
    )
    assert forbidden.verdict is Verdict.HACK_TORCH_COMPUTE, forbidden.feedback + forbidden.detail
    assert "softmax_rows (Triton kernel not of the solution)" in forbidden.feedback, forbidden.feedback
    penalized = evaluate(small_problem("softmax"), source, EvalConfig(static_checks=False, **CUDA))
    assert penalized.verdict is Verdict.OK, penalized.feedback + penalized.detail
    assert any("softmax_rows (Triton kernel not of the solution)" in f.message for f in penalized.findings)
    assert any(k.name.startswith("softmax_rows") and not k.own for k in penalized.kernels), penalized.kernels
    assert [k.name for k in penalized.kernels if k.own] == ["copy_kernel"], penalized.kernels


@pytest.mark.parametrize("name", ["inductor_linear_relu.py"])
def test_inductor_style_candidates_launch_only_kernels_of_their_own_file(name):
    """The rule of #8 does not touch honest Inductor-style code (KernelBook, `tritongym solutions
    inductor`): its kernels are defined in its own file, launched by Inductor's CachingAutotuner."""
    source = (CANDIDATES / name).read_text()
    problem = find_problem("linear_relu")
    result = evaluate(problem, source, EvalConfig(torch_compute="penalize", **CUDA))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert not any("not of the solution" in f.message for f in result.findings), result.findings
