"""Evaluating one candidate on one device, inside a sandbox process."""

from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.evaluator import evaluate
from tritongym.evaluate.result import ErrorStats, EvalResult, Finding, Verdict

__all__ = ["ErrorStats", "EvalConfig", "EvalResult", "Finding", "Verdict", "evaluate"]
