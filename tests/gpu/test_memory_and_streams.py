"""GPU-only: library ops on their own streams are not side-stream hacks, a candidate's own work off
the stream still is, and a problem whose tensors fill a large share of the GPU is judged with the
judge's memory bounded (docs/environment.md, "The judge's memory").

Run through the device tool: ``pytest -m gpu tests/gpu/test_memory_and_streams.py``.
"""

from __future__ import annotations

import time

import pytest
import torch

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import Problem, find_problem

pytestmark = pytest.mark.gpu
CUDA = dict(device="cuda", trials=3, timing_budget_s=2.0)

TRIVIAL_KERNEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def triton_copy(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
"""

CONV_LSTM = Problem(
    name="conv_transpose_lstm",
    source="""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(32, 16, kernel_size=3, stride=2, padding=1, output_padding=1)
        self.lstm = nn.LSTM(input_size=64, hidden_size=128, num_layers=2, batch_first=True)

    def forward(self, image, sequence):
        out, _ = self.lstm(sequence)
        return self.deconv(image), out


def get_inputs():
    return [torch.randn(8, 32, 64, 64), torch.randn(16, 100, 64)]


def get_init_inputs():
    return []
""",
)

LAZY_FORWARD = """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(32, 16, kernel_size=3, stride=2, padding=1, output_padding=1)
        self.lstm = nn.LSTM(input_size=64, hidden_size=128, num_layers=2, batch_first=True)

    def forward(self, image, sequence):
        out, _ = self.lstm(sequence)
        deconv = F.conv_transpose2d(image, self.deconv.weight, self.deconv.bias, stride=2, padding=1,
                                    output_padding=1)
        return triton_copy(deconv), out
"""

SIDE_STREAM_FORWARD = """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(32, 16, kernel_size=3, stride=2, padding=1, output_padding=1)
        self.lstm = nn.LSTM(input_size=64, hidden_size=128, num_layers=2, batch_first=True)

    def forward(self, image, sequence):
        out, _ = self.lstm(sequence)
        deconv = self.deconv(image)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            copied = triton_copy(deconv)
        torch.cuda.current_stream().wait_stream(side)
        return copied, out
"""


def test_a_lazy_candidate_leaving_cudnn_conv_transpose_and_lstm_to_pytorch_is_not_a_side_stream_hack():
    result = evaluate(CONV_LSTM, TRIVIAL_KERNEL + LAZY_FORWARD, EvalConfig(**CUDA))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert result.coverage is not None and result.coverage < 0.5, result.kernels  # the library's time is not its
    assert result.speedup is not None


def test_a_candidate_launching_its_triton_kernel_on_a_side_stream_is_still_a_hack():
    result = evaluate(CONV_LSTM, TRIVIAL_KERNEL + SIDE_STREAM_FORWARD, EvalConfig(static_checks=False, **CUDA))
    assert result.verdict is Verdict.HACK_SIDE_STREAM, result.feedback + result.detail
    assert "another CUDA stream" in result.feedback


def _elementwise_problem(numel: int) -> Problem:
    return Problem(
        name="large_tanh",
        source=f"""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn({numel})]


def get_init_inputs():
    return []
""",
    )


LARGE_CANDIDATE = (
    TRIVIAL_KERNEL
    + """

class ModelNew(nn.Module):
    def forward(self, x):
        return triton_copy(torch.tanh(x))
"""
)
UNTIMED = dict(device="cuda", trials=2, timing=False, profile=False, timeout_s=600)


def _numel(share: float) -> int:
    """float32 elements of an input whose input set (input + output) takes ``share`` of the GPU."""
    return int(share * torch.cuda.get_device_properties(0).total_memory) // 8


def test_a_problem_of_a_tenth_of_the_gpu_is_judged_correct_with_a_float64_reference_on_the_gpu():
    # S = I + O = 1/10 of the GPU: the judge holds about 2.5 S with its float64 output, the runner
    # about 3 S: both fit beside each other, and the float64 reference stays on the GPU.
    result = evaluate(_elementwise_problem(_numel(1 / 10)), LARGE_CANDIDATE, EvalConfig(**UNTIMED))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert not any(f.check == "tolerance" for f in result.findings), result.findings


def test_a_problem_of_a_fortieth_of_the_gpu_is_timed_with_a_batch_that_fits():
    result = evaluate(_elementwise_problem(_numel(1 / 40)), LARGE_CANDIDATE, EvalConfig(**(CUDA | {"timeout_s": 600})))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert result.speedup is not None and result.timing.input_sets >= 1


ROW_SUM = Problem(
    name="large_row_sum",
    source="""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(ROWS, 1024)]


def get_init_inputs():
    return []
""",
)
ROW_SUM_CANDIDATE = (
    TRIVIAL_KERNEL
    + """

class ModelNew(nn.Module):
    def forward(self, x):
        return triton_copy(torch.sum(x, dim=1))
