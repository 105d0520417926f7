"""The Env protocol: the one API of every backend (local pool, Ray, HTTP client)."""

from __future__ import annotations

import itertools
import queue
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult
from tritongym.problems import Problem


@dataclass(frozen=True)
class Task:
    """One candidate for one problem."""

    problem: Problem
    candidate: str | bytes
    label: str = ""
    """Where the candidate came from (a path, a sample id), carried into reports."""
    priority: int = 0
    """Higher runs first."""


@runtime_checkable
class Env(Protocol):
    def submit(
        self,
        problem: Problem,
        candidate: str | bytes,
        config: EvalConfig | None = None,
        *,
        priority: int = 0,
        timeout_s: float | None = None,
    ) -> Future[EvalResult]:
        """Queue one evaluation; higher ``priority`` first; ``timeout_s`` overrides the config's."""
        ...

    def evaluate_many(
        self, tasks: Iterable[Task], config: EvalConfig | None = None
    ) -> Iterator[tuple[Task, EvalResult]]:
        """Evaluate every task, yielding each with its result as soon as it finishes."""
        ...

    def evaluate_batch(self, tasks: Iterable[Task], config: EvalConfig | None = None) -> list[EvalResult]:
        """Evaluate every task (all queued at once) and return the results in the tasks' order."""
        ...

    def close(self) -> None: ...


def task_config(config: EvalConfig | None, timeout_s: float | None) -> EvalConfig:
    """The config a submitted task runs with: the default, with a per-task timeout if given."""
    config = config or EvalConfig()
    return config if timeout_s is None else replace(config, timeout_s=timeout_s)


def stream_results(env: Env, tasks: Iterable[Task], config: EvalConfig | None) -> Iterator[tuple[Task, EvalResult]]:
    """``evaluate_many`` in terms of ``submit``: all tasks queued at once, yielded in completion order."""
    futures = {env.submit(t.problem, t.candidate, config, priority=t.priority): t for t in tasks}
    for future in as_completed(futures):
        yield futures[future], future.result()


def batch_results(env: Env, tasks: Iterable[Task], config: EvalConfig | None) -> list[EvalResult]:
    """``evaluate_batch`` in terms of ``submit``: all tasks queued at once, results in input order."""
    futures = [env.submit(t.problem, t.candidate, config, priority=t.priority) for t in tasks]
    return [future.result() for future in futures]


@runtime_checkable
class WorkerPool(Env, Protocol):
    """An Env that owns workers (local or Ray), as the HTTP service needs."""

    @property
    def slots(self) -> int:
        """Evaluations that can run at once."""
        ...

    def fingerprint(self) -> dict:
        """Device name and versions of the workers (part of the result cache key)."""
        ...


@dataclass(order=True)
class QueuedTask:
    """A submitted evaluation waiting in a priority queue (ordered by rank alone)."""

    rank: tuple[float, int]
    """(-priority, submission order): higher priority first, then first come first served."""
    problem: Problem | None = field(default=None, compare=False)
    """None marks a stop request for a worker."""
    candidate: str | bytes = field(default="", compare=False)
    config: EvalConfig | None = field(default=None, compare=False)
    future: Future | None = field(default=None, compare=False)
    submitted: float = field(default_factory=time.monotonic, compare=False)
    attempts: int = field(default=0, compare=False)


class QueuedEnv:
    """submit() and evaluate_many() over one priority queue, which a backend's workers drain."""

    def __init__(self) -> None:
        self._queue: queue.PriorityQueue[QueuedTask] = queue.PriorityQueue()
        self._order = itertools.count()

    def submit(
        self,
        problem: Problem,
        candidate: str | bytes,
        config: EvalConfig | None = None,
        *,
        priority: int = 0,
        timeout_s: float | None = None,
    ) -> Future[EvalResult]:
        future: Future[EvalResult] = Future()
        rank = (-priority, next(self._order))
        self._queue.put(QueuedTask(rank, problem, candidate, task_config(config, timeout_s), future))
        return future

    def evaluate_many(
        self, tasks: Iterable[Task], config: EvalConfig | None = None
    ) -> Iterator[tuple[Task, EvalResult]]:
        return stream_results(self, tasks, config)

    def evaluate_batch(self, tasks: Iterable[Task], config: EvalConfig | None = None) -> list[EvalResult]:
        return batch_results(self, tasks, config)

    def _stop_request(self) -> QueuedTask:
        """Queued after every task, so workers finish what was submitted before they stop."""
        return QueuedTask((float("inf"), next(self._order)))

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
