"""Evaluate many (problem, candidate) pairs concurrently, yielding results as they finish.

Each evaluation has its own sandbox process, so threads here only wait on children.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.evaluator import evaluate
from tritongym.evaluate.result import EvalResult
from tritongym.problems import Problem


@dataclass(frozen=True)
class Task:
    problem: Problem
    candidate: str | bytes
    label: str = ""
    """Where the candidate came from (a path), carried into reports."""


def evaluate_many(tasks: Iterable[Task], config: EvalConfig, jobs: int = 1) -> Iterator[tuple[Task, EvalResult]]:
    """Evaluate every task with at most ``jobs`` sandboxes at once; yield in completion order."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(evaluate, t.problem, t.candidate, config): t for t in tasks}
        for future in as_completed(futures):
            yield futures[future], future.result()