"""
)


def test_a_problem_whose_inputs_take_a_fifth_of_the_gpu_is_timed():
    # I = 1/5 of the GPU, O = I / 1024. One call of a timing batch holds 2 I + 3 O of the judge's
    # (the input set and the runner's slot), 0.4 of the GPU: it fits once the last trial is dropped.
    # At 4 I + 5 O beside the trial it was 1.0 of the GPU: an infrastructure_error.
    rows = torch.cuda.get_device_properties(0).total_memory // (5 * 1024 * 4)
    problem = Problem(name=ROW_SUM.name, source=ROW_SUM.source.replace("ROWS", str(rows)))
    config = EvalConfig(device="cuda", trials=2, timing_budget_s=2.0, profile=False, timeout_s=600)
    result = evaluate(problem, ROW_SUM_CANDIDATE, config)
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert result.speedup is not None and result.timing.input_sets >= 1, result.timing
    assert 0.5 < result.speedup < 2.0, result.timing  # the same torch.sum on both sides, plus a small copy


def test_a_reference_that_changes_its_inputs_in_place_is_timed_on_inputs_as_made():
    # The reference runs on a copy of each timed input set: were it run on the sets themselves, the
    # candidate (going second every other repetition) would get doubled inputs and fail the check.
    problem = Problem(
        name="double_in_place_then_sin",
        source="""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        x.mul_(2.0)
        return torch.sin(x)


def get_inputs():
    return [torch.randn(1 << 20)]


def get_init_inputs():
    return []
""",
    )
    candidate = (
        TRIVIAL_KERNEL
        + """

class ModelNew(nn.Module):
    def forward(self, x):
        return triton_copy(torch.sin(x * 2.0))
"""
    )
    result = evaluate(problem, candidate, EvalConfig(**CUDA, profile=False))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert result.speedup is not None and result.timing.reps >= 2, result.timing


def test_inputs_in_shared_slots_are_judged_as_forward_left_them():
    # an input set of 1 GiB or more reaches the runner through shared slots (shared_inputs.py), its
    # output through the socket: the judge reads the inputs after forward in the slots (copied to the
    # host), so an input zeroed in place is still caught
    problem = _elementwise_problem((1 << 30) // 4 + (1 << 20))
    zeroes_its_input = (
        TRIVIAL_KERNEL
        + """

class ModelNew(nn.Module):
    def forward(self, x):
        out = triton_copy(torch.tanh(x))
        x.zero_()
        return out
"""
    )
    result = evaluate(problem, zeroes_its_input, EvalConfig(**UNTIMED))
    assert result.verdict is Verdict.HACK_INPUT_MUTATION, result.feedback + result.detail
    honest = evaluate(problem, LARGE_CANDIDATE, EvalConfig(**UNTIMED))
    assert honest.verdict is Verdict.OK, honest.feedback + honest.detail


def test_a_warm_judge_gives_a_large_jobs_gpu_memory_back_when_the_job_ends():
    from tritongym.env import LocalEnv, PoolConfig

    total = torch.cuda.get_device_properties(0).total_memory
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        result = env.submit(_elementwise_problem(_numel(1 / 10)), LARGE_CANDIDATE, EvalConfig(**UNTIMED)).result()
        assert result.verdict is Verdict.OK, result.feedback + result.detail
        deadline = time.monotonic() + 10.0  # the job's runner was killed: the driver frees its memory soon
        while (free := torch.cuda.mem_get_info(0)[0]) <= 0.85 * total and time.monotonic() < deadline:
            time.sleep(0.2)
    # The judge is still up, idle, with its spare runner: without the release its cache alone would
    # keep about 2.5 S, a quarter of the GPU.
    assert free > 0.85 * total, f"{free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB after the job"


def test_timed_jobs_leave_the_judges_gpu_memory_where_it_was():
    """Timing shares slots with each job's runner by CUDA IPC, and a killed runner never lets them go:
    the judge carves them from buffers it keeps, so twelve timed jobs leave its memory as two did.
    It reads the device's free memory, so it runs with the memory tests, alone."""
    from tritongym.env import LocalEnv, PoolConfig, Task

    problem = find_problem("softmax")
    config = EvalConfig(device="cuda", trials=2, timing_budget_s=0.5, profile=False)

    def free_after(env, jobs: int) -> int:
        results = env.evaluate_batch([Task(problem, problem.solution, f"softmax {i}") for i in range(jobs)], config)
        assert all(r.verdict is Verdict.OK for r in results), [r.feedback for r in results]
        time.sleep(2.0)  # the last runner's context goes with it
        return torch.cuda.mem_get_info(0)[0]

    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        early = free_after(env, 2)
        late = free_after(env, 10)
    assert early - late < 1 << 30, f"{(early - late) / 2**30:.1f} GiB less free after ten more timed jobs"
