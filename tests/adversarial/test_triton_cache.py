"""Triton's compile cache is each job's own: what one candidate writes there, the next never reads."""

from __future__ import annotations

from pathlib import Path

from helpers import DEVICE, small_problem
from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "candidates"

LOOKS = """
import os
print("CACHE", os.environ["TRITON_CACHE_DIR"], sorted(os.listdir(os.environ["TRITON_CACHE_DIR"]))
      if os.path.isdir(os.environ["TRITON_CACHE_DIR"]) else [])
"""


def test_a_file_planted_in_the_triton_cache_is_not_in_the_next_jobs_cache():
    problem = small_problem("vector_add")
    planter = (HERE / "plants_triton_cache.py").read_text()
    looker = LOOKS + problem.solution
    config = EvalConfig(device=DEVICE, trials=2, timing_budget_s=1.0, static_checks=False)
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
        tasks = [Task(problem, planter, "planter")] + [Task(problem, looker, f"looker {i}") for i in range(2)]
        first, *later = env.evaluate_batch(tasks, config)  # runners' users alternate: the third has the first's
    assert first.verdict is Verdict.OK and "PLANTED" in first.stdout, first.feedback + first.stdout
    planted_in = next(x for x in first.stdout.splitlines() if x.startswith("PLANTED")).split(" ")[1]
    for result in later:
        assert result.verdict is Verdict.OK, result.feedback
        line = next(x for x in result.stdout.splitlines() if x.startswith("CACHE"))
        directory, listing = line.split(" ", 2)[1:]
        assert "0" * 32 not in listing, line
        assert directory != planted_in and "triton-cache" in directory, (planted_in, line)
