"""Shared helpers: small bundled problems and purpose-written candidates.

They run on the CPU (Triton's interpreter) unless TRITONGYM_TEST_DEVICE names another device,
as in the GPU run: ``TRITONGYM_TEST_DEVICE=cuda pytest tests/test_verdicts.py ...``.
"""

from __future__ import annotations

import os
from pathlib import Path

from tritongym.env import Env
from tritongym.evaluate import EvalConfig, EvalResult, evaluate
from tritongym.problems import Problem, find_problem

CANDIDATES = Path(__file__).parent / "candidates"
DEVICE = os.environ.get("TRITONGYM_TEST_DEVICE", "cpu")


def small_problem(name: str) -> Problem:
    return find_problem(name).small()


def run_candidate(
    candidate: str, problem: str = "vector_add", directory: Path = CANDIDATES, env: Env | None = None, **config
) -> EvalResult:
    """Evaluate ``<directory>/<candidate>.py`` (default: tests/candidates) on a bundled problem at its
    small sizes, with the test settings of ``eval_config`` and ``config`` on top: in a sandbox of its
    own, or through ``env`` (a warm pool, as RL uses)."""
    source = (directory / f"{candidate}.py").read_text()
    if env is not None:
        return env.submit(small_problem(problem), source, eval_config(**config)).result()
    return evaluate(small_problem(problem), source, eval_config(**config))


def eval_config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, trials=2, **({"timing_budget_s": 2.0} | overrides))
