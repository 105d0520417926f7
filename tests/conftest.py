"""Shared helpers: small bundled problems and purpose-written candidates, evaluated on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, EvalResult, evaluate
from tritongym.problems import Problem, find_problem

CANDIDATES = Path(__file__).parent / "candidates"


def small_problem(name: str) -> Problem:
    return find_problem(name).small()


def run_candidate(candidate: str, problem: str = "vector_add", **config) -> EvalResult:
    """Evaluate ``tests/candidates/<candidate>.py`` on a bundled problem at its small sizes."""
    source = (CANDIDATES / f"{candidate}.py").read_text()
    return evaluate(small_problem(problem), source, EvalConfig(device="cpu", trials=2, **config))


@pytest.fixture
def cpu_config() -> EvalConfig:
    return EvalConfig(device="cpu", trials=2)
