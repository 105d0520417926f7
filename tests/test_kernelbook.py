"""KernelBook's forms: the class named by an entry point, init inputs as [args, kwargs]."""

import json

from helpers import DEVICE
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.problems import load_table

REFERENCE = """import torch
import torch.nn as nn


class ScaledShift(nn.Module):
    def __init__(self, features, shift=0.0):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.shift = shift

    def forward(self, x):
        return x * self.scale + self.shift


def get_inputs():
    return [torch.rand([4, 4, 8])]


def get_init_inputs():
    return [[], {"features": 8, "shift": 0.5}]
"""

SOLUTION = """import torch
import triton
import triton.language as tl


@triton.jit
def scaled_shift_kernel(x_ptr, s_ptr, out_ptr, n, features, shift, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    s = tl.load(s_ptr + offsets % features, mask=mask)
    tl.store(out_ptr + offsets, x * s + shift, mask=mask)


class ScaledShiftNew(torch.nn.Module):
    def __init__(self, features, shift=0.0):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(features))
        self.shift = shift

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scaled_shift_kernel[(triton.cdiv(n, 128),)](x, self.scale, out, n, self.scale.numel(), self.shift, BLOCK=128)
        return out
"""


def _problem(tmp_path):
    path = tmp_path / "book.jsonl"
    row = {"uuid": "ss", "python_code": REFERENCE, "entry_point": "ScaledShift", "triton_code": SOLUTION}
    path.write_text(json.dumps(row) + "\n")
    (problem,) = load_table(path)
    return problem


def test_entry_point_and_keyword_init_inputs(judge, tmp_path):
    problem = _problem(tmp_path)
    result = judge(problem, problem.solution, EvalConfig(device=DEVICE, trials=2))
    assert result.verdict is Verdict.OK, result.feedback + result.detail


def test_solution_with_the_wrong_class_name(judge, tmp_path):
    problem = _problem(tmp_path)
    wrong = SOLUTION.replace("class ScaledShiftNew", "class ModelNew")
    result = judge(problem, wrong, EvalConfig(device=DEVICE, trials=2))
    assert result.verdict is Verdict.INTERFACE_ERROR
    assert "no class `ScaledShiftNew` (classes defined: ModelNew)" in result.feedback
