"""tritongym: an environment, RL algorithms and a benchmark for LLM-written Triton kernels.

What most users need is importable from here, lazily (``import tritongym`` loads neither torch nor
an optional extra until a name is used)::

    from tritongym import EvalConfig, LocalEnv, Task, evaluate, find_problem
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "EvalConfig": "tritongym.evaluate.config",
    "EvalResult": "tritongym.evaluate.result",
    "Verdict": "tritongym.evaluate.result",
    "Problem": "tritongym.problems.problem",
    "find_problem": "tritongym.problems.loaders",
    "load_problems": "tritongym.problems.loaders",
    "Task": "tritongym.env.base",
    "LocalEnv": "tritongym.env.local",
    "PoolConfig": "tritongym.env.local",
    "RayEnv": "tritongym.env.ray_backend",
    "RayConfig": "tritongym.env.ray_backend",
    "HttpEnv": "tritongym.env.client",
    "TritonGymError": "tritongym.errors",
}

__all__ = [  # the names of _EXPORTS, spelled out for linters and IDEs
    "EvalConfig",
    "EvalResult",
    "HttpEnv",
    "LocalEnv",
    "PoolConfig",
    "Problem",
    "RayConfig",
    "RayEnv",
    "Task",
    "TritonGymError",
    "Verdict",
    "__version__",
    "evaluate",
    "find_problem",
    "load_problems",
]

if TYPE_CHECKING:
    from tritongym.env.base import Task
    from tritongym.env.client import HttpEnv
    from tritongym.env.local import LocalEnv, PoolConfig
    from tritongym.env.ray_backend import RayConfig, RayEnv
    from tritongym.errors import TritonGymError
    from tritongym.evaluate import evaluate
    from tritongym.evaluate.config import EvalConfig
    from tritongym.evaluate.result import EvalResult, Verdict
    from tritongym.problems.loaders import find_problem, load_problems
    from tritongym.problems.problem import Problem


def __getattr__(name: str):
    if name == "evaluate":  # the subpackage, which is callable as evaluate(problem, candidate, config)
        return importlib.import_module("tritongym.evaluate")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tritongym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # imported once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
