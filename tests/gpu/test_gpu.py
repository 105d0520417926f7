"""GPU-only behaviour: full-size bundled problems, CUDA faults, Triton's real compiler.

Run through the device tool: ``pytest -m gpu tests/gpu``.
"""

import pytest

from helpers import CANDIDATES
from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.evaluate.judge.work_queues import LAUNCH_QUEUE_SCALE
from tritongym.problems import find_problem, load_bundled

pytestmark = pytest.mark.gpu
CUDA = EvalConfig(device="cuda", trials=3)

ILLEGAL_ACCESS = """import torch
import triton
import triton.language as tl


@triton.jit
def stray_kernel(out_ptr):
    tl.store(out_ptr + (1 << 40) + tl.arange(0, 128), tl.zeros((128,), tl.float32))


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        stray_kernel[(1,)](out)
        return out
"""


@pytest.mark.parametrize("problem", load_bundled(), ids=lambda p: p.name)
def test_bundled_solution_is_correct_at_full_size(problem):
    result = evaluate(problem, problem.solution, CUDA)
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert "interpreter" not in result.device
    assert result.coverage >= 0.95, result.kernels
    assert not result.findings, result.findings  # no guard fires, no implausible speedup
    low, high = result.timing.speedup_ci
    assert low <= result.speedup <= high


def test_a_launch_bound_kernel_at_small_sizes_is_timed_by_the_gpu():
    """A few microseconds a call: the batch is as long as each stream can queue behind a hold
    (speed.queue_calls), so no bracket is late and no hand-off reads as company (the honest corpus's
    small problems had most repetitions contended, "slow: hand-off", and host-bound brackets)."""
    from tritongym.evaluate.judge import speed

    problem = find_problem("vector_add").small()
    result = evaluate(problem, problem.solution, EvalConfig(device="cuda", trials=2, timing_budget_s=2.0))
    assert result.verdict is Verdict.OK and not result.findings, result.feedback
    timing = result.timing
    assert result.speedup is not None and timing.late_brackets == 0 and timing.contended_reps == 0, timing
    per_rep = timing.input_sets // (timing.reps + timing.invalid_reps)
    assert per_rep <= speed.queued_ops(LAUNCH_QUEUE_SCALE) // 3  # 2 inputs, 1 output; evaluate's 4x queue


def test_illegal_memory_access_is_the_candidates_failure_and_the_next_evaluation_is_clean():
    problem = find_problem("vector_add").small()
    result = evaluate(problem, ILLEGAL_ACCESS, CUDA)
    assert result.verdict in (Verdict.RUNTIME_ERROR, Verdict.CRASH), result.feedback
    assert "illegal" in (result.feedback + result.detail + result.stderr).lower() or result.verdict is Verdict.CRASH
    assert evaluate(problem, (CANDIDATES / "correct.py").read_text(), CUDA).verdict is Verdict.OK


def test_compiler_error_names_the_kernel_line():
    result = evaluate(find_problem("vector_add").small(), (CANDIDATES / "compile_error.py").read_text(), CUDA)
    assert result.verdict is Verdict.COMPILE_ERROR
    assert "CompilationError" in result.feedback and "power of 2" in result.feedback


def test_warm_gpu_pool_serves_the_bundled_set_without_restarts_and_recovers_from_a_cuda_fault():
    from tritongym.env import LocalEnv, PoolConfig, Task

    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        tasks = [Task(p, p.solution, p.name) for p in load_bundled()]
        results = {t.label: r for t, r in env.evaluate_many(tasks, CUDA)}
        wrong = {
            name: (r.verdict, r.findings, r.feedback)
            for name, r in results.items()
            if r.verdict is not Verdict.OK or r.findings
        }
        assert not wrong, wrong
        assert env.sandbox_starts == [1]
        problem = find_problem("vector_add").small()
        broken = env.submit(problem, ILLEGAL_ACCESS, CUDA).result()
        assert broken.verdict in (Verdict.RUNTIME_ERROR, Verdict.CRASH)
        assert env.submit(problem, (CANDIDATES / "correct.py").read_text(), CUDA).result().verdict is Verdict.OK
        assert env.sandbox_starts == [1]  # the fault died with its runner; the judge stays warm
