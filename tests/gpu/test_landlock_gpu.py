"""A GPU runner under Landlock (landlock.py): CUDA IPC, timing and profiling work, and the writes a
runner of the judge's user could make before are refused. benchmarks/landlock_probe.py says which
operation fails, if one does."""

import os

import pytest

from helpers import CANDIDATES
from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.judge.landlock import abi_version
from tritongym.problems import find_problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(abi_version() == 0, reason="the kernel has no Landlock")]

HOSTILE = """
import io, os
import tritongym
for path in ("/root/tritongym-landlock-test", os.path.join(os.path.dirname(tritongym.__file__), "landlock-test"),
             "/proc/sys/kernel/pid_max", f"/proc/{os.getppid()}/oom_score_adj"):
    existed = os.path.exists(path)
    try:
        io.FileIO(path, "a").close()
        print("WRITABLE", path)
        if not existed:
            os.unlink(path)
    except OSError as exc:
        print("refused", path, exc.strerror)
"""


def test_a_gpu_runner_is_timed_and_profiled_under_landlock_and_writes_nothing_of_the_judges(monkeypatch):
    monkeypatch.setenv("TRITONGYM_RUNNER_LANDLOCK", "required")
    config = EvalConfig(device="cuda", trials=2, timing_budget_s=2.0, static_checks=False)
    with LocalEnv(PoolConfig(devices="cuda", sandboxes_per_device=1)) as env:
        hostile = env.submit(find_problem("vector_add"), HOSTILE + (CANDIDATES / "correct.py").read_text(), config)
        inductor = env.submit(find_problem("linear_relu"), (CANDIDATES / "inductor_linear_relu.py").read_text(), config)
        hostile, inductor = hostile.result(), inductor.result()
    assert hostile.verdict is Verdict.OK, hostile.feedback
    assert hostile.stdout.count("refused") == 4 and "WRITABLE" not in hostile.stdout, hostile.stdout
    assert hostile.speedup is not None and hostile.coverage is not None
    assert inductor.verdict is Verdict.OK and inductor.coverage, inductor.feedback
    assert not os.path.exists("/root/tritongym-landlock-test")
