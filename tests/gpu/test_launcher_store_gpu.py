"""The launcher store on a GPU: Triton's C modules are built once by the judge's builder, not per job.

Two jobs with different kernels of one signature, in a fresh store: the first job's runner builds
the kernel's launcher itself (Triton 3.4-3.6) and says so; the builder then puts it in the store, and
the second job's runner builds neither the launcher nor ``cuda_utils`` (``c_modules_built`` is 0 and
its first trial is faster). Run: ``pytest -m gpu tests/gpu/test_launcher_store_gpu.py``.
"""

import json
import time

import pytest

from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.judge import launcher_builder
from tritongym.evaluate.judge.launcher_cache import MANIFEST
from tritongym.problems import find_problem

pytestmark = pytest.mark.gpu

KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def NAME(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(a_ptr + offsets, mask=mask)
    y = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, BODY, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        NAME[(triton.cdiv(a.numel(), 512),)](a, b, out, a.numel(), BLOCK=512)
        return out
"""


def launchers_in(store_root) -> int:
    return sum(
        "__triton_launcher" in entry
        for manifest in store_root.glob(f"*/{MANIFEST}")
        for entry in json.loads(manifest.read_text())
    )


def test_a_second_job_of_the_same_signature_builds_no_c_module(tmp_path, monkeypatch):
    root = tmp_path / "launchers"
    monkeypatch.setenv("TRITONGYM_LAUNCHER_STORE", str(root))
    problem = find_problem("vector_add")
    config = EvalConfig(device="cuda", trials=2, timing=False, profile=False, static_checks=False)
    first_source = KERNEL.replace("NAME", "add_first").replace("BODY", "x + y")
    second_source = KERNEL.replace("NAME", "add_second").replace("BODY", "y + x * 1.0")
    with LocalEnv(PoolConfig(devices="cuda", sandboxes_per_device=1)) as env:
        first = env.submit(problem, first_source, config).result()
        assert first.verdict is Verdict.OK, first.feedback + first.detail
        per_signature = launcher_builder.per_signature_launchers()
        built = first.stage_seconds["c_modules_built"]  # its kernel's launcher (cuda_utils: at the judge's start)
        assert built >= 1 if per_signature else built == 0
        deadline = time.monotonic() + 60
        while launchers_in(root) < built and time.monotonic() < deadline:
            time.sleep(0.2)  # the builder works after the job, off every candidate's clock
        second = env.submit(problem, second_source, config).result()
    assert second.verdict is Verdict.OK, second.feedback + second.detail
    assert second.stage_seconds["c_modules_built"] == 0
    assert launchers_in(root) == built
    print("first trial: first job", first.stage_seconds["first_trial"], "second", second.stage_seconds["first_trial"])
