"""The second red team's breaks (tests/adversarial/redteam2/README.md), each fixed at its root."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import CANDIDATES, DEVICE, small_problem
from tritongym.env import Task
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.sandbox import remove_tree

HERE = Path(__file__).parent / "redteam2"


def config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, **({"trials": 2, "timing_budget_s": 1.0} | overrides))


def test_a_tree_deeper_than_rmtree_can_recurse_is_removed(tmp_path):
    top = tmp_path / "job"
    top.mkdir()
    here = os.getcwd()
    os.chdir(top)
    try:
        for _ in range(3000):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(here)
    remove_tree(top)
    assert not top.exists()
    remove_tree(top)  # already gone: nothing to do, nothing raised


def test_a_deep_job_directory_costs_the_batch_nothing(warm_env):
    """Attack 6: the attacker keeps its own verdict and the others of its batch theirs."""
    problem = small_problem("vector_add")
    tasks = [
        Task(problem, (HERE / "deep_workdir_breaks_pool.py").read_text(), "attacker"),
        Task(problem, (CANDIDATES / "correct.py").read_text(), "correct"),
        Task(problem, (CANDIDATES / "mismatch.py").read_text(), "mismatch"),
    ]
    attacker, correct, mismatch = warm_env.evaluate_batch(tasks, config())
    assert attacker.verdict is Verdict.OK, attacker.feedback
    assert correct.verdict is Verdict.OK and mismatch.verdict is Verdict.MISMATCH, (correct.feedback, mismatch.feedback)
