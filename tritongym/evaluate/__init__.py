"""Evaluating one candidate on one device, inside a sandbox process.

The package is itself callable, as ``evaluate(problem, candidate, config)``: ``from tritongym import
evaluate`` finds this package (a submodule always wins over a name of the parent), and calling it
runs :func:`tritongym.evaluate.evaluator.evaluate`.
"""

import sys
import types

from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.evaluator import evaluate
from tritongym.evaluate.result import ErrorStats, EvalResult, Finding, Verdict

__all__ = ["ErrorStats", "EvalConfig", "EvalResult", "Finding", "Verdict", "evaluate"]


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs) -> EvalResult:
        return evaluate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
