"""The eighth red team's #3 on a GPU (marker ``gpu``; run through the device tool): a candidate that
takes nearly all of the GPU's free memory at import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.judge.gpu_memory import freed_by
from tritongym.problems import Problem, find_problem

HERE = Path(__file__).parent / "redteam8"
pytestmark = pytest.mark.gpu

BIG_ADD = Problem(
    name="big_vector_add",
    source="""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(1 << 28), torch.randn(1 << 28)]


def get_init_inputs():
    return []
""",
)
"""1 GiB per tensor, 3 GiB an input set and its output: the judge gives its cache back after each
trial (memory.GIVE_BACK_BYTES), so trial 2's inputs are a fresh allocation after the import."""
UNTIMED = EvalConfig(device="cuda", trials=2, timing=False, profile=False, timeout_s=300)


def test_a_candidate_holding_the_gpus_memory_is_out_of_memory_and_the_job_beside_it_is_judged():
    """Before: the judge's later allocations (trial 2, the slots) ran out beside the hog, its own
    ``infrastructure_error`` (a dropped sample), and the jobs beside it ran out too. Now the judge
    reads the runner's GPU memory while it imports (NVML) and ends it past its limit; where NVML
    does not name the runner, the judge's out-of-memory is blamed on it by what its end gives back."""
    hog = (HERE / "hogs_the_gpu_memory.py").read_text()
    honest = find_problem("vector_add").solution
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=2)) as env:
        hogged, beside = env.evaluate_batch([Task(BIG_ADD, hog, "hog"), Task(BIG_ADD, honest, "beside")], UNTIMED)
        after = env.evaluate_batch([Task(BIG_ADD, honest, "after")], UNTIMED)[0]
    assert hogged.verdict is Verdict.OUT_OF_MEMORY, hogged.feedback + hogged.detail
    assert "GiB of GPU memory" in hogged.feedback
    assert beside.verdict is Verdict.OK, beside.feedback + beside.detail
    assert after.verdict is Verdict.OK, after.feedback + after.detail  # the hog's memory went back


def test_the_memory_a_killed_process_gives_back_is_what_it_held():
    """The fallback's measure (gpu_memory.freed_by) on the device: a process holding 4 GiB."""
    code = "import torch,time;x=torch.empty(4<<30,dtype=torch.uint8,device='cuda');print(1,flush=True);time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        holder.stdout.readline()

        def kill():
            holder.kill()
            holder.wait()

        freed = freed_by(lambda: torch.cuda.mem_get_info(0)[0], kill)
    finally:
        holder.kill()
    assert 4 << 30 <= freed < 6 << 30, f"{freed / 2**30:.2f} GiB"
