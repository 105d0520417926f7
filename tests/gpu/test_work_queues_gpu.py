"""GPU-only: a runner gets one hardware work queue where its problem's reference ran its GPU work on
one stream, and the judge's own setting where it ran work on several (work_queues.py): a one-queue
spare forked ahead is given up for such a problem, a spare of the judge's setting serves any.

Run through the device tool: ``pytest -m gpu tests/gpu/test_work_queues_gpu.py``.
"""

from __future__ import annotations

import pytest

from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.problems import Problem

pytestmark = pytest.mark.gpu
UNTIMED = EvalConfig(device="cuda", trials=2, timing=False, profile=False)

SINGLE_STREAM = Problem(
    name="single_stream_tanh",
    source="""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2 + 1


def get_inputs():
    return [torch.randn(4096, 256)]


def get_init_inputs():
    return []
""",
)

TWO_STREAMS = Problem(
    name="two_stream_tanh",
    source="""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = torch.tanh(x)
        torch.cuda.current_stream().wait_stream(side)
        return y * 2 + 1


def get_inputs():
    return [torch.randn(4096, 256)]


def get_init_inputs():
    return []
""",
)

CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(x < 0, -t, t)
    tl.store(out_ptr + offsets, t * 2.0 + 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        tanh_affine_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""


def test_one_queue_only_for_a_single_stream_reference_and_a_one_queue_spare_given_up_for_a_multi_stream_one():
    order = [SINGLE_STREAM, TWO_STREAMS, SINGLE_STREAM, SINGLE_STREAM]
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        results = [env.submit(problem, CANDIDATE, UNTIMED).result() for problem in order]
    for result in results:
        assert result.verdict is Verdict.OK, result.feedback + result.detail
    stages = [r.stage_seconds for r in results]
    assert stages[0]["reference_streams"] == 1 and stages[1]["reference_streams"] == 2  # profiled once each
    assert "reference_streams" not in stages[2] and "reference_streams" not in stages[3]  # the judge's cache
    assert stages[0]["runner_one_queue"] == 1  # the first spare is forked with one queue, and fits
    assert stages[1]["runner_one_queue"] == 0  # the reference ran on two streams: the judge's setting
    assert stages[1].get("runner_unfit_spare") == 1  # the one-queue spare forked ahead was given up
    assert stages[2]["runner_one_queue"] == 0 and "runner_unfit_spare" not in stages[2]  # the judge's fits any
    assert stages[3]["runner_one_queue"] == 1  # forked for the last job's problem again


def test_the_pools_number_overrides_the_judges_choice():
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1, runner_work_queues=1)) as env:
        result = env.submit(TWO_STREAMS, CANDIDATE, UNTIMED).result()
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert result.stage_seconds["runner_one_queue"] == 1
