"""The judge's time and memory with several judges on one GPU, as the KernelBench at-scale check found
them (session 10, H200): a job's timeout is the candidate's time (the judge's own torch.compile of the
baseline and its waits for other jobs' holds of the GPU are given back: ``deadline_extended``), and a
job too large to share its GPU holds it alone from its first trial (its size known first on the meta
device), so that a job beside it does not run out of memory (level 1's 84_conv_depthwise_2D beside
87_conv_pointwise_2D: the judge's ``infrastructure_error``). Run through the device tool."""

import pytest

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import Problem

pytestmark = pytest.mark.gpu

LAZY = """

import triton
import triton.language as tl


@triton.jit
def touch(ptr):
    tl.store(ptr, tl.load(ptr) + 1.0)


class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        flag = torch.zeros(1, device=args[0].device)
        touch[(1,)](flag)
        return out
"""

POINTWISE_CONV = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 128, 1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 64, 1024, 1024)]  # 4 GiB in, 8 GiB out


def get_init_inputs():
    return []
"""

DEPTHWISE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(128, 128, 3, groups=128, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 128, 256, 512)]  # 1 GiB in and out


def get_init_inputs():
    return []
"""


def test_the_judges_compilation_of_its_baseline_is_given_back_to_the_job():
    problem = Problem(name="depthwise", source=DEPTHWISE)
    config = EvalConfig(device="cuda", baseline="compile", timing_budget_s=0.5, trials=2)
    result = evaluate(problem, DEPTHWISE + LAZY, config)
    assert result.verdict is Verdict.OK, result.feedback
    assert result.stage_seconds.get("deadline_extended", 0) > 0, result.stage_seconds


def test_a_job_too_large_to_share_its_gpu_leaves_the_judges_beside_it_their_memory():
    big, small = Problem(name="pointwise", source=POINTWISE_CONV), Problem(name="depthwise", source=DEPTHWISE)
    tasks = [Task(big, POINTWISE_CONV + LAZY, "big")] + [Task(small, DEPTHWISE + LAZY, f"small{i}") for i in range(3)]
    config = EvalConfig(device="cuda", trials=2, timing_budget_s=0.5)
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=4)) as env:
        results = {t.label: r for t, r in env.evaluate_many(tasks, config)}
    assert {label: r.verdict for label, r in results.items()} == dict.fromkeys(results, Verdict.OK), {
        label: r.feedback[:300] for label, r in results.items()
    }
