"""A runner that keeps the judge's root user (the default on a GPU) has no capability left: it cannot
open the judge's memory through /proc, where the expected outputs are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import DEVICE, small_problem
from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "candidates"


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root judge has root runners")
def test_a_root_runner_cannot_open_the_judges_memory(monkeypatch):
    monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")  # runners keep the judge's user, as on a GPU
    problem = small_problem("vector_add")
    config = EvalConfig(device=DEVICE, trials=2, timing_budget_s=1.0, static_checks=False)
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
        [result] = env.evaluate_batch([Task(problem, (HERE / "reads_judge_memory.py").read_text(), "reader")], config)
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert "JUDGE_MEMORY refused" in result.stdout, result.stdout
    assert "CapEff:\t0000000000000000" in result.stdout, result.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root judge has root runners")
def test_no_thread_of_a_root_runner_keeps_a_capability(monkeypatch):
    """Capabilities are per thread: the runner's watchdog thread, made to run the candidate's code
    (time.sleep replaced), cannot open the judge's memory either."""
    monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")
    problem = small_problem("vector_add")
    config = EvalConfig(device=DEVICE, trials=2, timing_budget_s=1.0, static_checks=False)
    source = (HERE / "hijacks_watchdog_thread.py").read_text()
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
        [result] = env.evaluate_batch([Task(problem, source, "hijacker")], config)
    assert "WATCHDOG_JUDGE_MEMORY refused" in result.stdout, result.stdout
